"""``aotcheck triage``: a planted divergence in each category (cold), a planted cache-only
divergence in aotcheck's own cache (with the first differing graph node), ``--miss`` and
``--report``."""
import pytest
import torch

from aotcheck.fuzz.triage import explain_miss, first_differing_node, triage, write_report
from aotcheck.targets.engines import ENGINES, AotcheckEngine

REPRO = '''
import torch
from aotcheck.check.oracle import Inputs

def f(x, y):
    y.mul_(2)
    return (x.sin() * y, y.view(-1))

def make_inputs():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, generator=g).requires_grad_()
    y = torch.randn(2, 3, generator=g)
    return Inputs(args=(x, y), leaves=(x,))
'''


class _Grad2(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        return t.view_as(t).clone()

    @staticmethod
    def backward(ctx, g):
        return g * 2


def _planted(kind):
    """aotcheck's engine with one planted bug of the given kind, on every call."""
    class Planted(AotcheckEngine):
        name = f"planted-{kind}"
        supports_cache = False

        def compile(self, fn):
            compiled = super().compile(fn)

            def run(x, y):
                if kind == "crash":
                    raise RuntimeError("planted crash")
                out = compiled(x, y)
                if kind == "values":
                    return (out[0] + 1, out[1])
                if kind == "mutation":
                    with torch.no_grad():
                        x.add_(1)
                    return out
                if kind == "grad values":
                    return (_Grad2.apply(out[0]), out[1])
                if kind == "requires_grad":
                    return (out[0].detach(), out[1])
                if kind == "aliasing":
                    return (out[0], out[1].clone())
                return out
            return run
    return Planted()


@pytest.fixture
def repro(tmp_path):
    path = tmp_path / "repro.py"
    path.write_text(REPRO)
    return path


@pytest.mark.parametrize("kind, where", [
    ("values", "output 0 values"), ("mutation", "argument 0 after the call values"),
    ("grad values", "grad of leaf 0"), ("requires_grad", "output 0 requires_grad"),
    ("aliasing", "output 1 aliasing"), ("crash", "compiled raised RuntimeError: planted crash"),
])
def test_triage_names_the_first_divergence_of_each_kind(repro, kind, where):
    engine = _planted(kind)
    ENGINES[engine.name] = engine
    try:
        t = triage(repro, engine.name)
    finally:
        del ENGINES[engine.name]
    run, first = t.first
    assert run == "cold" and str(first).startswith(where), first
    assert t.kind == ("crash in compiled forward: RuntimeError: planted crash" if kind == "crash"
                      else kind)
    assert f"first divergence (cold): {where}" in str(t)
    if kind == "values":
        assert "6 of 6 elements differ; greatest absolute difference 1" in first.detail, first  # how much


def test_triage_of_a_correct_engine_finds_nothing(repro):
    t = triage(repro, "aotcheck")
    assert t.first == ("", None) and t.hit and not t.node
    assert "no divergence" in str(t)


def test_planted_cache_only_divergence_names_the_graph_node(repro, monkeypatch):
    """aotcheck's cache loads a forward graph whose first mul became an add: the cold run is
    right, the cached one is not, and the node-by-node run names that node."""
    import aotcheck.cache.entry as entry
    real = entry.graph_from_data

    def tampered(data):
        g = real(data)
        for n in g.nodes:
            if n.target == torch.ops.aten.mul.Tensor:
                n.target = torch.ops.aten.add.Tensor
                break
        return g
    monkeypatch.setattr(entry, "graph_from_data", tampered)
    t = triage(repro, "aotcheck")
    assert not t.cold and t.cached and t.cache_only
    assert t.first[0] == "cached"
    assert "CACHE-ONLY" in str(t)
    assert "aten.add.Tensor" in t.node and "greatest absolute difference" in t.node, t.node


def test_first_differing_node_is_empty_for_equal_graphs(repro):
    import aotcheck
    from aotcheck.fuzz.triage import load_reproducer
    ns = load_reproducer(repro)["ns"]
    assert first_differing_node(aotcheck.aot_function(ns["f"]), aotcheck.aot_function(ns["f"]),
                                ns["make_inputs"]) == ""


def test_miss_names_the_key_components_that_differ(repro, tmp_path):
    import aotcheck
    from aotcheck.fuzz.triage import load_reproducer
    cache = tmp_path / "cache"
    assert "holds no entries" in explain_miss(repro, cache)
    ns = load_reproducer(repro)["ns"]
    x, y = torch.randn(3, 3, requires_grad=True), torch.randn(3, 3)   # another shape
    aotcheck.aot_function(ns["f"], cache=str(cache))(x, y)
    msg = explain_miss(repro, cache)
    assert "differs in:" in msg and "signature" in msg.split("differs in:")[1].split("\n")[0], msg
    inp = ns["make_inputs"]()
    aotcheck.aot_function(ns["f"], cache=str(cache))(*inp.args)
    assert "the lookup hits" in explain_miss(repro, cache)


def test_report_is_upstream_ready(repro, tmp_path):
    engine = _planted("values")
    ENGINES[engine.name] = engine
    try:
        t = triage(repro, engine.name)
    finally:
        del ENGINES[engine.name]
    text = write_report(t, tmp_path / "r.md").read_text()
    for section in ("## Versions", "## Minimal reproducer", "## Eager against compiled",
                    "## Smallest program that still fails", torch.__version__, "def f(x, y):",
                    "output 0 values"):
        assert section in text, section


def test_cli(repro, tmp_path, capsys):
    from aotcheck.cli import main
    assert main(["triage", str(repro), "--engine", "aotcheck"]) == 0
    assert "no divergence" in capsys.readouterr().out
    assert main(["triage", str(repro), "--miss", "--cache", str(tmp_path / "c")]) == 0
    assert "holds no entries" in capsys.readouterr().out

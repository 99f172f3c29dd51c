"""``aotcheck keydiff``: the key-completeness differential.

- the verdicts on a toy cache: a planted key gap (a component the toy key omits) is a KEY GAP,
  a component it keys is not, a keyed component that changes nothing is a LOST HIT;
- a planted gap in torch's own AOTAutogradCache key (a functorch field dropped from its saved
  config) is reported, and the same field unplanted is keyed;
- a real gap on the installed torch, observed in-process (a global read inside a checkpoint
  body);
- the census: complete for the installed torch (a field it does not list fails), every field
  varied or with a reason, and the check itself can fail;
- the user-program loader's errors; the storage lattice; naming; the records' JSON round trip;
- (slow) a program through the whole command, its stale hit confirmed in a new process, and
  the reproducer it writes run as written.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from aotcheck.keydiff import census, naming, program, report, repro, setters
from aotcheck.keydiff import run as R
from aotcheck.keydiff.config_run import FieldResult, probe_for
from aotcheck.keydiff.confirm import Confirmation, Outcome, decide
from aotcheck.keydiff.differential import Finding, Verdict, compare, first_difference
from aotcheck.keydiff.observe import Graph, Observation, normalize, observe
from aotcheck.keydiff.program import Input, Kind, ProgramError

PROGRAMS = census.PROGRAMS_DIR

# ---------------------------------------------------------------- a toy cache


def toy_compile(state: dict, keyed: tuple[str, ...]) -> Observation:
    """A toy compiler and cache: it produces graph code from every component of ``state``, and its
    key holds only the components named in ``keyed`` (a component left out is a planted gap)."""
    code = "\n".join(f"mul = aten.mul(x, {state[k]})  # {k}" for k in sorted(state) if k != "debug")
    key = "k" + "|".join(f"{k}={state[k]}" for k in sorted(state) if k in keyed)
    return Observation((Graph("0/0", (("aot_forward_graph", code),), key),))


BASE = {"scale": 2, "factor": 3, "debug": False}


def test_a_planted_key_gap_in_a_toy_cache_is_reported():
    keyed = ("factor", "debug")                        # the planted gap: "scale" is not keyed
    a = toy_compile(BASE, keyed)
    b = toy_compile({**BASE, "scale": 5}, keyed)
    v = compare(a, b)
    assert v.finding is Finding.KEY_GAP
    assert v.cache == "AOTAutogradCache" and v.differs == ("aot_forward_graph",)
    assert v.first == "aot_forward_graph: 'mul = aten.mul(x, 2)  # scale' vs 'mul = aten.mul(x, 5)  # scale'"


def test_a_component_the_toy_cache_keys_is_no_gap():
    keyed = ("factor", "debug")
    v = compare(toy_compile(BASE, keyed), toy_compile({**BASE, "factor": 4}, keyed))
    assert v.finding is Finding.KEYED, v.reason


def test_a_keyed_component_that_changes_nothing_is_a_lost_hit():
    keyed = ("scale", "factor", "debug")
    v = compare(toy_compile(BASE, keyed), toy_compile({**BASE, "debug": True}, keyed))
    assert v.finding is Finding.LOST_HIT
    assert compare(toy_compile(BASE, keyed), toy_compile(BASE, keyed)).finding is Finding.NO_EFFECT


def test_graphs_are_judged_each_under_its_own_key():
    """A graph after a graph break may be specialized on a value computed before it: its key and
    its code both differ (keyed) while the first graph's gap must still be reported."""
    g0a = Graph("0/0", (("aot_forward_graph", "mul(x, 2)"),), "k0")
    g0b = Graph("0/0", (("aot_forward_graph", "add(x, 2)"),), "k0")
    g1a = Graph("1/0", (("aot_forward_graph", "mul(y, 0.5)"),), "k1")
    g1b = Graph("1/0", (("aot_forward_graph", "mul(y, 0.7)"),), "k2")
    v = compare(Observation((g0a, g1a)), Observation((g0b, g1b)))
    assert v.finding is Finding.KEY_GAP and v.reason.startswith("graph 0 (0/0)")


def test_an_fx_graph_cache_key_that_hides_a_code_change_is_a_gap():
    a = Graph("0/0", (("inductor_output_code", "def call(): return 1"),), "ka", ("fx1",))
    b = Graph("0/0", (("inductor_output_code", "def call(): return 2"),), "kb", ("fx1",))
    v = compare(Observation((a,)), Observation((b,)))
    assert v.finding is Finding.KEY_GAP and v.cache == "FX graph cache"


def test_a_side_without_a_key_or_that_failed_is_said_so():
    ok = toy_compile(BASE, ("scale",))
    bypassed = Observation((Graph("0/0", (("aot_forward_graph", "x"),), "", (), ("AOTAutogradCache: nope",)),))
    assert compare(ok, bypassed).finding is Finding.NO_KEY
    assert compare(ok, Observation(error="RuntimeError: boom")).finding is Finding.FAILED


def test_first_difference_and_normalization():
    assert first_difference("a\nb\nc", "a\nB\nc") == "'b' vs 'B'"
    assert normalize("# AOT ID: ['7_forward']\n<function f at 0x7f3a>  # File: /x.py:3\n") == \
        "# AOT ID: ['N_forward']"


# ---------------------------------------------------------------- torch's own key, planted


PLANT = textwrap.dedent('''
    import torch

    def fn(x):
        return (x.sin() + 1) * (x.sin() + 1)

    def inputs():
        return (torch.randn(4, requires_grad=True),)
''')


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / f"{name}.py"
    p.write_text(text)
    return p


def test_a_planted_gap_in_torchs_key_is_reported_and_the_unplanted_field_is_keyed(tmp_path, monkeypatch):
    """``torch._functorch.config.cse`` is in AOTAutogradCache's key through the saved config;
    planting it in ``_save_config_ignore`` drops it from the key, and the differential says so."""
    import torch._functorch.config as fconfig
    module = program.load(_write(tmp_path, "kd_test_plant_cse", PLANT)).module()
    field = "torch._functorch.config.cse"

    def pair(tag):
        a = observe(module, {field: True}, str(tmp_path / f"{tag}A"))
        b = observe(module, {field: False}, str(tmp_path / f"{tag}B"))
        return compare(a, b)
    unplanted = pair("u")
    assert unplanted.finding is Finding.KEYED, unplanted.reason
    monkeypatch.setattr(fconfig, "_save_config_ignore", list(fconfig._save_config_ignore) + ["cse"])
    planted = pair("p")
    assert planted.finding is Finding.KEY_GAP, planted.reason
    assert "aot_forward_graph" in planted.differs


def test_a_real_gap_of_the_installed_torch_is_observed_in_process(tmp_path):
    """(a) on the installed torch: a global read by an allow_in_graph helper inside a checkpoint
    body changes the graphs and not the key (pytorch/pytorch#194658)."""
    module = program.load(PROGRAMS / "kd_checkpoint_allow_in_graph.py").module()
    a = observe(module, {"SCALE": [2.0]}, str(tmp_path / "A"), eager=True)
    b = observe(module, {"SCALE": [3.0]}, str(tmp_path / "B"), eager=True)
    assert a.eager == "" and b.eager == ""            # each cold compile equals eager
    v = compare(a, b)
    assert v.finding is Finding.KEY_GAP, v.reason
    assert "3.0" in v.first and "2.0" in v.first


# ---------------------------------------------------------------- aotcheck's own cache as the target


AUTOCAST_NO_DTYPE = textwrap.dedent('''
    import torch

    def fn(x, w):
        with torch.autocast("cpu"):          # no dtype: the ambient one, read at trace time
            return x @ w

    def inputs():
        return (torch.randn(4, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True))

    VARY = {"ambient:autocast_dtype.cpu": (torch.bfloat16, torch.float16)}
''')


def test_aotchecks_key_holds_the_ambient_autocast_dtype_and_a_planted_drop_is_a_gap(tmp_path, monkeypatch):
    """The aotcheck target: the issue's program (autocast without a dtype, the ambient dtype
    changed with autocast off) is KEYED, each side equal to eager; with the dtype planted out
    of aotcheck's key (``ambient.in_key``) the differential reports a KEY GAP."""
    from aotcheck.cache import ambient
    from aotcheck.keydiff import observe_aotcheck
    module = program.load(_write(tmp_path, "kd_test_autocast_no_dtype", AUTOCAST_NO_DTYPE)).module()
    name = "ambient:autocast_dtype.cpu"

    def pair(tag):
        a = observe_aotcheck.observe(module, {name: torch.bfloat16}, str(tmp_path / f"{tag}A"), eager=True)
        b = observe_aotcheck.observe(module, {name: torch.float16}, str(tmp_path / f"{tag}B"), eager=True)
        assert a.eager == "" and b.eager == "", (a.eager, b.eager)
        assert len(a.graphs) == 1 and a.graphs[0].cache == observe_aotcheck.CACHE_NAME
        return compare(a, b)
    keyed = pair("u")
    assert keyed.finding is Finding.KEYED, keyed.reason
    assert "float16" in keyed.first
    kept = tuple(s for s in ambient.in_key() if s.name != "autocast_dtype[cpu]")
    assert len(kept) == len(ambient.in_key()) - 1
    monkeypatch.setattr(ambient, "in_key", lambda: kept)
    planted = pair("p")
    assert planted.finding is Finding.KEY_GAP, planted.reason
    assert planted.cache == observe_aotcheck.CACHE_NAME and "aotcheck_entry" in planted.differs


def test_aotchecks_key_holds_a_global_a_checkpoint_body_reads(tmp_path):
    """The torch gap of pytorch/pytorch#194658 (findings C4) is keyed in aotcheck's cache."""
    from aotcheck.keydiff import observe_aotcheck
    module = program.load(PROGRAMS / "kd_checkpoint_allow_in_graph.py").module()
    a = observe_aotcheck.observe(module, {"SCALE": [2.0]}, str(tmp_path / "A"), eager=True, details=True)
    b = observe_aotcheck.observe(module, {"SCALE": [3.0]}, str(tmp_path / "B"), eager=True, details=True)
    assert a.eager == "" and b.eager == ""
    v = compare(a, b)
    assert v.finding is Finding.KEYED, v.reason
    assert v.key_components, "the differing key components are named"
    assert a.event("aotcheck.saves") == 1 and a.event("aotcheck.misses") >= 1


def test_an_uncacheable_call_is_a_keyless_graph_that_says_why(tmp_path):
    from aotcheck.keydiff import observe_aotcheck
    (tmp_path / "empty").mkdir()
    graphs = observe_aotcheck.entries(tmp_path / "empty", bypassed=["aotcheck.bypass.unsupported_target"])
    assert graphs[0].aot_key == "" and "unsupported_target" in graphs[0].bypass[0]
    assert observe_aotcheck.entries(tmp_path / "empty") == ()


def test_a_hit_in_aotchecks_cache_counts_as_served():
    served = Observation((), (("aotcheck.hits", 1),), (), None, "output 0 values")
    assert decide(0, 1, _obs(""), served).outcome is Outcome.STALE_HIT


# ---------------------------------------------------------------- stale-hit confirmation


def _obs(eager, hits=0, error=None):
    return Observation((), (("aot_autograd.autograd_cache_hit", hits),) if hits else (), (), error, eager)


def test_confirmation_decides_with_its_reason():
    assert decide(0, 1, _obs(""), _obs("output 0 values", hits=1)).outcome is Outcome.STALE_HIT
    assert decide(0, 1, _obs(""), _obs("", hits=1)).outcome is Outcome.SERVED_EQUAL
    assert decide(0, 1, _obs(""), _obs("output 0 values")).outcome is Outcome.NOT_SERVED
    assert decide(0, 1, _obs("output 0 values"), _obs("x", hits=1)).outcome is Outcome.B_WRONG_COLD
    assert decide(0, 1, _obs(""), _obs(None, error="RuntimeError: x")).outcome is Outcome.FAILED


# ---------------------------------------------------------------- the census


def test_the_census_lists_every_config_field_of_the_installed_torch():
    """A torch release with a field the census does not list fails here: write its census with
    ``aotcheck keydiff --write-census`` and give each new field a value or a reason."""
    data = census.load()
    assert census.missing(data) == []
    assert census.stale(data) == []
    assert census.unjustified(data) == []


def test_the_completeness_check_can_fail():
    data = census.load()
    fewer = {**data, "config": {k: v for k, v in data["config"].items() if not k.endswith(".cse")}}
    assert census.missing(fewer) == ["torch._functorch.config.cse"]
    more = {**data, "config": {**data["config"], "torch._inductor.config.no_such_field": {"vary": [1]}}}
    assert census.stale(more) == ["torch._inductor.config.no_such_field"]
    bare = {**data, "config": {**data["config"], "torch._functorch.config.cse": {"vary": [], "reason": ""}}}
    assert census.unjustified(bare) == ["torch._functorch.config.cse"]


@pytest.mark.parametrize("rel", ["2.13.0", "2.14.1", "2.15.0"])
def test_a_census_is_kept_for_each_release(rel):
    data = census.load(rel)
    assert data["torch"] == rel
    assert census.unjustified(data) == []
    assert all(set(progs) <= {p.stem for p in PROGRAMS.glob("kd_*.py")} for progs in data["programs"].values())
    assert sum(len(v) for v in data["programs"].values()) >= 9


def test_derived_value_domains():
    assert census.derive("torch._inductor.config.max_fusion_size", 64, int) == ([128], "")
    assert census.derive("torch._functorch.config.cse", True, bool) == ([False], "")
    assert census.derive("torch._functorch.config.activation_memory_budget", 1.0, float) == ([0.5], "")
    assert census.derive("torch._inductor.config.triton.cudagraphs", False, bool)[1].startswith("CUDA")
    assert census.derive("torch._functorch.config.joint_custom_pass", None, object) == \
        ([{"callable": "mul_to_add_joint_pass"}], "")
    import typing
    assert census.derive("torch._inductor.config.x", "a", typing.Literal["a", "b", "c"]) == (["b", "c"], "")


def test_config_fields_go_to_the_probe_of_their_compiler():
    assert probe_for("torch._inductor.config.cpp.simdlen") == "kd_config_probe_inductor"
    assert probe_for("torch._dynamo.config.specialize_int") == "kd_config_probe"


# ---------------------------------------------------------------- the user-program format


@pytest.mark.parametrize("text, message", [
    ("import torch\ndef inputs():\n    return ()\n", "defines no function 'fn'"),
    ("def fn(x):\n    return x\n", "defines no function 'inputs'"),
    ("def fn(x):\n    return x\ndef inputs(n):\n    return ()\n", "inputs() must take no arguments"),
    ("def fn(x):\n    return x\ndef inputs():\n    return ()\nVARY = [1, 2]\n", "VARY must be a non-empty dict"),
    ("def fn(x):\n    return x\ndef inputs():\n    return ()\nVARY = {'A': (1,)}\n", "at least two values"),
    ("def fn(x):\n    return x\ndef inputs():\n    return ()\nVARY = {'NOPE': (1, 2)}\n", "defines no setup"),
    ("def fn(x)\n    return x\n", "syntax error"),
    ("raise ValueError('bad import')\n", "importing it raised ValueError: bad import"),
])
def test_the_loader_names_what_is_wrong(tmp_path, text, message):
    name = f"kd_bad_{abs(hash(text)) % 10**8}"
    with pytest.raises(ProgramError, match=message.replace("(", r"\(").replace(")", r"\)")):
        program.load(_write(tmp_path, name, text))


def test_the_loader_refuses_names_it_cannot_import(tmp_path):
    with pytest.raises(ProgramError, match="must be a Python identifier"):
        program.load(_write(tmp_path, "bad-name", "def fn(x): pass\ndef inputs(): return ()\n"))
    with pytest.raises(ProgramError, match="no such Python file"):
        program.load(tmp_path / "missing.py")
    other = tmp_path / "other"
    other.mkdir()
    program.load(_write(tmp_path, "kd_twice", "def fn(x): pass\ndef inputs(): return ()\n"))
    with pytest.raises(ProgramError, match="already imported"):
        program.load(_write(other, "kd_twice", "def fn(x): pass\ndef inputs(): return ()\n"))


def test_inputs_must_return_a_tuple(tmp_path):
    module = program.load(_write(tmp_path, "kd_not_tuple", "def fn(x): pass\ndef inputs(): return 3\n")).module()
    with pytest.raises(ProgramError, match="must return a tuple"):
        program.arguments(module)


def test_vary_names_are_read_by_kind(tmp_path):
    text = textwrap.dedent('''
        import torch
        G = 1
        def fn(x, y):
            return x + y * G
        def inputs():
            return (torch.ones(3), torch.ones(3))
        def setup(name, value):
            pass
        VARY = {"G": (1, 2), "torch._inductor.config.fallback_random": (False, True),
                "ambient:default_dtype": (torch.float32, torch.float64), "storage:0,1": ("disjoint", "overlap"),
                "registration": ("a", "b")}
    ''')
    module = program.load(_write(tmp_path, "kd_kinds", text)).module()
    kinds = {i.name: i.kind for i, _ in setters.inputs_of(module)}
    assert kinds == {"G": Kind.GLOBAL, "torch._inductor.config.fallback_random": Kind.CONFIG,
                     "ambient:default_dtype": Kind.AMBIENT, "storage:0,1": Kind.STORAGE, "registration": Kind.SETUP}


def test_without_vary_the_inputs_are_derived(tmp_path):
    text = "import torch\ndef fn(a, b):\n    return a + b\ndef inputs():\n    return (torch.ones(3), torch.ones(3))\n"
    module = program.load(_write(tmp_path, "kd_derived", text)).module()
    names = [i.name for i, _ in setters.inputs_of(module)]
    assert names[0] == "storage:0,1" and "ambient:autocast_dtype.cpu" in names


def test_setters_put_back_what_they_changed(tmp_path):
    import torch._functorch.config as fconfig
    module = program.load(PROGRAMS / "kd_checkpoint_allow_in_graph.py").module()
    before = (module.SCALE, fconfig.cse, torch.get_autocast_dtype("cpu"))
    with setters.applied(module, "SCALE", [9.0]), setters.applied(module, "torch._functorch.config.cse", False), \
            setters.applied(module, "ambient:autocast_dtype.cpu", torch.float16):
        assert (module.SCALE, fconfig.cse, torch.get_autocast_dtype("cpu")) == ([9.0], False, torch.float16)
    assert (module.SCALE, fconfig.cse, torch.get_autocast_dtype("cpu")) == before


# ---------------------------------------------------------------- the storage lattice


def _elements(t: torch.Tensor) -> set[int]:
    return {t.storage_offset() + i for i in range(t.numel())}


@pytest.mark.parametrize("relation, same_storage, overlap", [
    ("disjoint", False, False), ("same", True, True), ("view_of_base", True, True),
    ("shared_disjoint", True, False), ("overlap", True, True), ("overlap_reversed", True, True),
    ("offset", False, False)])
@pytest.mark.parametrize("grad", [False, True])
def test_the_storage_lattice(relation, same_storage, overlap, grad):
    args = (torch.arange(4.0, requires_grad=grad), torch.arange(4.0, requires_grad=grad) + 10, 3)
    x, y, n = setters.related(args, 0, 1, relation)
    assert n == 3 and x.shape == y.shape == (4,)
    shared = x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()
    assert shared is same_storage
    assert bool(shared and _elements(x) & _elements(y)) is overlap
    assert (x is y) is (relation == "same")
    assert x.requires_grad is grad and y.requires_grad is grad
    if relation == "overlap":
        assert y.storage_offset() - x.storage_offset() == 2
    if relation == "offset":
        assert x.storage_offset() == y.storage_offset() == 1
    if not overlap:
        assert torch.equal(x.detach(), torch.arange(4.0)) and torch.equal(y.detach(), torch.arange(4.0) + 10)


def test_a_relation_needs_two_tensors_of_one_shape():
    with pytest.raises(ProgramError, match="not two tensors of one shape"):
        setters.related((torch.ones(3), torch.ones(4)), 0, 1, "overlap")
    with pytest.raises(ProgramError, match="known relations"):
        setters.related((torch.ones(3), torch.ones(3)), 0, 1, "sideways")


# ---------------------------------------------------------------- naming


def test_components_are_named_as_a_person_would():
    def name(stem, input_name, a=0, b=1):
        module = program.load(PROGRAMS / f"{stem}.py").module()
        inp = next(i for i, _ in setters.inputs_of(module) if i.name == input_name)
        return naming.component(module, inp, a, b)
    assert name("kd_checkpoint_allow_in_graph", "SCALE") == \
        "global SCALE read by helper _opaque (allow_in_graph) inside a checkpoint body: [2.0] -> [3.0]"
    assert name("kd_autograd_function_allow_in_graph", "OFFSET") == \
        "global OFFSET read by helper _shift (allow_in_graph) inside the forward of autograd.Function Shift: 1.0 -> 5.0"
    assert name("kd_autocast_dtype_in_checkpoint", "ambient:autocast_dtype.cpu") == \
        "ambient torch.set_autocast_dtype('cpu', ...) (autocast off): torch.bfloat16 -> torch.float16"
    assert name("kd_storage_overlap", "storage:0,1") == \
        "arguments 0 and 1: disjoint (disjoint storages) -> overlap (partial overlap, the second starts k elements in)"
    assert name("kd_custom_op_register_autograd", "backward_scale") == \
        "registration of custom op kdiff::scaled_clone (setup 'backward_scale'): 1.0 -> 2.0"
    assert name("kd_joint_custom_pass", "torch._functorch.config.joint_custom_pass") == \
        "torch._functorch.config.joint_custom_pass: None -> kd_joint_custom_pass.sin_to_cos"
    assert name("kd_aot_autograd_decompositions", "DECOMPOSITIONS").startswith(
        "global DECOMPOSITIONS read by the backend factory BACKEND: {")


# ---------------------------------------------------------------- records round-trip JSON

_text = st.text(max_size=20)
_graphs = st.builds(Graph, _text, st.lists(st.tuples(_text, _text), max_size=3).map(tuple), _text,
                    st.lists(_text, max_size=2).map(tuple), st.lists(_text, max_size=2).map(tuple))
_observations = st.builds(Observation, st.lists(_graphs, max_size=2).map(tuple),
                          st.lists(st.tuples(_text, st.integers()), max_size=3).map(tuple),
                          st.lists(st.tuples(_text, _text), max_size=2).map(tuple),
                          st.none() | _text, st.none() | _text)
_verdicts = st.builds(Verdict, st.sampled_from(list(Finding)), _text, _text,
                      st.lists(_text, max_size=2).map(tuple), _text, st.lists(_text, max_size=2).map(tuple))


@given(_observations)
def test_observations_round_trip_json(o):
    assert Observation.from_json(json.loads(json.dumps(o.to_json()))) == o


@given(_verdicts, st.sampled_from(list(Outcome)))
def test_results_round_trip_json(v, outcome):
    comp = R.Comparison("SCALE", Kind.GLOBAL, 0, 1, "[2.0]", "[3.0]", v, "global SCALE",
                        (Confirmation(0, 1, outcome, "why"),))
    result = R.CensusResult("2.13.0", (R.ProgramResult("/p/kd_x.py", "", "aot_eager", (comp,)),),
                            (FieldResult("torch._functorch.config.cse", "False", "kd_config_probe", v),), 1.5)
    assert R.CensusResult.from_json(json.loads(json.dumps(result.to_json()))) == result
    assert result.to_json()["programs"][0]["comparisons"][0]["kind"] == "global"   # the Kind, as text


def test_judging_against_the_known_gaps():
    gap = Verdict(Finding.KEY_GAP, "gap")
    keyed = Verdict(Finding.KEYED, "keyed")
    comps = (R.Comparison("SCALE", Kind.GLOBAL, 0, 1, "a", "b", gap, "global SCALE"),
             R.Comparison("X", Kind.GLOBAL, 0, 1, "a", "b", keyed, "global X"))
    result = R.CensusResult("2.13.0", (R.ProgramResult("/p/kd_x.py", "", "aot_eager", comps),),
                            (FieldResult("torch._functorch.config.cse", "False", "kd_config_probe", gap),))
    j = report.judge(result, {"kd_x:SCALE": "#1", "kd_x:X": "#2", "kd_y:Z": "#3"})
    assert j == report.Judgement(new=("torch._functorch.config.cse",), known=("kd_x:SCALE",), fixed=("kd_x:X",))


def test_inputs_need_two_values():
    with pytest.raises(ValueError):
        Input("x", Kind.GLOBAL, ("1",))


# ---------------------------------------------------------------- the reproducer


def test_the_reproducer_is_the_program_importable_as_written(tmp_path):
    module = program.load(PROGRAMS / "kd_checkpoint_allow_in_graph.py").module()
    path = repro.write(module, "SCALE", 0, 1, "global SCALE", tmp_path)
    src = path.read_text()
    assert src.startswith(Path(module.__file__).read_text())   # the program, verbatim
    assert "import aotcheck" not in src and "from aotcheck" not in src
    loaded = program.load(path).module()                       # importable by its stem
    assert loaded.__name__ == path.stem and loaded._opaque.__module__ == path.stem
    assert callable(loaded._run_side)


@pytest.mark.slow
def test_a_program_through_the_command_and_its_reproducer(tmp_path):
    """The whole command on (a): a KEY GAP confirmed as a stale hit in a new process, a
    reproducer written, and the reproducer run as written reproduces it (exit 1)."""
    out = subprocess.run([sys.executable, "-m", "aotcheck.cli", "keydiff",
                          str(PROGRAMS / "kd_checkpoint_allow_in_graph.py"), "--repro-dir", str(tmp_path),
                          "--json", str(tmp_path / "r.json")], capture_output=True, text=True)
    assert "KEY GAP  global SCALE read by helper _opaque" in out.stdout, out.stdout + out.stderr
    assert "STALE HIT (value 0 wrote, value 1 read)" in out.stdout
    result = R.CensusResult.from_json(json.loads((tmp_path / "r.json").read_text()))
    assert result.programs[0].comparisons[0].stale
    written = sorted(tmp_path.glob("repro_*.py"))
    assert written
    run = subprocess.run([sys.executable, str(written[0])], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 1 and "STALE HIT reproduced" in run.stdout, run.stdout + run.stderr

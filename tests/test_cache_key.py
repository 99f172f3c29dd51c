"""The trace-free cache key: what it covers, that a changed input misses in a new process
while the unchanged function still hits, that a hit traces nothing, and the traced fallback.

The same fingerprint keys ``AotFunction``'s in-memory reuse (issue 11, class 7): state the
function reads that changed (``model.eval()``, a closure or global value) compiles again.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest
import torch
from torch.func import functional_call

import aotcheck
from aotcheck import flags
from aotcheck.cache import Cache, compute_key
from aotcheck.cache.fingerprint import Unfingerprintable, fingerprint

WORKER = textwrap.dedent('''
    import json, sys
    import torch
    from torch._subclasses import fake_tensor
    made = []
    _init = fake_tensor.FakeTensorMode.__init__
    def counting_init(self, *a, **k):
        made.append(1)
        _init(self, *a, **k)
    fake_tensor.FakeTensorMode.__init__ = counting_init
    import aotcheck

    SCALE = {global_}

    def helper(x):
        return x {helper_op} 2

    def make_closure(c):
        def closure_fn(x):
            return x * c
        return closure_fn

    closure_fn = make_closure({closure})

    def global_fn(x):
        return x * SCALE

    def helper_fn(x):
        return helper(x).sin()

    def default_fn(x, k={default}):
        return x + k

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
    model.{mode}()

    def module_fn(p, b, x):
        return torch.func.functional_call(model, (p, b), (x,))

    def control_fn(x):
        return x.cos() + 1

    def inputs(name):
        g = torch.Generator().manual_seed(1)
        x = torch.randn(3, 4, generator=g, requires_grad=True)
        if name == "module_fn":
            p = {{k: v.detach().clone().requires_grad_() for k, v in model.named_parameters()}}
            b = {{k: v.clone() for k, v in model.named_buffers()}}
            return (p, b, x), [x, *p.values()]
        return (x,), [x]

    result = {{}}
    compiled = {{}}
    for name in ("closure_fn", "global_fn", "helper_fn", "default_fn", "module_fn", "control_fn"):
        fn = globals()[name]
        before = dict(aotcheck.counters)
        args, leaves = inputs(name)
        out = aotcheck.aot_function(fn, cache=sys.argv[1])(*args)
        out.sin().sum().backward()
        delta = {{k: v - before.get(k, 0) for k, v in aotcheck.counters.items()}}
        compiled[name] = (out.detach(), [l.grad for l in leaves], delta)
    after_compiled = {{"dynamo": "torch._dynamo" in sys.modules, "fake_modes": len(made)}}
    for name, (out, grads, delta) in compiled.items():
        args, leaves = inputs(name)
        ref = globals()[name](*args)
        ref.sin().sum().backward()
        ok = torch.allclose(out, ref.detach(), atol=1e-6) and all(torch.allclose(a, l.grad, atol=1e-6) for a, l in zip(grads, leaves))
        result[name] = {{"ok": ok, "hits": delta["hits"], "misses": delta["misses"],
                         "backward_hits": delta["backward_hits"]}}
    print(json.dumps({{"fns": result, **after_compiled}}))
''')

BASE = dict(global_=2.0, helper_op="*", closure=3.0, default=1, mode="train")
CHANGED = dict(global_=5.0, helper_op="+", closure=4.0, default=2, mode="eval")


def _run(tmp_path, cache_dir, params, tag):
    script = tmp_path / f"worker_{tag}.py"
    script.write_text(WORKER.format(**params))
    env = dict(os.environ, PYTHONHASHSEED="random")
    r = subprocess.run([sys.executable, str(script), str(cache_dir)], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_changed_state_misses_in_a_new_process_and_a_hit_traces_nothing(tmp_path):
    d = tmp_path / "cache"
    first = _run(tmp_path, d, BASE, "base")
    assert all(v["ok"] and v["misses"] == 1 and v["hits"] == 0 for v in first["fns"].values()), first

    again = _run(tmp_path, d, BASE, "base")                 # the same state: every function hits
    assert all(v["ok"] and v["hits"] == 1 and v["misses"] == 0 and v["backward_hits"] == 1
               for v in again["fns"].values()), again
    assert again["dynamo"] is False, "a cache hit imported torch._dynamo"
    assert again["fake_modes"] == 0, "a cache hit created a FakeTensorMode"

    changed = _run(tmp_path, d, CHANGED, "changed")         # each changed value misses
    fns = changed["fns"]
    assert all(v["ok"] for v in fns.values()), fns
    for name in ("closure_fn", "global_fn", "helper_fn", "default_fn", "module_fn"):
        assert fns[name]["misses"] == 1 and fns[name]["hits"] == 0, (name, fns[name])
    assert fns["control_fn"]["hits"] == 1 and fns["control_fn"]["misses"] == 0


# ---------------------------------------------------------------- in memory (issue 11, class 7)


def _bn_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4), torch.nn.Dropout(0.0))


def _params(model):
    p = {k: v.detach().clone().requires_grad_() for k, v in model.named_parameters()}
    b = {k: v.clone() for k, v in model.named_buffers()}
    return p, b


def test_functional_call_after_eval_compiles_again():
    model = _bn_model()
    cf = aotcheck.aot_function(lambda p, b, x: functional_call(model, (p, b), (x,)))
    x = torch.randn(3, 4)
    for mode in ("train", "eval", "train"):
        getattr(model, mode)()
        p, b = _params(model)
        pe, be = _params(model)
        out = cf(p, b, x)
        ref = functional_call(model, (pe, be), (x,))
        assert torch.allclose(out, ref, atol=1e-6), mode
        assert all(torch.equal(b[k], be[k]) for k in b), mode      # running stats as in eager
    assert cf.num_compiled == 2                                   # train, eval; train reused


def test_hyperparameter_closure_and_global_changes_compile_again():
    model = _bn_model()
    cf = aotcheck.aot_function(lambda p, b, x: functional_call(model, (p, b), (x,)))
    x = torch.randn(3, 4)
    cf(*_params(model), x)
    model[1].eps = 0.5                       # a hyperparameter
    p, b = _params(model)
    pe, be = _params(model)
    assert torch.allclose(cf(p, b, x), functional_call(model, (pe, be), (x,)), atol=1e-6)
    assert cf.num_compiled == 2

    k = [2.0]
    def f(x):
        return x * k[0]
    cg = aotcheck.aot_function(f)
    assert torch.equal(cg(torch.ones(2)), torch.full((2,), 2.0))
    k[0] = 3.0                               # a value inside a closure list
    assert torch.equal(cg(torch.ones(2)), torch.full((2,), 3.0))
    global _G
    _G = 1.0
    ch = aotcheck.aot_function(_uses_global)
    assert torch.equal(ch(torch.ones(2)), torch.full((2,), 2.0))
    _G = 4.0
    assert torch.equal(ch(torch.ones(2)), torch.full((2,), 5.0))
    assert ch.num_compiled == 2


_G = 1.0


def _uses_global(x):
    return x + _G


def test_unchanged_state_is_reused():
    model = _bn_model()
    cf = aotcheck.aot_function(lambda p, b, x: functional_call(model, (p, b), (x,)))
    p, b = _params(model)
    for _ in range(3):
        with torch.no_grad():                # an optimizer step: values change, metadata does not
            for v in model.parameters():
                v.add_(0.1)
        cf(p, b, torch.randn(3, 4))
    assert cf.num_compiled == 1


# ---------------------------------------------------------------- key coverage and fallback


def _k(fn=None, args=None):
    fn = fn or _uses_global
    return compute_key(fn, args or (torch.randn(3),))[0]


def test_key_covers_flags_and_torch_state():
    base = _k()
    old = flags.get(flags.CHECK_GRAPHS)
    flags.set_override(flags.CHECK_GRAPHS, not old)
    try:
        assert _k() != base
    finally:
        flags.set_override(flags.CHECK_GRAPHS, old)
    assert _k() == base
    torch.set_default_dtype(torch.float64)
    try:
        assert _k() != base
    finally:
        torch.set_default_dtype(torch.float32)
    with torch.no_grad():
        assert _k() != base


def test_fingerprint_ignores_line_numbers_but_not_code():
    ns1, ns2, ns3 = {}, {}, {}
    exec("def f(x):\n    return x * 2\n", ns1)
    exec("\n\n\ndef f(x):\n    return x * 2\n", ns2)
    exec("def f(x):\n    return x * 3\n", ns3)
    assert fingerprint(ns1["f"])[1] == fingerprint(ns2["f"])[1] != fingerprint(ns3["f"])[1]



def _library_functions(src: str) -> dict:
    """Functions whose code lies in torch's own directory (the fingerprint's library test)."""
    ns = {"__name__": "torch._aotcheck_test_library"}
    exec(compile(src, os.path.join(os.path.dirname(torch.__file__), "_aotcheck_test_library.py"),
                 "exec"), ns)
    return ns


def test_library_functions_are_told_apart_by_code_and_closure(tmp_path):
    # OpInfo's op and inplace_variant are two lambdas of one torch module with one qualname: the
    # in-place variant's cold compile hit the out-of-place one's entry (rrelu returned a fresh
    # tensor where eager returns its argument)
    lib = _library_functions(textwrap.dedent("""
        import torch
        variants = [lambda x: torch.relu(x), lambda x: torch.relu_(x)]
        def scaled(k):
            def f(x):
                return x * k
            return f
    """))
    out_of_place, in_place = lib["variants"]
    assert out_of_place.__qualname__ == in_place.__qualname__
    assert fingerprint(out_of_place)[1] != fingerprint(in_place)[1]
    assert fingerprint(lib["scaled"](2))[1] != fingerprint(lib["scaled"](3))[1]
    assert fingerprint(lib["scaled"](2))[1] == fingerprint(lib["scaled"](2))[1]

    def call(variant):
        def f(x):
            return variant(x)
        return f
    x = torch.randn(4)
    aotcheck.aot_function(call(out_of_place), cache=str(tmp_path))(x.clone())
    y = x.clone()
    before = dict(aotcheck.counters)
    out = aotcheck.aot_function(call(in_place), cache=str(tmp_path))(y)
    assert aotcheck.counters["misses"] == before["misses"] + 1
    assert out is y and torch.equal(y, torch.relu(x))

class _Opaque:
    __slots__ = ()


def test_unfingerprintable_value_falls_back_to_the_traced_key_and_explain_says_why(tmp_path, capsys):
    lock = threading.Lock()

    def f(x):
        with lock:
            return x.sin()
    with pytest.raises(Unfingerprintable, match=r"closure\[lock\].*no stable fingerprint"):
        fingerprint(f)
    cf = aotcheck.aot_function(f, cache=tmp_path)
    x = torch.randn(3)
    assert torch.equal(cf(x), x.sin())
    (key,) = Cache(tmp_path).keys()
    comps = Cache(tmp_path).read(key, "entry.json")["components"]
    assert "graph" in comps and "closure[lock]" in comps["fallback"]
    from aotcheck.cli import main
    assert main(["cache", "--dir", str(tmp_path), "explain", key[:8]]) == 0
    out = capsys.readouterr().out
    assert "traced key (no trace-free fingerprint)" in out and "closure[lock]" in out
    aotcheck.reset_counters()
    assert torch.equal(aotcheck.aot_function(f, cache=tmp_path)(x), x.sin())     # the traced key hits
    assert aotcheck.counters["hits"] == 1


def test_a_traced_key_is_captured_once_and_that_capture_handed_to_the_pipeline(tmp_path, monkeypatch):
    """NOTE [one capture per call] (cache/key.py): under the traced key, a miss traces the
    function once, in the compiled function, and the key, the lookup and the pipeline share
    that capture; the cache layer makes none of its own."""
    from aotcheck import compiled
    from aotcheck.cache import key as key_mod
    from aotcheck.engine import pipeline
    from aotcheck.engine.capture.trace import capture

    made = []

    def counted(where):
        def run(*args, **kwargs):
            made.append(where)
            return capture(*args, **kwargs)
        return run
    for mod, where in ((compiled, "compiled"), (pipeline, "pipeline"), (key_mod, "cache")):
        monkeypatch.setattr(mod, "capture", counted(where))
    lock = threading.Lock()

    def f(x):
        with lock:
            return x.sin() * 2
    x = torch.randn(3, requires_grad=True)
    out = aotcheck.aot_function(f, cache=tmp_path)(x)
    out.sum().backward()
    assert made == ["compiled"]
    torch.testing.assert_close(x.grad, 2 * x.detach().cos())
    made.clear()
    aotcheck.reset_counters()
    y = x.detach().clone().requires_grad_()
    aotcheck.aot_function(f, cache=tmp_path)(y).sum().backward()     # a hit: the key's capture only
    assert made == ["compiled"] and aotcheck.counters["hits"] == 1
    torch.testing.assert_close(y.grad, x.grad)


@pytest.mark.parametrize("nested", ["engine/rng/seeding.py", "engine/capture/functional_run.py",
                                    "engine/runtime/artifact.py", "engine/partition/mincut.py"])
def test_engine_source_hash_covers_nested_engine_modules(monkeypatch, nested):
    """An edit to a module in an engine subpackage changes the cache key's engine_source:
    the hash walks the engine's folders recursively, not its top folder alone."""
    from pathlib import Path

    from aotcheck.cache import key as key_mod

    monkeypatch.setattr(key_mod, "_SOURCE_HASH", None)
    before = key_mod.engine_source_hash()
    target = (Path(key_mod.__file__).resolve().parent.parent / nested).resolve()
    assert target.is_file()
    real_read = Path.read_bytes

    def edited(self):
        data = real_read(self)
        return data + b"\n# edited\n" if self.resolve() == target else data

    monkeypatch.setattr(Path, "read_bytes", edited)
    monkeypatch.setattr(key_mod, "_SOURCE_HASH", None)
    after = key_mod.engine_source_hash()
    assert after != before
    monkeypatch.setattr(Path, "read_bytes", real_read)
    monkeypatch.setattr(key_mod, "_SOURCE_HASH", None)
    assert key_mod.engine_source_hash() == before


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_each_devices_autocast_is_in_both_keys(tmp_path, device):
    """A graph traced under one device type's autocast holds its casts; the persistent key
    (torch_state) and the in-memory one (ambient.call_state) carry every device type's
    autocast state, not only the CPU's. CUDA's flag is set directly (torch.autocast("cuda")
    turns itself off on a build without CUDA), so this runs on a CPU machine too."""
    from aotcheck.cache.ambient import call_state as torch_mode
    base, mode = _k(), torch_mode()
    calls = []

    def f(x):
        calls.append(1)
        return x.sin()

    compiled = aotcheck.aot_function(f, cache=str(tmp_path))
    compiled(torch.randn(3))
    traced = len(calls)
    old = torch.is_autocast_enabled(device)
    torch.set_autocast_enabled(device, True)
    try:
        assert _k() != base and torch_mode() != mode
        compiled(torch.randn(3))
        assert len(calls) > traced          # traced again: neither key served the entry
    finally:
        torch.set_autocast_enabled(device, old)
    assert _k() == base and torch_mode() == mode


def _double_then_square(x):
    x.mul_(2)
    return x * x


def test_an_argument_the_caller_retains_is_a_key_component(tmp_path):
    """NOTE [an argument the caller retains]: ``x.retain_grad()`` before the call changes
    what the compiled function computes (its own part of x's retained gradient), so the
    same shapes with and without it compile apart, in memory and in the persistent cache;
    each gives eager's x.grad (the retained one was the caller's part only, silently)."""
    from aotcheck.cache import Cache

    def run(fn, retain):
        torch.manual_seed(0)
        leaf = torch.randn(3, requires_grad=True)
        x = leaf * 1.0
        if retain:
            x.retain_grad()
        out = fn(x)
        (out.sum() + (x * 3).sum()).backward()
        return x.grad, leaf.grad

    cf = aotcheck.aot_function(_double_then_square, cache=Cache(tmp_path / "c"))
    for retain in (False, True, False, True):
        got, want = run(cf, retain), run(_double_then_square, retain)
        for g, w in zip(got, want):
            assert (g is None) == (w is None) and (g is None or torch.allclose(g, w)), retain
    assert cf.num_compiled == 2
    fresh = aotcheck.aot_function(_double_then_square, cache=Cache(tmp_path / "c", expect_hits=True))
    for retain in (True, False):       # both entries hit, each its own
        got, want = run(fresh, retain), run(_double_then_square, retain)
        assert torch.allclose(got[1], want[1]) and (got[0] is None) == (want[0] is None)

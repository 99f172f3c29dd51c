"""The census of torch's global settings (aotcheck/cache/census.py) and the key's reads of it
(aotcheck/cache/ambient.py).

- the census names every global setter of the installed torch (a new torch's setter fails
  here until a record decides it), and its records are consistent;
- every setting in the key, varied over its domain, changes the persistent key and the
  per-call state, misses in memory and on disk, and the call equals eager's;
- the ambient autocast dtype (autocast off at the call): eager's dtype cold and cached, in
  memory and across processes over one cache directory, in both orders;
- mode stacks and global module hooks; ``cache explain`` and triage name the setting;
- (``-m slow``) tools/ambient_probe.py agrees with every record that cites it.
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
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import aotcheck
from aotcheck.cache import Cache, compute_key
from aotcheck.cache import ambient
from aotcheck.cache.ambient import call_state, torch_state
from aotcheck.cache.census import PROBE_MARK, Role, Setting, census, exists, resolves, unlisted_setters, varied

KEYED = [(s.name, v) for s in census() if s.role is Role.KEY and s.domain and exists(s) for v in s.domain]
_BY_NAME = {s.name: s for s in census()}


def _double_sin(x):
    return x.sin() * 2


# ---------------------------------------------------------------- the census itself


def test_the_census_names_every_global_setter_of_the_installed_torch():
    """Scope: aotcheck/cache/census.py's docstring (torch.set_*/use_*, torch._C._set_*,
    torch.backends.*, autograd, __future__, checkpoint, deterministic, global module hooks).
    A setter listed here is new in this torch: add a record that decides it (in the key, with
    the probe's evidence, or out of it, with why it cannot change a graph)."""
    assert unlisted_setters() == []


def test_every_record_reads_on_a_build_that_has_it():
    """A record whose setters exist on this torch reads here (no misspelt reader); one whose
    setters are all absent is a setting of another release (sdp_fa4 before 2.15)."""
    for s in census():
        if any(resolves(n) for n in s.setters if n.startswith("torch._C.") or s.read is None):
            assert exists(s), s.name
        if s.role is not Role.OUT:
            assert s.read is not None, s.name


def test_a_record_citing_the_probe_can_be_varied_and_a_record_says_why():
    for s in census():
        if PROBE_MARK.search(s.why):
            assert s.write and s.domain, f"{s.name} cites the probe but has no domain to probe it over"
    with pytest.raises(ValueError, match="why"):
        Setting("x", Role.OUT, "")
    with pytest.raises(ValueError, match="reader"):
        Setting("x", Role.KEY, "it changes graphs")
    with pytest.raises(ValueError, match="together"):
        Setting("x", Role.KEY, "it changes graphs", read="torch.get_default_dtype()", domain=("1",))


def test_torch_state_holds_every_setting_in_the_key_with_autocast_off():
    state = torch_state()
    for d in ambient.autocast_devices():
        assert f"autocast_dtype[{d}]" in state and f"autocast_enabled[{d}]" in state
    assert state["autocast_dtype[cpu]"] == str(torch.get_autocast_dtype("cpu"))
    assert {s.name for s in ambient.in_key()} | {"python"} == set(state)


# ---------------------------------------------------------------- each setting in the key


@pytest.mark.parametrize("name,value", KEYED, ids=[f"{n}={v}" for n, v in KEYED])
def test_a_setting_in_the_key_misses_in_memory_and_on_disk(tmp_path, name, value):
    """Compiled and saved under the settings as they are; under the varied value both keys
    differ, a new aot_function over the directory misses, the first one compiles again (in
    a process where the setting can matter: ``accelerator_only``), and each result is eager's."""
    s = _BY_NAME[name]
    x = torch.randn(3)
    base_key, base_state, base_call = compute_key(_double_sin, (x,))[0], torch_state(), call_state()
    first = aotcheck.aot_function(_double_sin, cache=str(tmp_path))
    first(x)
    in_memory = not s.accelerator_only or bool(ambient.ACCELERATORS)
    with varied(s, value):
        assert torch_state()[name] != base_state[name]
        assert compute_key(_double_sin, (x,))[0] != base_key
        assert (call_state() != base_call) or not in_memory
        before = dict(aotcheck.counters)
        torch.testing.assert_close(aotcheck.aot_function(_double_sin, cache=str(tmp_path))(x), _double_sin(x))
        assert aotcheck.counters["misses"] == before["misses"] + 1, name
        torch.testing.assert_close(first(x), _double_sin(x))
        assert first.num_compiled == 2 or not in_memory
    assert (torch_state(), call_state()) == (base_state, base_call)      # put back


def test_an_accelerator_process_reads_the_accelerator_settings(monkeypatch):
    """A setting that only changes graphs on an accelerator is read per call where one is
    live; planted here, as a process with CUDA would see it."""
    monkeypatch.setattr(ambient, "ACCELERATORS", ("cuda",))
    monkeypatch.setattr(ambient, "_AUTOCAST_LIVE", ("cpu", "cuda"))
    needy = [s for s in census() if s.accelerator_only and s.domain and exists(s)
             and not (s.name.startswith("autocast_") and not s.name.endswith("[cuda]"))]
    assert {"autocast_dtype[cuda]", "cudnn_enabled", "sdp_mem_efficient"} <= {s.name for s in needy}
    for s in needy:
        base = call_state()
        with varied(s, s.domain[0]):
            assert call_state() != base, s.name


# ---------------------------------------------------------------- the ambient autocast dtype


def _autocast_matmul(x, w):
    with torch.autocast("cpu"):
        return x @ w


def test_ambient_autocast_dtype_in_memory():
    """Autocast is off at every call; the function enters it without a dtype, so it casts to
    the per-device dtype set last. Before the fix the second call got the first's graph."""
    x, w = torch.randn(3, 3), torch.randn(3, 3)
    compiled = aotcheck.aot_function(_autocast_matmul)
    old = torch.get_autocast_dtype("cpu")
    try:
        for dtype in (torch.bfloat16, torch.float16, torch.bfloat16):
            torch.set_autocast_dtype("cpu", dtype)
            assert compiled(x, w).dtype == _autocast_matmul(x, w).dtype == dtype
        assert compiled.num_compiled == 2
    finally:
        torch.set_autocast_dtype("cpu", old)


AUTOCAST_WORKER = textwrap.dedent('''
    import json, sys
    import torch
    import aotcheck

    def f(x, w):
        with torch.autocast("cpu"):
            return x @ w

    torch.set_autocast_dtype("cpu", getattr(torch, sys.argv[2]))
    x, w = torch.randn(3, 3), torch.randn(3, 3)
    before = dict(aotcheck.counters)
    out = aotcheck.aot_function(f, cache=sys.argv[1])(x, w)
    print(json.dumps({"compiled": str(out.dtype), "eager": str(f(x, w).dtype),
                      "hits": aotcheck.counters["hits"] - before.get("hits", 0),
                      "misses": aotcheck.counters["misses"] - before.get("misses", 0)}))
''')


def test_ambient_autocast_dtype_across_processes(tmp_path):
    """One cache directory, a new process per call: each dtype misses once, then hits its own
    entry; every result has eager's dtype (before the fix the float16 process was served the
    bfloat16 entry, and the reverse)."""
    script = tmp_path / "worker.py"
    script.write_text(AUTOCAST_WORKER)
    seen = []
    for dtype in ("bfloat16", "float16", "bfloat16", "float16"):
        r = subprocess.run([sys.executable, str(script), str(tmp_path / "cache"), dtype],
                           capture_output=True, text=True, timeout=300, env=dict(os.environ))
        assert r.returncode == 0, r.stderr[-3000:]
        seen.append(json.loads(r.stdout.strip().splitlines()[-1]))
    assert [(s["compiled"], s["eager"]) for s in seen] == [(f"torch.{d}",) * 2 for d in
                                                           ("bfloat16", "float16", "bfloat16", "float16")]
    assert [(s["hits"], s["misses"]) for s in seen] == [(0, 1), (0, 1), (1, 0), (1, 0)]


# ---------------------------------------------------------------- modes and hooks


class _SinIsCos(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        func = torch.cos if func in (torch.sin, torch.Tensor.sin) else func
        return func(*args, **(kwargs or {}))


class _Counting(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.label = "counting"

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def test_a_function_mode_is_in_both_keys(tmp_path):
    """The trace runs under the caller's TorchFunctionMode (sin traced as cos): a graph from
    under one must not serve a call outside it, nor the reverse; a fresh ``with`` of an equal
    mode hits."""
    x = torch.randn(4)
    compiled = aotcheck.aot_function(_double_sin, cache=str(tmp_path))
    outside_key, outside_call = compute_key(_double_sin, (x,))[0], call_state()
    torch.testing.assert_close(compiled(x), _double_sin(x))
    for _ in range(2):
        with _SinIsCos():
            assert compute_key(_double_sin, (x,))[0] != outside_key and call_state() != outside_call
            torch.testing.assert_close(compiled(x), x.cos() * 2)
    assert compiled.num_compiled == 2
    torch.testing.assert_close(compiled(x), _double_sin(x))
    assert torch_state()["function_modes"] == []


def test_a_dispatch_mode_and_the_default_device_are_in_both_keys():
    x = torch.randn(4)
    key, state = compute_key(_double_sin, (x,))[0], call_state()
    with _Counting():
        assert compute_key(_double_sin, (x,))[0] != key and call_state() != state
        assert torch_state()["dispatch_modes"][0][0].endswith("_Counting")
    torch.set_default_device("meta")
    try:
        assert torch_state()["default_device"] == "meta"
        assert torch_state()["function_modes"] == [["torch.utils._device.DeviceContext", "meta"]]
        assert compute_key(_double_sin, (x,))[0] != key and call_state() != state
    finally:
        torch.set_default_device(None)


def _zeros_like_default(x):
    return torch.zeros(3) + x.sum().item()


def test_the_default_device_reaches_factory_calls_cold_and_after_a_hit():
    x = torch.randn(2)
    compiled = aotcheck.aot_function(_zeros_like_default)
    assert compiled(x).device.type == "cpu"
    torch.set_default_device("meta")
    try:
        assert compiled(x).device.type == _zeros_like_default(x).device.type == "meta"
    finally:
        torch.set_default_device(None)
    assert compiled(x).device.type == "cpu" and compiled.num_compiled == 2


class _Locked(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def test_a_mode_without_a_stable_fingerprint_bypasses_the_persistent_cache(tmp_path):
    x = torch.randn(3)
    with _Locked():
        before = dict(aotcheck.counters)
        torch.testing.assert_close(aotcheck.aot_function(_double_sin, cache=str(tmp_path))(x), _double_sin(x))
        assert aotcheck.counters.get("bypass.ambient_state", 0) == before.get("bypass.ambient_state", 0) + 1
    assert Cache(tmp_path).keys() == []


_LINEAR = torch.nn.Linear(3, 3)


def _linear(x):
    return _LINEAR(x)


def test_a_global_module_hook_is_in_both_keys(tmp_path):
    """nn.Module.__call__ runs global hooks inside the trace: a hook's effect is in the graph,
    so it must neither be served to calls without it nor be missing from calls with it."""
    x = torch.randn(2, 3)
    compiled = aotcheck.aot_function(_linear, cache=str(tmp_path))
    key = compute_key(_linear, (x,))[0]
    torch.testing.assert_close(compiled(x), _linear(x))
    handle = torch.nn.modules.module.register_module_forward_hook(lambda m, i, o: o * 10)
    try:
        assert compute_key(_linear, (x,))[0] != key and torch_state()["module_hooks"]
        torch.testing.assert_close(compiled(x), _linear(x))
    finally:
        handle.remove()
    torch.testing.assert_close(compiled(x), _linear(x))
    assert compiled.num_compiled == 2 and torch_state()["module_hooks"] == []


# ---------------------------------------------------------------- in words: explain, triage


def test_cache_explain_names_the_ambient_setting(tmp_path, capsys):
    from aotcheck.cli import main
    x, w = torch.randn(3, 3), torch.randn(3, 3)
    old = torch.get_autocast_dtype("cpu")
    try:
        for dtype in (torch.bfloat16, torch.float16):
            torch.set_autocast_dtype("cpu", dtype)
            aotcheck.aot_function(_autocast_matmul, cache=str(tmp_path))(x, w)
    finally:
        torch.set_autocast_dtype("cpu", old)
    keys = sorted(Cache(tmp_path).keys())
    assert len(keys) == 2
    assert main(["cache", "--dir", str(tmp_path), "explain", keys[0], keys[1]]) == 0
    out = capsys.readouterr().out
    assert "differ: torch_state" in out, out
    lines = [line for line in out.splitlines() if line.startswith("torch_state.")]
    assert lines in (["torch_state.autocast_dtype[cpu]: torch.bfloat16 -> torch.float16"],
                     ["torch_state.autocast_dtype[cpu]: torch.float16 -> torch.bfloat16"]), out


def test_triage_names_the_ambient_setting():
    from aotcheck.targets import key_triage
    from aotcheck.targets import variations as V
    subject = V.Subject.from_source("ambient.autocast_dtype", textwrap.dedent('''
        import torch

        def f(x, w):
            with torch.autocast("cpu"):
                return x @ w

        def make_inputs():
            from aotcheck.check.oracle import Inputs
            return Inputs((torch.randn(3, 3), torch.randn(3, 3)))
    '''))
    a = key_triage.call_facts(subject, None)
    with varied(_BY_NAME["autocast_dtype[cpu]"], "torch.float16 if current != torch.float16 else torch.bfloat16"):
        b = key_triage.call_facts(subject, None)
    (path, before, after), = key_triage.diff_facts(a, b)
    assert path == "torch_state.autocast_dtype[cpu]" and {before, after} == {"torch.bfloat16", "torch.float16"}
    assert key_triage.carrier("aotcheck", path) == "torch_state"
    assert key_triage.carrier("torch", path) == "autocast_state"


# ---------------------------------------------------------------- the probe's evidence


@pytest.mark.slow
def test_the_probe_agrees_with_every_record_that_cites_it(capsys):
    """tools/ambient_probe.py --check: each record in the key that cites the probe changes a
    program's graph under some value of its domain; each record out of the key that cites
    it changes none (about a minute and a half)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
    try:
        import ambient_probe
    finally:
        sys.path.pop(0)
    code = ambient_probe.main(["--check"])
    out = capsys.readouterr().out
    assert code == 0, out

"""process_state: what one fuzzed program may leave behind in the process, and the GC setting
a run uses.

``_global_state()`` reads the thread-local state a compiled call must not change (grad mode,
inference mode, the dispatch key sets); ``_leak(before)`` says what changed and puts it back,
so one program that leaks (a finding) does not poison the next. ``quiet_gc`` is
NOTE [quiet GC during a run].
"""
from __future__ import annotations

import contextlib

# NOTE [quiet GC during a run]
# Each compile allocates many short-lived Python objects; with torch's own objects (tens of
# thousands, alive for the whole run) in the tracked generations, the cyclic GC runs often and
# walks them all. ``quiet_gc`` freezes what exists when the run starts (``gc.freeze``) and raises
# the first threshold; it saved 13% of CPU time per cold+cached program (208 -> 180 ms over 60
# programs, tools/bench_fuzz.py-style loop, load average 13). Cycles are still collected.


@contextlib.contextmanager
def quiet_gc():
    import gc
    old = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()


_KEPT_GUARDS: list = []


def dispatch_key_names(keyset) -> frozenset[str]:
    import re
    return frozenset(re.findall(r"\w+", str(keyset).split("(", 1)[1]))


def _global_state() -> tuple:
    """Thread-local state a call must leave as it found it: grad mode, inference mode, and the
    dispatcher's local include and exclude key sets."""
    import torch
    return (torch.is_grad_enabled(), torch.is_inference_mode_enabled(),
            dispatch_key_names(torch._C._dispatch_tls_local_include_set()),
            dispatch_key_names(torch._C._dispatch_tls_local_exclude_set()))


def restore_global_state(state: tuple) -> None:
    """Put it back (a compiled call that raised inside a region or a dispatcher mode can leave
    it changed; eager's ``with`` blocks never do)."""
    import torch
    grad, inference, include, exclude = state
    if torch.is_inference_mode_enabled() != inference:
        # no public setter: enter a guard for the old mode and keep it alive (the guard puts
        # the mode it found back when it is destroyed)
        guard = torch._C._InferenceMode(inference)
        guard.__enter__()
        _KEPT_GUARDS.append(guard)
    now = _global_state()
    for name in now[2] ^ include:
        torch._C._dispatch_tls_set_dispatch_key_included(getattr(torch._C.DispatchKey, name),
                                                         name in include)
    for name in now[3] ^ exclude:
        torch._C._dispatch_tls_set_dispatch_key_excluded(getattr(torch._C.DispatchKey, name),
                                                         name in exclude)
    torch.set_grad_enabled(grad)


def _leak(before: tuple) -> str:
    after = _global_state()
    if after == before:
        return ""
    # A compile that failed inside a region can leave its RAII guards in reference cycles
    # (held by the traceback); when the cyclic GC destroys them later, each puts back the
    # thread-local state it saw, which corrupts the dispatcher's state at a random later
    # point ("Hit PythonDispatcher dispatch key but PythonDispatcherTLS was not set"). So
    # collect them now, then put back whatever is still changed.
    import gc
    gc.collect()
    restore_global_state(before)
    out = []
    for name, b, a in zip(("grad mode", "inference mode"), before, after):
        if a != b:
            out.append(f"{name} {'on' if b else 'off'} before the call, {'on' if a else 'off'} after")
    for name, b, a in zip(("dispatch keys included", "dispatch keys excluded"), before[2:], after[2:]):
        if a != b:
            out.append(f"{name}: +{sorted(a - b)} -{sorted(b - a)}")
    return "; ".join(out)

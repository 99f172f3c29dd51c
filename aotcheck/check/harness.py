"""Helpers for test suites: class-level expected failures, and corpus runs through the cache.

``xfail_inherited`` marks tests that a subclass *inherits* as expected
failures, without touching the base class::

    class TestCold:                       # one test per corpus case
        def test_a(self): ...
        def test_b(self): ...

    @xfail_inherited({"test_b": "entry cannot be cached: constant too large"})
    class TestCached(TestCold):           # test_a must pass, test_b must fail
        ...

    class TestCachedStrict(TestCached):   # inherits the mark on test_b
        ...

The function is *copied* before it is marked, so ``TestCold.test_b`` stays
unmarked. Marks are strict: a test that unexpectedly passes fails the run.
On a ``unittest.TestCase`` the copy is wrapped in ``unittest.expectedFailure``
(the unittest runner and pytest both honour it); on a plain pytest class it
gets ``pytest.mark.xfail(strict=True)``. Method-level decorators cannot do
this, because the method lives in the base class (PyTorch's
``xfail_inherited_tests`` exists for the same reason).
"""
from __future__ import annotations

import contextlib
import functools
import types
import unittest
from dataclasses import dataclass, replace

import torch

from .. import cache as _cache
from ..cache.serialize import OPAQUE_OP_BYPASS


def _copy_function(f: types.FunctionType) -> types.FunctionType:
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
    g.__kwdefaults__ = dict(f.__kwdefaults__) if f.__kwdefaults__ else None
    g.__dict__.update({k: (list(v) if isinstance(v, list) else v) for k, v in f.__dict__.items()})
    g.__qualname__, g.__doc__, g.__module__ = f.__qualname__, f.__doc__, f.__module__
    g.__annotations__ = dict(getattr(f, "__annotations__", {}))
    return g


def xfail_inherited(failures: dict[str, str]):
    """Class decorator: mark the named (usually inherited) test methods as strict expected
    failures on this class and its subclasses only. Each value is the reason."""

    def deco(cls):
        unittest_style = isinstance(cls, type) and issubclass(cls, unittest.TestCase)
        for name, reason in failures.items():
            f = getattr(cls, name, None)
            if not isinstance(f, types.FunctionType):
                raise AttributeError(f"xfail_inherited on {cls.__name__}: no test method {name!r} "
                                     "(a typo, or a case that was renamed)")
            g = _copy_function(f)
            if unittest_style:
                g = unittest.expectedFailure(g)
            else:
                import pytest
                g = pytest.mark.xfail(strict=True, reason=reason)(g)
            g.__aotcheck_xfail__ = reason
            setattr(cls, name, g)
        cls.__aotcheck_xfails__ = {**getattr(cls, "__aotcheck_xfails__", {}), **failures}
        return cls
    return deco


# ---------------------------------------------------------------- corpus runs


def call_mode(case):
    """The grad mode a corpus case is called in (a fresh context manager)."""
    from .corpus import CallMode
    return {CallMode.INFERENCE_MODE: torch.inference_mode, CallMode.NO_GRAD: torch.no_grad,
            CallMode.SAVED_TENSORS_HOOKS: saved_tensors_doubled,
            CallMode.AUTOCAST: lambda: torch.autocast("cpu", dtype=torch.bfloat16),
            CallMode.GRAD: contextlib.nullcontext}[getattr(case, "call", CallMode.GRAD)]()


def saved_tensors_doubled():
    """``saved_tensors_hooks`` whose unpack doubles every saved tensor (the call mode
    ``CallMode.SAVED_TENSORS_HOOKS``): a compiled function that saves around the hooks, or
    unpacks before them, gets other gradients than eager's."""
    return torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t * 2)


def in_call_mode(case, fn):
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with call_mode(case):
            return fn(*args, **kwargs)
    return wrapped


def check_case(case, compiled, **kw):
    """The oracle on one case (in its call mode): one comparison, or, for a case with
    ``states``, one per state in turn through the same ``compiled`` (its divergences
    prefixed by the state), then the first state restored."""
    from .oracle import Report, check
    kw.setdefault("backward", case.backward)
    kw.setdefault("backward_pass", case.backward_pass)
    if not case.states:
        return check(in_call_mode(case, case.fn), in_call_mode(case, compiled), case.make_inputs, **kw)
    d = []
    try:
        for k, set_state in enumerate(case.states):
            set_state()
            r = check(in_call_mode(case, case.fn), in_call_mode(case, compiled), case.make_inputs, **kw)
            d += [replace(x, state=k) for x in r.divergences]
    finally:
        case.states[0]()
    return Report(d, str(d[0]).split(":")[1].strip() if d else "")


@dataclass
class Run:
    report: object            # oracle.Report
    counters: dict            # the cache counters this run added


def run_case(case, cache_dir=None, *, expect_hits: bool = False) -> Run:
    """Compile ``case`` with a fresh aot_function (optionally through ``cache_dir``), run it
    (forward, plus backward unless the case says otherwise) and compare with eager."""
    from ..api import aot_function
    cache = None if cache_dir is None else _cache.Cache(cache_dir, expect_hits=expect_hits)
    compiled = aot_function(case.fn, cache=cache)
    before = dict(_cache.counters)
    report = check_case(case, compiled)
    delta = {k: v - before.get(k, 0) for k, v in _cache.counters.items() if v != before.get(k, 0)}
    return Run(report, delta)


# NOTE [a custom op the cache does not hold]
# A graph that calls a custom operator as an opaque node (one that does not write its
# arguments: its kernel runs at call time, its autograd formula and fake kernel were traced)
# is never written to the persistent cache (``cache/serialize.py``: a target outside aten and
# prims is uncacheable), so a registration that differs in another process cannot be served
# stale. For a case tagged ``custom_op`` whose only bypass is that one, the cached run must
# bypass again, hit nothing, and equal eager.
def check_cold_then_cached(case, cache_dir, *, strict: bool = False) -> tuple[Run, Run]:
    """The cache round trip for one case: a cold run that fills ``cache_dir`` (forward and
    backward, so the lazy backward is saved), then a cached run by a fresh aot_function that
    must hit the forward and, where the cold run saved one, the backward. Both must equal eager.
    ``strict``: the cached run raises CacheError at the first miss or bypass."""
    cold = run_case(case, cache_dir)
    assert cold.report.ok, f"{case.id} (cold) differs from eager:\n  " + \
        "\n  ".join(cold.report.messages)
    bypassed = sorted(k for k in cold.counters if k.startswith("bypass."))
    opaque = "custom_op" in case.tags and bypassed == [OPAQUE_OP_BYPASS]
    assert not bypassed or opaque, f"{case.id}: uncacheable ({', '.join(bypassed)}), nothing to hit"
    cached = run_case(case, cache_dir, expect_hits=strict and not opaque)
    assert cached.report.ok, f"{case.id} (cached) differs from eager:\n  " + \
        "\n  ".join(cached.report.messages)
    if opaque:          # NOTE [a custom op the cache does not hold]
        assert cached.counters.get("bypasses") and not cached.counters.get("hits"), \
            f"{case.id}: a graph calling an opaque custom op was served from the cache: {cached.counters}"
        return cold, cached
    c = cached.counters
    assert c.get("hits", 0) >= 1 and not c.get("misses") and not c.get("bypasses"), \
        f"{case.id}: expected a forward hit, counters {c}"
    if cold.counters.get("backward_saves"):
        assert c.get("backward_hits", 0) >= 1 and not c.get("backward_misses"), \
            f"{case.id}: expected a backward hit, counters {c}"
    assert not c.get("corrupt"), f"{case.id}: corrupt entries: {c}"
    return cold, cached

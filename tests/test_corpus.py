"""The corpus, compiled with aotcheck and compared with eager through the oracle.

Per case: forward (plus backward unless the case says otherwise) must match
eager, and ``explain`` must pin the case's expected inference-or-training mode.
Cases tagged ``no_grad_call`` or ``inference_mode_call`` are called, in eager
and compiled alike, inside ``torch.no_grad()`` or ``torch.inference_mode()``.
"""
from __future__ import annotations

import collections

import pytest
import torch

import aotcheck
from aotcheck.check.corpus import THEMES, all_cases
from aotcheck.check.harness import call_mode, check_case

CASES = all_cases()
MIN_CASES, MIN_PER_THEME = 130, 6


def _param(c):
    marks = [pytest.mark.xfail(strict=True, reason=c.xfail)] if c.xfail else []
    return pytest.param(c, id=c.id, marks=marks)


PARAMS = [_param(c) for c in CASES]


@pytest.mark.parametrize("c", PARAMS)
def test_matches_eager(c):
    report = check_case(c, aotcheck.aot_function(c.fn))
    assert report.ok, f"{c.id} differs from eager:\n  " + "\n  ".join(report.messages)


@pytest.mark.parametrize("c", [pytest.param(c, id=c.id) for c in CASES])
def test_decision(c):
    """The expected mode. A case that aotcheck's engine is known to get wrong (``xfail``) may
    fail before it decides (explain raises): that is the known failure, not a wrong mode."""
    torch.manual_seed(0)
    inputs = c.make_inputs()
    try:
        with call_mode(c):
            ex = aotcheck.explain(c.fn, *inputs.args, print_result=False, **inputs.kwargs)
    except Exception as e:  # noqa: BLE001 - only a known failure may raise here
        if not c.xfail:
            raise
        pytest.xfail(f"{c.xfail} (explain raised {type(e).__name__})")
    decision = ex.stages.decision
    assert decision.mode == c.mode, f"{c.id}: decided {decision.mode} ({decision.reason})"


def test_corpus_size():
    counts = collections.Counter(c.theme for c in CASES)
    assert len(CASES) >= MIN_CASES, f"{len(CASES)} cases, want at least {MIN_CASES}"
    thin = {t: counts[t] for t in THEMES if t != "regressions" and counts[t] < MIN_PER_THEME}
    assert not thin, f"themes with fewer than {MIN_PER_THEME} cases: {thin}"


def test_case_ids_unique():
    dup = [i for i, n in collections.Counter(c.id for c in CASES).items() if n > 1]
    assert not dup, f"duplicate case ids: {dup}"


def _plain_tensors(inputs) -> list:
    """The tensors of a case's inputs, with wrapper subclasses (no storage of their own)
    replaced by their inner tensors, recursively."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass
    out, todo = [], [t for t in torch.utils._pytree.tree_leaves((inputs.args, inputs.kwargs))
                     if isinstance(t, torch.Tensor)]
    while todo:
        t = todo.pop(0)
        if is_traceable_wrapper_subclass(t):
            todo[:0] = [getattr(t, name) for name in t.__tensor_flatten__()[0]]
        else:
            out.append(t)
    return out


def test_make_inputs_is_deterministic_and_fresh():
    for c in CASES:
        a, b = c.make_inputs(), c.make_inputs()
        ta, tb = _plain_tensors(a), _plain_tensors(b)
        assert len(ta) == len(tb), c.id
        for x, y in zip(ta, tb):
            # a storage resized to zero bytes has no memory: nothing to share, nothing to read
            freed = x.untyped_storage().nbytes() == 0
            assert x is not y and (x.numel() == 0 or freed or x.untyped_storage().data_ptr()
                                   != y.untyped_storage().data_ptr()), f"{c.id}: make_inputs reuses a tensor"
            if freed:
                assert y.untyped_storage().nbytes() == 0, f"{c.id}: make_inputs is not deterministic"
                continue
            assert torch.equal(x.detach(), y.detach()), f"{c.id}: make_inputs is not deterministic"

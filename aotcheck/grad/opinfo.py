"""opinfo: which OpInfos the suite runs, PyTorch's own verdicts on them, and their cases.

    select_ops(names)      OpInfos that support autograd on CPU in float64
    pytorch_verdicts(op)   PyTorch's own skips and xfails for gradient tests, with their reasons
                           (NOTE [Honouring PyTorch's skips] in ops_suite.py)
    make_cases(op, ...)    one Case per sample and variant: fn over the sample's tensors
                           (non-tensor arguments baked in), variants "fn" and "inplace"
"""
from __future__ import annotations

import unittest
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any, Callable, Sequence

import torch
from torch.utils import _pytree as pytree

DTYPE = torch.float64
_GRAD_CLASSES = ("TestBwdGradients", "TestGradients")
_AOT_CLASSES = ("TestEagerFusionOpInfo",)
_NUMERICAL_TESTS = {"fn": "test_fn_grad", "inplace": "test_inplace_grad"}


# ----------------------------------------------------------------------------------------------
# Which ops.
# ----------------------------------------------------------------------------------------------


def op_id(op) -> str:
    """``div.trunc_rounding``: the OpInfo's name and variant (what ``--op`` matches)."""
    return op.full_name


def select_ops(names: Sequence[str] = (), limit: int | None = None) -> list:
    """OpInfos that support autograd on CPU in float64; ``names`` match ``name`` or ``name.variant``."""
    from torch.testing._internal.common_methods_invocations import op_db
    ops = [o for o in op_db if o.supports_autograd and DTYPE in o.supported_backward_dtypes("cpu")
           and DTYPE in o.supported_dtypes("cpu")]
    if names:
        wanted = set(names)
        ops = [o for o in ops if o.name in wanted or op_id(o) in wanted]
        missing = wanted - {o.name for o in ops} - {op_id(o) for o in ops}
        if missing:
            raise ValueError(f"no differentiable CPU float64 OpInfo named {sorted(missing)}")
    return ops[:limit] if limit is not None else ops


# ----------------------------------------------------------------------------------------------
# PyTorch's skips and xfails.
# ----------------------------------------------------------------------------------------------


class VerdictKind(StrEnum):
    """What PyTorch's decorator does to the tests it covers (``Verdict.describe`` prints the value)."""
    SKIP = "skip"          # unittest skip: the case is not run
    XFAIL = "xfail"        # unittest.expectedFailure: a failure is expected


class Scope(Enum):
    """Which checks a PyTorch verdict covers; each covers the ones after it too (``_verdict_for``)."""
    OP = "op"                  # every test of the op
    BACKWARD = "backward"      # the gradient tests (TestBwdGradients, TestFwdGradients)
    NUMERICAL = "numerical"    # gradcheck of one variant (test_fn_grad, test_inplace_grad)


@dataclass(frozen=True)
class Verdict:
    """A PyTorch skip or xfail over a scope; ``variant`` is None for every variant."""
    kind: VerdictKind
    scope: Scope
    reason: str
    variant: str | None = None
    source: str = ""   # "TestBwdGradients.test_fn_grad"

    def describe(self) -> str:
        return f"pytorch {self.kind}: {self.reason} ({self.source})"


def pytorch_verdicts(op) -> list[Verdict]:
    """The gradient-related skips and xfails active for CPU float64 (see NOTE [Honouring PyTorch's skips])."""
    from torch.testing._internal.opinfo.core import DecorateInfo
    out = []
    for info in op.decorators:
        if not isinstance(info, DecorateInfo):
            continue
        where = _scope(info.cls_name, info.test_name)
        if where is None or not _active(info):
            continue
        scope, variant = where
        for dec in info.decorators:
            kind, reason = _decorator_kind(dec)
            if kind:
                source = ".".join(x for x in (info.cls_name, info.test_name) if x) or "every test"
                out.append(Verdict(kind, scope, reason, variant, source))
    return out


def _scope(cls_name, test_name):
    if cls_name is None and test_name is None:
        return Scope.OP, None
    if cls_name in _AOT_CLASSES and test_name in (None, "test_aot_autograd_exhaustive"):
        return Scope.OP, None
    if cls_name in _GRAD_CLASSES or cls_name is None:
        if test_name is None and cls_name is not None:
            return Scope.BACKWARD, None
        for variant, name in _NUMERICAL_TESTS.items():
            if test_name == name:
                return Scope.NUMERICAL, variant
    return None


def _active(info) -> bool:
    if info.device_type not in (None, "cpu") or (info.dtypes is not None and DTYPE not in info.dtypes):
        return False
    try:
        return bool(info.active_if({}) if callable(info.active_if) else info.active_if)
    except Exception:  # noqa: BLE001 - a condition on test parameters we do not have
        return False


def _decorator_kind(dec) -> tuple[VerdictKind | None, str]:
    def probe(self):
        pass
    try:
        wrapped = dec(probe)
    except Exception:  # noqa: BLE001 - e.g. a decorator that needs a test class
        return None, ""
    if getattr(wrapped, "__unittest_skip__", False):
        return VerdictKind.SKIP, getattr(wrapped, "__unittest_skip_why__", "") or "no reason given"
    if getattr(wrapped, "__unittest_expecting_failure__", False) or dec is unittest.expectedFailure:
        return VerdictKind.XFAIL, "expected failure"
    return None, ""


def _verdict_for(verdicts: Sequence[Verdict], scope: Scope, variant: str) -> Verdict | None:
    """The first verdict that covers ``scope`` for ``variant``; skips win over xfails."""
    covering = list(Scope)[:list(Scope).index(scope) + 1]
    hits = [v for v in verdicts if v.scope in covering and v.variant in (None, variant)]
    hits.sort(key=lambda v: v.kind is not VerdictKind.SKIP)
    return hits[0] if hits else None


# ----------------------------------------------------------------------------------------------
# Cases: a function over a sample's tensors.
# ----------------------------------------------------------------------------------------------


@dataclass
class Case:
    """One sample of one variant, ready to call: ``fn(*args)``; the args are the sample's tensors."""
    op: str
    variant: str            # "fn" or "inplace"
    index: int              # the sample's position in op.sample_inputs
    fn: Callable[..., Any]
    args: tuple
    names: tuple[str, ...]
    description: str = ""


def make_cases(op, samples: str = "first", index: int | None = None,
               variants: Sequence[str] = ("fn", "inplace")) -> list[Case]:
    """Cases for ``op``'s samples ("first" or "all", or just sample ``index``) and variants.

    The in-place variant gets the same samples, less those that broadcast their input (as in
    PyTorch's test_inplace_grad); its first tensor is passed as a non-leaf, and the variant
    mutates it.
    """
    it = op.sample_inputs("cpu", DTYPE, requires_grad=True)
    chosen = []
    for k, sample in enumerate(it):
        if index is not None and k != index:
            continue
        chosen.append((k, sample))
        if samples == "first" and index is None:
            break
    cases = []
    for variant in variants:
        func = op.op if variant == "fn" else op.inplace_variant
        if func is None:
            continue
        for k, sample in chosen:
            if variant == "inplace" and getattr(sample, "broadcasts_input", False):
                continue
            cases.append(_case(op, variant, func, k, sample))
    return cases


def _case(op, variant: str, func, k: int, sample) -> Case:
    leaves, spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    slots = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]
    post = sample.output_process_fn_grad
    wrapper = op.gradcheck_wrapper

    def fn(*tensors):
        filled = list(leaves)
        for i, t in zip(slots, tensors):
            filled[i] = t
        inp, args, kwargs = pytree.tree_unflatten(filled, spec)
        return _realify(post(wrapper(func, inp, *args, **kwargs)))

    names = tuple(f"tensor {n} ({_path(spec, i)})" for n, i in enumerate(slots))
    args = tuple(leaves[i].detach().clone().requires_grad_(leaves[i].requires_grad) for i in slots)
    desc = getattr(sample, "name", "") or ""
    return Case(op_id(op), variant, k, fn, args, names, desc)


def _path(spec, flat_index: int) -> str:
    """``input``, ``args[1]`` or ``kwargs``: where a flattened leaf came from."""
    sizes = [c.num_leaves for c in spec.children()]
    where = ("input", "args", "kwargs")
    for w, n in zip(where, sizes):
        if flat_index < n:
            return w if w == "input" and n == 1 else f"{w}[{flat_index}]"
        flat_index -= n
    return "?"


def _realify(out):
    """Complex tensor outputs as real views (see NOTE [What the checks compare])."""
    return pytree.tree_map(
        lambda t: torch.view_as_real(t.resolve_conj()) if isinstance(t, torch.Tensor) and t.is_complex()
        else t, out)


def _seeded(f: Callable) -> Callable:
    def call(*args):
        torch.manual_seed(0)
        return f(*args)
    return call

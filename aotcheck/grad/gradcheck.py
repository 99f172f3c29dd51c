"""Numerical checks of a backward pass: finite differences, and compiled-versus-eager gradients.

Two checks produce the same report type, a ``GradReport``:

* ``numerical_jvp_check(fn, args)`` draws one random cotangent per differentiable output, forms the
  scalar ``L = sum_i <cot_i, out_i>``, and compares the analytical gradient ``dL/dx`` (autograd through
  ``fn``, or gradients the caller supplies) with central finite differences of ``L`` in float64.
* ``compare_gradients(expected, actual)`` compares two lists of gradients element by element, for
  example compiled gradients against eager ones.
* ``compiled_vs_eager(fn, args)`` runs ``fn`` in eager and compiled (``aotcheck.aot_function`` unless
  another compiled callable is given), backpropagates the same random cotangents through both, and
  returns ``compare_gradients``'s report. ``autograd_run`` is the one call-plus-backward both use.

Every compared element is judged two ways: the ``|a - b| <= atol + rtol * |expected|`` rule, and the
mean asymmetry ``|a - b| / |a + b|`` (ggml's metric, made NaN-safe). A report is ``pass``, ``fail`` or
``vacuous``; a check that compared nothing, or only zeros against zeros, proves nothing and says so.

Before: ``torch.sin`` with a backward that returns twice the true gradient.

>>> import torch
>>> from aotcheck.grad.gradcheck import Tol, numerical_jvp_check
>>> x = torch.tensor([[0.5, -1.0, 2.0]], dtype=torch.float64, requires_grad=True)
>>> wrong_backward = lambda cots: (2 * x.detach().cos() * cots[0],)
>>> report = numerical_jvp_check(torch.sin, (x,), grads=wrong_backward, tol=Tol(asym_floor=1e-8, topk=2))

After: the report names the input, the worst elements, and why the check failed.

>>> print(report)
FAIL  numerical check (stencil 2, eps 1e-06, seed 0): 1 of 1 input failed; input 0: 3/3 elements differ (|a-b| > atol + rtol*|expected|); mean asymmetry 0.333 > asym_tol 0.0001
      tolerances: atol 1e-05, rtol 0.001, asym_tol 0.0001, asym_floor 1e-08
  FAIL  input 0 (shape (1, 3)): 3/3 elements differ (|a-b| > atol + rtol*|expected|); mean asymmetry 0.333 > asym_tol 0.0001 [mean asym 0.333, 0/0 elements 0, max abs 1.35235, max rel 1]
        worst: [0, 0] expected 1.35235 got 2.7047 (abs 1.35235, rel 1)
               [0, 2] expected 0.906696 got 1.81339 (abs 0.906696, rel 1)
>>> report.status, report.passed
('fail', False)

With the true backward the same call passes:

>>> print(numerical_jvp_check(torch.sin, (x,)).reason)
all 3 compared elements across 1 input agree
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence, Union

import torch

from .reports import (FAIL, PASS, SCHEMA_VERSION, VACUOUS, ElementReport, GradReport, InputReport,  # noqa: F401
                      Tol, _names, compare_flat, compare_gradients, summarize, unravel)

# NOTE [Why random cotangents]
# Summing the outputs (a cotangent of ones) hides whole classes of bugs: a backward that ignores its
# grad_output, or mixes up the cotangents of two same-shaped outputs, still gets the right total. A
# standard-normal cotangent per output, drawn from a seeded generator, makes such cancellations an
# accident of probability zero, and the seed keeps runs reproducible.

# NOTE [Zero over zero]
# ggml averages |a-b|/|a+b|; one element with a == b == 0 makes the mean NaN, and NaN compares false
# against the threshold, so a ReLU backward that is 2x wrong passes. Here an exact 0 == 0 element is
# agreement (the expected value is then exactly zero too), is left out of the mean, and is counted in
# ``zero_zero``; a == -b != 0 has asymmetry +inf; any NaN becomes +inf. If every compared element is
# 0 == 0, the check is ``vacuous``: a backward that returns zeros everywhere would also have passed it.


# stencil points -> (denominator, ((k, weight), ...)): dL/dx = sum(w * (L(x+k*h) - L(x-k*h))) / (den*h).
# Differences of symmetric pairs come first, so a locally constant L gives exactly 0, never rounding noise.
_STENCILS = {
    2: (2.0, ((1, 1.0),)),
    4: (12.0, ((1, 8.0), (2, -1.0))),
}

_Grads = Sequence[Union[torch.Tensor, None]]
GradsArg = Union[None, _Grads, Callable[..., _Grads]]  # see numerical_jvp_check


# ----------------------------------------------------------------------------------------------
# compiled_vs_eager: one function, two executions, the same cotangents.
# ----------------------------------------------------------------------------------------------


@dataclass
class AutogradRun:
    """One call of a function and one backward through it (a working record: it holds tensors).

    ``outputs`` are the flattened tensor outputs; ``args_after`` the arguments as the function saw
    them, after the call (so in-place mutations show); ``grads`` one gradient per argument, None for
    arguments that are not differentiable or that the loss does not reach.
    """

    outputs: list
    args_after: list
    cotangents: tuple
    grads: list


def autograd_run(fn: Callable[..., Any], args: Sequence[Any], *, seed: int = 0,
                 cotangents: Sequence[torch.Tensor | None] | None = None,
                 backward: bool = True) -> AutogradRun:
    """Call ``fn`` on fresh copies of ``args`` and backpropagate ``L = sum_i <cot_i, out_i>``.

    Arguments are treated as in ``numerical_jvp_check``: each differentiable one is passed as a
    non-leaf copy (so ``fn`` may mutate it in place) and gradients are taken with respect to a leaf
    behind it. Cotangents are ``draw_cotangents(outputs, seed)`` unless given (pass another run's to
    compare two executions); an output that does not require grad gets no cotangent term.
    Exceptions from ``fn`` or from its backward propagate. ``backward=False`` only calls ``fn``
    (``grads`` are then all None).
    """
    args = tuple(args)
    diff = [j for j, x in enumerate(args) if _is_differentiable(x)]
    leaves = {j: args[j].detach().requires_grad_() for j in diff}
    with torch.enable_grad():
        call = [_clone_strided(leaves[j]) if j in leaves else _clone_arg(x) for j, x in enumerate(args)]
        outputs = _flatten(fn(*call))
    cots = draw_cotangents(outputs, seed) if cotangents is None else tuple(cotangents)
    terms = [(o.to(torch.float64) * c.to(torch.float64)).sum()
             for o, c in zip(outputs, cots) if c is not None and o.requires_grad]
    grads: list = [None] * len(args)
    if backward and terms and diff:
        got = torch.autograd.grad(sum(terms), [leaves[j] for j in diff], allow_unused=True)
        for j, g in zip(diff, got):
            grads[j] = g
    return AutogradRun(outputs, call, cots, grads)


def compiled_vs_eager(fn: Callable[..., Any], args: Sequence[Any], *,
                      compiled: Callable[..., Any] | None = None, seed: int = 0,
                      tol: Tol = Tol(asym_floor=1e-12), names: Sequence[str] | None = None) -> GradReport:
    """Compare the compiled gradients of ``fn`` with eager autograd's, under the same cotangents.

    ``fn`` is the eager reference; ``compiled`` the callable under test (default
    ``aotcheck.aot_function(fn)``; pass a compiled *other* function to test it against a reference).
    Cotangents are drawn from the eager outputs with ``seed``. Only differentiable arguments are
    compared; None against zeros fails (eager's "no gradient" must stay None). The default
    ``tol.asym_floor`` keeps float64 rounding noise around zero (1e-17 against -1e-17) out of the
    asymmetry metric.
    Exceptions from either run propagate (an engine error is the caller's to report).

    >>> x = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
    >>> compiled_vs_eager(torch.sin, (x,), compiled=lambda t: 2 * torch.sin(t)).reason
    '1 of 1 input failed; input 0: 2/2 elements differ (|a-b| > atol + rtol*|expected|); mean asymmetry 0.333 > asym_tol 0.0001'
    """
    if compiled is None:
        from ..api import aot_function
        compiled = aot_function(fn)
    args = tuple(args)
    names = _names(names, len(args))
    eager = autograd_run(fn, args, seed=seed)
    mine = autograd_run(compiled, args, cotangents=eager.cotangents)
    check = f"compiled vs eager (seed {seed})"
    if len(mine.outputs) != len(eager.outputs):
        reason = f"eager returned {len(eager.outputs)} tensors, compiled {len(mine.outputs)}"
        return GradReport(FAIL, reason, check, (), tol.atol, tol.rtol, tol.asym_tol, tol.asym_floor)
    diff = [j for j, x in enumerate(args) if _is_differentiable(x)]
    if not diff:
        return summarize(check, [], tol, 0, "no floating-point tensor argument requires grad")
    report = compare_gradients([eager.grads[j] for j in diff], [mine.grads[j] for j in diff],
                               names=[names[j] for j in diff], tol=tol)
    return replace(report, check=check)


# ----------------------------------------------------------------------------------------------
# numerical_jvp_check: finite differences of L = sum_i <cot_i, out_i>.
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Differencing:
    """How ``numerical_jvp_check`` differentiates numerically: a central-difference ``stencil``
    of 2 or 4 points with step ``eps``, at most ``max_elements`` elements per input (None: all)."""

    stencil: int = 2
    eps: float = 1e-6
    max_elements: int | None = 200


def numerical_jvp_check(fn: Callable[..., Any], args: Sequence[Any], *, grads: GradsArg = None,
                        differencing: Differencing = Differencing(),
                        tol: Tol = Tol(asym_floor=1e-8), seed: int = 0,
                        names: Sequence[str] | None = None) -> GradReport:
    """Compare the analytical gradient of ``fn`` at ``args`` with central finite differences.

    Differentiated: floating-point tensor args with ``requires_grad=True`` (tensors nested inside
    lists are passed through, not differentiated). Outputs: the tensors of ``fn``'s (nested tuple/list)
    result; those that are floating point and require grad get a cotangent, the rest are skipped.

    * ``grads=None``: autograd through ``fn`` itself (``fn`` may be a compiled callable). Each
      differentiable arg is passed as a non-leaf copy, so ``fn`` may mutate it in place.
    * ``grads`` a callable: called once with the cotangents (one per flattened output, None where
      skipped, in the output's dtype), returns one gradient per arg (None = zero), e.g. a compiled
      backward.
    * ``grads`` a sequence: one gradient per arg, computed against ``draw_cotangents(outputs, seed)``.

    Numerics run in float64: every floating-point tensor arg is converted to a float64 copy (so a
    float32 ``fn`` is differentiated numerically at float64 precision), each evaluation gets fresh
    clones with the same strides, and the caller's tensors are never modified.
    ``differencing.stencil`` is 2 ((L(x+h)-L(x-h))/2h) or 4 ((-L(x+2h)+8L(x+h)-8L(x-h)+L(x-2h))/12h),
    with h = ``differencing.eps``. At most ``differencing.max_elements`` elements per input are
    perturbed, a seeded random subset when the input is larger. The default ``tol.asym_floor`` treats smaller differences as finite-difference noise
    in the asymmetry.
    """
    stencil, eps, max_elements = differencing.stencil, differencing.eps, differencing.max_elements
    if stencil not in _STENCILS:
        raise ValueError(f"stencil must be 2 or 4, got {stencil!r}")
    args = tuple(args)
    check = f"numerical check (stencil {stencil}, eps {eps:g}, seed {seed})"
    names = _names(names, len(args))
    diff = [j for j, x in enumerate(args) if _is_differentiable(x)]
    if not diff:
        return summarize(check, [], tol, 0, "no floating-point tensor argument requires grad")

    # Analytical pass (also decides which outputs are differentiable).
    leaves = {j: args[j].detach().requires_grad_() for j in diff}
    with torch.enable_grad():
        call = [_clone_strided(leaves[j]) if j in leaves else _clone_arg(x) for j, x in enumerate(args)]
        outputs = _flatten(fn(*call))
    cots = draw_cotangents(outputs, seed)
    if all(c is None for c in cots):
        return summarize(check, [], tol, 1, "fn has no floating-point output that requires grad")
    analytic = _analytic_grads(grads, args, diff, leaves, outputs, cots)

    cot64 = [None if c is None else c.to(torch.float64) for c in cots]
    base = [x.detach().to(torch.float64) if isinstance(x, torch.Tensor) and x.is_floating_point()
            else x for x in args]
    differences = _Differences(fn, base, cot64, stencil, eps)
    select = torch.Generator().manual_seed(seed)
    reports = []
    for j in diff:
        shape = tuple(args[j].shape)
        n = math.prod(shape)
        if max_elements is None or n <= max_elements:
            flat = torch.arange(n)
        else:
            flat = torch.randperm(n, generator=select)[:max_elements].sort().values
        reports.append(_input_report(differences, j, names[j], shape, flat, analytic[j], tol))
    return summarize(check, reports, tol, differences.evaluations)


def _input_report(differences: _Differences, j: int, name: str, shape: tuple,
                  flat: torch.Tensor, g, tol: Tol) -> InputReport:
    """Input ``j``'s analytical gradient ``g`` against its finite differences at the elements
    ``flat``."""
    n = math.prod(shape)
    if g is not None and tuple(g.shape) != shape:
        reason = f"analytical gradient has shape {tuple(g.shape)}, input has {shape}"
        return InputReport(name, shape, FAIL, reason, n)
    got = (torch.zeros(n, dtype=torch.float64) if g is None
           else g.detach().reshape(-1).to(device="cpu", dtype=torch.float64))[flat]
    numeric = torch.tensor([differences.derivative(j, unravel(k, shape)) for k in flat.tolist()],
                           dtype=torch.float64)
    return compare_flat(name, shape, flat, numeric, got, tol)


def draw_cotangents(outputs: Sequence[torch.Tensor], seed: int = 0) -> tuple[torch.Tensor | None, ...]:
    """One standard-normal cotangent per floating-point output that requires grad, None elsewhere.

    Values are drawn in float64 from ``torch.Generator().manual_seed(seed)``, one draw per floating
    output (skipped ones too, so the stream does not depend on requires_grad), then rounded to the
    output's dtype.

    >>> y = torch.ones(2, requires_grad=True) * 1
    >>> [c is None for c in draw_cotangents([y, torch.arange(3), y.detach()])]
    [False, True, True]
    """
    gen = torch.Generator().manual_seed(seed)
    cots = []
    for out in outputs:
        if not out.is_floating_point():
            cots.append(None)
            continue
        c = torch.randn(out.shape, generator=gen, dtype=torch.float64).to(device=out.device, dtype=out.dtype)
        cots.append(c if out.requires_grad else None)
    return tuple(cots)


def _analytic_grads(grads: GradsArg, args, diff, leaves, outputs, cots) -> dict[int, torch.Tensor | None]:
    if grads is None:
        loss = sum((o.to(torch.float64) * c.to(torch.float64)).sum()
                   for o, c in zip(outputs, cots) if c is not None)
        got = torch.autograd.grad(loss, [leaves[j] for j in diff], allow_unused=True)
        return dict(zip(diff, got))
    given = list(grads(cots) if callable(grads) else grads)
    if len(given) != len(args):
        raise ValueError(f"grads gave {len(given)} gradients for {len(args)} args")
    return {j: given[j] for j in diff}


class _Differences:
    """Central differences of ``L = sum_i <cot_i, out_i>`` of ``fn`` around ``base`` (float64
    copies of the arguments), counting the calls of ``fn`` (the analytical pass's among them)."""

    def __init__(self, fn, base: list, cot64: list, stencil: int, eps: float):
        self.fn, self.base, self.cot64, self.eps = fn, base, cot64, eps
        self.den, self.points = _STENCILS[stencil]
        self.evaluations = 1

    def derivative(self, j: int, index: tuple) -> float:
        """dL / d ``base[j][index]``."""
        total = 0.0
        for k, w in self.points:
            total += w * (self.loss(j, index, k * self.eps) - self.loss(j, index, -k * self.eps))
        return total / (self.den * self.eps)

    def loss(self, j: int, index: tuple, delta: float) -> float:
        """L at ``base`` with ``base[j][index]`` moved by ``delta``, on fresh clones of every tensor."""
        call = [_clone_arg(x) for x in self.base]
        with torch.no_grad():
            call[j][index] += delta
        outputs = _flatten(self.fn(*call))
        self.evaluations += 1
        if len(outputs) != len(self.cot64):
            raise ValueError(f"fn returned {len(outputs)} tensors at float64 "
                             f"but {len(self.cot64)} in the analytical pass")
        return sum(float((o.detach().to(torch.float64) * c).sum()) for o, c in zip(outputs, self.cot64)
                   if c is not None)


def _is_differentiable(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.is_floating_point() and x.requires_grad


def _flatten(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flatten(o)]
    return []


def _clone_arg(x: Any) -> Any:
    if not isinstance(x, torch.Tensor):
        return x
    with torch.no_grad():
        return _clone_strided(x.detach())


def _clone_strided(t: torch.Tensor) -> torch.Tensor:
    """A copy with ``t``'s strides (differentiable when ``t`` requires grad).

    Inputs whose elements overlap in memory (e.g. from ``expand``) get a contiguous copy instead, so
    that perturbing one element perturbs only that element.
    """
    if not _non_overlapping(t):
        return t.clone(memory_format=torch.contiguous_format)
    out = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
    return out.copy_(t)


def _non_overlapping(t: torch.Tensor) -> bool:
    """Sufficient test: dims sorted by stride each step over the whole extent of the smaller ones."""
    reach = 1
    for stride, size in sorted((st, sz) for sz, st in zip(t.shape, t.stride()) if sz > 1):
        if stride < reach:
            return False
        reach = stride * size
    return True


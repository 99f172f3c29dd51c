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
>>> from aotcheck.gradcheck import numerical_jvp_check
>>> x = torch.tensor([[0.5, -1.0, 2.0]], dtype=torch.float64, requires_grad=True)
>>> wrong_backward = lambda cots: (2 * x.detach().cos() * cots[0],)
>>> report = numerical_jvp_check(torch.sin, (x,), grads=wrong_backward, topk=2)

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

SCHEMA_VERSION = 1
PASS, FAIL, VACUOUS = "pass", "fail", "vacuous"

# stencil points -> (denominator, ((k, weight), ...)): dL/dx = sum(w * (L(x+k*h) - L(x-k*h))) / (den*h).
# Differences of symmetric pairs come first, so a locally constant L gives exactly 0, never rounding noise.
_STENCILS = {
    2: (2.0, ((1, 1.0),)),
    4: (12.0, ((1, 8.0), (2, -1.0))),
}
_TINY = torch.finfo(torch.float64).tiny

_Grads = Sequence[Union[torch.Tensor, None]]
GradsArg = Union[None, _Grads, Callable[..., _Grads]]  # see numerical_jvp_check


# ----------------------------------------------------------------------------------------------
# Results: plain frozen data, no tensors, JSON round-trip via dataclasses.asdict / from_dict.
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ElementReport:
    """One compared element. ``index`` is its multi-dimensional index in the input (or gradient).

    ``expected`` is the reference (numerical, or eager), ``actual`` the value under test.
    """

    index: tuple[int, ...]
    expected: float
    actual: float
    abs_err: float
    rel_err: float
    failed: bool

    @staticmethod
    def from_dict(d: dict) -> "ElementReport":
        return ElementReport(**{**d, "index": tuple(d["index"])})

    def format(self) -> str:
        """``[1, 2] expected 0.5 got 1 (abs 0.5, rel 1)``"""
        idx = "[" + ", ".join(str(i) for i in self.index) + "]"
        return (f"{idx} expected {_num(self.expected)} got {_num(self.actual)} "
                f"(abs {_num(self.abs_err)}, rel {_num(self.rel_err)})")


@dataclass(frozen=True)
class InputReport:
    """The comparison of one input's gradient.

    ``n_failed`` counts elements outside ``atol + rtol * |expected|``; ``zero_zero`` counts elements
    that are exactly 0 on both sides (left out of ``mean_asym``, which is None when nothing is left).
    ``max_abs``/``max_rel`` are +inf when a NaN or inf disagreed; ``worst`` holds the top-k elements,
    failing ones first, then by absolute error.
    """

    name: str
    shape: tuple[int, ...]
    status: str
    reason: str
    n_elements: int = 0
    n_compared: int = 0
    n_failed: int = 0
    zero_zero: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    mean_asym: float | None = None
    worst: tuple[ElementReport, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status == PASS

    @staticmethod
    def from_dict(d: dict) -> "InputReport":
        return InputReport(**{**d, "shape": tuple(d["shape"]),
                              "worst": tuple(ElementReport.from_dict(w) for w in d["worst"])})

    def format(self) -> str:
        line = f"{self.status.upper():<5} {self.name} (shape {self.shape}): {self.reason}"
        if self.n_compared:
            asym = "n/a" if self.mean_asym is None else f"{self.mean_asym:.3g}"
            line += (f" [mean asym {asym}, 0/0 elements {self.zero_zero}, "
                     f"max abs {_num(self.max_abs)}, max rel {_num(self.max_rel)}]")
        lines = [line]
        if self.status == FAIL:
            for k, w in enumerate(self.worst):
                lines.append(("      worst: " if k == 0 else "             ") + w.format())
        return "\n".join(lines)


@dataclass(frozen=True)
class GradReport:
    """The outcome of one check: ``status`` is ``pass``, ``fail`` or ``vacuous``; ``reason`` says why.

    ``check`` names the method; ``n_evaluations`` counts calls of ``fn`` (0 for compare_gradients).
    """

    status: str
    reason: str
    check: str
    inputs: tuple[InputReport, ...]
    atol: float
    rtol: float
    asym_tol: float
    asym_floor: float
    n_evaluations: int = 0
    schema_version: int = SCHEMA_VERSION

    @property
    def passed(self) -> bool:
        return self.status == PASS

    @staticmethod
    def from_dict(d: dict) -> "GradReport":
        """Rebuild a report from ``dataclasses.asdict(report)``, also after a JSON round trip."""
        if d.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(f"GradReport schema_version {d.get('schema_version')!r}, "
                             f"this code reads {SCHEMA_VERSION}")
        return GradReport(**{**d, "inputs": tuple(InputReport.from_dict(i) for i in d["inputs"])})

    def format(self) -> str:
        head = f"{self.status.upper():<5} {self.check}: {self.reason}"
        tols = (f"      tolerances: atol {self.atol:g}, rtol {self.rtol:g}, asym_tol {self.asym_tol:g}, "
                f"asym_floor {self.asym_floor:g}")
        body = ["  " + line for i in self.inputs for line in i.format().splitlines()]
        return "\n".join([head, tols, *body])

    def __str__(self) -> str:
        return self.format()


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _num(x: float) -> str:
    return f"{x:.6g}"


# ----------------------------------------------------------------------------------------------
# Element metrics: the one place that decides agreement.
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Tol:
    atol: float
    rtol: float
    asym_tol: float
    asym_floor: float
    topk: int
    equal_nan: bool = False


def _compare_flat(name: str, shape: tuple[int, ...], flat_index: torch.Tensor, expected: torch.Tensor,
                  actual: torch.Tensor, tol: _Tol) -> InputReport:
    """Compare 1-D float64 ``expected``/``actual`` taken at logical ``flat_index`` of ``shape``.

    >>> r = _compare_flat("x", (3,), torch.arange(3), torch.tensor([0., 1., 2.], dtype=torch.float64),
    ...                   torch.tensor([0., 2., 4.], dtype=torch.float64), _Tol(1e-5, 1e-3, 1e-4, 0.0, 1))
    >>> (r.status, r.n_failed, r.zero_zero, r.mean_asym, r.worst[0].index)
    ('fail', 2, 1, 0.3333333333333333, (2,))
    """
    n_elements = math.prod(shape)
    n = int(expected.numel())
    if n == 0:
        return InputReport(name, shape, VACUOUS, "no elements to compare", n_elements)
    b, a = expected, actual
    same = a == b
    if tol.equal_nan:
        same = same | (a.isnan() & b.isnan())
    inf = torch.full_like(a, math.inf)
    zero = torch.zeros_like(a)
    abs_err = torch.where(same, zero, (a - b).abs())
    abs_err = torch.where(abs_err.isnan(), inf, abs_err)
    rel_err = torch.where(abs_err == 0, zero, abs_err / b.abs().clamp_min(_TINY))
    rel_err = torch.where(rel_err.isnan(), inf, rel_err)
    failed = ~same & (abs_err.isinf() | (abs_err > tol.atol + tol.rtol * b.abs()))

    zero_zero = (a == 0) & (b == 0)  # see NOTE [Zero over zero]
    asym = abs_err / (a + b).abs()  # a == -b != 0 -> inf; 0/0 only for zero_zero, masked out below
    asym = torch.where(same | (abs_err <= tol.asym_floor), zero, asym)
    asym = torch.where(asym.isnan(), inf, asym)
    kept = asym[~zero_zero]
    mean_asym = float(kept.mean()) if kept.numel() else None

    n_failed, n_zz = int(failed.sum()), int(zero_zero.sum())
    problems = []
    if n_failed:
        problems.append(f"{n_failed}/{n} elements differ (|a-b| > atol + rtol*|expected|)")
    if mean_asym is not None and not mean_asym <= tol.asym_tol:
        problems.append(f"mean asymmetry {mean_asym:.3g} > asym_tol {tol.asym_tol:g}")
    if problems:
        status, reason = FAIL, "; ".join(problems)
    elif n_zz == n:
        status, reason = VACUOUS, f"all {n} compared elements are exactly zero on both sides"
    else:
        status, reason = PASS, f"{n}/{n} elements agree"

    by_abs = torch.argsort(abs_err, descending=True, stable=True)
    order = by_abs[torch.argsort(failed[by_abs].to(torch.int8), descending=True, stable=True)]
    worst = tuple(
        ElementReport(_unravel(int(flat_index[k]), shape), float(b[k]), float(a[k]),
                      float(abs_err[k]), float(rel_err[k]), bool(failed[k]))
        for k in order[: tol.topk].tolist())
    return InputReport(name, shape, status, reason, n_elements, n, n_failed, n_zz,
                       float(abs_err.max()), float(rel_err.max()), mean_asym, worst)


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    idx = []
    for size in reversed(shape):
        idx.append(flat % size)
        flat //= size
    return tuple(reversed(idx))


def _summarize(check: str, inputs: Sequence[InputReport], tol: _Tol, n_evaluations: int,
               empty_reason: str = "no inputs to compare") -> GradReport:
    """Overall status: fail if any input failed; vacuous if nothing non-zero was compared; else pass."""
    inputs = tuple(inputs)
    failed = [i for i in inputs if i.status == FAIL]
    n_compared = sum(i.n_compared for i in inputs)
    n_nonzero = sum(i.n_compared - i.zero_zero for i in inputs)
    if failed:
        status = FAIL
        first = failed[0]
        reason = f"{len(failed)} of {_count(len(inputs), 'input')} failed; {first.name}: {first.reason}"
    elif not inputs:
        status, reason = VACUOUS, empty_reason
    elif n_compared == 0:
        status, reason = VACUOUS, "compared no elements"
    elif n_nonzero == 0:
        status = VACUOUS
        reason = f"all {n_compared} compared elements are exactly zero in both expected and actual"
    else:
        status = PASS
        reason = f"all {n_compared} compared elements across {_count(len(inputs), 'input')} agree"
        vacuous = [i.name for i in inputs if i.status == VACUOUS]
        if vacuous:
            reason += f" ({', '.join(vacuous)}: nothing non-zero compared)"
    return GradReport(status, reason, check, inputs, tol.atol, tol.rtol, tol.asym_tol, tol.asym_floor,
                      n_evaluations)


# ----------------------------------------------------------------------------------------------
# compare_gradients: compiled against eager.
# ----------------------------------------------------------------------------------------------


def compare_gradients(expected: Sequence[torch.Tensor | None], actual: Sequence[torch.Tensor | None], *,
                      names: Sequence[str] | None = None, atol: float = 1e-5, rtol: float = 1e-3,
                      asym_tol: float = 1e-4, asym_floor: float = 0.0, equal_nan: bool = False,
                      topk: int = 5) -> GradReport:
    """Compare gradients element by element; ``expected`` is the reference (eager).

    None against None agrees; None against a tensor (zeros included) fails, as do shape and dtype
    differences. Values are compared in float64; complex gradients as their real and imaginary parts.
    Differences at or below ``asym_floor`` count as no asymmetry (0 keeps ggml's metric exact).

    >>> g = torch.tensor([1.0, 0.0])
    >>> print(compare_gradients([g, None], [g, torch.zeros(2)]))
    FAIL  compare_gradients: 1 of 2 inputs failed; input 1: expected None, got a tensor of shape (2,)
          tolerances: atol 1e-05, rtol 0.001, asym_tol 0.0001, asym_floor 0
      PASS  input 0 (shape (2,)): 2/2 elements agree [mean asym 0, 0/0 elements 1, max abs 0, max rel 0]
      FAIL  input 1 (shape (2,)): expected None, got a tensor of shape (2,)
    """
    if len(expected) != len(actual):
        raise ValueError(f"compare_gradients: {len(expected)} expected gradients but {len(actual)} actual")
    names = _names(names, len(expected))
    tol = _Tol(atol, rtol, asym_tol, asym_floor, topk, equal_nan)
    reports = [_compare_pair(name, e, a, tol) for name, e, a in zip(names, expected, actual)]
    return _summarize("compare_gradients", reports, tol, 0)


def _compare_pair(name: str, e: torch.Tensor | None, a: torch.Tensor | None, tol: _Tol) -> InputReport:
    if e is None and a is None:
        return InputReport(name, (), PASS, "expected None and got None")
    if e is None:
        shape = tuple(a.shape)
        return InputReport(name, shape, FAIL, f"expected None, got a tensor of shape {shape}")
    shape = tuple(e.shape)
    if a is None:
        return InputReport(name, shape, FAIL, "expected a tensor, got None", math.prod(shape))
    if tuple(a.shape) != shape:
        return InputReport(name, shape, FAIL, f"expected shape {shape}, got shape {tuple(a.shape)}",
                           math.prod(shape))
    if a.dtype != e.dtype:
        return InputReport(name, shape, FAIL, f"expected dtype {e.dtype}, got dtype {a.dtype}",
                           math.prod(shape))
    e, a = e.detach(), a.detach()
    if e.is_complex():
        e, a = torch.view_as_real(e), torch.view_as_real(a)
        shape = tuple(e.shape)
    flat_e = e.reshape(-1).to(device="cpu", dtype=torch.float64)
    flat_a = a.reshape(-1).to(device="cpu", dtype=torch.float64)
    return _compare_flat(name, shape, torch.arange(flat_e.numel()), flat_e, flat_a, tol)


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
                      compiled: Callable[..., Any] | None = None, seed: int = 0, atol: float = 1e-5,
                      rtol: float = 1e-3, asym_tol: float = 1e-4, asym_floor: float = 1e-12,
                      topk: int = 5, names: Sequence[str] | None = None) -> GradReport:
    """Compare the compiled gradients of ``fn`` with eager autograd's, under the same cotangents.

    ``fn`` is the eager reference; ``compiled`` the callable under test (default
    ``aotcheck.aot_function(fn)``; pass a compiled *other* function to test it against a reference).
    Cotangents are drawn from the eager outputs with ``seed``. Only differentiable arguments are
    compared; None against zeros fails (eager's "no gradient" must stay None). ``asym_floor`` keeps
    float64 rounding noise around zero (1e-17 against -1e-17) out of the asymmetry metric.
    Exceptions from either run propagate (an engine error is the caller's to report).

    >>> x = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
    >>> compiled_vs_eager(torch.sin, (x,), compiled=lambda t: 2 * torch.sin(t)).reason
    '1 of 1 input failed; input 0: 2/2 elements differ (|a-b| > atol + rtol*|expected|); mean asymmetry 0.333 > asym_tol 0.0001'
    """
    if compiled is None:
        from .api import aot_function
        compiled = aot_function(fn)
    args = tuple(args)
    names = _names(names, len(args))
    eager = autograd_run(fn, args, seed=seed)
    mine = autograd_run(compiled, args, cotangents=eager.cotangents)
    check = f"compiled vs eager (seed {seed})"
    tol = _Tol(atol, rtol, asym_tol, asym_floor, topk)
    if len(mine.outputs) != len(eager.outputs):
        reason = f"eager returned {len(eager.outputs)} tensors, compiled {len(mine.outputs)}"
        return GradReport(FAIL, reason, check, (), atol, rtol, asym_tol, asym_floor)
    diff = [j for j, x in enumerate(args) if _is_differentiable(x)]
    if not diff:
        return _summarize(check, [], tol, 0, "no floating-point tensor argument requires grad")
    report = compare_gradients([eager.grads[j] for j in diff], [mine.grads[j] for j in diff],
                               names=[names[j] for j in diff], atol=atol, rtol=rtol,
                               asym_tol=asym_tol, asym_floor=asym_floor, topk=topk)
    return replace(report, check=check)


# ----------------------------------------------------------------------------------------------
# numerical_jvp_check: finite differences of L = sum_i <cot_i, out_i>.
# ----------------------------------------------------------------------------------------------


def numerical_jvp_check(fn: Callable[..., Any], args: Sequence[Any], *, grads: GradsArg = None,
                        stencil: int = 2, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                        asym_tol: float = 1e-4, asym_floor: float = 1e-8,
                        max_elements: int | None = 200, seed: int = 0, topk: int = 5,
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
    clones with the same strides, and the caller's tensors are never modified. ``stencil`` is 2
    ((L(x+h)-L(x-h))/2h) or 4 ((-L(x+2h)+8L(x+h)-8L(x-h)+L(x-2h))/12h), with h = ``eps``. At most
    ``max_elements`` elements per input are perturbed, a seeded random subset when the input is
    larger. ``asym_floor`` treats smaller differences as finite-difference noise in the asymmetry.
    """
    if stencil not in _STENCILS:
        raise ValueError(f"stencil must be 2 or 4, got {stencil!r}")
    args = tuple(args)
    tol = _Tol(atol, rtol, asym_tol, asym_floor, topk)
    check = f"numerical check (stencil {stencil}, eps {eps:g}, seed {seed})"
    names = _names(names, len(args))
    diff = [j for j, x in enumerate(args) if _is_differentiable(x)]
    if not diff:
        return _summarize(check, [], tol, 0, "no floating-point tensor argument requires grad")

    # Analytical pass (also decides which outputs are differentiable).
    leaves = {j: args[j].detach().requires_grad_() for j in diff}
    with torch.enable_grad():
        call = [_clone_strided(leaves[j]) if j in leaves else _clone_arg(x) for j, x in enumerate(args)]
        outputs = _flatten(fn(*call))
    cots = draw_cotangents(outputs, seed)
    if all(c is None for c in cots):
        return _summarize(check, [], tol, 1, "fn has no floating-point output that requires grad")
    analytic = _analytic_grads(grads, args, diff, leaves, outputs, cots)

    cot64 = [None if c is None else c.to(torch.float64) for c in cots]
    base = [x.detach().to(torch.float64) if isinstance(x, torch.Tensor) and x.is_floating_point()
            else x for x in args]
    den, points = _STENCILS[stencil]
    select = torch.Generator().manual_seed(seed)
    counter = [1]
    reports = []
    for j in diff:
        shape = tuple(args[j].shape)
        n = math.prod(shape)
        if max_elements is None or n <= max_elements:
            flat = torch.arange(n)
        else:
            flat = torch.randperm(n, generator=select)[:max_elements].sort().values
        g = analytic[j]
        if g is not None and tuple(g.shape) != shape:
            reason = f"analytical gradient has shape {tuple(g.shape)}, input has {shape}"
            reports.append(InputReport(names[j], shape, FAIL, reason, n))
            continue
        got = (torch.zeros(n, dtype=torch.float64) if g is None
               else g.detach().reshape(-1).to(device="cpu", dtype=torch.float64))[flat]
        numeric = torch.tensor(
            [_derivative(fn, base, cot64, counter, j, _unravel(k, shape), eps, den, points)
             for k in flat.tolist()],
            dtype=torch.float64)
        reports.append(_compare_flat(names[j], shape, flat, numeric, got, tol))
    return _summarize(check, reports, tol, counter[0])


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


def _derivative(fn, base, cot64, counter, j, index, eps, den, points) -> float:
    total = 0.0
    for k, w in points:
        total += w * (_loss(fn, base, cot64, counter, j, index, k * eps)
                      - _loss(fn, base, cot64, counter, j, index, -k * eps))
    return total / (den * eps)


def _loss(fn, base, cot64, counter, j, index, delta) -> float:
    """L at ``base`` with ``base[j][index]`` moved by ``delta``, on fresh clones of every tensor."""
    call = [_clone_arg(x) for x in base]
    with torch.no_grad():
        call[j][index] += delta
    outputs = _flatten(fn(*call))
    counter[0] += 1
    if len(outputs) != len(cot64):
        raise ValueError(f"fn returned {len(outputs)} tensors at float64 "
                         f"but {len(cot64)} in the analytical pass")
    return sum(float((o.detach().to(torch.float64) * c).sum()) for o, c in zip(outputs, cot64)
               if c is not None)


def _names(names: Sequence[str] | None, n: int) -> list[str]:
    if names is None:
        return [f"input {i}" for i in range(n)]
    if len(names) != n:
        raise ValueError(f"{len(names)} names for {n} inputs")
    return list(names)


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

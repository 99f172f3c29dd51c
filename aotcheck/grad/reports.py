"""reports: gradient-check results as plain frozen data, and the one rule that decides agreement.

``GradReport`` (one check) holds an ``InputReport`` per input, which holds the worst
``ElementReport``s. ``compare_gradients(expected, actual)`` compares two lists of
gradients element by element, with the ``|a - b| <= atol + rtol * |expected|`` rule and
the NaN-safe mean asymmetry (NOTE [Zero over zero] in gradcheck.py). Every check in
``gradcheck.py`` reports through here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch

SCHEMA_VERSION = 1
PASS, FAIL, VACUOUS = "pass", "fail", "vacuous"
_TINY = torch.finfo(torch.float64).tiny


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
class Tol:
    """How close two gradients must be: ``|a - b| <= atol + rtol * |expected|`` per element and a
    mean asymmetry at most ``asym_tol`` (differences at or below ``asym_floor`` count as none);
    ``topk`` worst elements are reported; ``equal_nan``: NaN against NaN agrees."""

    atol: float = 1e-5
    rtol: float = 1e-3
    asym_tol: float = 1e-4
    asym_floor: float = 0.0
    topk: int = 5
    equal_nan: bool = False


def compare_flat(name: str, shape: tuple[int, ...], flat_index: torch.Tensor, expected: torch.Tensor,
                  actual: torch.Tensor, tol: Tol) -> InputReport:
    """Compare 1-D float64 ``expected``/``actual`` taken at logical ``flat_index`` of ``shape``.

    >>> r = compare_flat("x", (3,), torch.arange(3), torch.tensor([0., 1., 2.], dtype=torch.float64),
    ...                   torch.tensor([0., 2., 4.], dtype=torch.float64), Tol(1e-5, 1e-3, 1e-4, 0.0, 1))
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
        ElementReport(unravel(int(flat_index[k]), shape), float(b[k]), float(a[k]),
                      float(abs_err[k]), float(rel_err[k]), bool(failed[k]))
        for k in order[: tol.topk].tolist())
    return InputReport(name, shape, status, reason, n_elements, n, n_failed, n_zz,
                       float(abs_err.max()), float(rel_err.max()), mean_asym, worst)


def unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    idx = []
    for size in reversed(shape):
        idx.append(flat % size)
        flat //= size
    return tuple(reversed(idx))


def summarize(check: str, inputs: Sequence[InputReport], tol: Tol, n_evaluations: int,
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
                      names: Sequence[str] | None = None, tol: Tol = Tol()) -> GradReport:
    """Compare gradients element by element; ``expected`` is the reference (eager).

    None against None agrees; None against a tensor (zeros included) fails, as do shape and dtype
    differences. Values are compared in float64; complex gradients as their real and imaginary parts.
    Differences at or below ``tol.asym_floor`` count as no asymmetry (0, the default, keeps ggml's
    metric exact).

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
    reports = [_compare_pair(name, e, a, tol) for name, e, a in zip(names, expected, actual)]
    return summarize("compare_gradients", reports, tol, 0)


def _compare_pair(name: str, e: torch.Tensor | None, a: torch.Tensor | None, tol: Tol) -> InputReport:
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
    return compare_flat(name, shape, torch.arange(flat_e.numel()), flat_e, flat_a, tol)


def _names(names: Sequence[str] | None, n: int) -> list[str]:
    if names is None:
        return [f"input {i}" for i in range(n)]
    if len(names) != n:
        raise ValueError(f"{len(names)} names for {n} inputs")
    return list(names)

"""The OpInfo backward suite: every differentiable OpInfo through the engine, against eager autograd
and against finite differences.

The flow, one function per step::

    select_ops(names)      OpInfos that support autograd on CPU in float64
    pytorch_verdicts(op)   PyTorch's own skips and xfails for gradient tests, with their reasons
    make_cases(op, ...)    one Case per sample and variant: fn over the sample's tensors
                           (non-tensor arguments baked in), variants "fn" and "inplace"
    check_case(case, ...)  one SampleResult per seed: forward, backward vs eager, backward vs
                           finite differences, each pass / fail / vacuous / engine error / crash
    score(results)         BackendBench-style per-op means, plus counts and grouped failures

Before: ``torch.fmod`` has a PyTorch skip on ``test_fn_grad`` for CPU float64, and ``sin`` none.

    >>> results = run_suite(["sin", "fmod"])                               # doctest: +SKIP
    >>> [(r.op, r.variant, r.forward, r.backward, r.numerical) for r in results]  # doctest: +SKIP
    [('sin', 'fn', 'pass', 'pass', 'pass'), ('sin', 'inplace', 'pass', 'pass', 'pass'),
     ('fmod', 'fn', 'pass', 'pass', 'skipped'), ...]

After: ``format_report(results)`` prints the scores, the engine errors grouped by message stem,
and every failure with a one-line repro command.

# NOTE [What the checks compare]
Forward: the flattened tensor outputs (dtype, shape, stride, requires_grad, values within
rtol = atol = 1e-7), which argument each output aliases, and the arguments after the call (in-place
mutation). Backward vs eager: ``gradcheck.autograd_run`` in eager and compiled with the eager
run's random cotangents, compared by ``compare_gradients``; it runs whatever the forward did, so a
wrong backward is a backward failure even when the forward also failed. Backward vs numerical:
``numerical_jvp_check`` through the *compiled* callable (analytical pass in training mode, finite
differences in inference mode), at most ``max_elements`` elements per input. Complex outputs are
passed through ``view_as_real`` inside the function, so they get cotangents too. Every call is
preceded by ``torch.manual_seed(0)`` so random ops draw the same numbers in eager and compiled.

# NOTE [Honouring PyTorch's skips]
An OpInfo's ``decorators``/``skips`` are ``DecorateInfo`` entries naming a test class, a test,
a device and dtypes. For CPU float64 we read those that concern gradients: a skip with no class
and no test, or one on the functorch AOT tests (TestEagerFusionOpInfo), skips the whole op;
one on the gradient test classes with no test name skips both backward checks; ``test_fn_grad``
and ``test_inplace_grad`` skip the numerical check of the fn / inplace variant (they are
gradcheck: the finite-difference comparison). ``unittest.expectedFailure`` on those tests turns a
numerical failure into ``xfail`` (and a pass into ``xpass``). Other decorators are ignored.
"""
from __future__ import annotations

import re
import time
import unittest
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import torch
from torch.utils import _pytree as pytree

from .errors import DataDependentError, DoubleBackwardError, TraceError, UnsupportedInputError
from .gradcheck import (FAIL, PASS, VACUOUS, autograd_run, compare_gradients, numerical_jvp_check)

SCHEMA_VERSION = 1
ENGINE_ERROR, CRASH, SKIPPED, XFAIL, XPASS, NA = "engine error", "crash", "skipped", "xfail", "xpass", "n/a"
EAGER_FAILS = "eager fails"   # the numerical check fails for eager autograd too: tolerance, not engine
STATUSES = (PASS, FAIL, VACUOUS, ENGINE_ERROR, CRASH, SKIPPED, XFAIL, XPASS, EAGER_FAILS, NA)
CHECKS = ("forward", "backward", "numerical")
COUNTED = (PASS, FAIL, ENGINE_ERROR, CRASH, XPASS)   # statuses that enter a score
DTYPE = torch.float64
FWD_TOL = 1e-7

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


@dataclass(frozen=True)
class Verdict:
    """A PyTorch skip or xfail: ``kind`` is "skip" or "xfail"; ``scope`` is "op", "backward" or
    "numerical"; ``variant`` is None for every variant."""
    kind: str
    scope: str
    reason: str
    variant: str | None = None
    source: str = ""   # "TestBwdGradients.test_fn_grad"

    def describe(self) -> str:
        return f"pytorch {self.kind}: {self.reason} ({self.source})"


def pytorch_verdicts(op) -> list[Verdict]:
    """The gradient-related skips and xfails active for CPU float64 (see NOTE [Honouring ...])."""
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
        return "op", None
    if cls_name in _AOT_CLASSES and test_name in (None, "test_aot_autograd_exhaustive"):
        return "op", None
    if cls_name in _GRAD_CLASSES or cls_name is None:
        if test_name is None and cls_name is not None:
            return "backward", None
        for variant, name in _NUMERICAL_TESTS.items():
            if test_name == name:
                return "numerical", variant
    return None


def _active(info) -> bool:
    if info.device_type not in (None, "cpu") or (info.dtypes is not None and DTYPE not in info.dtypes):
        return False
    try:
        return bool(info.active_if({}) if callable(info.active_if) else info.active_if)
    except Exception:  # noqa: BLE001 - a condition on test parameters we do not have
        return False


def _decorator_kind(dec) -> tuple[str | None, str]:
    def probe(self):
        pass
    try:
        wrapped = dec(probe)
    except Exception:  # noqa: BLE001 - e.g. a decorator that needs a test class
        return None, ""
    if getattr(wrapped, "__unittest_skip__", False):
        return "skip", getattr(wrapped, "__unittest_skip_why__", "") or "no reason given"
    if getattr(wrapped, "__unittest_expecting_failure__", False) or dec is unittest.expectedFailure:
        return "xfail", "expected failure"
    return None, ""


def _verdict_for(verdicts: Sequence[Verdict], scope: str, variant: str) -> Verdict | None:
    """The first verdict that covers ``scope`` for ``variant``; skips win over xfails."""
    covering = {"op": ("op",), "backward": ("op", "backward"), "numerical": ("op", "backward", "numerical")}
    hits = [v for v in verdicts if v.scope in covering[scope] and v.variant in (None, variant)]
    hits.sort(key=lambda v: v.kind != "skip")
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


# ----------------------------------------------------------------------------------------------
# Checking one case.
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SampleResult:
    """One case under one seed and one engine mode. Plain data; JSON via dataclasses.asdict."""
    op: str
    variant: str
    index: int
    seed: int
    mode: str                       # "cold" or "cached"
    forward: str
    backward: str
    numerical: str
    forward_detail: str = ""
    backward_detail: str = ""
    numerical_detail: str = ""
    error: str = ""                 # "TraceError: <first line>" for engine errors and crashes
    is_view: bool = False
    cache: str = ""                 # this case's change in aotcheck.counters: "hits 2, saves 1"
    seconds: float = 0.0
    schema_version: int = SCHEMA_VERSION

    def status(self, check: str) -> str:
        return getattr(self, check)

    def detail(self, check: str) -> str:
        return getattr(self, f"{check}_detail")

    def repro(self) -> str:
        return (f"aotcheck ops --op {self.op} --samples all --sample-index {self.index} "
                f"--variant {self.variant}" + (f" --seed {self.seed}" if self.seed else "")
                + (" --cached" if self.mode == "cached" else ""))


@dataclass
class Engine:
    """How to compile: ``compile(fn)`` returns the callable under test; ``mode`` labels results."""
    name: str
    compile: Callable[[Callable], Callable]
    mode: str = "cold"
    cache_counts: Counter = field(default_factory=Counter)   # deltas of aotcheck.counters


def aotcheck_engine(cache_dir=None, mode: str = "cold") -> Engine:
    from .api import aot_function
    return Engine("aotcheck", lambda fn: aot_function(fn, cache=cache_dir), mode)


def eager_engine() -> Engine:
    """The identity "compiler": every check must pass; a sanity check of the suite itself."""
    return Engine("eager", lambda fn: fn)


def check_case(case: Case, engine: Engine, *, seeds: Iterable[int] = (0,), max_elements: int = 20,
               verdicts: Sequence[Verdict] = ()) -> list[SampleResult]:
    """Run the three checks of ``case`` for each seed (the compiled callable is built once)."""
    seeds = list(seeds)
    t0 = time.perf_counter()
    skip_op = _verdict_for(verdicts, "op", case.variant)
    if skip_op is not None and skip_op.kind == "skip":
        why = "skipped (" + skip_op.describe() + ")"
        return [SampleResult(case.op, case.variant, case.index, s, engine.mode, SKIPPED, SKIPPED, SKIPPED,
                             why, why, why) for s in seeds]
    eager_fn = _seeded(case.fn)
    try:
        eager_fwd = autograd_run(eager_fn, case.args, backward=False)
    except Exception as e:  # noqa: BLE001 - the sample itself is invalid for this variant
        why = f"eager raised {_stem(e)}"
        return [SampleResult(case.op, case.variant, case.index, s, engine.mode, NA, NA, NA, why, why, why)
                for s in seeds]
    before = _counters()
    compiled = engine.compile(case.fn)
    compiled_fn = _seeded(compiled)
    # a view op: the out-of-place variant returns an alias of an argument (in-place ones always do)
    eager_diff_outputs = any(o.requires_grad and o.is_floating_point() for o in eager_fwd.outputs)
    is_view = case.variant == "fn" and any(_aliases(o, eager_fwd.args_after) is not None
                                           for o in eager_fwd.outputs)

    forward, fdetail, error = _check_forward(eager_fwd, compiled_fn, case)
    rows = []
    for s in seeds:
        back, bdetail, berr = _check_backward(case, eager_fn, compiled_fn, s, verdicts)
        num, ndetail, nerr = _check_numerical(case, compiled_fn, s, max_elements, verdicts, eager_fn,
                                              eager_diff_outputs)
        rows.append((s, back, bdetail, num, ndetail, berr or nerr))
    after = _counters()
    delta = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    engine.cache_counts.update(delta)
    cache = ", ".join(f"{k} {v}" for k, v in sorted(delta.items()))
    seconds = round(time.perf_counter() - t0, 4)
    return [SampleResult(case.op, case.variant, case.index, s, engine.mode, forward, back, num, fdetail,
                         bdetail, ndetail, error or err, is_view, cache, seconds)
            for s, back, bdetail, num, ndetail, err in rows]


def _counters() -> dict[str, int]:
    from .cache import counters
    return dict(counters)


def _check_forward(eager, compiled_fn, case: Case) -> tuple[str, str, str]:
    try:
        mine = autograd_run(compiled_fn, case.args, backward=False)
    except Exception as e:  # noqa: BLE001 - reported per sample
        return _error_status(e)
    problems = _forward_problems(eager, mine, case)
    return (FAIL, problems[0], "") if problems else (PASS, "", "")


def _forward_problems(eager, mine, case: Case) -> list[str]:
    if len(eager.outputs) != len(mine.outputs):
        return [f"eager returned {len(eager.outputs)} tensors, compiled {len(mine.outputs)}"]
    problems = []
    for k, (a, b) in enumerate(zip(eager.outputs, mine.outputs)):
        where = f"output {k}"
        for attr in ("dtype", "shape", "requires_grad"):
            if getattr(a, attr) != getattr(b, attr):
                problems.append(f"{where} {attr}: eager {getattr(a, attr)}, compiled {getattr(b, attr)}")
                break
        else:
            report = compare_gradients([a.detach()], [b.detach()], names=[where], atol=FWD_TOL,
                                       rtol=FWD_TOL, asym_tol=float("inf"), equal_nan=True, topk=1)
            if report.status == FAIL:
                problems.append(f"{where} values: {report.inputs[0].reason}")
            if a.numel() > 1 and a.stride() != b.stride():
                problems.append(f"{where} stride: eager {a.stride()}, compiled {b.stride()}")
        ea, ca = _aliases(a, eager.args_after), _aliases(b, mine.args_after)
        if ea != ca:
            problems.append(f"{where} aliasing: eager {_alias_name(ea)}, compiled {_alias_name(ca)}")
    for j, (a, b) in enumerate(zip(eager.args_after, mine.args_after)):
        if isinstance(a, torch.Tensor) and a.shape == b.shape:
            report = compare_gradients([a.detach()], [b.detach()], atol=FWD_TOL, rtol=FWD_TOL,
                                       asym_tol=float("inf"), equal_nan=True, topk=1)
            if report.status == FAIL:
                problems.append(f"{case.names[j]} after the call: {report.inputs[0].reason}")
        elif isinstance(a, torch.Tensor):
            problems.append(f"{case.names[j]} after the call: shape eager {tuple(a.shape)}, "
                            f"compiled {tuple(b.shape)}")
    return problems


def _aliases(t: torch.Tensor, args: Sequence[Any]) -> int | None:
    """The index of the first argument ``t`` shares storage with, else None."""
    ptr = _storage(t)
    if ptr is None:
        return None
    for j, a in enumerate(args):
        if isinstance(a, torch.Tensor) and _storage(a) == ptr:
            return j
    return None


def _storage(t: torch.Tensor) -> int | None:
    if t.layout != torch.strided:
        return None   # sparse tensors have no storage to share
    st = t.untyped_storage()
    return st.data_ptr() if st.nbytes() else None


def _alias_name(j: int | None) -> str:
    return "fresh" if j is None else f"a view of tensor {j}"


def _check_backward(case, eager_fn, compiled_fn, seed, verdicts) -> tuple[str, str, str]:
    v = _verdict_for(verdicts, "backward", case.variant)
    if v is not None and v.kind == "skip":
        return SKIPPED, "skipped (" + v.describe() + ")", ""
    try:
        eager = autograd_run(eager_fn, case.args, seed=seed)
    except Exception as e:  # noqa: BLE001 - eager has no backward for this sample
        return NA, f"eager backward raised {_stem(e)}", ""
    try:
        mine = autograd_run(compiled_fn, case.args, cotangents=eager.cotangents)
    except Exception as e:  # noqa: BLE001
        return _error_status(e)
    if len(eager.outputs) != len(mine.outputs):
        return FAIL, f"eager returned {len(eager.outputs)} tensors, compiled {len(mine.outputs)}", ""
    diff = [j for j, x in enumerate(case.args) if x.requires_grad and x.is_floating_point()]
    if not diff:
        return VACUOUS, "no tensor argument requires grad", ""
    report = compare_gradients([eager.grads[j] for j in diff], [mine.grads[j] for j in diff],
                               names=[case.names[j] for j in diff], asym_floor=1e-12)
    return report.status, report.reason if report.status != PASS else "", ""


def _check_numerical(case, compiled_fn, seed, max_elements, verdicts, eager_fn=None,
                     eager_diff_outputs=False) -> tuple[str, str, str]:
    """Finite differences through the compiled callable; when that fails, the same check on eager
    autograd decides whether the engine is to blame (``fail``) or the tolerance (``eager fails``)."""
    v = _verdict_for(verdicts, "numerical", case.variant)
    if v is not None and v.kind == "skip":
        return SKIPPED, "skipped (" + v.describe() + ")", ""
    try:
        report = numerical_jvp_check(compiled_fn, case.args, max_elements=max_elements, seed=seed,
                                     names=case.names)
    except Exception as e:  # noqa: BLE001
        return _error_status(e)
    status = report.status
    if status == VACUOUS and eager_diff_outputs and not report.inputs and report.n_evaluations == 1:
        return FAIL, "no compiled output requires grad, but eager's do", ""
    if status == FAIL and eager_fn is not None and _eager_fails(eager_fn, case, max_elements, seed):
        return EAGER_FAILS, f"{report.reason} [eager autograd fails this check too]", ""
    if v is not None and v.kind == "xfail" and status in (PASS, FAIL):
        status = XFAIL if status == FAIL else XPASS
    detail = report.reason if status != PASS else ""
    if v is not None and v.kind == "xfail":
        detail = f"{detail} [{v.describe()}]".strip()
    return status, detail, ""


# The engine saying no (reported as "engine error"); anything else it raises, its own invariant
# checks (LintError) included, is a bug and reported as "crash".
REFUSALS = (UnsupportedInputError, TraceError, DataDependentError, DoubleBackwardError)


def _eager_fails(eager_fn, case, max_elements, seed) -> bool:
    try:
        ref = numerical_jvp_check(eager_fn, case.args, max_elements=max_elements, seed=seed)
    except Exception:  # noqa: BLE001 - eager cannot be differentiated: the engine is not to blame
        return True
    return ref.status == FAIL


def _error_status(e: BaseException) -> tuple[str, str, str]:
    if isinstance(e, REFUSALS):
        return ENGINE_ERROR, _stem(e), _stem(e)
    return CRASH, _stem(e), _stem(e)


def _stem(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(e).__name__}: {first[:300]}"


# ----------------------------------------------------------------------------------------------
# Running and scoring.
# ----------------------------------------------------------------------------------------------


def run_suite(names: Sequence[str] = (), *, samples: str = "first", limit: int | None = None,
              index: int | None = None, variants: Sequence[str] = ("fn", "inplace"),
              seeds: Iterable[int] = (0,), engines: Sequence[Engine] | None = None,
              max_elements: int = 20, on_case: Callable[[Case], None] | None = None) -> list[SampleResult]:
    """Every case of the selected ops through each engine (e.g. cold, then cached), in order."""
    engines = list(engines) if engines is not None else [aotcheck_engine()]
    seeds = list(seeds)
    results = []
    for op in select_ops(names, limit):
        verdicts = pytorch_verdicts(op)
        try:
            cases = make_cases(op, samples, index, variants)
        except Exception as e:  # noqa: BLE001 - a sample generator that fails on this build
            why = f"sample_inputs raised {_stem(e)}"
            results.append(SampleResult(op_id(op), "fn", -1, seeds[0], "cold", NA, NA, NA, why, why, why))
            continue
        for case in cases:
            for engine in engines:
                results.extend(check_case(case, engine, seeds=seeds, max_elements=max_elements,
                                          verdicts=verdicts))
            if on_case is not None:
                on_case(case)
    return results


@dataclass
class Scores:
    """Mean per-op pass rates and counts; one instance per engine mode."""
    mode: str
    correctness: float | None                 # forward
    backward_correctness: float | None        # backward vs eager, over ops that support backward
    numerical_agreement: float | None         # backward vs finite differences
    n_ops: dict[str, int] = field(default_factory=dict)     # ops entering each score
    counts: dict[str, Counter] = field(default_factory=dict)  # check -> status -> samples
    accepted: dict[str, float | None] = field(default_factory=dict)  # scores over samples the engine accepted


def score(results: Sequence[SampleResult], mode: str = "cold") -> Scores:
    """Per-op pass rate of each check, averaged over ops. A sample counts when its status is in
    ``COUNTED`` (engine errors and crashes count as failures; vacuous, skipped, n/a and xfail do
    not). Backward is not conditional on forward."""
    rows = [r for r in results if r.mode == mode]
    counts = {c: Counter(r.status(c) for r in rows) for c in CHECKS}
    means, n_ops, accepted = {}, {}, {}
    for c in CHECKS:
        for key, allowed in ((c, COUNTED), (c + "/accepted", (PASS, FAIL, XPASS))):
            per_op = defaultdict(lambda: [0, 0])
            for r in rows:
                if r.status(c) in allowed:
                    per_op[r.op][1] += 1
                    per_op[r.op][0] += r.status(c) in (PASS, XPASS)
            rates = [p / n for p, n in per_op.values()]
            value = sum(rates) / len(rates) if rates else None
            if key == c:
                means[c], n_ops[c] = value, len(rates)
            else:
                accepted[c] = value
    return Scores(mode, means["forward"], means["backward"], means["numerical"], n_ops, counts, accepted)


def failure_rates(results: Sequence[SampleResult], check: str) -> dict[str, float]:
    """Per op (and mode), the fraction of seed runs that failed ``check`` at the chosen tolerances:
    only pass/fail outcomes count (engine errors and crashes do not depend on the seed)."""
    per_op = defaultdict(lambda: [0, 0])
    for r in results:
        if r.status(check) in (PASS, FAIL, XPASS):
            per_op[(r.op, r.mode)][1] += 1
            per_op[(r.op, r.mode)][0] += r.status(check) == FAIL
    return {f"{op} ({mode})": f / n for (op, mode), (f, n) in per_op.items()}


def flaky_cases(results: Sequence[SampleResult], check: str) -> list[str]:
    """Cases that passed under some seeds and failed under others, as repro commands."""
    outcomes = defaultdict(dict)
    for r in results:
        if r.status(check) in (PASS, FAIL):
            outcomes[(r.op, r.variant, r.index, r.mode)][r.seed] = r
    return [next(x for x in o.values() if x.status(check) == FAIL).repro() for o in outcomes.values()
            if {x.status(check) for x in o.values()} == {PASS, FAIL}]


_NORMALIZE = ((re.compile(r"aten\.[\w.]+"), "aten.OP"), (re.compile(r"0x[0-9a-f]+"), "ADDR"),
              (re.compile(r"-?\d+(\.\d+)?(e-?\d+)?"), "N"), (re.compile(r"'[^']*'"), "'…'"))


def stem(text: str, width: int = 140) -> str:
    """A message with numbers, addresses, aten op names and quoted names replaced, for grouping.

    >>> stem("TraceError: op aten.nonzero.default has 3 outputs at 0x7f'x'")
    "TraceError: op aten.OP has N outputs at ADDR'…'"
    """
    for pattern, repl in _NORMALIZE:
        text = pattern.sub(repl, text)
    return text[:width]


def group_failures(results: Sequence[SampleResult],
                   statuses: Sequence[str]) -> list[tuple[str, str, list[str]]]:
    """``(checks, message stem, ops)`` for samples whose status is in ``statuses``, largest first.

    One sample's same message under several checks (an engine error hits all three) is one entry,
    labelled with every check it affected, e.g. ``forward+backward+numerical``.
    """
    groups: dict[str, tuple[set, list[str]]] = {}
    for r in results:
        for c in CHECKS:
            if r.status(c) in statuses:
                checks, ops = groups.setdefault(stem(r.detail(c)), (set(), []))
                checks.add(c)
                if r.op not in ops:
                    ops.append(r.op)
    rows = [("+".join(c for c in CHECKS if c in checks), s, ops) for s, (checks, ops) in groups.items()]
    return sorted(rows, key=lambda g: (-len(g[2]), g[0], g[1]))


def _format_cache(results: Sequence[SampleResult]) -> list[str]:
    """Cached-mode cases that did not only hit (engine errors excluded: nothing was saved)."""
    rows = defaultdict(list)
    first_seed = min((r.seed for r in results), default=0)
    for r in results:
        if r.mode != "cached" or r.seed != first_seed or r.forward in (ENGINE_ERROR, CRASH):
            continue
        other = [kv for kv in r.cache.split(", ") if kv and not kv.startswith(("hits", "backward_hits"))]
        if other:
            key = ", ".join(re.sub(r" \d+$", "", kv) for kv in other)
            if r.op not in rows[key]:
                rows[key].append(r.op)
    if not rows:
        return []
    out = [f"cached mode: {sum(len(v) for v in rows.values())} ops did not only hit the cache"]
    for key, ops in sorted(rows.items(), key=lambda kv: -len(kv[1])):
        out.append(f"  {key}: {len(ops)} ops, e.g. {', '.join(ops[:8])}")
    return out


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def format_scores(s: Scores) -> str:
    """The score block; ``parse_scores`` reads it back."""
    lines = [f"scores [{s.mode}] (mean per-op pass rate; engine errors count as failures)",
             f"  correctness           {_fmt(s.correctness)}  over {s.n_ops['forward']} ops",
             f"  backward correctness  {_fmt(s.backward_correctness)}  over {s.n_ops['backward']} ops",
             f"  numerical agreement   {_fmt(s.numerical_agreement)}  over {s.n_ops['numerical']} ops",
             f"  (over accepted samples only: correctness {_fmt(s.accepted['forward'])}, "
             f"backward {_fmt(s.accepted['backward'])}, numerical {_fmt(s.accepted['numerical'])})"]
    lines.append(f"  {'samples':<11}" + "".join(f"{st:>13}" for st in STATUSES))
    for c in CHECKS:
        lines.append(f"  {c:<11}" + "".join(f"{s.counts[c][st]:>13}" for st in STATUSES))
    return "\n".join(lines)


_SCORE_LINE = re.compile(r"^\s+(correctness|backward correctness|numerical agreement)\s+(\S+)\s+over (\d+) ops")


def parse_scores(text: str) -> dict[str, float | None]:
    """``{"correctness": 0.95, ...}`` from ``format_scores`` output (the first block)."""
    out: dict[str, float | None] = {}
    for line in text.splitlines():
        m = _SCORE_LINE.match(line)
        if m and m.group(1) not in out:
            out[m.group(1)] = None if m.group(2) == "n/a" else float(m.group(2))
    return out


def format_report(results: Sequence[SampleResult], *, verbose: bool = False, max_listed: int = 400) -> str:
    """Scores per mode, engine errors and crashes grouped by stem, failures grouped by reason,
    then every failing sample with its repro command."""
    modes = list(dict.fromkeys(r.mode for r in results))
    lines = []
    n_ops = len({r.op for r in results})
    n_cases = len({(r.op, r.variant, r.index) for r in results})
    views = sorted({r.op for r in results if r.is_view})
    lines.append(f"{n_ops} ops, {n_cases} samples (variants included), "
                 f"{len({r.seed for r in results})} seed(s), modes: {', '.join(modes)}; "
                 f"{len(views)} view ops")
    for m in modes:
        lines.append(format_scores(score(results, m)))
    for title, statuses in (("engine errors", (ENGINE_ERROR,)), ("crashes (non-aotcheck exceptions)", (CRASH,)),
                            ("failures", (FAIL,)), ("pytorch skips", (SKIPPED,))):
        groups = group_failures(results, statuses)
        if not groups:
            continue
        n = len({op for _, _, ops in groups for op in ops})
        lines.append(f"{title}: {n} ops, {len(groups)} distinct messages")
        for c, s, ops in groups:
            shown = ", ".join(ops[:8]) + (f", … (+{len(ops) - 8})" if len(ops) > 8 else "")
            lines.append(f"  [{c}] {len(ops)} ops: {s}\n      e.g. {shown}")
    lines.extend(_format_cache(results))
    seeds = {r.seed for r in results}
    if len(seeds) > 1:
        rows = [f"  [{c}] {op}: {rate:.2f}" + ("  (flaky)" if rate < 1 else "")
                for c in ("backward", "numerical") for op, rate in sorted(failure_rates(results, c).items())
                if rate > 0]
        lines.append(f"failure rate per op across {len(seeds)} seeds, pass/fail runs only "
                     f"(ops with a failure): " + ("none" if not rows else f"{len(rows)}"))
        lines.extend(rows)
        for c in ("backward", "numerical"):
            for repro in flaky_cases(results, c):
                lines.append(f"  flaky [{c}]: {repro}")
    bad = [r for r in results if any(r.status(c) in (FAIL, ENGINE_ERROR, CRASH, XPASS) for c in CHECKS)]
    if bad:
        lines.append("failing samples:")
        seen = set()
        for r in bad:
            key = (r.op, r.variant, r.index, r.mode)
            if key in seen and not verbose:
                continue
            seen.add(key)
            if len(seen) > max_listed:
                lines.append(f"  … {len(bad) - max_listed} more")
                break
            worst = next(c for c in CHECKS if r.status(c) in (FAIL, ENGINE_ERROR, CRASH, XPASS))
            flags = " ".join(f"{c}={r.status(c)}" for c in CHECKS)
            lines.append(f"  {r.op} [{r.variant} #{r.index}, {r.mode}] {flags}: {r.detail(worst)[:200]}")
            lines.append(f"      repro: {r.repro()}")
    return "\n".join(lines)

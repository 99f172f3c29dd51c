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

(``select_ops``, ``pytorch_verdicts`` and ``make_cases`` live in opinfo.py, ``score`` and the
report in scores.py; this module re-exports them.)

Before: ``torch.fmod`` has a PyTorch skip on ``test_fn_grad`` for CPU float64, and ``sin`` none.

    >>> results = run_suite(Suite(["sin", "fmod"]))                        # doctest: +SKIP
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

import contextlib
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import torch

from ..errors import DataDependentError, DoubleBackwardError, TraceError, UnsupportedInputError
from .gradcheck import (FAIL, PASS, VACUOUS, Differencing, Tol, autograd_run, compare_gradients,
                        numerical_jvp_check)
from .results import (CHECKS, COUNTED, CRASH, EAGER_FAILS, ENGINE_ERROR, NA, SCHEMA_VERSION,  # noqa: F401
                      SKIPPED, STATUSES, XFAIL, XPASS, SampleResult)
from .scores import (Scores, failure_rates, flaky_cases, format_report, format_scores,  # noqa: F401
                     group_failures, parse_scores, score, stem)
from .opinfo import (DTYPE, Case, Scope, Verdict, VerdictKind, _seeded, _verdict_for, make_cases,  # noqa: F401
                     op_id, pytorch_verdicts, select_ops)

FWD_TOL = 1e-7
# forward values and arguments after the call: the values only, NaN against NaN agreeing
_FORWARD_TOL = Tol(atol=FWD_TOL, rtol=FWD_TOL, asym_tol=float("inf"), equal_nan=True, topk=1)


# ----------------------------------------------------------------------------------------------
# Checking one case.
# ----------------------------------------------------------------------------------------------


@dataclass
class Engine:
    """How to compile: ``compile(fn)`` returns the callable under test; ``mode`` labels results
    (the report's column). ``active()`` is entered around everything the compiled side runs
    (compile, calls, backward; never the eager reference), e.g. registered kernels.
    ``not_compiled()`` says why a case ran eagerly after all (a Dynamo backend with no graph).
    ``target`` is the command-line options that select this engine, for repro lines; ``perf``
    times the forward against eager (perf.py)."""
    name: str
    compile: Callable[[Callable], Callable]
    mode: str = "cold"
    cache_counts: Counter = field(default_factory=Counter)   # deltas of aotcheck.counters
    active: Callable[[], Any] = contextlib.nullcontext
    not_compiled: Callable[[], str | None] | None = None
    target: str = ""
    perf: bool = False
    uncompiled: str = ENGINE_ERROR      # the status of a case ``not_compiled`` explains


def aotcheck_engine(cache_dir=None, mode: str = "cold") -> Engine:
    from ..api import aot_function
    return Engine("aotcheck", lambda fn: aot_function(fn, cache=cache_dir), mode)


def eager_engine() -> Engine:
    """The identity "compiler": every check must pass; a sanity check of the suite itself."""
    return Engine("eager", lambda fn: fn)


def backend_engine(spec: str, perf: bool = True) -> Engine:
    """``torch.compile(fn, backend=spec, dynamic=False)`` (targets/compile_backends.py)."""
    from ..targets.compile_backends import resolve_backend
    b = resolve_backend(spec)
    return Engine(b.label, b.compile, b.label, not_compiled=b.not_compiled, target=f"--backend {spec}",
                  perf=perf)


def kernels_engine(kernels, perf: bool = True) -> Engine:
    """Eager with the user's kernels (a ``targets.kernels.KernelSet``) over aten's CPU kernels. A
    sample that called none of them (``add``'s in-place variant when only ``add_Tensor`` is
    implemented) proves nothing about them: n/a, outside the scores, which are over the
    implemented ops."""
    start = [0]

    def compile(fn):
        start[0] = sum(kernels.calls.values())
        return fn

    def not_compiled():
        if sum(kernels.calls.values()) > start[0]:
            return None
        return (f"NotCalled: no kernel of {kernels.path} ran for this sample (implemented: "
                f"{', '.join(k.op for k in kernels.kernels)})")
    return Engine("kernels", compile, "kernels", active=kernels.active, not_compiled=not_compiled,
                  target=f"--kernels {kernels.path}", perf=perf, uncompiled=NA)


def check_case(case: Case, engine: Engine, *, seeds: Iterable[int] = (0,), max_elements: int = 20,
               verdicts: Sequence[Verdict] = (), reference: str = "eager") -> list[SampleResult]:
    """Run the three checks of ``case`` for each seed (the compiled callable is built once).

    ``reference="numerical"`` trusts no eager result (NOTE [--reference numerical])."""
    seeds = list(seeds)
    if reference not in REFERENCES:
        raise ValueError(f"reference {reference!r}; supported: {', '.join(REFERENCES)}")
    t0 = time.perf_counter()
    skip_op = _verdict_for(verdicts, Scope.OP, case.variant)
    if skip_op is not None and skip_op.kind is VerdictKind.SKIP:
        why = "skipped (" + skip_op.describe() + ")"
        return [SampleResult(case.op, case.variant, case.index, s, engine.mode, SKIPPED, SKIPPED, SKIPPED,
                             why, why, why, target=engine.target) for s in seeds]
    eager_fn = _seeded(case.fn)
    try:
        eager_fwd = autograd_run(eager_fn, case.args, backward=False)
    except Exception as e:  # noqa: BLE001 - the sample itself is invalid for this variant
        why = f"eager raised {_stem(e)}"
        return [SampleResult(case.op, case.variant, case.index, s, engine.mode, NA, NA, NA, why, why, why,
                             target=engine.target) for s in seeds]
    before = _counters()
    with engine.active():
        compiled = engine.compile(case.fn)
    compiled_fn = _seeded(compiled)
    # a view op: the out-of-place variant returns an alias of an argument (in-place ones always do)
    eager_diff_outputs = any(o.requires_grad and o.is_floating_point() for o in eager_fwd.outputs)
    is_view = case.variant == "fn" and any(_aliases(o, eager_fwd.args_after) is not None
                                           for o in eager_fwd.outputs)

    with engine.active():
        forward, fdetail, error = _check_forward(eager_fwd, compiled_fn, case)
    vacuous = engine.not_compiled() if engine.not_compiled is not None and not error else None
    if vacuous is not None:     # the backend never saw the op: nothing of it was checked
        st = engine.uncompiled
        return [SampleResult(case.op, case.variant, case.index, s, engine.mode, st, st, st, vacuous, vacuous,
                             vacuous, vacuous if st == ENGINE_ERROR else "", is_view, target=engine.target)
                for s in seeds]
    numerical_only = reference == "numerical"
    if numerical_only and forward in (PASS, FAIL):
        forward, fdetail = NA, NO_REFERENCE
    speedup = _speedup(engine, eager_fn, compiled_fn, case) if engine.perf and forward == PASS else None
    rows = []
    for s in seeds:
        if numerical_only:
            back, bdetail, berr = NA, NO_REFERENCE, ""
        else:
            back, bdetail, berr = _check_backward(case, eager_fn, compiled_fn, s, verdicts, engine.active)
        num, ndetail, nerr = _check_numerical(case, compiled_fn, s, max_elements, verdicts,
                                              None if numerical_only else eager_fn, eager_diff_outputs,
                                              engine.active)
        rows.append((s, back, bdetail, num, ndetail, berr or nerr))
    after = _counters()
    delta = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    engine.cache_counts.update(delta)
    cache = ", ".join(f"{k} {v}" for k, v in sorted(delta.items()))
    seconds = round(time.perf_counter() - t0, 4)
    return [SampleResult(case.op, case.variant, case.index, s, engine.mode, forward, back, num, fdetail,
                         bdetail, ndetail, error or err, is_view, cache, seconds, engine.target, speedup)
            for s, back, bdetail, num, ndetail, err in rows]


# NOTE [--reference numerical]
# ggml's view, for a backend with no trusted reference: nothing is compared with eager. The
# forward is only run (an exception is still an engine error or a crash), the backward-vs-eager
# check is n/a, and the backward is scored by the finite-difference check alone (numerical
# agreement), with its NaN-safe asymmetry and vacuity detection, and without the "eager fails
# too" fallback, which would consult eager autograd.
REFERENCES = ("eager", "numerical")
NO_REFERENCE = "not compared with eager (--reference numerical)"


def _speedup(engine: Engine, eager_fn, compiled_fn, case: Case) -> float | None:
    from .perf import forward_seconds
    try:
        eager_s = forward_seconds(eager_fn, case.args)
        with engine.active():
            mine_s = forward_seconds(compiled_fn, case.args)
    except Exception:  # noqa: BLE001 - a sample that cannot be re-run is not timed
        return None
    return round(eager_s / mine_s, 4) if mine_s > 0 else None


def _counters() -> dict[str, int]:
    from ..cache import counters
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
            report = compare_gradients([a.detach()], [b.detach()], names=[where], tol=_FORWARD_TOL)
            if report.status == FAIL:
                problems.append(f"{where} values: {report.inputs[0].reason}")
            if a.numel() > 1 and a.stride() != b.stride():
                problems.append(f"{where} stride: eager {a.stride()}, compiled {b.stride()}")
        ea, ca = _aliases(a, eager.args_after), _aliases(b, mine.args_after)
        if ea != ca:
            problems.append(f"{where} aliasing: eager {_alias_name(ea)}, compiled {_alias_name(ca)}")
    for j, (a, b) in enumerate(zip(eager.args_after, mine.args_after)):
        if isinstance(a, torch.Tensor) and a.shape == b.shape:
            report = compare_gradients([a.detach()], [b.detach()], tol=_FORWARD_TOL)
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


def _check_backward(case, eager_fn, compiled_fn, seed, verdicts,
                    active=contextlib.nullcontext) -> tuple[str, str, str]:
    v = _verdict_for(verdicts, Scope.BACKWARD, case.variant)
    if v is not None and v.kind is VerdictKind.SKIP:
        return SKIPPED, "skipped (" + v.describe() + ")", ""
    try:
        eager = autograd_run(eager_fn, case.args, seed=seed)
    except Exception as e:  # noqa: BLE001 - eager has no backward for this sample
        return NA, f"eager backward raised {_stem(e)}", ""
    try:
        with active():
            mine = autograd_run(compiled_fn, case.args, cotangents=eager.cotangents)
    except Exception as e:  # noqa: BLE001
        return _error_status(e)
    if len(eager.outputs) != len(mine.outputs):
        return FAIL, f"eager returned {len(eager.outputs)} tensors, compiled {len(mine.outputs)}", ""
    diff = [j for j, x in enumerate(case.args) if x.requires_grad and x.is_floating_point()]
    if not diff:
        return VACUOUS, "no tensor argument requires grad", ""
    report = compare_gradients([eager.grads[j] for j in diff], [mine.grads[j] for j in diff],
                               names=[case.names[j] for j in diff], tol=Tol(asym_floor=1e-12))
    return report.status, report.reason if report.status != PASS else "", ""


def _check_numerical(case, compiled_fn, seed, max_elements, verdicts, eager_fn=None,
                     eager_diff_outputs=False, active=contextlib.nullcontext) -> tuple[str, str, str]:
    """Finite differences through the compiled callable; when that fails, the same check on eager
    autograd decides whether the engine is to blame (``fail``) or the tolerance (``eager fails``)."""
    v = _verdict_for(verdicts, Scope.NUMERICAL, case.variant)
    if v is not None and v.kind is VerdictKind.SKIP:
        return SKIPPED, "skipped (" + v.describe() + ")", ""
    try:
        with active():
            report = numerical_jvp_check(compiled_fn, case.args, seed=seed, names=case.names,
                                         differencing=Differencing(max_elements=max_elements))
    except Exception as e:  # noqa: BLE001
        same = eager_fn is not None and _eager_raises_alike(eager_fn, case, max_elements, seed, e)
        # an in-place op with no derivative (acosh_) raises at .backward() in eager too
        return (NA, f"eager raises the same: {_stem(e)}", "") if same else _error_status(e)
    status = report.status
    if status == VACUOUS and eager_diff_outputs and not report.inputs and report.n_evaluations == 1:
        return FAIL, "no compiled output requires grad, but eager's do", ""
    if status == FAIL and eager_fn is not None and _eager_fails(eager_fn, case, max_elements, seed):
        return EAGER_FAILS, f"{report.reason} [eager autograd fails this check too]", ""
    if v is not None and v.kind is VerdictKind.XFAIL and status in (PASS, FAIL):
        status = XFAIL if status == FAIL else XPASS
    detail = report.reason if status != PASS else ""
    if v is not None and v.kind is VerdictKind.XFAIL:
        detail = f"{detail} [{v.describe()}]".strip()
    return status, detail, ""


# The engine saying no (reported as "engine error"); anything else it raises, its own invariant
# checks (LintError) included, is a bug and reported as "crash".
REFUSALS = (UnsupportedInputError, TraceError, DataDependentError, DoubleBackwardError)


def _eager_fails(eager_fn, case, max_elements, seed) -> bool:
    try:
        ref = numerical_jvp_check(eager_fn, case.args, differencing=Differencing(max_elements=max_elements),
                                  seed=seed)
    except Exception:  # noqa: BLE001 - eager cannot be differentiated: the engine is not to blame
        return True
    return ref.status == FAIL


def _eager_raises_alike(eager_fn, case, max_elements, seed, error: BaseException) -> bool:
    """Whether the numerical check through eager autograd raises what the engine's run raised
    (same type, same first line): then the engine mirrors eager, as it must."""
    try:
        numerical_jvp_check(eager_fn, case.args, differencing=Differencing(max_elements=max_elements),
                            seed=seed)
    except Exception as e:  # noqa: BLE001
        return type(e) is type(error) and _stem(e) == _stem(error)
    return False


def _error_status(e: BaseException) -> tuple[str, str, str]:
    if isinstance(e, REFUSALS):
        return ENGINE_ERROR, _stem(e), _stem(e)
    return CRASH, _stem(e), _stem(e)


def _stem(e: BaseException) -> str:
    inner = getattr(e, "inner_exception", None)   # Dynamo's BackendCompilerFailed wraps the cause
    if isinstance(inner, BaseException):
        return f"{type(e).__name__}: {_stem(inner)}"
    text = str(e).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(e).__name__}: {first[:300]}"


# ----------------------------------------------------------------------------------------------
# Running and scoring.
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Suite:
    """What one run of the suite checks: the ops (``ops``: OpInfos, else ``select_ops(names,
    limit)``), which of their samples (``samples``, one sample ``index``) and ``variants``, the
    seeds, the engines (default: aotcheck's), the elements the numerical check perturbs per
    input, and the reference (NOTE [--reference numerical])."""

    names: Sequence[str] = ()
    samples: str = "first"
    limit: int | None = None
    index: int | None = None
    variants: Sequence[str] = ("fn", "inplace")
    seeds: Iterable[int] = (0,)
    engines: Sequence[Engine] | None = None
    max_elements: int = 20
    reference: str = "eager"
    ops: Sequence | None = None


def run_suite(suite: Suite, on_case: Callable[[Case], None] | None = None,
              on_results: Callable[[list[SampleResult]], None] | None = None) -> list[SampleResult]:
    """Every case of the suite's ops through each engine (e.g. cold, then cached; or one per
    backend), in order; ``on_results`` gets each case's rows per engine, ``on_case`` each case
    once all engines ran it."""
    engines = list(suite.engines) if suite.engines is not None else [aotcheck_engine()]
    seeds = list(suite.seeds)
    results = []
    for op in (suite.ops if suite.ops is not None else select_ops(suite.names, suite.limit)):
        verdicts = pytorch_verdicts(op)
        try:
            cases = make_cases(op, suite.samples, suite.index, suite.variants)
        except Exception as e:  # noqa: BLE001 - a sample generator that fails on this build
            why = f"sample_inputs raised {_stem(e)}"
            results.extend(SampleResult(op_id(op), "fn", -1, seeds[0], eng.mode, NA, NA, NA, why, why, why,
                                        target=eng.target) for eng in engines)
            continue
        for case in cases:
            for engine in engines:
                rows = check_case(case, engine, seeds=seeds, max_elements=suite.max_elements,
                                  verdicts=verdicts, reference=suite.reference)
                results.extend(rows)
                if on_results is not None:
                    on_results(rows)
            if on_case is not None:
                on_case(case)
    return results


def select_kernel_ops(kernels, names: Sequence[str] = ()) -> tuple[list, list[str]]:
    """The OpInfos of the implemented ops (an OpInfo whose ``name`` or ``aten_name`` is a kernel's
    aten op name), and the implemented ops no OpInfo tests."""
    wanted = kernels.base_names
    ops = [o for o in select_ops(names) if o.name in wanted or getattr(o, "aten_name", None) in wanted]
    covered = {o.name for o in ops} | {getattr(o, "aten_name", None) for o in ops}
    return ops, sorted(f"aten.{k.op}" for k in kernels.kernels if k.base not in covered)

"""Engines: one interface over every AOT autograd implementation the corpus is run against.

An engine compiles a function cold (``compile``) or through a persistent cache
directory (``compile_cached``), and ``measure()`` says what the compiles inside
it did: graphs compiled, cache hits, misses, saves, bypasses, graph breaks::

    >>> eng = get_engine("torch")
    >>> with eng.measure() as stats:
    ...     out = eng.compile_cached(f, "/tmp/c")(x)
    >>> stats.hits, stats.misses, stats.hit_rate
    (1, 0, 1.0)

Engines (``ENGINES``, in the order reports list them):

    aotcheck             ``aotcheck.aot_function``; cached: ``aot_function(fn, cache=dir)``
    torch                ``torch.compile(fn, backend="aot_eager")``, AOTAutogradCache forced on
                         and bundled, in a private inductor cache directory
    torch-aot-function   ``functorch.compile.aot_function`` with no-op compilers (no cache)
    dynamo-aotcheck      ``torch.compile(fn, backend="aotcheck")``: Dynamo's graph through aotcheck
                         (``aotcheck.backend``); cached: ``options={"cache": dir}``

``run_case(engine, case, cache_dir=None)`` runs one corpus case through the
oracle and returns the report with the stats. ``KNOWN_FAILURES`` lists, per
engine, every corpus case expected to differ from eager, with the reason; a
key ``"cached:<case id>"`` is a failure of the cached run only.

# NOTE [torch engine: settings live only inside a call]
AOTAutogradCache writes a training entry when the backward compiles, and the
backward compiles lazily, at the first ``.backward()``: after the compiled
call has returned, outside any settings the call put in place. So the torch
engine also sets ``force_non_lazy_backward_lowering`` (PyTorch's own precompile
flow sets the same three flags): the backward compiles with the forward and
the whole entry is saved at compile time. The cache settings and
``TORCHINDUCTOR_CACHE_DIR`` are then needed only inside the compiled call,
which applies them and puts the old values back.
"""
from __future__ import annotations

import contextlib
import copy
import tempfile
from dataclasses import dataclass, field
from typing import Callable, Iterator

# ---------------------------------------------------------------- stats


@dataclass
class CacheStats:
    """What the compiles inside one ``measure()`` block did."""
    graphs: int = 0              # graphs handed to AOT autograd
    hits: int = 0
    misses: int = 0
    saves: int = 0
    bypasses: int = 0
    graph_breaks: list = field(default_factory=list)   # Dynamo: graph-break and skip reasons

    @property
    def hit_rate(self) -> float | None:
        n = self.hits + self.misses + self.bypasses
        return self.hits / n if n else None

    def as_dict(self) -> dict:
        return {"graphs": self.graphs, "hits": self.hits, "misses": self.misses, "saves": self.saves,
                "bypasses": self.bypasses, "graph_breaks": list(self.graph_breaks)}


class Engine:
    """Base: ``name``, ``supports_cache``, ``compile``, ``compile_cached``, ``measure``."""
    name: str = ""
    supports_cache: bool = False
    description: str = ""

    def compile(self, fn: Callable) -> Callable:
        """A freshly compiled ``fn``, sharing nothing with earlier compiles."""
        raise NotImplementedError

    def compile_cached(self, fn: Callable, cache_dir) -> Callable:
        """``fn`` compiled through the persistent cache in ``cache_dir`` (fresh in-memory state)."""
        raise NotImplementedError(f"engine {self.name!r} has no persistent cache")

    def _snapshot(self):
        return None

    def _stats_since(self, before) -> CacheStats:
        return CacheStats()

    @contextlib.contextmanager
    def measure(self) -> Iterator[CacheStats]:
        """Yield a CacheStats that is filled in when the block ends."""
        stats = CacheStats()
        before = self._snapshot()
        try:
            yield stats
        finally:
            stats.__dict__.update(self._stats_since(before).__dict__)

    def __repr__(self) -> str:
        return f"<engine {self.name}>"


# ---------------------------------------------------------------- aotcheck


class AotcheckEngine(Engine):
    name = "aotcheck"
    supports_cache = True
    description = "aotcheck.aot_function; cached: aot_function(fn, cache=dir)"

    def compile(self, fn):
        from .api import aot_function
        return aot_function(fn)

    def compile_cached(self, fn, cache_dir):
        from .api import aot_function
        return aot_function(fn, cache=str(cache_dir))

    def _snapshot(self):
        from .cache import counters
        return dict(counters)

    def _stats_since(self, before) -> CacheStats:
        from .cache import counters
        d = {k: v - before.get(k, 0) for k, v in counters.items()}
        hits, misses, bypasses = d.get("hits", 0), d.get("misses", 0), d.get("bypasses", 0)
        return CacheStats(graphs=hits + misses + bypasses, hits=hits, misses=misses,
                          saves=d.get("saves", 0), bypasses=bypasses)


# ---------------------------------------------------------------- torch (Dynamo + AOTAutogradCache)


_TORCH_CACHE_CONFIG = {            # torch/_functorch/config.py
    "force_autograd_cache": True,              # use AOTAutogradCache with a non-inductor backend
    "bundled_autograd_cache": True,            # save graphs with no inductor key too (#141790)
    "force_non_lazy_backward_lowering": True,  # see NOTE [torch engine: settings live only inside a call]
}


@contextlib.contextmanager
def _torch_cache_settings(cache_dir: str):
    import os

    import torch._functorch.config as fconfig
    old = os.environ.get("TORCHINDUCTOR_CACHE_DIR")   # read by torch/_inductor/runtime/cache_dir_utils.py
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
    try:
        with fconfig.patch(_TORCH_CACHE_CONFIG):
            yield
    finally:
        if old is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = old


class _TorchCompiled:
    """``torch.compile(fn, backend="aot_eager")`` whose calls run with the cache settings."""

    def __init__(self, fn, cache_dir: str, keep=None):
        import torch
        self.fn, self.cache_dir, self._keep = fn, cache_dir, keep   # keep: a TemporaryDirectory
        self.compiled = torch.compile(fn, backend="aot_eager", fullgraph=False)

    def __call__(self, *args, **kwargs):
        with _torch_cache_settings(self.cache_dir):
            return self.compiled(*args, **kwargs)


def _fresh_torch_state() -> None:
    import torch
    from torch._inductor.utils import clear_caches
    torch._dynamo.reset()
    clear_caches()


class TorchEngine(Engine):
    name = "torch"
    supports_cache = True
    description = ('torch.compile(fn, backend="aot_eager"), AOTAutogradCache forced and bundled, '
                   "private TORCHINDUCTOR_CACHE_DIR")

    def compile(self, fn):
        _fresh_torch_state()
        tmp = tempfile.TemporaryDirectory(prefix="aotcheck-torch-cold-")
        return _TorchCompiled(fn, tmp.name, keep=tmp)

    def compile_cached(self, fn, cache_dir):
        _fresh_torch_state()
        return _TorchCompiled(fn, str(cache_dir))

    def _snapshot(self):
        from torch._dynamo.utils import counters
        return copy.deepcopy({k: dict(v) for k, v in counters.items()})

    def _stats_since(self, before) -> CacheStats:
        from torch._dynamo.utils import counters

        def delta(group: str, key: str) -> int:
            return counters[group][key] - before.get(group, {}).get(key, 0)
        breaks = []
        for group in ("graph_break", "unimplemented"):
            for msg, n in counters[group].items():
                if n > before.get(group, {}).get(msg, 0):
                    breaks.append(f"{group}: {msg}")
        return CacheStats(graphs=delta("aot_autograd", "total"),
                          hits=delta("aot_autograd", "autograd_cache_hit"),
                          misses=delta("aot_autograd", "autograd_cache_miss"),
                          saves=delta("aot_autograd", "autograd_cache_saved"),
                          bypasses=delta("aot_autograd", "autograd_cache_bypass"),
                          graph_breaks=breaks)


# ---------------------------------------------------------------- functorch.compile.aot_function


class TorchAotFunctionEngine(Engine):
    name = "torch-aot-function"
    supports_cache = False
    description = "functorch.compile.aot_function(fn, fw_compiler=nop, bw_compiler=nop); no cache, no guards"

    def compile(self, fn):
        # A fresh aot_function per compile: it keeps no signature and would reuse its
        # first graph for any later call.
        from functorch.compile import aot_function, nop
        return aot_function(fn, fw_compiler=nop, bw_compiler=nop)


# ---------------------------------------------------------------- torch.compile(backend="aotcheck")


class DynamoAotcheckEngine(TorchEngine):
    """Dynamo captures, aotcheck compiles (``aotcheck.backend``); the cache is aotcheck's."""
    name = "dynamo-aotcheck"
    supports_cache = True
    description = 'torch.compile(fn, backend="aotcheck"); cached: options={"cache": dir}'

    def compile(self, fn):
        import torch
        torch._dynamo.reset()
        return torch.compile(fn, backend="aotcheck")

    def compile_cached(self, fn, cache_dir):
        import torch
        torch._dynamo.reset()
        return torch.compile(fn, backend="aotcheck", options={"cache": str(cache_dir)})

    def _snapshot(self):
        return super()._snapshot(), AotcheckEngine._snapshot(self)

    def _stats_since(self, before) -> CacheStats:
        from torch._dynamo.utils import counters
        dyn = TorchEngine._stats_since(self, before[0])
        own = AotcheckEngine._stats_since(self, before[1])
        own.graphs = counters["aotcheck"]["graphs"] - before[0].get("aotcheck", {}).get("graphs", 0)
        own.graph_breaks = dyn.graph_breaks
        return own


# ---------------------------------------------------------------- registry and corpus runs


ENGINES: dict[str, Engine] = {e.name: e for e in (AotcheckEngine(), TorchEngine(), TorchAotFunctionEngine(),
                                                 DynamoAotcheckEngine())}


def get_engine(name: str) -> Engine:
    try:
        return ENGINES[name]
    except KeyError:
        raise KeyError(f"unknown engine {name!r}; engines: {', '.join(ENGINES)}") from None


@dataclass
class EngineRun:
    report: object            # oracle.Report
    stats: CacheStats


def run_case(engine: Engine, case, cache_dir=None) -> EngineRun:
    """Compile ``case.fn`` with ``engine`` (cold, or through ``cache_dir``), run it in the
    case's grad mode, forward plus backward unless the case says otherwise, and compare with
    eager through the oracle."""
    from .oracle import check
    from .testing import in_call_mode
    with engine.measure() as stats:
        compiled = engine.compile(case.fn) if cache_dir is None else engine.compile_cached(case.fn, cache_dir)
        report = check(in_call_mode(case, case.fn), in_call_mode(case, compiled), case.make_inputs,
                       backward=case.backward)
    return EngineRun(report, stats)


def capture_problem(engine: Engine, run: EngineRun) -> str | None:
    """For Dynamo-based engines: why the run did not go through one captured graph, or None.
    A graph break or a skipped frame makes a passing run vacuous in part, so it is a failure."""
    if engine.name not in ("torch", "dynamo-aotcheck"):
        return None
    if run.stats.graph_breaks:
        return "Dynamo could not capture the whole function: " + "; ".join(run.stats.graph_breaks)
    if run.stats.graphs == 0:
        return "Dynamo captured no graph: the function ran eagerly"
    return None


def cache_problem(run: EngineRun) -> str | None:
    """For a cached run: every compiled graph must have been a hit (a silent miss is a miss)."""
    s = run.stats
    if s.hits >= 1 and not s.misses and not s.bypasses:
        return None
    return f"expected cache hits only, got hits={s.hits} misses={s.misses} bypasses={s.bypasses}"


def outcome(engine: Engine, case, cache_dir=None) -> tuple[EngineRun, list[str]]:
    """Run ``case`` and list every problem: divergences from eager and capture problems. With
    ``cache_dir`` (an empty directory) this is the cache round trip: a first run fills the
    cache, a second one, compiled afresh, must equal eager *and* hit for every graph. An
    empty list is a pass; the returned run is the last one."""
    if cache_dir is not None:
        fill = run_case(engine, case, cache_dir)
        if not fill.report.ok:
            return fill, ["run that fills the cache: " + d for d in fill.report.divergences]
    run = run_case(engine, case, cache_dir)
    problems = list(run.report.divergences)
    cap = capture_problem(engine, run)
    if cap:
        problems.append(cap)
    if cache_dir is not None and not problems:
        cp = cache_problem(run)
        if cp:
            problems.append(cp)
    return run, problems


def known_failure(engine_name: str, case_id: str, cached: bool = False) -> str | None:
    """The recorded reason ``case_id`` fails on this engine (cold or cached), or None."""
    table = KNOWN_FAILURES.get(engine_name, {})
    if cached and f"cached:{case_id}" in table:
        return table[f"cached:{case_id}"]
    return table.get(case_id)


# Every corpus case that an engine is expected to get wrong, with the reason.
# ``"cached:<id>"``: only the cached run fails (or fails differently). Regenerate the
# evidence with ``aotcheck report ENGINE -v`` (each failure's divergences); the tests
# (tests/test_engines.py) keep the table exact: every entry must fail, nothing else may.


def _group(reason: str, *ids: str) -> dict[str, str]:
    return dict.fromkeys(ids, reason)


_NO_GRAPH = ("Dynamo captured no graph: the function does no tensor op on a graph input (it returns "
             "an input, None or Python values), so it ran eagerly and AOT autograd was never exercised")
_INPLACE_VIEW = ("Dynamo cannot capture it: graph break at an in-place view op on a graph input "
                 "(t_/transpose_/unsqueeze_/squeeze_/as_strided_: 'Getting an inplace view on a graph "
                 "input is not supported', gb0148); the rest ran as smaller graphs or eagerly")
_SAVED_MUTATED_INPUT = ("backward raises 'modified by an inplace operation' (CopyBackwards, version 1, "
                        "expected 0): a grad-requiring non-leaf input is mutated in place and its old "
                        "value is needed by the backward; the runtime's copy_ back into the input bumps "
                        "the version of a tensor the compiled function saved. Eager and "
                        "functorch's aot_function get it right; Dynamo's path does not")
_DETACHED_TWIN = ("compile fails (BackendCompilerFailed): 'aot_autograd() does not yet handle "
                  "non-differentiable view input mutations': the mutated input is a detach() of "
                  "another grad-requiring input")
_VIEW_MUTATED_INTERMEDIATE = ("an intermediate mutated through a view inside the function and then "
                              "returned comes back as a view created by a custom Function: mutating "
                              "it in place raises, where eager's is an ordinary tensor")
_MULTI_OUTPUT_VIEW = ("outputs of unbind/split of an intermediate lose autograd's multi-output-view "
                      "flag: mutating one in place succeeds where eager raises")
_NO_GRAD_VIEW = ("a view made under no_grad (or dropout(training=False), which returns its input) is "
                 "returned as a non-leaf with a grad_fn; eager's is a leaf without grad_fn (and for "
                 "dropout the input object itself)")
_OFFSET_ALIAS = ("inputs aliasing with an offset, f(a, a[1:]): a.zero_(); return a1.view(n) raises "
                 "\"shape '[3]' is invalid for input of size 4\" (pytorch/pytorch#198095)")
_ROW_RETURN_BASE = ("f(a, a[0]) mutating the row and returning a: the output is a new view of a, "
                    "not a itself (eager: out is a)")
_LIST = ("returns a list where eager returns a tuple (aot_function rebuilds every tuple output as "
         "a list; no upstream issue found)")

_DETACHED_VIEW_GRAD = ("a view of a detached alias of an input, mutated in place by a value that "
                       "requires grad and returned, comes back as a leaf without grad_fn: the "
                       "gradient of that value is silently lost (eager: AsStridedBackward0 into it)")
_META_VIEW_GRAD = ("silently wrong gradient: a view whose metadata changed in place (its own "
                   "t_, or its base's) and whose storage is then mutated; autograd over "
                   "functionalization rebuilds the view's grad_fn by replaying the ops that made "
                   "it, which misses the metadata change (docs/findings.md row 21)")
_VIEW_REPLAY = ("raises 'invalid gradient ... got [4, 1] but expected [2, 1]': autograd over "
                "functionalization rebuilds a view's grad_fn by replaying the view op on its base "
                "after the base was transposed in place (aotcheck retraces with the argument copied "
                "as a view of fresh storage)")
_FUZZ_ALSO = ("fails under this engine too: a case from aotcheck's fuzzer run against its own "
              "engine (aotcheck/corpus/cases_regressions.py)")
_REFUSED = ("refused with a named error, a documented limit of the engine "
            "(aotcheck.errors.DOCUMENTED_LIMITS); the case's xfail reason says which")

KNOWN_FAILURES: dict[str, dict[str, str]] = {
    "aotcheck": {
        **_group(_REFUSED, "regressions.fuzz_unsqueeze_then_setitem_aliased_argument",
                 "regressions.view_taken_before_base_transpose_then_mutated",
                 "regressions.view_of_intermediate_transposed_in_place_then_mutated"),
    },
    "torch": {
        **_group(_FUZZ_ALSO, "regressions.fuzz_unsqueeze_then_clamp_strided_nonleaf",
                 "regressions.fuzz_transpose_root_after_mutating_its_slice",
                 "regressions.fuzz_unsqueeze_then_setitem_aliased_argument",
                 "regressions.fuzz_detached_alias_mutated_with_grad_value_returned"),
        **_group(_INPLACE_VIEW, "regressions.fuzz_transpose_after_mutating_a_narrow_of_strided_nonleaf"),
        **_group(_DETACHED_VIEW_GRAD, "regressions.detached_view_of_plain_argument_mutated_with_grad_value"),
        **_group(_INPLACE_VIEW, "regressions.view_taken_before_base_transpose_then_mutated",
                 "regressions.fuzz_squeeze_argument_after_narrow_then_use_narrow"),
        "regressions.fuzz_detached_alias_of_intermediate_with_grad_and_a_view": (
            "a detach() of a view of an intermediate, given a grad_fn by copy_ and returned, "
            "cannot be mutated in place after the call (RuntimeError); eager's can"),
        **_group(_META_VIEW_GRAD, "regressions.view_of_intermediate_transposed_in_place_then_mutated"),
        **_group(_NO_GRAPH, "basics.returns_none", "basics.returns_only_python_scalar",
                 "basics.empty_tuple_output", "alias_of_input.return_input_itself"),
        **_group(_INPLACE_VIEW, "metadata_mutation.t_only", "metadata_mutation.t_and_return_input",
                 "metadata_mutation.transpose_in_place", "metadata_mutation.unsqueeze_in_place",
                 "metadata_mutation.squeeze_in_place", "metadata_mutation.squeeze_dim_in_place",
                 "metadata_mutation.as_strided_in_place", "metadata_mutation.t_then_mul",
                 "metadata_mutation.add_then_unsqueeze", "metadata_mutation.transpose_then_mutate_row",
                 "metadata_mutation.t_then_mul_by_grad_input", "metadata_mutation.t_then_matmul_by_grad_input",
                 "metadata_mutation.t_of_grad_nonleaf", "metadata_mutation.two_inputs_metadata_mutated",
                 "metadata_mutation.as_strided_in_place_grad_nonleaf",
                 "metadata_mutation.squeeze_grad_nonleaf_and_return_it"),
        **_group(_INPLACE_VIEW + "; and then " + _SAVED_MUTATED_INPUT,
                 "metadata_mutation.unsqueeze_and_mul_grad_nonleaf", "metadata_mutation.t_then_mul_by_grad_value",
                 "metadata_mutation.unsqueeze_nongrad_then_mul_by_grad_value"),
        **_group(_SAVED_MUTATED_INPUT, "dtypes.float16_mutation_with_grad", "mutation_autograd.sin_in_place_nonleaf",
                 "mutation_autograd.mutated_nonleaf_returned_and_used"),
        "mutation_autograd.mutate_detached_twin_of_nonleaf": _DETACHED_TWIN,
        "mutation_autograd.mutate_view_of_intermediate_return_base": _VIEW_MUTATED_INTERMEDIATE,
        **_group(_MULTI_OUTPUT_VIEW, "alias_of_intermediate.unbind_of_intermediate",
                 "alias_of_intermediate.split_of_intermediate"),
        **_group(_NO_GRAD_VIEW, "alias_of_input.dropout_eval_returns_input", "alias_of_input.view_under_no_grad_region",
                 "alias_of_intermediate.view_of_intermediate_under_no_grad"),
        "aliased_inputs.zero_base_return_view_of_offset_slice": _OFFSET_ALIAS,
        "aliased_inputs.mutate_row_return_base": _ROW_RETURN_BASE,
        # found by `aotcheck fuzz --engine torch --seed 11` (aotcheck/corpus/cases_torch_findings.py)
        "regressions.fuzz_zero_dim_float64_input_mutation_lost": (
            "the in-place mutation of a 0-dim float64 input is dropped: the argument keeps its old value "
            "and the function reads the stale one (a.mul_(2); return a + 1 gives 2.5 for 1.5; eager 4.0)"),
        "regressions.fuzz_transposed_alias_mutated_with_grad_leaf_mutated_under_no_grad": (
            "compile fails (BackendCompilerFailed): 'outs_to_grad length (1) != tangents length (2)': "
            "f(w, a, a.t()) zeroes a.t(), mutates the grad leaf w under no_grad, then a.mul_(w)"),
        "regressions.fuzz_view_of_mutated_row_input_with_its_base": (
            "f(x[0], x) mutating the row and returning a view of it raises 'incorrect out shape after "
            "application of ViewMeta sequence: (8,) (actual) vs (4,) (expected)': the output is "
            "regenerated from the base argument (same family as pytorch/pytorch#198095)"),
        "regressions.fuzz_op_on_no_grad_view_of_grad_nonleaf": (
            "an op on a view taken under no_grad of a grad-requiring non-leaf argument returns a tensor with "
            "requires_grad False; eager's requires grad (the no_grad view of a non-leaf is a leaf that "
            "requires grad)"),
        # regression cases of aotcheck's own engine (aotcheck/corpus/cases_regressions.py):
        # torch fails them too
        "regressions.fuzz_view_of_no_grad_view": (
            "a view of a view taken under no_grad sends a gradient to the argument; eager's autograd "
            "chain ends at the no_grad view, so no gradient reaches it"),
        "regressions.fuzz_unbind_under_no_grad_returned": _NO_GRAD_VIEW,
        **_group(_INPLACE_VIEW, "regressions.fuzz_t_then_zero_through_view_of_twice_passed",
                 "regressions.fuzz_t_of_argument_aliased_by_its_transpose",
                 "regressions.fuzz_t_and_add_on_twice_passed_returned"),
        "cached:requires_grad_modes.inference_mode_region_inside": (
            "AOTAutogradCache bypass, so the cached run cannot hit: Dynamo's graph calls "
            "torch.autograd.grad_mode._enter_inference_mode, which check_node_safe does not accept "
            "('Unsupported call_function target'); nothing is saved and no counter but bypass shows it"),
    },
    # torch.compile(backend="aotcheck"): only what Dynamo cannot capture; aotcheck gets every graph right.
    "dynamo-aotcheck": {
        **_group(_FUZZ_ALSO, "regressions.fuzz_unsqueeze_then_clamp_strided_nonleaf",
                 "regressions.fuzz_transpose_root_after_mutating_its_slice",
                 "regressions.fuzz_unsqueeze_then_setitem_aliased_argument"),
        **_group(_REFUSED, "regressions.view_of_intermediate_transposed_in_place_then_mutated"),
        **_group(_INPLACE_VIEW, "regressions.fuzz_t_then_zero_through_view_of_twice_passed",
                 "regressions.fuzz_transpose_after_mutating_a_narrow_of_strided_nonleaf",
                 "regressions.view_taken_before_base_transpose_then_mutated",
                 "regressions.fuzz_squeeze_argument_after_narrow_then_use_narrow",
                 "regressions.fuzz_t_of_argument_aliased_by_its_transpose",
                 "regressions.fuzz_t_and_add_on_twice_passed_returned"),
        **_group(_NO_GRAPH.replace("AOT autograd", "aotcheck"), "basics.returns_none",
                 "basics.returns_only_python_scalar", "basics.empty_tuple_output",
                 "alias_of_input.return_input_itself"),
        **_group(_INPLACE_VIEW, "metadata_mutation.t_only", "metadata_mutation.t_and_return_input",
                 "metadata_mutation.transpose_in_place", "metadata_mutation.unsqueeze_in_place",
                 "metadata_mutation.squeeze_in_place", "metadata_mutation.squeeze_dim_in_place",
                 "metadata_mutation.as_strided_in_place", "metadata_mutation.t_then_mul",
                 "metadata_mutation.add_then_unsqueeze", "metadata_mutation.transpose_then_mutate_row",
                 "metadata_mutation.t_then_mul_by_grad_input", "metadata_mutation.t_then_matmul_by_grad_input",
                 "metadata_mutation.t_of_grad_nonleaf", "metadata_mutation.two_inputs_metadata_mutated",
                 "metadata_mutation.as_strided_in_place_grad_nonleaf",
                 "metadata_mutation.squeeze_grad_nonleaf_and_return_it",
                 "metadata_mutation.unsqueeze_and_mul_grad_nonleaf", "metadata_mutation.t_then_mul_by_grad_value",
                 "metadata_mutation.unsqueeze_nongrad_then_mul_by_grad_value"),
    },
    "torch-aot-function": {
        **_group(_FUZZ_ALSO, "regressions.fuzz_unsqueeze_then_clamp_strided_nonleaf",
                 "regressions.fuzz_transpose_root_after_mutating_its_slice",
                 "regressions.fuzz_unsqueeze_then_setitem_aliased_argument",
                 "regressions.fuzz_detached_alias_mutated_with_grad_value_returned"),
        **_group(_VIEW_REPLAY, "regressions.fuzz_transpose_after_mutating_a_narrow_of_strided_nonleaf"),
        **_group(_META_VIEW_GRAD, "regressions.view_taken_before_base_transpose_then_mutated",
                 "regressions.view_of_intermediate_transposed_in_place_then_mutated"),
        "regressions.fuzz_squeeze_argument_after_narrow_then_use_narrow": (
            "raises IndexError (dimension out of range): autograd over functionalization "
            "replays narrow(2) on the argument after it was squeeze_d to 2-d"),
        **_group(_LIST, "regressions.detached_view_of_plain_argument_mutated_with_grad_value",
                 "regressions.fuzz_detached_alias_of_intermediate_with_grad_and_a_view",
                 "regressions.fuzz_detach_of_intermediate_leaves_its_input_without_grad",
                 "regressions.fuzz_detach_of_intermediate_returned_before_it",
                 "regressions.fuzz_as_strided_outside_strided_nonleaf_gets_no_grad"),
        **_group(_LIST, "basics.python_scalar_outputs", "basics.empty_tuple_output", "basics.shape_arithmetic",
                 "basics.zero_dim_tensors", "basics.many_outputs", "non_differentiable.argmax_with_values",
                 "non_differentiable.comparisons", "non_differentiable.comparisons_only",
                 "non_differentiable.integer_index_input", "non_differentiable.where_bool_mask",
                 "non_differentiable.long_output_and_floor", "non_differentiable.integer_only",
                 "non_differentiable.topk_values_and_indices", "non_differentiable.sort_values_and_indices",
                 "non_differentiable.gather_by_argmax", "non_differentiable.masked_fill_from_comparison",
                 "layers.softmax_and_log_softmax", "layers.mse_loss", "dtypes.float64", "dtypes.float16_pointwise",
                 "dtypes.int_times_float", "dtypes.mixed_float32_float64_promotion", "dtypes.cast_down_and_up",
                 "dtypes.int64_reductions", "dtypes.bool_input", "dtypes.int_scalar_tensor_and_float64",
                 "input_mutation.mutated_input_returned_with_view", "input_mutation.mutate_through_flat_view",
                 "input_mutation.copy_broadcast_into_input", "input_mutation.mutate_twice_and_read_between",
                 "mutation_autograd.mul_nonleaf_return_empty", "mutation_autograd.detach_then_mutate",
                 "mutation_autograd.no_grad_mutation_of_leaf_only", "mutation_autograd.detach_mutation_of_leaf_only",
                 "mutation_autograd.nongrad_input_mutated_with_grad_value_return_empty",
                 "mutation_autograd.mutated_nonleaf_returned_and_used", "metadata_mutation.t_only",
                 "input_mutation.empty_input_mutated_and_returned",
                 "mutation_autograd.mutate_then_return_detach_of_nonleaf", "alias_of_input.several_views_of_input",
                 "alias_of_input.views_of_two_inputs", "alias_of_input.unbind_of_input", "alias_of_input.split_of_input",
                 "alias_of_input.chunk_of_input_dim1", "alias_of_input.return_input_twice_and_view",
                 "alias_of_input.view_and_fresh", "alias_of_input.reshape_of_noncontiguous_copies",
                 "alias_of_input.ops_that_return_self", "alias_of_input.empty_slice_of_input",
                 "alias_of_intermediate.view_and_detach_of_intermediate",
                 "alias_of_intermediate.detached_view_of_intermediate", "alias_of_intermediate.base_and_its_transpose",
                 "alias_of_intermediate.view_then_base", "alias_of_intermediate.two_views_of_hidden_intermediate",
                 "alias_of_intermediate.view_of_another_output", "alias_of_intermediate.view_of_intermediate_no_grad",
                 "alias_of_intermediate.views_of_contiguous_transpose",
                 "alias_of_intermediate.view_of_input_and_of_intermediate",
                 "alias_of_intermediate.mutated_intermediate_then_view",
                 "alias_of_intermediate.intermediate_view_detached_and_live",
                 "aliased_inputs.two_rows_of_one_base_both_mutated", "aliased_inputs.input_and_its_flat_view",
                 "aliased_inputs.grad_nonleaf_and_its_detached_twin", "alias_of_input.views_of_transposed_grad_input",
                 "alias_of_input.view_as_and_reshape_of_self", "alias_of_intermediate.chain_of_views_all_returned",
                 "aliased_inputs.grad_base_and_reshaped_view_mutated",
                 "aliased_inputs.grad_base_and_offset_slice_mutate_slice",
                 "aliased_inputs.same_tensor_twice_both_returned", "requires_grad_modes.call_under_no_grad",
                 "requires_grad_modes.call_under_no_grad_view_output",
                 "requires_grad_modes.some_outputs_not_requiring_grad",
                 "requires_grad_modes.requires_grad_on_middle_arg_only", "requires_grad_modes.no_grad_region_inside",
                 "requires_grad_modes.set_grad_enabled_false_region", "requires_grad_modes.enable_grad_region_inside",
                 "requires_grad_modes.enable_grad_region_inside_no_grad_call",
                 "requires_grad_modes.everything_under_no_grad_region", "requires_grad_modes.detach_one_operand",
                 "requires_grad_modes.no_input_requires_grad",
                 "requires_grad_modes.views_of_intermediate_in_no_grad_region"),
        # Tuple outputs that also differ in substance (seen with the list turned back into a tuple):
        "alias_of_intermediate.same_view_returned_twice": _LIST + "; beyond that: the same view returned "
            "twice comes back as two distinct views (eager: out1 is out0)",
        "alias_of_intermediate.unbind_of_intermediate": _LIST + "; beyond that: " + _MULTI_OUTPUT_VIEW,
        "alias_of_intermediate.split_of_intermediate": _LIST + "; beyond that: " + _MULTI_OUTPUT_VIEW,
        "alias_of_intermediate.view_of_intermediate_under_no_grad": _LIST + "; beyond that: " + _NO_GRAD_VIEW,
        "requires_grad_modes.call_under_inference_mode_view_output": _LIST + "; beyond that: called under "
            "inference_mode, x[0] of a grad-requiring x has requires_grad False (eager: True)",
        "basics.returns_torch_size": ("a torch.Size output comes back as a plain tuple (out_spec is taken "
                                      "from the flat outputs)"),
        "mutation_autograd.unused_leaf_mutated_under_no_grad": (
            "an unused grad-requiring leaf, mutated under no_grad, gets a zero gradient where eager leaves "
            "None (PRIOR_ART: unused mutated grad-requiring input)"),
        "mutation_autograd.mutate_detached_twin_of_nonleaf": _DETACHED_TWIN.replace(" (BackendCompilerFailed)", ""),
        "mutation_autograd.mutate_view_of_intermediate_return_base": _VIEW_MUTATED_INTERMEDIATE,
        **_group("the backward saves an input whose metadata the function mutated (x.t_(); return x * y): "
                 "the runtime's as_strided_ bumps its version, and backward raises 'modified by an "
                 "inplace operation' (PRIOR_ART: metadata-mutated input saved by the backward)",
                 "metadata_mutation.t_then_mul_by_grad_input", "metadata_mutation.t_then_matmul_by_grad_input"),
        **_group(_NO_GRAD_VIEW, "alias_of_input.dropout_eval_returns_input",
                 "alias_of_input.view_under_no_grad_region"),
        "aliased_inputs.zero_base_return_view_of_offset_slice": _OFFSET_ALIAS,
        # found by `aotcheck fuzz --engine torch --seed 11` (aotcheck/corpus/cases_torch_findings.py)
        **_group(_LIST, "regressions.fuzz_zero_dim_float64_input_mutation_lost",
                 "regressions.fuzz_transposed_alias_mutated_with_grad_leaf_mutated_under_no_grad",
                 "regressions.fuzz_op_on_no_grad_view_of_grad_nonleaf",
                 "regressions.fuzz_view_of_sibling_view_input", "regressions.fuzz_view_of_no_grad_view",
                 "regressions.fuzz_t_then_zero_through_view_of_twice_passed",
                 "regressions.fuzz_t_of_argument_aliased_by_its_transpose",
                 "regressions.fuzz_unbind_under_no_grad_returned",
                 "regressions.fuzz_t_and_add_on_twice_passed_returned",
                 "regressions.fuzz_reshape_of_strided_nonleaf_is_a_copy",
                 "regressions.fuzz_mutated_view_of_strided_argument_returned",
                 "regressions.fuzz_view_taken_after_mutating_strided_argument"),
        "regressions.fuzz_view_of_mutated_row_input_with_its_base": (
            "f(x[0], x) mutating the row and returning a view of it raises 'incorrect out shape after "
            "application of ViewMeta sequence' (as the torch engine; pytorch/pytorch#198095 family)"),
    },
}

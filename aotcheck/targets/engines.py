"""Engines: one interface over every AOT autograd implementation the corpus is run against.

An engine compiles a function cold (``compile``) or through a persistent cache directory
(``compile_cached``), and ``measure()`` says what the compiles inside it did: graphs compiled,
cache hits, misses, saves, bypasses, graph breaks::

    >>> eng = get_engine("torch")
    >>> with eng.measure() as stats:
    ...     out = eng.compile_cached(f, "/tmp/c")(x)
    >>> stats.hits, stats.misses, stats.hit_rate
    (1, 0, 1.0)

Engines (``ENGINES``, in the order reports list them):

    aotcheck             ``aotcheck.aot_function``; cached: ``aot_function(fn, cache=dir)``
    torch                ``torch.compile(fn, backend="aot_eager")``, AOTAutogradCache forced on and bundled,
                         the backward compiled and its entry saved lazily (torch's default)
    torch-aot-function   ``functorch.compile.aot_function`` with no-op compilers (no cache)
    torch-inductor       (fuzz runs only) ``torch.compile(fn, backend="inductor")`` on CPU
    dynamo-aotcheck      ``torch.compile(fn, backend="aotcheck")``: Dynamo's graph through aotcheck
                         (``aotcheck.targets.backend``); cached: ``options={"cache": dir}``

``run_case(engine, case, cache_dir=None)`` runs one corpus case through the
oracle and returns the report with the stats. ``known_failures.py`` lists, per
engine, every corpus case expected to differ from eager, with the reason; a
key ``"cached:<case id>"`` is a failure of the cached run only.

# NOTE [torch engine: torch's own cache settings]
The torch engines run AOTAutogradCache as torch runs it for a user, with two exceptions that
``aot_eager`` forces (``TorchEngine.cache_config``):
- ``torch-inductor-lite`` and ``torch-inductor`` set nothing: Inductor's compilers are
  serializable, so AOTAutogradCache is on by default; an entry is unbundled (it holds the FX
  graph cache keys of the forward and backward, whose compiled code lives in Inductor's FX graph
  cache beside it), and a training entry is saved lazily, when the backward compiles at the first
  ``.backward()``.
- ``torch`` (``aot_eager``) sets ``force_autograd_cache`` (torch uses the cache with a backend
  whose compiler is not serializable only when forced) and ``bundled_autograd_cache`` (an
  ``aot_eager`` graph has no FX graph cache key, so the bundled entry, which holds the compiled
  graphs themselves, is the only one it can save: unbundled, every save fails). Its backward
  too compiles, and its entry is saved, lazily.
Until issue 38 every torch engine also forced ``force_non_lazy_backward_lowering`` and bundled
entries (torch's precompile flow), which compiled the backward with the forward and saved the
whole entry at compile time: torch's default path, the lazy save, never ran, and a planted
"lazy save skipped" bug went unnoticed. The forced settings are not kept as an engine of their
own: on aot_eager they differ from ``torch`` only in when the backward compiles (the eager branch
in ``graph_compile.py``), and the bundled entry is ``torch``'s already.

# NOTE [settings in force for the backward]
The backward, and with it a training entry's save (and, for Inductor, the backward's FX graph
cache entry), runs after the compiled call has returned: when the caller calls ``.backward()``.
A user sets the cache settings and ``TORCHINDUCTOR_CACHE_DIR`` for the whole process; the
engines set them per compiled function (each has its own cache directory, and other engines
share the process), so a compiled function says what must be in force around its calls *and the
backward of their outputs*: ``_TorchCompiled.in_force()``. The oracle enters it around the
compiled run (``check.oracle.in_force``: the call, then the backward), and each call enters it
too, for a caller that calls without the oracle (a backward outside it then saves into torch's
default directory, as a process without the settings would).
"""
from __future__ import annotations

import contextlib
import copy
import functools
import tempfile
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator

from ..check.divergence import Check, Divergence

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
    opaque_ops: int = 0          # aotcheck: bypasses for a custom op outside aten and prims

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

    def compile_cached(self, fn: Callable, cache_dir, record: bool = False) -> Callable:
        """``fn`` compiled through the persistent cache in ``cache_dir`` (fresh in-memory state);
        ``record``: the caller will ask ``recompile_cached`` for the cached run."""
        raise NotImplementedError(f"engine {self.name!r} has no persistent cache")

    def reuse_held(self, again: Callable) -> bool:
        """After a run of ``recompile_cached``'s result: was it the warm start it stands for?
        (NOTE [the cached run reuses Dynamo's trace]; a run that was not is redone afresh)."""
        return True

    def recompile_cached(self, compiled: Callable, fn: Callable, cache_dir) -> Callable:
        """The cached run after ``compiled`` (the cold compile into ``cache_dir``) has run: by
        default a new ``compile_cached``. The torch engine overrides it
        (NOTE [the cached run reuses Dynamo's trace])."""
        return self.compile_cached(fn, cache_dir)

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
        from ..api import aot_function
        return aot_function(fn)

    def compile_cached(self, fn, cache_dir, record: bool = False):
        from ..api import aot_function
        return aot_function(fn, cache=str(cache_dir))

    def _snapshot(self):
        from ..cache import counters
        return dict(counters)

    def _stats_since(self, before) -> CacheStats:
        from ..cache import counters
        d = {k: v - before.get(k, 0) for k, v in counters.items()}
        hits, misses, bypasses = d.get("hits", 0), d.get("misses", 0), d.get("bypasses", 0)
        from ..cache.serialize import OPAQUE_OP_BYPASS
        return CacheStats(graphs=hits + misses + bypasses, hits=hits, misses=misses, saves=d.get("saves", 0),
                          bypasses=bypasses, opaque_ops=d.get(OPAQUE_OP_BYPASS, 0))


# ---------------------------------------------------------------- torch (Dynamo + AOTAutogradCache)


# torch/_functorch/config.py, what aot_eager forces (NOTE [torch engine: torch's own cache settings])
AOT_EAGER_CACHE_CONFIG = {
    "force_autograd_cache": True,              # use AOTAutogradCache with a non-inductor backend
    "bundled_autograd_cache": True,            # save graphs with no inductor key too (#141790)
}


@contextlib.contextmanager
def _torch_cache_settings(cache_dir: str, config: dict):
    import os

    import torch._functorch.config as fconfig
    old = os.environ.get("TORCHINDUCTOR_CACHE_DIR")   # read by torch/_inductor/runtime/cache_dir_utils.py
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
    try:
        with fconfig.patch(config):
            yield
    finally:
        if old is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = old


# NOTE [no compile telemetry]
# Three things a torch.compile call does that compute nothing the compiled code depends on were
# a large share of a tiny fuzz program's cold compile (cProfile, 60 programs):
# - After building a frame's guards, Dynamo measures how long they take to evaluate
#   (``profile_guard_manager``, after flushing the CPU cache), only to log the figure: 15% of a
#   cold+cached run (2.0 s of 13.6 s over 55 programs).
# - Each compiled frame's metrics record dumps four whole config modules as strings for the log
#   (``record_compilation_metrics``): 0.78 s of 12.0 s.
# - Each AOT trace makes six ``PhiloxState``s, each with two ``torch.tensor(())``, under the fake
#   mode, where one costs 0.3 ms instead of 3 us: 1.07 s of 12.0 s. Their values are read only
#   when ``functionalize_rng_ops`` is on (not on CPU); ``validate_state`` refuses an empty one.
# For the length of the compiled call, ``no_compile_telemetry`` replaces the guard latency by
# zero and the config dumps by None, and gives every new ``PhiloxState`` one shared real empty
# tensor (only with ``functionalize_rng_ops`` off). The guards, the graphs and the caches are
# built and checked as before. Measured by A/B (tools/bench_fuzz.py's programs, cold then
# cached, interleaved): 158.6 ms to 139.0 ms of CPU per program, load average 4.


@functools.cache
def _telemetry_patches() -> tuple[tuple[object, str, object], ...]:
    import torch
    import torch._decomp.decompositions_for_rng as rng_decomp
    import torch._dynamo.guards as guards
    import torch._dynamo.utils as dynamo_utils
    import torch._functorch.config as functorch_config
    empty = torch.tensor(())

    def philox_reset(state, _reset=rng_decomp.PhiloxState.reset):
        if functorch_config.functionalize_rng_ops:
            return _reset(state)
        state.seed = state.base_offset = empty
        state.relative_offset = 0
        state.offset_advanced_at_least_once = False

    patches = [(guards, "profile_guard_manager", lambda *args: 0.0),
               (rng_decomp.PhiloxState, "reset", philox_reset)]
    for name in ("_get_dynamo_config_for_logging", "_compiler_config_for_logging",
                 "_scrubbed_inductor_config_for_logging", "_functorch_config_for_logging"):
        if hasattr(dynamo_utils, name):
            patches.append((dynamo_utils, name, lambda: None))
    return tuple(patches)


@contextlib.contextmanager
def no_compile_telemetry():
    patches = _telemetry_patches()
    old = [(owner, name, owner.__dict__[name]) for owner, name, _ in patches]
    try:
        for owner, name, value in patches:
            setattr(owner, name, value)
        yield
    finally:
        for owner, name, value in reversed(old):
            setattr(owner, name, value)


# NOTE [the cached run reuses Dynamo's trace]
# The fuzzer's cached run asks one thing of AOTAutogradCache: that a fresh compile of the graph
# Dynamo gave the backend, with no in-memory state, loads what the cold compile saved and runs like
# it. Dynamo's tracing was 70% of a cold+cached program (cProfile, 40 programs), and a second trace
# of the same function gives the same graphs. So ``recompile_cached`` keeps Dynamo's compiled code
# and guards and compiles each recorded graph again, with its example inputs and tracing context,
# after clearing the in-memory caches: every AOTAutogradCache lookup and load runs as on a warm
# start. What it skips is Dynamo's second trace; the fuzzer's ``--warm`` run (a new process,
# NOTE [one worker, fresh state per program] in fuzz/warm.py) and the corpus's cached reports
# trace afresh. If Dynamo compiles a frame during the cached run (a guard failed), that compile
# ran in the cold run's Dynamo state (automatic dynamic shapes, for one), which no new process
# has: ``reuse_held`` says so, and the runner redoes the cached run with a fresh trace (fuzz seed
# 51: such a recompile failed in Dynamo's fake-tensor run where a fresh trace passes).


class _RecordedGraph:
    """One graph Dynamo handed to the backend, kept so that the cached run compiles it again.

    A graph compiled after a graph break gets the frame's real tensors as example inputs, and
    the program goes on to change them in place (``a.unsqueeze_(0)`` after the break). AOT
    autograd fakes them again from the symbolic context Dynamo recorded, which then no longer
    matches their shape (``int(sym)=2 != hint=1``). So the recompile puts each real input's
    geometry back as it was when the graph was compiled, and afterwards as it found it."""

    def __init__(self, backend, gm, example_inputs):
        import torch
        self.backend, self.gm, self.example_inputs = backend, gm, list(example_inputs)
        self.context = torch._guards.TracingContext.try_get()
        real = [x for x in self.example_inputs if type(x) is torch.Tensor]   # not FakeTensor
        real += [x._base for x in real if x._base is not None]   # a view is faked with its base
        self.real = list({id(x): x for x in real}.values())
        self.geometry = [_geometry(x) for x in self.real]
        self.fn = backend(gm, list(example_inputs))

    def recompile(self) -> None:
        import torch
        with _geometry_as(self.real, self.geometry), torch._guards.tracing(self.context):
            self.fn = self.backend(self.gm, list(self.example_inputs))

    def __call__(self, *args):
        return self.fn(*args)


def _geometry(t) -> tuple:
    return tuple(t.shape), t.stride(), t.storage_offset(), t.untyped_storage().nbytes()


@contextlib.contextmanager
def _geometry_as(tensors, geometry):
    """Give each tensor the (shape, stride, offset) recorded for it, under ``no_grad``, and put
    back what it had; a tensor whose storage changed size since (``set_``, a resize) is left
    alone, and the recompile then fails into the runner's fresh trace."""
    import torch
    changed = []
    try:
        with torch.no_grad():
            for t, g in zip(tensors, geometry):
                now = _geometry(t)
                if now == g or now[3] != g[3]:
                    continue
                changed.append((t, now))
                t.as_strided_(g[0], g[1], g[2])
        yield
    finally:
        with torch.no_grad():
            for t, g in reversed(changed):
                t.as_strided_(g[0], g[1], g[2])


class _TorchCompiled:
    """``torch.compile(fn, backend=...)`` whose calls, and the backward of what they return, run
    with the cache settings (NOTE [settings in force for the backward])."""

    def __init__(self, fn, cache_dir: str, keep=None, backend: str = "aot_eager",
                 record: bool = False, dynamic: bool | None = None, config: dict | None = None):
        import torch
        self.fn, self.cache_dir, self._keep = fn, cache_dir, keep   # keep: a TemporaryDirectory
        self.config = dict(config or {})
        self.graphs: list[_RecordedGraph] = []
        if record and backend == "aot_eager":
            real = torch._dynamo.lookup_backend(backend)

            def record(gm, example_inputs):
                graph = _RecordedGraph(real, gm, example_inputs)
                self.graphs.append(graph)
                return graph
            record.__name__ = f"{backend}_recorded"   # Dynamo names it in its errors
            self.compiled = torch.compile(fn, backend=record, fullgraph=False)
        else:       # Inductor compiles (and changes) the graph module it is given: not reused
            self.compiled = torch.compile(fn, backend=backend, fullgraph=False, dynamic=dynamic)

    @contextlib.contextmanager
    def in_force(self):
        """The cache settings and this function's ``TORCHINDUCTOR_CACHE_DIR``, for the block: the
        oracle holds it over a call and the backward after it (``check.oracle.in_force``)."""
        with _torch_cache_settings(self.cache_dir, self.config), no_compile_telemetry():
            yield

    def __call__(self, *args, **kwargs):
        with self.in_force():
            return self.compiled(*args, **kwargs)

    def recompiled(self) -> "_TorchCompiled | None":
        """This function with every recorded graph compiled again from the cache
        (NOTE [the cached run reuses Dynamo's trace]), or None when nothing was recorded."""
        if not self.graphs:
            return None
        from torch._dynamo.utils import counters
        from torch._inductor.utils import clear_caches
        clear_caches()
        with self.in_force():
            for graph in self.graphs:
                graph.recompile()
        self.frames_at_reuse = counters["frames"]["total"]
        return self

    frames_at_reuse: int | None = None

    def traced_since_reuse(self) -> bool:
        """Did Dynamo compile a frame after ``recompiled()`` (a guard failed on the cached
        call)? Then the run was not a warm start: Dynamo recompiled in the cold run's state (with
        automatic dynamic shapes, say), which a new process never does."""
        from torch._dynamo.utils import counters
        return self.frames_at_reuse is not None and counters["frames"]["total"] != self.frames_at_reuse


def _fresh_torch_state() -> None:
    import torch
    from torch._inductor.utils import clear_caches
    torch._dynamo.reset()
    clear_caches()


class TorchEngine(Engine):
    name = "torch"
    supports_cache = True
    backend = "aot_eager"
    # the functorch config forced around its compiles and backwards
    # (NOTE [torch engine: torch's own cache settings])
    cache_config: dict = AOT_EAGER_CACHE_CONFIG
    description = ('torch.compile(fn, backend="aot_eager"), AOTAutogradCache forced and bundled, '
                   "backward and its entry saved lazily; private TORCHINDUCTOR_CACHE_DIR")

    def compile(self, fn):
        _fresh_torch_state()
        tmp = tempfile.TemporaryDirectory(prefix="aotcheck-torch-cold-")
        return _TorchCompiled(fn, tmp.name, keep=tmp, backend=self.backend, config=self.cache_config)

    def compile_cached(self, fn, cache_dir, record: bool = False):
        """``record``: keep the graphs Dynamo gives the backend, for ``recompile_cached``
        (the backend is then a wrapper, named ``aot_eager_recorded`` in Dynamo's errors)."""
        _fresh_torch_state()
        return _TorchCompiled(fn, str(cache_dir), backend=self.backend,
                              record=record and not self.retrace_cached, config=self.cache_config)

    def compile_dynamic(self, fn, cache_dir):
        """``compile_cached`` with every size symbolic (the ``dynamic_shape`` variation)."""
        _fresh_torch_state()
        return _TorchCompiled(fn, str(cache_dir), backend=self.backend, dynamic=True,
                              config=self.cache_config)

    def reuse_held(self, again) -> bool:
        return not (isinstance(again, _TorchCompiled) and again.traced_since_reuse())

    retrace_cached = False      # True: the cached run traces with Dynamo again (``--retrace-cached``)
    recompile_fallbacks = 0     # cached runs that traced again because the reuse failed

    def recompile_cached(self, compiled, fn, cache_dir):
        again = None
        if isinstance(compiled, _TorchCompiled) and not self.retrace_cached:
            try:
                again = compiled.recompiled()
            except Exception:  # noqa: BLE001 - the shortcut's own failure: trace again instead
                # (a recorded fake input that the cold compile changed in place cannot be faked
                # again, fuzz seed 51); a real cache failure shows in the retraced run too
                self.recompile_fallbacks += 1
                again = None
        return again if again is not None else self.compile_cached(fn, cache_dir)

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


class TorchInductorEngine(TorchEngine):
    """``torch.compile`` with Inductor on CPU (C++ codegen): slow, for long fuzz runs. Not in
    the corpus reports (``ENGINES``); ``get_engine("torch-inductor")`` gives it."""
    name = "torch-inductor"
    backend = "inductor"
    cache_config: dict = {}         # torch's defaults: unbundled entries, the lazy save
    description = ('torch.compile(fn, backend="inductor") on CPU, AOTAutogradCache and FX graph '
                   "cache with torch's default settings in a private TORCHINDUCTOR_CACHE_DIR")


def _inductor_lite(gm, example_inputs):
    """``torch.compile(mode="lite")``'s backend: Inductor with every op a fallback to aten."""
    from torch._inductor import lite_mode_options
    from torch._inductor.compile_fx import compile_fx
    return compile_fx(gm, example_inputs, config_patches=dict(lite_mode_options))


class TorchInductorLiteEngine(TorchEngine):
    """Inductor in its ``lite`` mode (``torch._inductor.lite_mode_options``): every op falls
    back to aten, so no C++ kernel is built, while AOT autograd, Inductor's lowering and
    wrapper codegen, its FX graph cache and AOTAutogradCache (with Inductor's key) run as
    under full Inductor. A full Inductor compile on CPU builds C++ kernels (about 17 s a case
    on this project's shared 2-core machine): the corpus regression command
    (``aotcheck check --engine all-torch``) runs this engine instead."""
    name = "torch-inductor-lite"
    backend = staticmethod(_inductor_lite)
    cache_config: dict = {}         # torch's defaults: unbundled entries, the lazy save
    description = ('torch.compile(fn, backend="inductor", mode="lite") on CPU: ops fall back to aten; '
                   "AOTAutogradCache and FX graph cache with torch's default settings in a private "
                   "TORCHINDUCTOR_CACHE_DIR")


# ---------------------------------------------------------------- functorch.compile.aot_function


class TorchAotFunctionEngine(Engine):
    name = "torch-aot-function"
    supports_cache = False
    description = "functorch.compile.aot_function(fn, fw_compiler=nop, bw_compiler=nop); no cache, no guards"

    def compile(self, fn):
        # A fresh aot_function per compile: it keeps no signature and would reuse its
        # first graph for any later call.
        from functorch.compile import aot_function, nop
        from torch.utils import _pytree as pytree
        spec: list = []

        def traced(*args, **kwargs):
            out = fn(*args, **kwargs)
            spec[:] = [pytree.tree_structure(out)]
            return out
        compiled = aot_function(traced, fw_compiler=nop, bw_compiler=nop)

        @functools.wraps(fn)
        def call(*args, **kwargs):
            out = compiled(*args, **kwargs)
            return _as_traced(out, spec[0]) if spec else out
        call.raw = compiled           # aot_function's own return value, list and all
        return call


def _as_traced(out, spec):
    """NOTE [aot_function's list]: ``out`` rebuilt with the structure the function returned
    when traced, where only the containers differ (same leaves, in order)."""
    from torch.utils import _pytree as pytree
    leaves = pytree.tree_leaves(out)
    return pytree.tree_unflatten(leaves, spec) if len(leaves) == spec.num_leaves else out


# NOTE [aot_function's list]
# ``functorch.compile.aot_function`` gives back every tuple the function returns as a list
# (known failure LIST, docs/findings.md). The oracle compares output structure first and stops
# there, so on 180 of the corpus's cases (and on every fuzz program) that one difference hid
# every check behind it: values, aliasing, requires_grad, input mutations, gradients, which are
# what this engine exists to reach without Dynamo in front (duplicate and aliased arguments,
# synthetic bases, inference-graph replays). The engine therefore hands the caller the
# structure the function returned when traced (same tensors, same order; only the containers
# are rebuilt), and ``call.raw`` keeps aot_function's own result; tests/test_engines.py pins
# that the raw result still is a list, so a fix upstream shows.


# ---------------------------------------------------------------- torch.compile(backend="aotcheck")


class DynamoAotcheckEngine(TorchEngine):
    """Dynamo captures, aotcheck compiles (``aotcheck.targets.backend``); the cache is aotcheck's."""
    name = "dynamo-aotcheck"
    supports_cache = True
    description = 'torch.compile(fn, backend="aotcheck"); cached: options={"cache": dir}'

    def compile(self, fn):
        import torch
        torch._dynamo.reset()
        return torch.compile(fn, backend="aotcheck")

    def compile_cached(self, fn, cache_dir, record: bool = False):
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


# Engines for fuzz runs only (too slow for the corpus reports).
EXTRA_ENGINES: dict[str, Engine] = {e.name: e for e in (TorchInductorEngine(),
                                                          TorchInductorLiteEngine())}


def get_engine(name: str) -> Engine:
    try:
        return ENGINES.get(name) or EXTRA_ENGINES[name]
    except KeyError:
        raise KeyError(f"unknown engine {name!r}; engines: "
                       f"{', '.join([*ENGINES, *EXTRA_ENGINES])}") from None


@dataclass
class EngineRun:
    report: object            # oracle.Report
    stats: CacheStats


def run_case(engine: Engine, case, cache_dir=None) -> EngineRun:
    """Compile ``case.fn`` with ``engine`` (cold, or through ``cache_dir``), run it in the
    case's grad mode, forward plus backward unless the case says otherwise, and compare with
    eager through the oracle."""
    from ..check.harness import check_case
    with engine.measure() as stats:
        compiled = engine.compile(case.fn) if cache_dir is None else engine.compile_cached(case.fn, cache_dir)
        report = check_case(case, compiled)
    return EngineRun(report, stats)


def capture_problem(engine: Engine, run: EngineRun) -> Divergence | None:
    """For Dynamo-based engines: why the run did not go through one captured graph, or None.
    A graph break or a skipped frame makes a passing run vacuous in part, so it is a failure."""
    if engine.name not in ("torch", "dynamo-aotcheck"):
        return None
    if run.stats.graph_breaks:
        return Divergence(Check.GRAPH_BREAK, detail="; ".join(run.stats.graph_breaks))
    if run.stats.graphs == 0:
        return Divergence(Check.NO_GRAPH)
    return None


def cache_problem(run: EngineRun, case=None) -> Divergence | None:
    """For a cached run: every compiled graph must have been a hit (a silent miss is a miss), or
    bypassed again for an opaque custom op (NOTE [a custom op the cache does not hold], harness.py)."""
    s = run.stats
    if s.hits >= 1 and not s.misses and not s.bypasses:
        return None
    if case is not None and "custom_op" in case.tags and 0 < s.bypasses == s.opaque_ops and not s.hits + s.misses:
        return None
    return Divergence(Check.CACHE_MISS, actual=f"hits={s.hits} misses={s.misses} bypasses={s.bypasses}")


def outcome(engine: Engine, case, cache_dir=None) -> tuple[EngineRun, list[Divergence]]:
    """Run ``case`` and list every problem: divergences from eager and capture problems. With
    ``cache_dir`` (an empty directory) this is the cache round trip: a first run fills the
    cache, a second one, compiled afresh, must equal eager *and* hit for every graph. An
    empty list is a pass; the returned run is the last one."""
    if cache_dir is not None:
        fill = run_case(engine, case, cache_dir)
        if not fill.report.ok:
            return fill, [replace(d, cache_fill=True) for d in fill.report.divergences]
    run = run_case(engine, case, cache_dir)
    problems = list(run.report.divergences) + [p for p in [capture_problem(engine, run)] if p is not None]
    if cache_dir is not None and not problems and (cp := cache_problem(run, case)):
        problems.append(cp)
    return run, problems

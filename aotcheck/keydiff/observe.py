"""observe: one compile of a program under one state, into one cache directory, observed.

What was produced and what it was keyed by are read from torch's structured trace (the
records ``tlparse`` reads; ``torch._logging._internal.trace_log``), which every compile
writes whether it misses, hits or bypasses, per graph (a graph break makes two; each record
carries its compile id):

    produced   aot_forward_graph, aot_backward_graph, aot_inference_graph (AOTAutograd's
               graphs), aot_forward_graph_fw_metadata (the runtime metadata it hands on),
               inductor_output_code (Inductor's wrapper and kernels)
    keys       aotautograd_cache_{miss,hit,bypass} (AOTAutogradCache's key, or why none),
               fx_graph_cache_{miss,hit,bypass} (the FX graph cache's keys)

Texts are normalized (``normalize``): compile-order ids, addresses, temporary paths and
content hashes are replaced, so two compiles of one thing read the same.

The cache settings are the torch engine's (``aotcheck/targets/engines.py``):
``force_autograd_cache`` (the cache is asked for a non-Inductor backend too),
``force_non_lazy_backward_lowering`` (a training entry is saved at compile time) and, for any
backend but Inductor, ``bundled_autograd_cache`` (an entry holds its graphs; without it an
aot_eager entry is never written). ``TORCHINDUCTOR_CACHE_DIR`` is the directory given.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from dataclasses import dataclass, field
from typing import Callable

import torch

from . import setters
from .program import ProgramError, arguments
from ..engine import serial

PRODUCED = ("aot_forward_graph", "aot_backward_graph", "aot_inference_graph",
            "aot_forward_graph_fw_metadata", "aot_forward_graph_fw_subclass_metadata",
            "inductor_output_code")
SCHEMA = 1
KEY_ONLY = "key only: "


@dataclass(frozen=True)
class Graph:
    """One graph Dynamo handed to the backend (one compile id): what was produced for it, as
    (artifact, normalized text) pairs in the order written, the AOTAutogradCache key it was
    looked up under (``""``: none), the FX graph cache keys of its compiled graphs, and why a
    cache declined it. ``cache``: the cache ``aot_key`` belongs to (aotcheck's own, for the
    ``aotcheck`` target: ``observe_aotcheck.py``)."""
    compile_id: str
    produced: tuple[tuple[str, str], ...] = ()
    aot_key: str = ""
    fx_keys: tuple[str, ...] = ()
    bypass: tuple[str, ...] = ()
    cache: str = "AOTAutogradCache"


@dataclass(frozen=True)
class Observation:
    """One compile of a program, observed: its graphs in compile order; ``events``: the cache
    counters' deltas; ``key_details``: the AOTAutogradCache key's components (detail name,
    hash) of its first key, when asked for; ``error``: the compile or call failed (first line);
    ``eager``: None when not compared with eager, "" when equal, else the oracle's first
    divergence."""
    graphs: tuple[Graph, ...] = ()
    events: tuple[tuple[str, int], ...] = ()
    key_details: tuple[tuple[str, str], ...] = ()
    error: str | None = None
    eager: str | None = None
    schema: int = field(default=SCHEMA)

    def event(self, name: str) -> int:
        return dict(self.events).get(name, 0)

    @property
    def aot_keys(self) -> tuple[str, ...]:
        return tuple(g.aot_key for g in self.graphs if g.aot_key)

    @property
    def bypass(self) -> tuple[str, ...]:
        return tuple(b for g in self.graphs for b in g.bypass)

    def to_json(self) -> dict:
        return serial.to_data(self)

    @staticmethod
    def from_json(d: dict) -> "Observation":
        if d.get("schema") != SCHEMA:
            raise ValueError(f"observation schema {d.get('schema')}, expected {SCHEMA}")
        return serial.from_data(Observation, d)


# ---------------------------------------------------------------- normalization

_NORMALIZE = [
    (re.compile(r"^.*# File: .*$\n?", re.M), ""),                    # source locations
    (re.compile(r"^\s*# (kernel path|Topologically Sorted|Source Nodes|Original ATen).*$\n?", re.M), ""),
    (re.compile(r"\b\d+_(forward|backward|inference)\b"), r"N_\1"),   # AOT ids count compiles
    (re.compile(r"0x[0-9a-fA-F]+"), "0x?"),                           # addresses
    (re.compile(r"(/[\w.+-]+)+/torchinductor[\w.+-]*(/[\w.+-]+)*"), "<inductor-cache>"),
    (re.compile(r"(/tmp|/var/folders)(/[\w.+-]+)+"), "<tmp>"),
    (re.compile(r"\b[a-z0-9]{52}\b"), "<hash>"),                      # content-addressed names
    (re.compile(r"compile_id=\S+"), "compile_id=?"),
    (re.compile(r"ac_graph_id: \d+"), "ac_graph_id: N"),                  # checkpoint regions count compiles
]


def normalize(text: str) -> str:
    for pattern, repl in _NORMALIZE:
        text = pattern.sub(repl, text)
    return text.strip()


# ---------------------------------------------------------------- the structured trace


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[tuple[dict, object]] = []

    def emit(self, record):
        self.records.append((getattr(record, "metadata", {}) or {}, getattr(record, "payload", None)))


def _wanted(name: str, metadata_fn) -> tuple[bool, object]:
    if name in PRODUCED:
        return True, metadata_fn
    if name != "artifact":
        return False, metadata_fn
    metadata = metadata_fn()
    wanted = metadata.get("name", "") if isinstance(metadata, dict) else ""
    return wanted in PRODUCED or wanted.startswith(("aotautograd_cache_", "fx_graph_cache_")), lambda: metadata


@contextlib.contextmanager
def structured_trace():
    """Every structured-trace record written in the block that names a produced artifact or a
    cache event: (metadata, payload).

    With a handler on ``trace_log``, every ``trace_structured`` call computes its payload (a
    runnable repro of each graph, every config module as text, the guards): seconds per compile.
    So for the block, ``trace_structured`` skips the records this module does not read, before
    their payloads are computed; it is replaced in ``torch._logging._internal`` and in every
    torch module that imported it by name."""
    import sys

    from torch._logging import _internal
    original = _internal.trace_structured

    def filtered(name, metadata_fn=dict, **kwargs):
        wanted, metadata_fn = _wanted(name, metadata_fn)
        if wanted:
            original(name, metadata_fn, **kwargs)
    owners = [m for n, m in list(sys.modules.items()) if n.startswith("torch") and m is not None
              and getattr(m, "trace_structured", None) is original]
    handler, level = _Records(), _internal.trace_log.level
    # first: torch's LazyTraceHandler removes itself from this list while the logger iterates it
    # (at the first record, when no trace directory is set), which skips the handler after it
    _internal.trace_log.handlers.insert(0, handler)
    _internal.trace_log.setLevel(logging.DEBUG)
    for m in owners:
        m.trace_structured = filtered
    try:
        yield handler.records
    finally:
        for m in owners:
            m.trace_structured = original
        _internal.trace_log.removeHandler(handler)
        _internal.trace_log.setLevel(level)


def _artifacts(records) -> list[tuple[str, str, object]]:
    """(compile id, artifact name, payload) of every record that names an artifact."""
    out = []
    for metadata, payload in records:
        cid = f"{metadata.get('frame_id', '?')}/{metadata.get('frame_compile_id', '?')}"
        for k, v in metadata.items():
            if k == "artifact" and isinstance(v, dict):
                out.append((cid, v.get("name", ""), payload))
            elif k in PRODUCED:
                out.append((cid, k, payload))
    return out


def _cache_info(payload) -> dict:
    try:
        info = json.loads(payload) if isinstance(payload, str) else {}
    except ValueError:
        return {}
    return info if isinstance(info, dict) else {}


def _graph(cid: str, artifacts) -> Graph:
    produced, aot_key, fx_keys, bypass = [], "", [], []
    for _, name, payload in artifacts:
        if name in PRODUCED and payload is not None:
            produced.append((name, normalize(payload if isinstance(payload, str)
                                             else json.dumps(payload, sort_keys=True))))
        elif name.startswith(("aotautograd_cache_", "fx_graph_cache_")):
            info, aot = _cache_info(payload), name.startswith("aotautograd_cache_")
            if info.get("key") and aot:
                aot_key = aot_key or info["key"]
            elif info.get("key"):
                fx_keys.append(info["key"])
            if info.get("cache_bypass_reason"):
                which = "AOTAutogradCache" if aot else "FX graph cache"
                bypass.append(normalize(f"{which}: {info['cache_bypass_reason'].splitlines()[0]}"))
    return Graph(cid, tuple(produced), aot_key, tuple(fx_keys), tuple(bypass))


# ---------------------------------------------------------------- one compile

_EVENTS = (("aot_autograd", "autograd_cache_hit"), ("aot_autograd", "autograd_cache_miss"),
           ("aot_autograd", "autograd_cache_bypass"), ("aot_autograd", "autograd_cache_saved"),
           ("inductor", "fxgraph_cache_hit"), ("inductor", "fxgraph_cache_miss"),
           ("inductor", "fxgraph_cache_bypass"))


def _counts() -> dict[str, int]:
    from torch._dynamo.utils import counters
    return {f"{g}.{k}": counters[g][k] for g, k in _EVENTS}


@contextlib.contextmanager
def cache_settings(cache_dir: str, backend):
    """The torch engine's cache settings (module docstring) around the block."""
    import torch._functorch.config as fconfig
    old = os.environ.get("TORCHINDUCTOR_CACHE_DIR")   # read by torch/_inductor/runtime/cache_dir_utils.py
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache_dir)
    patch = {"force_autograd_cache": True, "force_non_lazy_backward_lowering": True,
             "bundled_autograd_cache": backend != "inductor"}
    try:
        with fconfig.patch(patch):
            yield
    finally:
        if old is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = old


def fresh_torch() -> None:
    """No Dynamo guard and no in-memory cache answers first: the persistent cache decides."""
    from torch._inductor.utils import clear_caches
    torch._dynamo.reset()
    clear_caches()


class KeyComputed(BaseException):
    """Raised right after AOTAutogradCache computed its key (``key_only``): the compile stops
    there. A BaseException, so that the cache's own ``except Exception`` (which turns any error
    into a bypass and compiles on) lets it through."""


@contextlib.contextmanager
def stop_after_key():
    """The block's compile stops once AOTAutogradCache has its key (Dynamo has traced; nothing
    is lowered): the key is read from ``KeyComputed``'s argument."""
    import torch._functorch._aot_autograd.autograd_cache as ac
    original = ac.autograd_cache_key

    def stop(*args, **kwargs):
        key, _ = original(*args, **kwargs)
        raise KeyComputed(key)
    ac.autograd_cache_key = stop
    try:
        yield
    finally:
        ac.autograd_cache_key = original


class KernelsNotBuilt(Exception):
    """Raised by a stubbed C++ kernel (``stubbed_kernels``): the code was produced, not built."""


@contextlib.contextmanager
def stubbed_kernels():
    """Inductor's C++ kernels are generated but not compiled (a build is seconds per kernel on
    CPU): the output code and the keys are what the differential compares, and a call raises
    ``KernelsNotBuilt`` after the compile. Only the in-process config census uses it."""
    from torch._inductor.async_compile import AsyncCompile

    def stub(*args, **kwargs):
        def kernel(*a, **k):
            raise KernelsNotBuilt("C++ kernels are not built in the config census")
        return kernel
    old = AsyncCompile.cpp, AsyncCompile.cpp_pybinding
    AsyncCompile.cpp = lambda self, source_code: stub()
    AsyncCompile.cpp_pybinding = lambda self, argtypes, source_code: stub()
    try:
        yield
    finally:
        AsyncCompile.cpp, AsyncCompile.cpp_pybinding = old


def backend_of(module):
    backend = getattr(module, "BACKEND", "aot_eager")
    return backend() if callable(backend) else backend


def compiler_of(module, backend) -> Callable:
    """The program's entry point: its ``compile(fn)``, else ``torch.compile(fn, backend=...)``."""
    if callable(getattr(module, "compile", None)):
        return module.compile(module.fn)
    return torch.compile(module.fn, backend=backend)


def observe(module, state: dict, cache_dir: str, *, eager: bool = False, details: bool = False,
            stub: bool = False, key_only: bool = False) -> Observation:
    """Compile ``module.fn`` with ``state`` (VARY name -> value) in place, into ``cache_dir``,
    call it (``eager``: through the oracle, against eager under the same state), and observe.
    ``key_only``: stop once the first graph's AOTAutogradCache key is computed (an observation
    with that key and nothing produced)."""
    from ..targets.engines import no_compile_telemetry   # NOTE [no compile telemetry] there
    from ..targets.key_triage import record_torch_keys
    keys: list = []
    with contextlib.ExitStack() as stack:
        for name, value in dict(getattr(module, "CONFIG", {})).items():
            stack.enter_context(setters.applied(module, name, value))
        for name, value in state.items():
            stack.enter_context(setters.applied(module, name, value))
        if stub:
            stack.enter_context(stubbed_kernels())
        if key_only:
            stack.enter_context(stop_after_key())
        make = _input_maker(module, state)
        backend = backend_of(module)
        fresh_torch()
        before = _counts()
        recording = record_torch_keys(keys) if details else contextlib.nullcontext()
        with cache_settings(cache_dir, getattr(module, "BACKEND", "aot_eager")), structured_trace() as records, \
                recording, no_compile_telemetry():
            error, eager_text = _run(module, backend, make, eager)
        after = _counts()
    return _observation(records, keys, {k: after[k] - before[k] for k in after if after[k] != before[k]},
                        error, eager_text)


def _input_maker(module, state: dict) -> Callable[[], tuple]:
    storage = [(setters.relation_pair(n), v) for n, v in state.items() if n.startswith("storage:")]

    def make() -> tuple:
        torch.manual_seed(0)
        args = arguments(module)
        for (i, j), relation in storage:
            args = setters.related(args, i, j, relation)
        return args
    return make


def _wants_backward(module, out) -> bool:
    flag = getattr(module, "BACKWARD", None)
    if flag is not None:
        return bool(flag)
    from torch.utils import _pytree as pytree
    return any(isinstance(t, torch.Tensor) and t.requires_grad for t in pytree.tree_leaves(out))


def _run(module, backend, make, eager: bool, compile=None) -> tuple[str | None, str | None]:
    """(error, eager comparison) of one compile and call; ``compile()``: the compiled function
    (default: the program's torch entry point, ``compiler_of``)."""
    from ..check import oracle
    try:
        compiled = compile() if compile is not None else compiler_of(module, backend)
        if not eager:
            compiled(*make())
            return None, None
        probe = module.fn(*make())
        backward = _wants_backward(module, probe)

        def inputs():
            args = make()
            leaves = tuple(a for a in args if isinstance(a, torch.Tensor) and a.is_leaf and a.requires_grad)
            return oracle.Inputs(args, leaves=leaves)
        report = oracle.check(module.fn, compiled, inputs, backward=backward, mutate_outputs=False)
        return None, "" if report.ok else str(report.divergences[0])
    except KernelsNotBuilt:
        return None, None
    except KeyComputed as k:
        return None, f"{KEY_ONLY}{k.args[0]}"
    except ProgramError:
        raise
    except Exception as e:  # noqa: BLE001 - a compile that fails is an observation
        first = (str(e).strip().splitlines() or [""])[0]
        return f"{type(e).__name__}: {first[:300]}", None


def _observation(records, keys, events, error, eager_text) -> Observation:
    if eager_text and eager_text.startswith(KEY_ONLY):
        return Observation((Graph("0/0", (), eager_text[len(KEY_ONLY):]),), tuple(sorted(events.items())))
    artifacts = _artifacts(records)
    ids = list(dict.fromkeys(cid for cid, name, _ in artifacts
                             if name in PRODUCED or name.startswith(("aotautograd_cache_", "fx_graph_cache_"))))
    graphs = tuple(_graph(cid, [a for a in artifacts if a[0] == cid]) for cid in ids)
    details = tuple(sorted(keys[0][1].items())) if keys else ()
    return Observation(graphs, tuple(sorted(events.items())), details, error, eager_text)

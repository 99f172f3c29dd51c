"""entry: a compiled artifact to and from a cache entry, and the lazily saved backward.

``lookup`` turns a stored entry back into a runnable artifact (a hit) or returns
None (a miss); ``save`` writes a freshly compiled artifact's entry. Neither ever
raises on an unreadable entry: it is a miss plus a warning, and the entry is
rewritten. Graphs are stored as data (:mod:`aotcheck.cache.serialize`) and
rebuilt against aten/prims ops only; nothing stored is ever executed.

# NOTE [lazy backward]
PyTorch writes a training entry only when the first backward compiles, so a
test that never calls backward never writes one. Here the forward half is
written at compile time and the backward is written, as its own file, the
first time backward runs. An entry without ``backward.json`` is valid: a hit
on it snapshots the call's leaves as fake tensors (``from_tensor`` keeps
aliasing, requires_grad and leafness) and, if backward runs, re-derives the
backward by running the stages on those fakes, checks that the re-derived
forward equals the stored one, and completes the entry. A backward file
records the checksum of the forward it belongs to, so a stale one is ignored.
"""
from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import logging
import warnings
from dataclasses import asdict, dataclass, replace

import torch
from torch.utils import _pytree as pytree

from ..engine.analyze import ViewMutationMeta
from ..engine.decide import Decision
from ..engine.joint import forward_candidates
from ..engine.pipeline import Stages, graph_constants, run_stages
from ..engine.capture.plan import InputPlan
from ..engine.capture.trace import argument_hooks
from ..engine.serial import deep_tuple
from ..engine.runtime.artifact import ArtifactParts, CompiledArtifact
from ..errors import AotcheckError
from .key import Key, key_of
from .registrations import changed, ops_print
from .serialize import SerializeError, Uncacheable, graph_from_data, graph_to_data
from .serialize import graph_constants as stored_constants
from .store import (BACKWARD_FILE, CACHE_FORMAT, ENTRY_FILE, Cache, CacheCorrupt, CacheWarning, count,
                    unexpected)

log = logging.getLogger("aotcheck.cache")


def lookup(cache: Cache, key: Key, fn, leaves: list, spec, sig, partitioner: str = "default",
           captured=None):
    """The artifact stored under ``key``, or None (a miss, counted; strict mode raises).
    ``captured``: the call's capture where its key is the traced one
    (NOTE [one capture per call] in key.py), checked against the stored input plan and reused by a backward
    re-derived from this entry."""
    with _gc_paused():
        entry = _load_entry(cache, key.digest)
    moved = changed(entry.get("custom_ops") or {}) if entry is not None else []
    if moved:               # NOTE [custom ops an entry was traced with] (registrations.py)
        log.debug("aotcheck cache: %s registered otherwise than in %s", ", ".join(moved), key.digest[:12])
        entry = None
    if entry is not None:
        try:
            with _gc_paused():
                art = _artifact_from_entry(cache, key.digest, entry,
                                           _Call(fn, leaves, spec, sig, partitioner, captured))
        except (SerializeError, KeyError, TypeError, ValueError) as e:
            _warn_corrupt(cache, key.digest, ENTRY_FILE, str(e))
        else:
            count("hits")
            log.debug("aotcheck cache hit %s", key.digest[:12])
            return art
    count("misses")
    log.debug("aotcheck cache miss %s", key.digest[:12])
    unexpected(cache, f"a miss (key {key.digest[:12]})")
    return None


@contextlib.contextmanager
def _gc_paused():
    """Defer the cyclic garbage collector while an entry is decoded and its graphs rebuilt.

    Rebuilding an fx graph allocates thousands of small objects, which triggers full
    collections; in a process that has imported torch one costs ~70 ms, more than the whole
    rest of a hit (``tools/bench_cache.py``, chain200). Nothing is freed later than it would
    be otherwise: the collector runs again at its next threshold."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def save(cache: Cache, key: Key, stages: Stages, art: CompiledArtifact, custom_ops=()) -> None:
    """Write the entry of a freshly compiled artifact; its backward is saved at the first
    backward (NOTE [lazy backward]). An artifact that cannot be stored is a bypass.
    ``custom_ops``: the ones its trace called (NOTE [custom ops an entry was traced with])."""
    try:
        payload = {**_entry_payload(key.digest, key.components, stages, art),
                   "custom_ops": ops_print(custom_ops)}
    except Uncacheable as u:
        count("misses", -1)
        bypass(cache, u)
        return
    if cache.write(key.digest, ENTRY_FILE, payload):
        count("saves")
    if art.training:
        fw_sha = _forward_sha(payload["forward"])
        art.on_backward = lambda g: _save_backward(cache, key.digest, fw_sha, g, art.constants)


def bypass(cache: Cache, u: Uncacheable) -> None:
    """Count (and, in strict mode, refuse) a call that cannot be cached."""
    count("bypasses")
    count(f"bypass.{u.code}")
    log.info("aotcheck cache bypass (%s): %s", u.code, u.detail)
    unexpected(cache, f"a bypass ({u})")


def _warn_corrupt(cache: Cache, key: str, name: str, why: str) -> None:
    count("corrupt")
    warnings.warn(f"aotcheck cache: ignoring unreadable {name} of entry {key[:12]} in {cache.path} "
                  f"({why}); recompiling and replacing it", CacheWarning, stacklevel=3)


def _load_entry(cache: Cache, key: str) -> dict | None:
    try:
        entry = cache.read(key, ENTRY_FILE)
    except CacheCorrupt as e:
        _warn_corrupt(cache, key, ENTRY_FILE, str(e))
        return None
    if entry is None and cache.has(key, BACKWARD_FILE):
        _warn_corrupt(cache, key, ENTRY_FILE, "missing while backward.json exists")
    return entry


def _forward_sha(forward_data: dict) -> str:
    return hashlib.sha256(json.dumps(forward_data, sort_keys=True).encode()).hexdigest()


def _entry_payload(key: str, comps: dict, stages, art) -> dict:
    p, j = stages.partitioned, stages.joint
    try:
        out_spec = dump_out_spec(stages.captured.out_spec)
    except Exception as e:  # noqa: BLE001 - pytree raises several types for unknown nodes
        raise Uncacheable("unsupported_output_tree", str(e)) from None
    return {
        "format": CACHE_FORMAT, "kind": "entry", "key": key, "components": comps,
        "decision": {"mode": stages.decision.mode, "reason": stages.decision.reason},
        "meta": json.loads(stages.meta.to_json()),
        "plan": asdict(stages.captured.plan),
        "forward": graph_to_data(p.forward, art.constants),
        "num_fw_outputs": p.num_fw_outputs,
        "saved": list(p.saved),
        "diff_outputs": list(j.diff_outputs) if j else [],
        "grad_inputs": list(j.grad_inputs) if j else [],
        "backward_mutations": [list(m) for m in j.backward_mutations] if j else [],
        "grad_reach": [list(r) for r in j.grad_reach] if j else [],
        "out_spec": out_spec,
    }


def _retyped(spec, type_at):
    """A copy of a tree spec whose inner nodes take their type from ``type_at(i, node)``, with
    ``i`` the node's preorder index."""
    count = [0]

    def walk(s):
        i = count[0]
        count[0] += 1
        if s.is_leaf():
            return s
        children = [walk(c) for c in s.children()]
        return pytree.TreeSpec(type_at(i, s), s.context, children)
    return walk(spec)


def dump_out_spec(spec):
    """The output tree as data. pytree cannot name ``torch.return_types`` tuples (``x.max(0)``,
    ``linalg.lstsq``): they are written as tuples, with their places (preorder) and names."""
    marks: list = []

    def plain(i, s):
        if not pytree.is_structseq_class(s.type):
            return s.type
        if s.type.__module__ != "torch.return_types":
            raise ValueError(f"output tree holds {s.type.__module__}.{s.type.__qualname__}")
        marks.append([i, s.type.__name__])
        return tuple
    text = pytree.treespec_dumps(_retyped(spec, plain))
    return {"treespec": text, "return_types": marks} if marks else text


def load_out_spec(data):
    if isinstance(data, str):
        return pytree.treespec_loads(data)
    if not isinstance(data, dict) or not isinstance(data.get("treespec"), str):
        raise ValueError("bad output tree")
    names = {int(i): str(n) for i, n in data.get("return_types", [])}

    def typed(i, s):
        if i not in names:
            return s.type
        kind = getattr(torch.return_types, names[i], None)
        if not pytree.is_structseq_class(kind):
            raise ValueError(f"no torch.return_types.{names[i]}")
        return kind
    return _retyped(pytree.treespec_loads(data["treespec"]), typed)


def _save_backward(cache: Cache, key: str, fw_sha: str, graph, constants: dict) -> None:
    try:
        data = graph_to_data(graph, constants)
    except Uncacheable as u:
        log.info("aotcheck cache: backward of %s not saved (%s)", key[:12], u)
        return
    payload = {"format": CACHE_FORMAT, "kind": "backward", "key": key, "forward_sha": fw_sha,
               "backward": data}
    if cache.write(key, BACKWARD_FILE, payload):
        count("backward_saves")


@dataclass(frozen=True)
class _Call:
    """The call a lookup serves: the function, its argument leaves and their spec, its
    signature, the partitioner, and its capture where its key is the traced one."""

    fn: object
    leaves: list
    spec: object
    sig: object
    partitioner: str
    captured: object = None


def _artifact_from_entry(cache: Cache, key: str, entry: dict, call: _Call) -> CompiledArtifact:
    """The runnable artifact of a stored entry, for ``call``."""
    fn, leaves, captured = call.fn, call.leaves, call.captured
    meta = ViewMutationMeta.from_json(json.dumps(entry["meta"]))
    plan = InputPlan.from_data(entry["plan"])
    if captured is not None and plan != captured.plan:       # a traced (fallback) key
        raise ValueError("stored input plan differs from this capture's")
    forward = graph_from_data(entry["forward"])
    fw_sha = _forward_sha(entry["forward"])
    out_spec = load_out_spec(entry["out_spec"])
    art = CompiledArtifact(ArtifactParts(
        plan=plan, meta=meta, decision=Decision(**entry["decision"]), forward=forward,
        num_fw_outputs=int(entry["num_fw_outputs"]), fw_candidates=forward_candidates(meta),
        diff_outputs=tuple(entry["diff_outputs"]), grad_inputs=tuple(entry["grad_inputs"]),
        out_spec=out_spec, constants=stored_constants(forward),
        backward_mutations=deep_tuple(entry.get("backward_mutations", [])),
        grad_reach=deep_tuple(entry.get("grad_reach", [])),
        # NOTE [imperative autograd on arguments and outputs]: hooks are Python callables
        hook_fns=argument_hooks(fn, leaves, call.spec, call.sig, meta.hooks) if meta.hooks else ()))
    if art.training:
        # NOTE [a hit traces nothing]
        # with the backward stored, the hit loads it now and
        # needs nothing else; only an entry whose backward is not written yet snapshots the
        # leaves as fakes, so that a later backward can be re-derived (NOTE [lazy backward]).
        stored = _load_backward(cache, key, fw_sha)
        # the backward is re-derived on fakes: the closures keep no caller's tensor alive
        on_fakes = replace(call, leaves=_fake_snapshot(leaves) if stored is None else None)
        state = {"derived": False}

        def backward_source():
            if stored is not None:
                count("backward_hits")
                g = stored
            else:
                count("backward_misses")
                unexpected(cache, f"a backward miss (key {key[:12]})")
                g = _derive_backward(on_fakes, entry["forward"], art)
                state["derived"] = True
            art.constants.update(stored_constants(g))
            return g

        def on_backward(g):
            if state["derived"]:
                _save_backward(cache, key, fw_sha, g, art.constants)

        art.backward_source, art.on_backward = backward_source, on_backward
    return art


def _load_backward(cache: Cache, key: str, fw_sha: str):
    try:
        payload = cache.read(key, BACKWARD_FILE)
        if payload is None:
            return None
        if payload.get("forward_sha") != fw_sha:
            raise CacheCorrupt("it belongs to a different forward graph")
        return graph_from_data(payload["backward"])
    except (CacheCorrupt, SerializeError, KeyError, TypeError, ValueError) as e:
        _warn_corrupt(cache, key, BACKWARD_FILE, str(e))
        return None


def _fake_snapshot(leaves: list) -> list:
    """Fake copies of the call's leaves, taken before the forward can mutate them."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    mode = FakeTensorMode()
    return [mode.from_tensor(t) if isinstance(t, torch.Tensor) else t for t in leaves]


def _derive_backward(on_fakes: _Call, stored_forward: dict, art):
    """Re-run the stages on fake leaves (``on_fakes``, the call with its leaves as fakes) to get
    the backward that matches the stored forward."""
    stages = run_stages(on_fakes.fn, on_fakes.leaves, on_fakes.spec, on_fakes.sig,
                        on_fakes.partitioner, captured=on_fakes.captured)
    consts = graph_constants(stages)
    if graph_to_data(stages.partitioned.forward, consts) != stored_forward:
        raise AotcheckError("the backward re-derived for a cached forward does not match it (the "
                            "function traced differently); clear the cache entry and report this")
    art.constants.update(consts)
    return stages.partitioned.backward


def verify(cache: Cache) -> dict[str, str]:
    """Check every entry, each copy (local and remote): headers, checksums, keys, graphs
    loadable. Returns {key: problem}."""
    problems = {}
    for key in cache.keys():
        for where in ("local", "remote"):
            if where == "remote" and cache.remote is None:
                continue
            why = _verify_copy(cache, where, key)
            if why:
                problems[key] = f"{why} ({where} copy)" if cache.remote is not None else why
                break
    return problems


def _verify_copy(cache: Cache, where: str, key: str) -> str | None:
    try:
        entry = cache.read_at(where, key, ENTRY_FILE)
        bw = cache.read_at(where, key, BACKWARD_FILE)
        if entry is None:
            return "backward.json without entry.json" if bw is not None else None
        if key_of(entry["components"]) != key:
            raise CacheCorrupt("components do not hash to the key")
        graph_from_data(entry["forward"])
        if bw is not None:
            if bw.get("forward_sha") != _forward_sha(entry["forward"]):
                raise CacheCorrupt("backward.json belongs to a different forward")
            graph_from_data(bw["backward"])
    except (CacheCorrupt, SerializeError, KeyError, TypeError, ValueError) as e:
        return str(e)
    return None

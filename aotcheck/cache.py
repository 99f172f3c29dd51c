"""cache: a persistent, content-addressed store of compiled graphs.

``aot_function(fn, cache=PATH)`` looks each new signature up on disk before
compiling. The cache is disposable: a run with it off gives the same results,
and any entry that cannot be read is a miss plus a warning, never an error and
never a wrong result.

The key
    sha256 over the canonical JSON of named *components* (see
    :func:`key_components`): the captured graph as printed text (with its
    ``# no_grad`` tags), its tensor constants, the capture's raw facts and
    input plan, the input signature (which holds grad mode), the engine
    configuration, the cache format, the torch and aotcheck versions and a hash
    of the engine's sources. Nothing in it depends on ids, addresses or hash
    randomisation, so the same function gives the same key in a new process.
    Because the key needs the captured graph, a lookup always runs *capture*;
    a hit skips every stage after it.

An entry (one directory per key, readable JSON)::

    <dir>/<key>/entry.json      metadata, decision, input plan, forward graph, output tree
    <dir>/<key>/backward.json   the backward graph, added by the first backward

Each file starts with a header line ``aotcheck-cache format=N sha256=HEX``
(the checksum of the rest of the file) and is written to a temporary file in
the same directory, then renamed over the old one, so readers see a whole old
file or a whole new one. Graphs are stored as data (:mod:`aotcheck.serialize`)
and rebuilt against aten/prims ops only; nothing stored is ever executed.

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

Counters (``aotcheck.counters``, reset by ``aotcheck.reset_counters()``):
hits, misses, bypasses (uncacheable: ``bypass.<reason>`` counts each reason),
saves, backward_hits, backward_misses, backward_saves, corrupt.

Strict use: ``Cache(path, expect_hits=True)`` or ``with expect_hits():`` make
any miss or bypass (forward, or backward at its first run) raise
:class:`~aotcheck.errors.CacheError`. ``AOTCHECK_STRICT_CACHE=1`` and pytest's
``--strict-cache`` run the test harness's cached phase that way.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import warnings
from dataclasses import asdict
from pathlib import Path

import torch
from torch.utils import _pytree as pytree

from . import flags
from .errors import AotcheckError, CacheError
from .serialize import SerializeError, Uncacheable, graph_from_data, graph_to_data

CACHE_FORMAT = 1
ENTRY_FILE = "entry.json"
BACKWARD_FILE = "backward.json"
_HEADER = "aotcheck-cache"

log = logging.getLogger("aotcheck.cache")

COUNTER_NAMES = ("hits", "misses", "bypasses", "saves", "backward_hits", "backward_misses",
                 "backward_saves", "corrupt")
counters: dict[str, int] = dict.fromkeys(COUNTER_NAMES, 0)


def reset_counters() -> None:
    """Zero every counter (in place: ``aotcheck.counters`` stays the same object)."""
    counters.clear()
    counters.update(dict.fromkeys(COUNTER_NAMES, 0))


def _count(name: str, n: int = 1) -> None:
    counters[name] = counters.get(name, 0) + n


class CacheWarning(UserWarning):
    """An unreadable cache entry (treated as a miss) or a failed write."""


# ---------------------------------------------------------------- the store


def default_dir() -> Path:
    """``AOTCHECK_CACHE_DIR``, else the user's cache directory."""
    d = flags.get(flags.CACHE_DIR)
    return Path(d) if d else Path(os.path.expanduser("~/.cache/aotcheck"))


class Cache:
    """A cache directory. ``expect_hits=True``: any miss or bypass raises CacheError."""

    def __init__(self, path=None, *, expect_hits: bool = False):
        self.path = Path(path) if path is not None else default_dir()
        self.expect_hits = expect_hits

    def __repr__(self) -> str:
        return f"Cache({str(self.path)!r}, expect_hits={self.expect_hits})"

    def entry_dir(self, key: str) -> Path:
        return self.path / key

    def keys(self) -> list[str]:
        if not self.path.is_dir():
            return []
        return sorted(p.name for p in self.path.iterdir() if p.is_dir() and _is_key(p.name))

    def read(self, key: str, name: str) -> dict | None:
        """A file's payload; None if absent. Raises CacheCorrupt if unreadable."""
        return read_file(self.entry_dir(key) / name, key)

    def write(self, key: str, name: str, payload: dict) -> bool:
        """Write atomically; a failed write warns and returns False (the cache is optional)."""
        try:
            write_file(self.entry_dir(key) / name, payload)
            return True
        except OSError as e:
            warnings.warn(f"aotcheck cache: could not write {name} of {key[:12]}: {e}", CacheWarning,
                          stacklevel=2)
            return False

    def remove(self, key: str) -> None:
        shutil.rmtree(self.entry_dir(key), ignore_errors=True)


def resolve(cache) -> Cache:
    """``True`` -> the default location; a path -> a Cache there; a Cache -> itself."""
    if isinstance(cache, Cache):
        return cache
    if cache is True:
        return Cache()
    if isinstance(cache, (str, os.PathLike)):
        return Cache(cache)
    raise AotcheckError(f"cache must be True, a directory path or an aotcheck.cache.Cache, "
                        f"not {type(cache).__name__}")


def _is_key(name: str) -> bool:
    return len(name) == 64 and all(c in "0123456789abcdef" for c in name)


class CacheCorrupt(Exception):
    """A cache file that exists but cannot be trusted."""


def encode_file(payload: dict) -> bytes:
    body = json.dumps(payload, sort_keys=True, indent=1, allow_nan=False).encode()
    head = f"{_HEADER} format={CACHE_FORMAT} sha256={hashlib.sha256(body).hexdigest()}\n".encode()
    return head + body


def decode_file(data: bytes) -> dict:
    head, sep, body = data.partition(b"\n")
    parts = head.decode("utf-8", "replace").split(" ")
    if not sep or len(parts) != 3 or parts[0] != _HEADER:
        raise CacheCorrupt("no aotcheck-cache header (truncated or not a cache file)")
    if parts[1] != f"format={CACHE_FORMAT}":
        raise CacheCorrupt(f"written in {parts[1]}, this aotcheck reads format={CACHE_FORMAT}")
    if parts[2] != f"sha256={hashlib.sha256(body).hexdigest()}":
        raise CacheCorrupt("checksum mismatch (truncated, corrupted or edited)")
    try:
        payload = json.loads(body)
    except ValueError as e:
        raise CacheCorrupt(f"invalid JSON: {e}") from None
    if not isinstance(payload, dict) or payload.get("format") != CACHE_FORMAT:
        raise CacheCorrupt("payload format differs from the header")
    return payload


def read_file(path: Path, key: str) -> dict | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise CacheCorrupt(f"unreadable: {e}") from None
    payload = decode_file(data)
    if payload.get("key") != key:
        raise CacheCorrupt(f"file names key {str(payload.get('key'))[:12]}, not its directory's")
    return payload


def write_file(path: Path, payload: dict) -> None:
    data = encode_file(payload)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def verify(cache: Cache) -> dict[str, str]:
    """Check every entry: headers, checksums, keys, graphs loadable. Returns {key: problem}."""
    problems = {}
    for key in cache.keys():
        try:
            entry = cache.read(key, ENTRY_FILE)
            if entry is None:
                if (cache.entry_dir(key) / BACKWARD_FILE).exists():
                    raise CacheCorrupt("backward.json without entry.json")
                continue
            if key_of(entry["components"]) != key:
                raise CacheCorrupt("components do not hash to the key")
            graph_from_data(entry["forward"])
            bw = cache.read(key, BACKWARD_FILE)
            if bw is not None:
                if bw.get("forward_sha") != _forward_sha(entry["forward"]):
                    raise CacheCorrupt("backward.json belongs to a different forward")
                graph_from_data(bw["backward"])
        except (CacheCorrupt, SerializeError, KeyError, TypeError, ValueError) as e:
            problems[key] = str(e)
    return problems


# ---------------------------------------------------------------- the key

_SOURCE_HASH: str | None = None
_ENGINE_MODULES = ("signature", "capture", "analyze", "decide", "joint", "partition", "runtime",
                   "pipeline", "serialize", "cache")


def engine_source_hash() -> str:
    """sha256 of the engine's source files: an edited engine never reads old entries."""
    global _SOURCE_HASH
    if _SOURCE_HASH is None:
        h = hashlib.sha256()
        here = Path(__file__).parent
        for m in _ENGINE_MODULES:
            h.update(m.encode() + b"\0" + (here / f"{m}.py").read_bytes() + b"\0")
        _SOURCE_HASH = h.hexdigest()
    return _SOURCE_HASH


def key_components(captured, sig, partitioner: str = "default") -> dict[str, str]:
    """Every input of the key, by name, as text. Raises Uncacheable for a graph the
    serializer cannot store (checked here, before any lookup)."""
    from . import __version__
    from .printer import format_graph
    data = graph_to_data(captured.graph)          # raises Uncacheable
    return {
        "format": str(CACHE_FORMAT),
        "torch": torch.__version__,
        "aotcheck": __version__,
        "engine_source": engine_source_hash(),
        "engine": json.dumps({"partitioner": partitioner}, sort_keys=True),
        "graph": format_graph(captured.graph, "captured"),
        "constants": json.dumps(data["constants"], sort_keys=True, allow_nan=False),
        "facts": json.dumps(asdict(captured.facts), sort_keys=True),
        "plan": json.dumps(asdict(captured.plan), sort_keys=True),
        "signature": sig.to_json(),
    }


def key_of(components: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(components, sort_keys=True).encode()).hexdigest()


def compute_key(fn, args=(), kwargs=None, partitioner: str = "default") -> tuple[str, dict[str, str]]:
    """The key and components for calling ``fn(*args, **kwargs)`` (captures, compiles nothing)."""
    from .capture import capture
    from .signature import flatten_inputs, signature
    leaves, spec = flatten_inputs(tuple(args), dict(kwargs or {}))
    sig = signature(leaves, spec)
    comps = key_components(capture(fn, leaves, spec, sig), sig, partitioner)
    return key_of(comps), comps


# ---------------------------------------------------------------- strictness

_expecting = [0]


@contextlib.contextmanager
def expect_hits():
    """Inside this block every cache miss or bypass raises CacheError."""
    _expecting[0] += 1
    try:
        yield
    finally:
        _expecting[0] -= 1


def _unexpected(cache: Cache, what: str) -> None:
    if cache.expect_hits or _expecting[0]:
        raise CacheError(f"expected a cache hit in {cache.path}, got {what}")


# ---------------------------------------------------------------- compile with the cache


def _deep_tuple(x):
    return tuple(_deep_tuple(v) for v in x) if isinstance(x, list) else x


def _bypass(cache: Cache, u: Uncacheable) -> None:
    _count("bypasses")
    _count(f"bypass.{u.code}")
    log.info("aotcheck cache bypass (%s): %s", u.code, u.detail)
    _unexpected(cache, f"a bypass ({u})")


def compile_with_cache(aot_fn, leaves: list, spec):
    """Compile one signature of ``aot_fn``, through its persistent cache."""
    from .capture import capture
    from .pipeline import build_artifact, run_stages
    from .signature import signature
    cache = resolve(aot_fn.cache)
    sig = signature(leaves, spec)
    captured = capture(aot_fn.fn, leaves, spec, sig)
    try:
        comps = key_components(captured, sig, aot_fn.partitioner)
    except Uncacheable as u:
        _bypass(cache, u)
        return build_artifact(run_stages(aot_fn.fn, leaves, spec, aot_fn.partitioner,
                                         sig=sig, captured=captured))
    key = key_of(comps)
    entry = _load_entry(cache, key)
    if entry is not None:
        try:
            art = _artifact_from_entry(cache, key, entry, aot_fn, leaves, spec, sig, captured)
        except (SerializeError, KeyError, TypeError, ValueError) as e:
            _warn_corrupt(cache, key, ENTRY_FILE, str(e))
        else:
            _count("hits")
            log.debug("aotcheck cache hit %s", key[:12])
            return art
    _count("misses")
    log.debug("aotcheck cache miss %s", key[:12])
    _unexpected(cache, f"a miss (key {key[:12]})")
    stages = run_stages(aot_fn.fn, leaves, spec, aot_fn.partitioner, sig=sig, captured=captured)
    art = build_artifact(stages)
    try:
        payload = _entry_payload(key, comps, stages, art)
    except Uncacheable as u:
        _count("misses", -1)
        _bypass(cache, u)
        return art
    if cache.write(key, ENTRY_FILE, payload):
        _count("saves")
    if art.training:
        fw_sha = _forward_sha(payload["forward"])
        art.on_backward = lambda g: _save_backward(cache, key, fw_sha, g, art.constants)
    return art


def _warn_corrupt(cache: Cache, key: str, name: str, why: str) -> None:
    _count("corrupt")
    warnings.warn(f"aotcheck cache: ignoring unreadable {name} of entry {key[:12]} in {cache.path} "
                  f"({why}); recompiling and replacing it", CacheWarning, stacklevel=3)


def _load_entry(cache: Cache, key: str) -> dict | None:
    try:
        entry = cache.read(key, ENTRY_FILE)
    except CacheCorrupt as e:
        _warn_corrupt(cache, key, ENTRY_FILE, str(e))
        return None
    if entry is None and (cache.entry_dir(key) / BACKWARD_FILE).exists():
        _warn_corrupt(cache, key, ENTRY_FILE, "missing while backward.json exists")
    return entry


def _forward_sha(forward_data: dict) -> str:
    return hashlib.sha256(json.dumps(forward_data, sort_keys=True).encode()).hexdigest()


def _entry_payload(key: str, comps: dict, stages, art) -> dict:
    p, j = stages.partitioned, stages.joint
    try:
        out_spec = pytree.treespec_dumps(stages.captured.out_spec)
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
        "out_spec": out_spec,
    }


def _save_backward(cache: Cache, key: str, fw_sha: str, graph, constants: dict) -> None:
    try:
        data = graph_to_data(graph, constants)
    except Uncacheable as u:
        log.info("aotcheck cache: backward of %s not saved (%s)", key[:12], u)
        return
    payload = {"format": CACHE_FORMAT, "kind": "backward", "key": key, "forward_sha": fw_sha,
               "backward": data}
    if cache.write(key, BACKWARD_FILE, payload):
        _count("backward_saves")


def _artifact_from_entry(cache, key, entry, aot_fn, leaves, spec, sig, captured):
    from .analyze import ViewMutationMeta
    from .capture import InputPlan
    from .decide import Decision
    from .joint import forward_candidates
    from .runtime import CompiledArtifact
    from .serialize import graph_constants
    meta = ViewMutationMeta.from_json(json.dumps(entry["meta"]))
    plan = InputPlan(_deep_tuple(entry["plan"]["placeholders"]), _deep_tuple(entry["plan"]["sources"]))
    if plan != captured.plan:
        raise ValueError("stored input plan differs from this capture's")
    forward = graph_from_data(entry["forward"])
    fw_sha = _forward_sha(entry["forward"])
    out_spec = pytree.treespec_loads(entry["out_spec"])
    art = CompiledArtifact(
        plan=plan, meta=meta, decision=Decision(**entry["decision"]), forward=forward,
        num_fw_outputs=int(entry["num_fw_outputs"]), fw_candidates=forward_candidates(meta),
        diff_outputs=tuple(entry["diff_outputs"]), grad_inputs=tuple(entry["grad_inputs"]),
        out_spec=out_spec, constants=graph_constants(forward))
    if art.training:
        fakes = _fake_snapshot(leaves)
        state = {"derived": False}

        def backward_source():
            g = _load_backward(cache, key, fw_sha)
            if g is not None:
                _count("backward_hits")
            else:
                _count("backward_misses")
                _unexpected(cache, f"a backward miss (key {key[:12]})")
                g = _derive_backward(aot_fn, fakes, spec, sig, captured, entry["forward"], art)
                state["derived"] = True
            art.constants.update(graph_constants(g))
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


def _derive_backward(aot_fn, fakes, spec, sig, captured, stored_forward: dict, art):
    """Re-run the stages on fake leaves to get the backward that matches the stored forward."""
    from .pipeline import graph_constants, run_stages
    stages = run_stages(aot_fn.fn, fakes, spec, aot_fn.partitioner, sig=sig, captured=captured)
    consts = graph_constants(stages)
    if graph_to_data(stages.partitioned.forward, consts) != stored_forward:
        raise AotcheckError("the backward re-derived for a cached forward does not match it (the "
                            "function traced differently); clear the cache entry and report this")
    art.constants.update(consts)
    return stages.partitioned.backward

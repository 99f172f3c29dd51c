"""key: the cache key of one call, as named components.

The key is sha256 over the canonical JSON of named *components* (see
:func:`trace_free_components`). By default it is **trace-free**: it reads what
determines the graph without tracing anything (no fake tensors, no
functionalization, no ``torch._dynamo``):

    function      the fingerprint of the function (``fingerprint.py``): its code, defaults,
                  closure values, the globals it names, the functions it reaches, the
                  modules it reads (``training``, hyperparameters)
    signature     the input signature (shapes, strides, dtypes, aliasing, scalars, grad mode)
    torch_state   every global torch setting that changes a trace (``ambient.py``'s census: the
                  default dtype and device, autocast per device type, on or off, mode stacks,
                  sdpa's kernels, ...), and the Python version
    flags         every flag in ``aotcheck.flags`` except those that only steer the cache
    engine        the partitioner; format, torch, aotcheck, engine_source: versions

Where the function reads a value with no stable fingerprint, the key falls back to
the *traced* key (:func:`key_components`): the captured graph as printed text, its
tensor constants, the capture's raw facts and input plan, plus a ``fallback``
component naming the value and why (``aotcheck cache explain`` prints it). That key
needs a capture, which the caller makes and passes in (NOTE [one capture per call]).
Nothing in either key depends on ids, addresses or hash randomisation.

# NOTE [one capture per call]
A call whose key is the traced one is captured once, by the compiled function
(``aotcheck/compiled.py``), which hands that one capture to the key, the lookup (which
checks a stored entry's input plan against it, and re-derives a lazy backward from it)
and, on a miss, the pipeline. The flow runs one way: the cache layer reads a capture it
is given and makes none on that path (only :func:`compute_key`, which compiles nothing,
captures for itself). ``needs_capture`` says when a call needs one.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from .. import flags
from ..engine.capture.trace import Captured, capture
from ..errors import AotcheckError
from ..engine.printer import format_graph
from ..engine.signature import Signature, flatten_inputs, signature
from .serialize import Uncacheable, graph_to_data
from ..version import __version__
from . import store
from .ambient import torch_state
from .fingerprint import Unfingerprintable, fingerprint

_SOURCE_HASH: str | None = None


@dataclass
class Key:
    """The key of one call. ``uncacheable`` is set when the call cannot be cached (the
    reason, for a bypass)."""
    digest: str
    components: dict[str, str]
    uncacheable: Uncacheable | None = None

    @property
    def trace_free(self) -> bool:
        return "fallback" not in self.components


def engine_source_hash() -> str:
    """sha256 of the engine's and the cache's source files: an edited engine never reads
    old entries."""
    global _SOURCE_HASH
    if _SOURCE_HASH is None:
        h = hashlib.sha256()
        root = Path(__file__).resolve().parent.parent
        for pkg in ("engine", "cache"):          # every module, in subpackages too
            for path in sorted((root / pkg).rglob("*.py")):
                name = path.relative_to(root).as_posix()
                h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
        _SOURCE_HASH = h.hexdigest()
    return _SOURCE_HASH


def _torch_state_text() -> str:
    """The ``torch_state`` component; raises Uncacheable where an ambient mode or hook has no
    stable fingerprint (a key without it could serve another mode's graph)."""
    try:
        return json.dumps(torch_state(), sort_keys=True)
    except Unfingerprintable as u:
        raise Uncacheable("ambient_state", f"torch_state.{u}") from None


def _common(sig: Signature, partitioner: str) -> dict[str, str]:
    return {
        "format": str(store.CACHE_FORMAT),
        "torch": torch.__version__,
        "aotcheck": __version__,
        "engine_source": engine_source_hash(),
        "engine": json.dumps({"partitioner": partitioner}, sort_keys=True),
        "flags": json.dumps({f.name: flags.get(f) for f in flags.ALL if f not in flags.NOT_IN_KEY},
                            sort_keys=True),
        "torch_state": _torch_state_text(),
        "signature": sig.to_json(),
    }


def trace_free_components(fn_text: str, sig: Signature, partitioner: str = "default") -> dict[str, str]:
    """The trace-free key's inputs: ``fn_text`` is the function's fingerprint text. Raises
    Uncacheable as ``_torch_state_text``."""
    return {**_common(sig, partitioner), "function": fn_text}


def key_components(captured: Captured, sig: Signature, partitioner: str = "default") -> dict[str, str]:
    """Every input of the key, by name, as text. Raises Uncacheable for a graph the
    serializer cannot store (checked here, before any lookup)."""
    data = graph_to_data(captured.graph)          # raises Uncacheable
    return {
        **_common(sig, partitioner),
        "graph": format_graph(captured.graph, "captured"),
        "constants": json.dumps(data["constants"], sort_keys=True, allow_nan=False),
        "facts": json.dumps(asdict(captured.facts), sort_keys=True),
        "plan": json.dumps(asdict(captured.plan), sort_keys=True),
    }


def component_changes(name: str, a: str, b: str) -> list[str] | None:
    """What differs between two texts of one JSON-object component, in words, one line per
    setting or field (``torch_state.autocast_dtype[cpu]: torch.bfloat16 -> torch.float16``);
    None where the component is not a JSON object (a graph, a function's fingerprint)."""
    try:
        da, db = json.loads(a), json.loads(b)
    except ValueError:
        return None
    if not (isinstance(da, dict) and isinstance(db, dict)):
        return None
    fa, fb = _fields(da, name, {}), _fields(db, name, {})
    return [f"{k}: {_word(fa.get(k, _ABSENT))} -> {_word(fb.get(k, _ABSENT))}"
            for k in sorted(set(fa) | set(fb)) if fa.get(k, _ABSENT) != fb.get(k, _ABSENT)]


_ABSENT = "(absent)"


def _fields(x, path: str, out: dict) -> dict:
    """Nested objects flattened to ``path.key``; lists of objects to ``path[i]``; other values kept."""
    if isinstance(x, dict):
        for k, v in x.items():
            _fields(v, f"{path}.{k}", out)
    elif isinstance(x, list) and any(isinstance(v, dict) for v in x):
        for i, v in enumerate(x):
            _fields(v, f"{path}[{i}]", out)
    else:
        out[path] = x
    return out


def _word(v) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def key_of(components: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(components, sort_keys=True).encode()).hexdigest()


def function_print(fn) -> tuple[str, str] | Unfingerprintable:
    """``fn``'s fingerprint ``(text, digest)``, or the Unfingerprintable it raised."""
    try:
        return fingerprint(fn)
    except Unfingerprintable as u:
        return u


def needs_capture(fn_print: tuple[str, str] | Unfingerprintable) -> bool:
    """Whether a function with this fingerprint is keyed by its capture (the traced key)."""
    return isinstance(fn_print, Unfingerprintable)


def cache_key(sig: Signature, partitioner: str = "default", *,
              fn_print: tuple[str, str] | Unfingerprintable,
              captured: Captured | None = None) -> Key:
    """The key of a call whose signature is ``sig``. ``fn_print``: the function's fingerprint
    ``(text, digest)`` (the compiled function computes it once per call for its in-memory
    reuse), or the Unfingerprintable it raised; then the key is read off ``captured``, the
    caller's capture of this call (NOTE [one capture per call])."""
    if not needs_capture(fn_print):
        try:
            comps = trace_free_components(fn_print[0], sig, partitioner)
        except Uncacheable as u:
            return Key("", {}, u)
        return Key(key_of(comps), comps)
    if captured is None:
        raise AotcheckError(f"the traced cache key needs the call's capture ({fn_print})")
    try:
        comps = key_components(captured, sig, partitioner)
    except Uncacheable as u:
        return Key("", {}, u)
    comps["fallback"] = f"traced key: {fn_print}"
    return Key(key_of(comps), comps)


def compute_key(fn, args=(), kwargs=None, partitioner: str = "default") -> tuple[str, dict[str, str]]:
    """The key and components for calling ``fn(*args, **kwargs)`` (compiles nothing; captures
    only for the traced fallback). Raises Uncacheable when the call cannot be cached."""
    leaves, spec = flatten_inputs(tuple(args), dict(kwargs or {}))
    sig, fn_print = signature(leaves, spec), function_print(fn)
    captured = capture(fn, leaves, spec, sig) if needs_capture(fn_print) else None
    k = cache_key(sig, partitioner, fn_print=fn_print, captured=captured)
    if k.uncacheable is not None:
        raise k.uncacheable
    return k.digest, k.components

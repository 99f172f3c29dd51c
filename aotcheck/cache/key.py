"""key: the cache key of one call, as named components.

The key is sha256 over the canonical JSON of named *components* (see
:func:`key_components`): the captured graph as printed text (with its
``# no_grad`` tags), its tensor constants, the capture's raw facts and input
plan, the input signature (which holds grad mode), the engine configuration,
the cache format, the torch and aotcheck versions and a hash of the engine's
sources. Nothing in it depends on ids, addresses or hash randomisation, so the
same function gives the same key in a new process.

Because these components need the captured graph, computing a key runs
*capture*; the :class:`Key` carries that capture so that a miss does not trace
again.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from ..engine.capture import Captured, capture
from ..engine.printer import format_graph
from ..engine.signature import Signature, flatten_inputs, signature
from .serialize import Uncacheable, graph_to_data
from ..version import __version__
from . import store

_SOURCE_HASH: str | None = None


@dataclass
class Key:
    """The key of one call. ``uncacheable`` is set when the call cannot be cached (the
    reason, for a bypass); ``captured`` is the capture the components were read from."""
    digest: str
    components: dict[str, str]
    captured: Captured | None = field(default=None, repr=False)
    uncacheable: Uncacheable | None = None


def engine_source_hash() -> str:
    """sha256 of the engine's and the cache's source files: an edited engine never reads
    old entries."""
    global _SOURCE_HASH
    if _SOURCE_HASH is None:
        h = hashlib.sha256()
        root = Path(__file__).resolve().parent.parent
        for pkg in ("engine", "cache"):
            for path in sorted((root / pkg).glob("*.py")):
                h.update(f"{pkg}/{path.name}".encode() + b"\0" + path.read_bytes() + b"\0")
        _SOURCE_HASH = h.hexdigest()
    return _SOURCE_HASH


def key_components(captured: Captured, sig: Signature, partitioner: str = "default") -> dict[str, str]:
    """Every input of the key, by name, as text. Raises Uncacheable for a graph the
    serializer cannot store (checked here, before any lookup)."""
    data = graph_to_data(captured.graph)          # raises Uncacheable
    return {
        "format": str(store.CACHE_FORMAT),
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


def cache_key(fn, leaves: list, in_spec, sig: Signature, partitioner: str = "default") -> Key:
    """The key of calling ``fn`` on these leaves (whose signature is ``sig``)."""
    captured = capture(fn, leaves, in_spec, sig)
    try:
        comps = key_components(captured, sig, partitioner)
    except Uncacheable as u:
        return Key("", {}, captured, u)
    return Key(key_of(comps), comps, captured)


def compute_key(fn, args=(), kwargs=None, partitioner: str = "default") -> tuple[str, dict[str, str]]:
    """The key and components for calling ``fn(*args, **kwargs)`` (captures, compiles nothing).
    Raises Uncacheable when the call cannot be cached."""
    leaves, spec = flatten_inputs(tuple(args), dict(kwargs or {}))
    k = cache_key(fn, leaves, spec, signature(leaves, spec), partitioner)
    if k.uncacheable is not None:
        raise k.uncacheable
    return k.digest, k.components

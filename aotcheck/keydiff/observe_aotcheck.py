"""observe_aotcheck: one compile of a program through aotcheck's own engine and cache, observed.

The ``aotcheck`` target of the differential (``aotcheck keydiff --target aotcheck``). The same
:class:`~aotcheck.keydiff.observe.Observation` as the torch target's, read from aotcheck's cache
directory instead of torch's structured trace:

    graphs       one per entry written, in the order written: its key is the entry's directory
                 name, with the custom ops the entry was traced with, which a lookup checks
                 beside the name
                 (NOTE [custom ops an entry was traced with] in cache/registrations.py); what
                 it serves is the rest of the entry (decision, view/mutation metadata, input
                 plan, forward graph, output tree) and the backward graph the first backward
                 saved beside it
    key_details  the entry's key components (name -> hash), for naming a keyed change
    events       aotcheck's cache counters (``aotcheck.hits``, ``aotcheck.misses``, ...)

The entry point is always ``aotcheck.aot_function(fn, cache=DIR)``, a new compiled function per
observation (aotcheck keeps no compiled state outside it), so the cache directory decides.
A program's ``BACKEND`` and ``compile(fn)`` name torch entry points and are not read here.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path

from . import setters
from .observe import Graph, Observation, _input_maker, _run, normalize

CACHE_NAME = "aotcheck cache"
# the entry's fields that are its key, not what it serves
_KEY_FIELDS = ("key", "components", "custom_ops")


def observe(module, state: dict, cache_dir: str, *, eager: bool = False, details: bool = False) -> Observation:
    """Compile ``module.fn`` with aotcheck under ``state`` into ``cache_dir``, call it (``eager``:
    against eager under the same state) and observe what the cache wrote."""
    import aotcheck
    from aotcheck.cache import store
    with contextlib.ExitStack() as stack:
        for name, value in dict(getattr(module, "CONFIG", {})).items():
            stack.enter_context(setters.applied(module, name, value))
        for name, value in state.items():
            stack.enter_context(setters.applied(module, name, value))
        make = _input_maker(module, state)
        before = dict(store.counters)
        error, eager_text = _run(module, None, make, eager,
                                 compile=lambda: aotcheck.aot_function(module.fn, cache=str(cache_dir)))
        events = {f"aotcheck.{k}": v - before.get(k, 0) for k, v in store.counters.items()
                  if v != before.get(k, 0)}
    graphs = entries(Path(cache_dir), bypassed=[k for k in events if k.startswith("aotcheck.bypass.")])
    comps = tuple(sorted(_components(Path(cache_dir), graphs[0].aot_key).items())) \
        if details and graphs and graphs[0].aot_key else ()
    return Observation(graphs, tuple(sorted(events.items())), comps, error, eager_text)


def entries(cache_dir: Path, bypassed=()) -> tuple[Graph, ...]:
    """One :class:`Graph` per entry in ``cache_dir``, in the order written; with none written and
    a bypass counted, one keyless graph that says why."""
    from aotcheck.cache import ENTRY_FILE
    found = sorted((p for p in cache_dir.glob(f"*/{ENTRY_FILE}")), key=lambda p: p.stat().st_mtime_ns) \
        if cache_dir.is_dir() else []
    graphs = tuple(_graph(n, p.parent) for n, p in enumerate(found))
    if not graphs and bypassed:
        why = ", ".join(b[len("aotcheck.bypass."):] for b in bypassed)
        return (Graph("0", (), "", (), (f"{CACHE_NAME}: uncacheable ({why})",), CACHE_NAME),)
    return graphs


def _read(path: Path) -> dict | None:
    from aotcheck.cache import decode_file
    return decode_file(path.read_bytes()) if path.is_file() else None


def _served(data: dict) -> str:
    return normalize(json.dumps({k: v for k, v in data.items() if k not in _KEY_FIELDS}, sort_keys=True,
                                indent=1, default=str))


def _graph(n: int, entry_dir: Path) -> Graph:
    from aotcheck.cache import BACKWARD_FILE, ENTRY_FILE
    entry = _read(entry_dir / ENTRY_FILE)
    produced = [("aotcheck_entry", _served(entry))]
    backward = _read(entry_dir / BACKWARD_FILE)
    if backward is not None:
        produced.append(("aotcheck_backward", _served(backward)))
    checked = entry.get("custom_ops") or {}
    key = entry_dir.name if not checked else \
        f"{entry_dir.name}+ops:{hashlib.sha256(json.dumps(checked, sort_keys=True).encode()).hexdigest()[:16]}"
    return Graph(str(n), tuple(produced), key, (), (), CACHE_NAME)


def _components(cache_dir: Path, key: str) -> dict[str, str]:
    from aotcheck.cache import ENTRY_FILE
    data = _read(cache_dir / key / ENTRY_FILE) or {}
    return {k: str(v) for k, v in dict(data.get("components", {})).items()}

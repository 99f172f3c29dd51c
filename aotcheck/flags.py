"""Every aotcheck setting, in one place.

Nothing else in the package reads the environment. Each flag has a name, a
type, a default and a one-line description; ``aotcheck flags`` prints them.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Flag:
    name: str
    type: type
    default: object
    description: str

    def value(self):
        raw = os.environ.get(self.name)
        if raw is None:
            return self.default
        if self.type is bool:
            return raw.strip().lower() in ("1", "true", "yes", "on")
        return self.type(raw)


CHECK_GRAPHS = Flag("AOTCHECK_CHECK_GRAPHS", bool, False,
                    "Run the checker of each representation (graphs, metadata) after every stage.")
CACHE_DIR = Flag("AOTCHECK_CACHE_DIR", str, "",
                 "Default cache directory for aot_function(cache=True); empty means the user cache dir.")
STRICT_CACHE = Flag("AOTCHECK_STRICT_CACHE", bool, False,
                    "Turn a cache miss or bypass, where a hit was expected, into an error.")
FUZZ_EXAMPLES = Flag("AOTCHECK_FUZZ_EXAMPLES", int, 200,
                     "How many generated programs the property tests run.")
PARTITIONER = Flag("AOTCHECK_PARTITIONER", str, "default",
                   "The partitioner aot_function uses when none is given: default or mincut.")

TRACE_PLAIN = Flag("AOTCHECK_TRACE_PLAIN", bool, False,
                   "Trace every function the engine's second way (engine/storage_views.py: plain "
                   "tensors and eager autograd, then functionalize), not only where the first meets "
                   "a view limit. For measurements and tests.")

ALL = (CHECK_GRAPHS, CACHE_DIR, STRICT_CACHE, FUZZ_EXAMPLES, PARTITIONER, TRACE_PLAIN)

_overrides: dict[str, object] = {}


def get(flag: Flag):
    """The flag's value: an in-process override, else the environment, else the default."""
    if flag.name in _overrides:
        return _overrides[flag.name]
    return flag.value()


def set_override(flag: Flag, value) -> None:
    """Force a flag's value in this process (the test suite forces CHECK_GRAPHS on)."""
    _overrides[flag.name] = value


@contextlib.contextmanager
def overridden(flag: Flag, value):
    """Force a flag's value inside a ``with`` block; the previous override (or none) returns."""
    missing = object()
    before = _overrides.get(flag.name, missing)
    _overrides[flag.name] = value
    try:
        yield
    finally:
        if before is missing:
            _overrides.pop(flag.name, None)
        else:
            _overrides[flag.name] = before

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
INDUCTOR_CACHE_DIR = Flag("AOTCHECK_INDUCTOR_CACHE_DIR", str, "",
                          "Where aotcheck ops --backend keeps torch's compile caches (TORCHINDUCTOR_CACHE_DIR); "
                          "empty means cache/torch-inductor when ./cache exists, else <user cache dir>/torch-inductor.")
FUZZ_EXAMPLES = Flag("AOTCHECK_FUZZ_EXAMPLES", int, 200,
                     "How many generated programs the property tests run.")
PARTITIONER = Flag("AOTCHECK_PARTITIONER", str, "default",
                   "The partitioner aot_function uses when none is given: default or mincut.")

TRACE_PLAIN = Flag("AOTCHECK_TRACE_PLAIN", bool, False,
                   "Trace every function the engine's second way (engine/capture/storage_views.py: plain "
                   "tensors and eager autograd, then functionalize), not only where the first meets "
                   "a view limit. For measurements and tests.")

REMOTE_CACHE = Flag("AOTCHECK_REMOTE_CACHE", str, "",
                    "A Redis URL (redis://host:port/db) shared by every persistent cache; empty: none.")
REMOTE_TIMEOUT = Flag("AOTCHECK_REMOTE_TIMEOUT", float, 1.0,
                      "Seconds any one call to the remote cache may take before it counts as down.")

ALL = (CHECK_GRAPHS, CACHE_DIR, STRICT_CACHE, INDUCTOR_CACHE_DIR, FUZZ_EXAMPLES, PARTITIONER, REMOTE_CACHE,
       REMOTE_TIMEOUT, TRACE_PLAIN)

# Flags that only steer the cache or the test harness, never what the engine compiles; every
# other flag is a component of the cache key (a new flag is in the key unless listed here).
# PARTITIONER is resolved into the key's ``engine`` component (the partitioner actually used).
NOT_IN_KEY = (CACHE_DIR, STRICT_CACHE, INDUCTOR_CACHE_DIR, FUZZ_EXAMPLES, PARTITIONER, REMOTE_CACHE,
              REMOTE_TIMEOUT)

_overrides: dict[str, object] = {}


def get(flag: Flag):
    """The flag's value: an in-process override, else the environment, else the default."""
    if flag.name in _overrides:
        return _overrides[flag.name]
    return flag.value()


def set_override(flag: Flag, value) -> None:
    """Force a flag's value in this process (the test suite forces CHECK_GRAPHS on)."""
    _overrides[flag.name] = value


def overrides() -> dict[str, object]:
    """This process's overrides by flag name, for a child process to take (``apply_overrides``):
    a flag in the cache key that differs in the child makes every lookup there miss."""
    return dict(_overrides)


def apply_overrides(values: dict[str, object]) -> None:
    _overrides.update(values)


def replace_overrides(values: dict[str, object]) -> None:
    """Make ``values`` this process's overrides, exactly (the regression worker puts back what
    a case's run changed: ``regress/isolation.py``)."""
    _overrides.clear()
    _overrides.update(values)


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

"""aotcheck.cache: a persistent, content-addressed store of compiled graphs.

``aot_function(fn, cache=PATH)`` looks each new signature up before compiling.
The cache is disposable: a run with it off gives the same results, and any entry
that cannot be read is a miss plus a warning, never an error and never a wrong
result.

Modules, in the order a lookup uses them:

    fingerprint.py  the Python state a function reads, as data (no trace): the trace-free key
                  and the in-memory reuse in ``AotFunction`` share it
    ambient.py    torch's global settings as a census; the ones a trace depends on, read for
                  the persistent key (``torch_state``) and for the in-memory reuse (per call)
    key.py        the key of one call: named components, hashed (trace-free, or traced as a
                  named fallback)
    store.py      the directory, the checksummed file format, counters, strict mode
    remote.py     the Redis half of a cache (local first, then remote; writes to both)
    entry.py      artifact <-> entry; the lazily saved backward (NOTE [lazy backward])
    serialize.py  FX graphs as JSON data, rebuilt against aten/prims only

What it may import: the engine (``aotcheck.engine``), ``aotcheck.errors`` and
``aotcheck.flags``. Nothing above it (the API, check, fuzz, grad, targets, cli).
"""
from .entry import bypass, lookup, save, verify
from .fingerprint import Unfingerprintable, fingerprint
from .key import (Key, cache_key, compute_key, engine_source_hash, function_print, key_components,
                  key_of, needs_capture)
from .store import (BACKWARD_FILE, CACHE_FORMAT, ENTRY_FILE, Cache, CacheCorrupt, CacheWarning, counters,
                    decode_file, default_dir, encode_file, expect_hits, reset_counters, resolve)

__all__ = ["BACKWARD_FILE", "CACHE_FORMAT", "ENTRY_FILE", "Cache", "CacheCorrupt", "CacheWarning", "Key",
           "bypass", "cache_key", "compute_key", "counters", "decode_file", "default_dir", "encode_file",
           "engine_source_hash", "expect_hits", "function_print", "key_components", "key_of", "lookup",
           "needs_capture", "reset_counters",
           "resolve", "save", "verify", "Unfingerprintable", "fingerprint"]

"""aotcheck.cache: a persistent, content-addressed store of compiled graphs.

``aot_function(fn, cache=PATH)`` looks each new signature up before compiling.
The cache is disposable: a run with it off gives the same results, and any entry
that cannot be read is a miss plus a warning, never an error and never a wrong
result. The key is computed without a trace where it can be (the Python state the
function reads, torch's global settings), the backward is saved lazily
(NOTE [lazy backward]), and graphs are stored as JSON data. Its modules, one line each,
in the order a lookup uses them: the map in README.md, "Layout".

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

"""store: the cache directory, its file format, its counters and strict mode.

An entry is one directory per key, readable JSON::

    <dir>/<key>/entry.json      metadata, decision, input plan, forward graph, output tree
    <dir>/<key>/backward.json   the backward graph, added by the first backward

Each file starts with a header line ``aotcheck-cache format=N sha256=HEX``
(the checksum of the rest of the file) and is written to a temporary file in
the same directory, then renamed over the old one, so readers see a whole old
file or a whole new one. Anything unreadable raises :class:`CacheCorrupt`, which
callers turn into a miss plus a warning.

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
from pathlib import Path

from .. import flags
from ..errors import AotcheckError, CacheError

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


def count(name: str, n: int = 1) -> None:
    counters[name] = counters.get(name, 0) + n


class CacheWarning(UserWarning):
    """An unreadable cache entry (treated as a miss) or a failed write."""


# ---------------------------------------------------------------- the store


def default_dir() -> Path:
    """``AOTCHECK_CACHE_DIR``, else the user's cache directory."""
    d = flags.get(flags.CACHE_DIR)
    return Path(d) if d else Path(os.path.expanduser("~/.cache/aotcheck"))


class Cache:
    """A cache directory, plus optionally a remote (NOTE [remote faults] in ``remote.py``).
    ``expect_hits=True``: any miss or bypass raises CacheError. ``remote``: a Redis URL or a
    ``RemoteStore``; None: ``AOTCHECK_REMOTE_CACHE``; "" : none."""

    def __init__(self, path=None, *, expect_hits: bool = False, remote=None):
        self.path = Path(path) if path is not None else default_dir()
        self.expect_hits = expect_hits
        if remote is None:
            remote = flags.get(flags.REMOTE_CACHE) or None
        if isinstance(remote, str):
            from .remote import RemoteStore
            remote = RemoteStore(remote) if remote else None
        self.remote = remote
        self.copy_remote_hits = True      # a remote hit is copied locally (not by the CLI)

    def __repr__(self) -> str:
        extra = f", remote={self.remote.url!r}" if self.remote is not None else ""
        return f"Cache({str(self.path)!r}, expect_hits={self.expect_hits}{extra})"

    def entry_dir(self, key: str) -> Path:
        return self.path / key

    def local_keys(self) -> list[str]:
        if not self.path.is_dir():
            return []
        return sorted(p.name for p in self.path.iterdir() if p.is_dir() and _is_key(p.name))

    def keys(self) -> list[str]:
        """Every key, local or remote."""
        keys = set(self.local_keys())
        if self.remote is not None:
            keys.update(k for k in self.remote.keys() if _is_key(k))
        return sorted(keys)

    def has(self, key: str, name: str) -> bool:
        return (self.entry_dir(key) / name).exists() or (
            self.remote is not None and self.remote.exists(key, name))

    def where(self, key: str, name: str = ENTRY_FILE) -> str:
        """"local", "remote", "both" or "-": where a file is."""
        loc = (self.entry_dir(key) / name).exists()
        rem = self.remote is not None and self.remote.exists(key, name)
        return {(True, True): "both", (True, False): "local", (False, True): "remote"}.get((loc, rem), "-")

    def read(self, key: str, name: str) -> dict | None:
        """A file's payload, local first, then remote (copied locally); None if absent.
        Raises CacheCorrupt if unreadable (a remote file is checked like a local one)."""
        payload = read_file(self.entry_dir(key) / name, key)
        if payload is not None or self.remote is None:
            return payload
        data = self.remote.get(key, name)
        if data is None:
            return None
        try:
            payload = check_payload(decode_file(data), key)
        except CacheCorrupt as e:
            raise CacheCorrupt(f"remote copy in {self.remote.url}: {e}") from None
        if self.copy_remote_hits:
            with contextlib.suppress(OSError):
                write_bytes(self.entry_dir(key) / name, data)
        return payload

    def read_at(self, where: str, key: str, name: str) -> dict | None:
        """Read one copy only (``where`` is "local" or "remote"), for verify."""
        if where == "local":
            return read_file(self.entry_dir(key) / name, key)
        data = self.remote.get(key, name) if self.remote is not None else None
        return None if data is None else check_payload(decode_file(data), key)

    def write(self, key: str, name: str, payload: dict) -> bool:
        """Write atomically, locally and to the remote; a failed write warns and returns
        False (the cache is optional)."""
        data = encode_file(payload)
        ok = True
        try:
            write_bytes(self.entry_dir(key) / name, data)
        except OSError as e:
            warnings.warn(f"aotcheck cache: could not write {name} of {key[:12]}: {e}", CacheWarning,
                          stacklevel=2)
            ok = False
        if self.remote is not None:
            ok = self.remote.put(key, name, data) or ok
        return ok

    def remove(self, key: str) -> None:
        shutil.rmtree(self.entry_dir(key), ignore_errors=True)
        if self.remote is not None:
            self.remote.remove(key)

    def size(self, key: str) -> int:
        d = self.entry_dir(key)
        if d.is_dir():
            return sum(f.stat().st_size for f in d.iterdir() if f.is_file())
        return self.remote.size(key) if self.remote is not None else 0


def resolve(cache, remote=None) -> Cache:
    """``True`` -> the default location; a path -> a Cache there; a Cache -> itself.
    ``remote`` (a Redis URL) is attached to a Cache made here."""
    if isinstance(cache, Cache):
        if remote and cache.remote is None:
            from .remote import RemoteStore
            cache.remote = RemoteStore(remote)
        return cache
    if cache is True:
        return Cache(remote=remote)
    if isinstance(cache, (str, os.PathLike)):
        return Cache(cache, remote=remote)
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
    return check_payload(decode_file(data), key)


def check_payload(payload: dict, key: str) -> dict:
    if payload.get("key") != key:
        raise CacheCorrupt(f"file names key {str(payload.get('key'))[:12]}, not its directory's")
    return payload


def write_file(path: Path, payload: dict) -> None:
    write_bytes(path, encode_file(payload))


def write_bytes(path: Path, data: bytes) -> None:
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


def unexpected(cache: Cache, what: str) -> None:
    if cache.expect_hits or _expecting[0]:
        raise CacheError(f"expected a cache hit in {cache.path}, got {what}")

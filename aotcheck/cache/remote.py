"""remote: the Redis half of a cache, shared between machines.

``Cache(path, remote="redis://host:port/db")`` (or ``AOTCHECK_REMOTE_CACHE``) looks a file
up in the local directory first, then in Redis; a remote hit is checked exactly like a
local file (header, checksum, key) and copied into the local directory. Writes go to both.
Each Redis value is the same bytes as the local file (``store.encode_file``: a checksummed
header line, then JSON; never pickle), under the name ``aotcheck:<key>:<file>``.

# NOTE [remote faults]
The remote is optional, like the whole cache. Every call is bounded by
``AOTCHECK_REMOTE_TIMEOUT`` seconds (connect and read), with no retries. The first failure
(refused, timed out, an error reply) warns once, naming the URL, and marks the remote down
for ``DOWN_FOR`` seconds: calls in that window return "absent" at once, so a dead server
costs one timeout, not one per lookup. A down remote is a miss, never an error or a hang.
"""
from __future__ import annotations

import logging
import time
import warnings

from .. import flags

PREFIX = "aotcheck:"
DOWN_FOR = 30.0

log = logging.getLogger("aotcheck.cache")
_warned: set[str] = set()


class RemoteWarning(UserWarning):
    """The remote cache could not be reached (a miss; warned once per URL and process)."""


class RemoteStore:
    """One Redis database holding cache files as bytes."""

    def __init__(self, url: str, timeout: float | None = None):
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry
        self.url = url
        self.timeout = float(flags.get(flags.REMOTE_TIMEOUT) if timeout is None else timeout)
        self._errors = (redis.RedisError, OSError)
        try:
            self.client = redis.Redis.from_url(url, socket_timeout=self.timeout,
                                               socket_connect_timeout=self.timeout,
                                               retry=Retry(NoBackoff(), 0), retry_on_timeout=False)
        except ValueError as e:
            from ..errors import AotcheckError
            raise AotcheckError(f"remote cache URL {url!r} is not valid ({e}); expected "
                                "redis://host:port/db") from None
        self._down_until = 0.0

    def __repr__(self) -> str:
        return f"RemoteStore({self.url!r})"

    @property
    def down(self) -> bool:
        return time.monotonic() < self._down_until

    def _call(self, what: str, thunk, default):
        if self.down:
            return default
        try:
            return thunk()
        except self._errors as e:
            self._down_until = time.monotonic() + DOWN_FOR
            log.info("aotcheck remote cache %s: %s failed: %s", self.url, what, e)
            if self.url not in _warned:
                _warned.add(self.url)
                warnings.warn(f"aotcheck cache: remote {self.url} unreachable ({type(e).__name__}: {e}); "
                              f"using the local cache only for {DOWN_FOR:.0f} s", RemoteWarning, stacklevel=4)
            return default

    @staticmethod
    def name(key: str, file: str) -> str:
        return f"{PREFIX}{key}:{file}"

    def get(self, key: str, file: str) -> bytes | None:
        return self._call("get", lambda: self.client.get(self.name(key, file)), None)

    def put(self, key: str, file: str, data: bytes) -> bool:
        """One SET: Redis stores the whole value or nothing (no reader sees half of it)."""
        return bool(self._call("set", lambda: self.client.set(self.name(key, file), data), False))

    def exists(self, key: str, file: str) -> bool:
        return bool(self._call("exists", lambda: self.client.exists(self.name(key, file)), 0))

    def keys(self) -> list[str]:
        def scan():
            found = set()
            for raw in self.client.scan_iter(match=f"{PREFIX}*", count=1000):
                parts = raw.decode("utf-8", "replace").split(":")
                if len(parts) == 3:
                    found.add(parts[1])
            return found
        return sorted(self._call("scan", scan, set()))

    def size(self, key: str) -> int:
        def sizes():
            return sum(self.client.strlen(self.name(key, f)) for f in ("entry.json", "backward.json"))
        return int(self._call("strlen", sizes, 0))

    def remove(self, key: str) -> None:
        self._call("delete", lambda: self.client.delete(self.name(key, "entry.json"),
                                                        self.name(key, "backward.json")), 0)

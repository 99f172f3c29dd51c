"""database: hypothesis's example database that the shards of one fuzz stream share.

``open_database("redis://HOST:PORT[/DB]")`` is a ``RedisExampleDatabase`` on that server (the
remote cache's, issue 9): a failure one machine finds and shrinks is replayed first by every
later run on any machine. Any other string is a directory (``DirectoryBasedExampleDatabase``);
None is no database.
"""
from __future__ import annotations


def open_database(spec: str | None):
    if not spec:
        return None
    if spec.startswith("redis://"):
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase
        return RedisExampleDatabase(redis.Redis.from_url(spec))
    from hypothesis.database import DirectoryBasedExampleDatabase
    return DirectoryBasedExampleDatabase(spec)

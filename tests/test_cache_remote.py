"""The Redis remote cache, against a real ``redis-server`` started here on a free loopback
port (the Debian package; ``.ci/run`` installs it, and a missing server fails, never skips).

Two "machines" are two local directories sharing one server. Faults: a server that is
down or never answers is a miss and one warning, within the timeout; a half-written or
tampered remote entry is rejected like a local one and replaced. Concurrency: 8 processes
read and write the same keys, locally and remotely, at once.
"""
from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import time
import warnings

import pytest
import torch

import aotcheck
from aotcheck import flags
from aotcheck.cache import BACKWARD_FILE, ENTRY_FILE, Cache, CacheWarning, verify
from aotcheck.cache import remote as remote_mod
from redis_helper import free_port, redis_server
from aotcheck.cache.remote import RemoteStore, RemoteWarning


_free_port = free_port


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture
def url(redis_url):
    import redis
    redis.Redis.from_url(redis_url).flushdb()
    remote_mod._warned.clear()
    return redis_url


def f(x, w):
    return (x * w).sin().sum(0), x.t()


def inputs():
    g = torch.Generator().manual_seed(0)
    return (torch.randn(3, 4, generator=g, requires_grad=True), torch.randn(4, generator=g, requires_grad=True))


def run(d, remote, backward=True):
    """A fresh aot_function through ``d`` and ``remote``, checked against eager; the counters."""
    aotcheck.reset_counters()
    x, w = inputs()
    out = aotcheck.aot_function(f, cache=d, remote=remote)(x, w)
    ex, ew = inputs()
    ref = f(ex, ew)
    assert all(torch.allclose(a, b) for a, b in zip(out, ref))
    if backward:
        out[0].sum().backward()
        ref[0].sum().backward()
        assert torch.allclose(x.grad, ex.grad) and torch.allclose(w.grad, ew.grad)
    return dict(aotcheck.counters)


def test_two_machines_share_entries_and_the_lazy_backward(tmp_path, url):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    first = run(a, url, backward=False)                 # machine A: compiles, forward only
    assert first["misses"] == 1 and first["saves"] == 1
    store = RemoteStore(url)
    (key,) = store.keys()
    assert store.get(key, ENTRY_FILE) is not None and store.get(key, BACKWARD_FILE) is None

    second = run(b, url)                                # machine B: a remote hit, backward derived
    assert second["hits"] == 1 and second["misses"] == 0
    assert second["backward_misses"] == 1 and second["backward_saves"] == 1
    assert store.get(key, BACKWARD_FILE) is not None     # the lazy backward reached the remote
    assert (b / key / ENTRY_FILE).exists()              # and the hit was copied locally

    third = run(c, url)                                 # machine C: both halves from the remote
    assert third["hits"] == 1 and third["backward_hits"] == 1
    assert third["misses"] == third["backward_misses"] == third["saves"] == 0


def test_remote_from_the_flag_and_a_local_hit_needs_no_remote(tmp_path, url, monkeypatch):
    monkeypatch.setenv("AOTCHECK_REMOTE_CACHE", url)
    run(tmp_path / "a", None)
    assert len(RemoteStore(url).keys()) == 1
    monkeypatch.setenv("AOTCHECK_REMOTE_CACHE", "redis://127.0.0.1:1/0")     # now down
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # a local hit never asks the remote
        assert run(tmp_path / "a", None)["hits"] == 1


def _fault_run(d, remote_url, timeout_s):
    flags.set_override(flags.REMOTE_TIMEOUT, 0.3)
    try:
        t0 = time.monotonic()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            c = run(d, remote_url)
            c2 = run(d, remote_url)                       # a second lookup: no second warning
        elapsed = time.monotonic() - t0
    finally:
        flags._overrides.pop(flags.REMOTE_TIMEOUT.name, None)
    remote_warnings = [x for x in w if issubclass(x.category, RemoteWarning)]
    assert len(remote_warnings) == 1, [str(x.message) for x in w]
    assert remote_url in str(remote_warnings[0].message)
    assert c["misses"] == 1 and c2["hits"] == 1           # a miss, then the local entry
    return elapsed


def test_server_down_is_a_miss_and_one_warning(tmp_path):
    remote_mod._warned.clear()
    port = _free_port()                                   # nothing listens there
    elapsed = _fault_run(tmp_path, f"redis://127.0.0.1:{port}/0", 0.3)
    assert elapsed < 60


def test_server_that_never_answers_times_out(tmp_path):
    remote_mod._warned.clear()
    with socket.socket() as s:                            # accepts connections, never replies
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        url = f"redis://127.0.0.1:{s.getsockname()[1]}/0"
        t0 = time.monotonic()
        _fault_run(tmp_path, url, 0.3)
        compile_time = time.monotonic() - t0
    # one 0.3 s timeout, then the remote is skipped: far less than one timeout per call
    store = RemoteStore(url, timeout=0.3)
    t0 = time.monotonic()
    assert store.get("0" * 64, ENTRY_FILE) is None
    assert time.monotonic() - t0 < 2.0
    assert compile_time < 120


def _truncate(b: bytes) -> bytes:
    return b[: len(b) // 2]


def _flip(b: bytes) -> bytes:
    a = bytearray(b)
    for i in range(len(a) // 2, len(a) // 2 + 8):
        a[i] ^= 0xFF
    return bytes(a)


def _other_key(b: bytes) -> bytes:
    from aotcheck.cache import decode_file, encode_file
    p = decode_file(b)
    p["key"] = "f" * 64
    return encode_file(p)


@pytest.mark.parametrize("fault", [_truncate, _flip, _other_key], ids=["half_written", "flipped", "wrong_key"])
def test_tampered_remote_entry_is_rejected_and_replaced(tmp_path, url, fault):
    run(tmp_path / "a", url)
    store = RemoteStore(url)
    (key,) = store.keys()
    good = store.get(key, ENTRY_FILE)
    store.put(key, ENTRY_FILE, fault(good))
    with pytest.warns(CacheWarning, match="remote copy"):
        c = run(tmp_path / "b", url)                      # an empty machine reads the bad copy
    assert c["corrupt"] == 1 and c["misses"] == 1 and c["hits"] == 0
    assert store.get(key, ENTRY_FILE) == good            # recompiled and replaced
    assert not verify(Cache(tmp_path / "b", remote=url))


def test_cli_ls_stats_verify_clear_against_the_remote(tmp_path, url, capsys):
    from aotcheck.cli import main
    run(tmp_path / "a", url)
    empty = tmp_path / "empty"
    args = ["cache", "--dir", str(empty), "--remote", url]
    assert main(args + ["ls"]) == 0
    out = capsys.readouterr().out
    assert "1 entries" in out and "remote" in out and "backward" in out
    assert main(args + ["stats"]) == 0
    assert "where: remote 1" in capsys.readouterr().out
    assert main(args + ["verify"]) == 0
    assert "1 ok, 0 bad" in capsys.readouterr().out
    store = RemoteStore(url)
    (key,) = store.keys()
    store.put(key, BACKWARD_FILE, _flip(store.get(key, BACKWARD_FILE)))
    assert main(args + ["verify"]) == 1
    assert "remote copy" in capsys.readouterr().out
    assert main(args + ["clear"]) == 0
    assert store.keys() == []


WRITER = textwrap.dedent('''
    import sys, torch, aotcheck
    d, remote, me = sys.argv[1], sys.argv[2], int(sys.argv[3])
    def f(x, w):
        return (x * w).sin().sum(0), x.t()
    for rep in range(2):
        for n in (3, 4 + me % 4):              # one key shared by all, one shared by a pair
            g = torch.Generator().manual_seed(n)
            x = torch.randn(n, 4, generator=g, requires_grad=True); w = torch.randn(4, generator=g, requires_grad=True)
            out = aotcheck.aot_function(f, cache=d, remote=remote)(x, w)
            out[0].sum().backward()
            x2, w2 = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
            ref = (x2 * w2).sin().sum(0)
            ref.sum().backward()
            assert torch.allclose(out[0], ref) and torch.allclose(x.grad, x2.grad) and torch.allclose(w.grad, w2.grad)
    print("ok", dict(aotcheck.counters))
''')


def test_eight_processes_local_and_remote_at_once(tmp_path, url):
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    dirs = [tmp_path / "left", tmp_path / "right"]        # 4 processes per directory, 8 on the server
    procs = [subprocess.Popen([sys.executable, str(script), str(dirs[i % 2]), url, str(i)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(8)]
    for p in procs:
        out, err = p.communicate(timeout=400)
        assert p.returncode == 0 and "ok" in out, err[-3000:]
    remote_cache = Cache(tmp_path / "fresh", remote=url)
    assert len(remote_cache.keys()) == 5                  # n = 3, 4, 5, 6, 7
    for d in dirs:
        local = Cache(d, remote="")
        assert not verify(local)
        assert not list(d.rglob(".tmp-*"))
        for key in local.keys():
            assert (d / key / ENTRY_FILE).exists() and (d / key / BACKWARD_FILE).exists()
    assert not verify(remote_cache)
    store = RemoteStore(url)
    assert all(store.get(k, BACKWARD_FILE) is not None for k in store.keys())


def test_pytest_option_sets_the_remote_flag(monkeypatch):
    from aotcheck.check import pytest_plugin

    class Config:
        def getoption(self, name, default=None):
            return {"--remote-cache": "redis://127.0.0.1:6399/2"}.get(name, default)
    monkeypatch.setattr(flags, "_overrides", dict(flags._overrides))
    pytest_plugin.pytest_configure(Config())
    assert flags.get(flags.REMOTE_CACHE) == "redis://127.0.0.1:6399/2"
    assert Cache("/nonexistent").remote.url == "redis://127.0.0.1:6399/2"

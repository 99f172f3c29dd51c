"""Fault injection: broken, stale, tampered and concurrently written cache entries.

Every fault must be a miss with a warning (never an exception in user code,
never a wrong result), after which the entry is recompiled and replaced.
"""
from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap

import pytest
import torch

import aotcheck
from aotcheck.cache import BACKWARD_FILE, ENTRY_FILE, Cache, CacheWarning, decode_file, encode_file
from aotcheck.cache.serialize import SerializeError, graph_from_data


def f(x, w):
    return (x * w).sin().sum(0), x.t()


def inputs():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, generator=g, requires_grad=True)
    w = torch.randn(4, generator=g, requires_grad=True)
    return x, w


def run(d, **kw):
    """A fresh aot_function through ``d``: forward and backward, checked against eager."""
    x, w = inputs()
    out = aotcheck.aot_function(f, cache=d)(x, w)
    out[0].sum().backward()
    ex, ew = inputs()
    ref = f(ex, ew)
    ref[0].sum().backward()
    assert all(torch.allclose(a, b) for a, b in zip(out, ref))
    assert torch.allclose(x.grad, ex.grad) and torch.allclose(w.grad, ew.grad)


@pytest.fixture
def filled(tmp_path):
    run(tmp_path)
    (key,) = Cache(tmp_path).keys()
    assert (tmp_path / key / BACKWARD_FILE).exists()
    return tmp_path, key


def _truncate(p):
    p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2])


def _flip(p):
    b = bytearray(p.read_bytes())
    for i in range(len(b) // 2, len(b) // 2 + 8):
        b[i] ^= 0xFF
    p.write_bytes(bytes(b))


def _wrong_version(p):
    body = p.read_bytes().partition(b"\n")[2]
    p.write_bytes(f"aotcheck-cache format=0 sha256={hashlib.sha256(body).hexdigest()}\n".encode() + body)


def _delete(p):
    p.unlink()


FAULTS = {"truncate": _truncate, "flip": _flip, "wrong_version": _wrong_version, "delete": _delete}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_broken_entry_is_a_miss_with_a_warning_then_replaced(filled, fault):
    d, key = filled
    FAULTS[fault](d / key / ENTRY_FILE)
    aotcheck.reset_counters()
    with pytest.warns(CacheWarning, match="unreadable entry.json"):
        run(d)
    assert aotcheck.counters["misses"] == 1 and aotcheck.counters["corrupt"] == 1
    assert aotcheck.counters["saves"] == 1
    decode_file((d / key / ENTRY_FILE).read_bytes())        # replaced by a valid entry
    aotcheck.reset_counters()
    run(d)
    assert aotcheck.counters["hits"] == 1 and aotcheck.counters["backward_hits"] == 1


@pytest.mark.parametrize("fault", ["truncate", "flip", "wrong_version"])
def test_broken_backward_is_rederived_with_a_warning_then_replaced(filled, fault):
    d, key = filled
    FAULTS[fault](d / key / BACKWARD_FILE)
    aotcheck.reset_counters()
    with pytest.warns(CacheWarning, match="unreadable backward.json"):
        run(d)
    c = aotcheck.counters
    assert c["hits"] == 1 and c["backward_misses"] == 1 and c["backward_saves"] == 1
    decode_file((d / key / BACKWARD_FILE).read_bytes())


def _retamper(path, edit):
    """Edit a payload and fix its checksum, as an attacker with write access would."""
    payload = decode_file(path.read_bytes())
    edit(payload)
    path.write_bytes(encode_file(payload))


@pytest.mark.parametrize("target", ["builtins::eval", "posix::system", "os::system",
                                    "aten::__class__", "aten::sin.__init__"])
def test_tampered_target_is_rejected_without_running_anything(filled, tmp_path, target):
    d, key = filled
    marker = tmp_path / "pwned"

    def edit(p):
        node = next(n for n in p["forward"]["nodes"] if n["op"] == "call_function")
        node["target"] = target
        node["args"] = [f"touch {marker}"]
    _retamper(d / key / ENTRY_FILE, edit)
    aotcheck.reset_counters()
    with pytest.warns(CacheWarning):
        run(d)
    assert not marker.exists()
    assert aotcheck.counters["misses"] == 1 and aotcheck.counters["corrupt"] == 1


def test_loader_rejects_non_aten_and_mutating_targets():
    def graph(target):
        return {"format": 1, "constants": {}, "nodes": [
            {"name": "x", "op": "placeholder", "target": "x", "args": [], "kwargs": {}},
            {"name": "y", "op": "call_function", "target": target, "args": [{"node": "x"}], "kwargs": {}},
            {"name": "output", "op": "output", "target": "output", "args": [{"list": [{"node": "y"}]}],
             "kwargs": {}}]}
    assert graph_from_data(graph("aten::sin.default"))
    for bad in ["builtins::eval", "os::system", "aten::add_.Tensor", "aten::copy_.default",
                "torch::load", "aten::sin.default; import os", "aten::nonexistent_op_xyz", 7]:
        with pytest.raises(SerializeError):
            graph_from_data(graph(bad))
    with pytest.raises(SerializeError):          # a node op other than the four allowed
        g = graph("aten::sin.default")
        g["nodes"][1]["op"] = "call_module"
        graph_from_data(g)


WRITER = textwrap.dedent('''
    import sys, torch, aotcheck
    d, me = sys.argv[1], int(sys.argv[2])
    def f(x, w):
        return (x * w).sin().sum(0), x.t()
    for rep in range(2):                         # later reps hit what others wrote
        for n in (3, 4 + me):                    # a key shared by all writers, and one of our own
            x = torch.randn(n, 4, requires_grad=True); w = torch.randn(4, requires_grad=True)
            out = aotcheck.aot_function(f, cache=d)(x, w)
            out[0].sum().backward()
            ref = (x * w).sin().sum(0)
            assert torch.allclose(out[0], ref)
    print("ok")
''')


def test_concurrent_writers_lose_nothing(tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    d = tmp_path / "cache"
    procs = [subprocess.Popen([sys.executable, str(script), str(d), str(i)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0 and "ok" in out, err[-3000:]
    cache = Cache(d)
    assert len(cache.keys()) == 5                   # the shared key and four of our own
    from aotcheck.cache import verify
    problems = verify(cache)
    assert not problems, problems
    for key in cache.keys():
        assert (d / key / ENTRY_FILE).exists() and (d / key / BACKWARD_FILE).exists()
    assert not [p for p in d.rglob(".tmp-*")]

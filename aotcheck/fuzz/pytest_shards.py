"""``aotcheck fuzz`` under pytest (and pytest-xdist): one test per shard of one seeded stream.

    pytest --pyargs aotcheck.fuzz.pytest_shards -n 4 --fuzz-engine torch --fuzz-minutes 10 \\
        --fuzz-seed 7 [--fuzz-database redis://127.0.0.1:6379/0] [--fuzz-out DIR] \\
        [--fuzz-extensions all|none|NAME,NAME]

There is one test, ``test_fuzz_shard[K/N]``, per shard K of N, where N is ``--fuzz-shards``
(default: the number of pytest-xdist workers given by ``-n``, else 1). xdist hands each worker
its own shards, so N workers explore disjoint parts of the stream (``fuzz(shard=...)``, as
``aotcheck fuzz --shard K/N`` does), and ``--fuzz-database`` shares hypothesis's example
database between them, so that a failure found by one replays in every later run. A shard
fails when its run found a failure that no known case covers (with ``--fuzz-engine aotcheck``:
any failure), and its message lists the fingerprints and reproducers, which are written to
``DIR/shard_K`` with the shard's ``findings.json`` and ``digests.json`` (a hash per program run).

The options are registered by aotcheck's pytest plugin (``aotcheck.check.pytest_plugin``), so
they work from any directory; without ``--fuzz-engine`` the test is skipped.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


def shard_count(config) -> int:
    n = config.getoption("--fuzz-shards", default=None)
    if n:
        return int(n)
    # pytest-xdist's -n: a worker sees the count in its environment (its own options lack -n)
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT") or \
        getattr(config.option, "numprocesses", None)
    if workers in ("auto", "logical"):
        return os.cpu_count() or 1
    return int(workers) if workers else 1


def pytest_generate_tests(metafunc):
    if "fuzz_shard" in metafunc.fixturenames:
        n = shard_count(metafunc.config)
        metafunc.parametrize("fuzz_shard", [(k, n) for k in range(n)],
                             ids=[f"{k + 1}/{n}" for k in range(n)])


def test_fuzz_shard(fuzz_shard, request):
    from .database import open_database
    from .runner import FuzzOptions, format_summary, fuzz, parse_extensions
    config = request.config
    engine = config.getoption("--fuzz-engine", default=None)
    if not engine:
        pytest.skip("no --fuzz-engine given (see aotcheck.fuzz.pytest_shards)")
    k, n = fuzz_shard
    minutes = config.getoption("--fuzz-minutes", default=None)
    examples = config.getoption("--fuzz-examples", default=None) or (10**9 if minutes else 200)
    out = Path(config.getoption("--fuzz-out", default=None) or "fuzz-out") / f"shard_{k + 1}"
    result = fuzz(FuzzOptions(
        engine, examples, int(config.getoption("--fuzz-seed", default=0) or 0),
        out=out, minutes=float(minutes) if minutes else None, shard=(k, n),
        database=open_database(config.getoption("--fuzz-database", default=None)),
        match_known=engine != "aotcheck",
        strategy_options=parse_extensions(config.getoption("--fuzz-extensions", default=None))))
    out.mkdir(parents=True, exist_ok=True)
    (out / "digests.json").write_text(json.dumps(result.digests))
    new = result.new if engine != "aotcheck" else result.findings
    assert not new, f"shard {k + 1}/{n}:\n{format_summary(result)}"

"""aotcheck's pytest plugin, registered through the ``pytest11`` entry point so that its
options work from any directory (a nested conftest's options would be ignored)."""
from __future__ import annotations


def pytest_addoption(parser):
    group = parser.getgroup("aotcheck")
    group.addoption("--with-cache", action="store_true", default=False,
                    help="run every corpus case twice: cold, then from the persistent cache")
    group.addoption("--engine", default="aotcheck",
                    help="engine under test: aotcheck (default), torch, torch-aot-function, "
                         "torch-inductor-lite, dynamo-aotcheck; a comma-separated list, all, or "
                         "all-torch (as aotcheck check --engine all-torch)")
    group.addoption("--partitioner", default=None,
                    help="the partitioner aotcheck's engine uses: default or mincut "
                         "(sets AOTCHECK_PARTITIONER for the run)")
    group.addoption("--strict-cache", action="store_true", default=False,
                    help="a miss or bypass where a cache hit is expected fails the test")
    fuzz = parser.getgroup("aotcheck fuzz", "aotcheck fuzz under pytest (aotcheck.fuzz.pytest_shards)")
    fuzz.addoption("--fuzz-engine", default=None, help="run aotcheck.fuzz.pytest_shards against "
                   "this engine (aotcheck, torch, torch-inductor, ...)")
    fuzz.addoption("--fuzz-shards", type=int, default=None, help="how many shards of the stream "
                   "(default: pytest-xdist's -n, else 1)")
    fuzz.addoption("--fuzz-examples", type=int, default=None, help="programs in the whole stream "
                   "(each shard runs its part; default 200, with --fuzz-minutes no limit)")
    fuzz.addoption("--fuzz-minutes", type=float, default=None, help="bound each shard's run")
    fuzz.addoption("--fuzz-seed", type=int, default=0)
    fuzz.addoption("--fuzz-database", default=None, help="redis://HOST:PORT[/DB] or a directory")
    fuzz.addoption("--fuzz-out", default=None, help="folder for the shards' reproducers")
    fuzz.addoption("--fuzz-extensions", default=None, help="the grammar to draw, as aotcheck "
                   "fuzz --extensions takes it (default: the engine's)")
    group.addoption("--remote-cache", default=None, metavar="URL",
                    help="a Redis URL (redis://host:port/db) that every persistent cache in the run "
                         "shares (sets AOTCHECK_REMOTE_CACHE for this process)")


def pytest_configure(config):
    from aotcheck import flags
    flags.set_override(flags.CHECK_GRAPHS, True)
    if config.getoption("--strict-cache", default=False):
        flags.set_override(flags.STRICT_CACHE, True)
    partitioner = config.getoption("--partitioner", default=None)
    if partitioner is not None:
        from aotcheck.api import resolve_partitioner
        flags.set_override(flags.PARTITIONER, resolve_partitioner(partitioner))
    remote = config.getoption("--remote-cache", default=None)
    if remote:
        flags.set_override(flags.REMOTE_CACHE, remote)


def pytest_report_header(config):
    from aotcheck import flags
    lines = [f"aotcheck: partitioner {flags.get(flags.PARTITIONER)}"]
    if config.getoption("--with-cache", default=False):
        strict = "strict" if flags.get(flags.STRICT_CACHE) else "not strict"
        remote = flags.get(flags.REMOTE_CACHE)
        lines.append(f"aotcheck: corpus runs cold and cached ({strict}" + (f", remote {remote})" if remote else ")"))
    return lines

"""aotcheck's pytest plugin, registered through the ``pytest11`` entry point so that its
options work from any directory (a nested conftest's options would be ignored)."""
from __future__ import annotations


def pytest_addoption(parser):
    group = parser.getgroup("aotcheck")
    group.addoption("--with-cache", action="store_true", default=False,
                    help="run every corpus case twice: cold, then from the persistent cache")
    group.addoption("--engine", default="aotcheck",
                    help="engine under test: aotcheck (default), torch, torch-aot-function")
    group.addoption("--partitioner", default=None,
                    help="the partitioner aotcheck's engine uses: default or mincut "
                         "(sets AOTCHECK_PARTITIONER for the run)")
    group.addoption("--strict-cache", action="store_true", default=False,
                    help="a miss or bypass where a cache hit is expected fails the test")
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

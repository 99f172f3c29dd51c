"""The ``aotcheck`` command line: check, baseline, cache, fuzz, ops, report, triage and keydiff.

Each subcommand lives in its own module, which defines ``register(subparsers)``; this file
only lists them. Its modules, one line each: the map in README.md, "Layout".

What it may import: everything else in aotcheck; nothing imports it.
"""
from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS = (
    "aotcheck.cli.check",      # aotcheck check
    "aotcheck.cli.baseline",   # aotcheck baseline save FILE
    "aotcheck.cli.cache",      # aotcheck cache ...
    "aotcheck.cli.fuzz",       # aotcheck fuzz
    "aotcheck.cli.ops",        # aotcheck ops
    "aotcheck.cli.report",     # aotcheck report
    "aotcheck.cli.triage",     # aotcheck triage REPRO.py
    "aotcheck.cli.keydiff",    # aotcheck keydiff PROGRAM.py | --census
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aotcheck", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMANDS:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
            continue
        mod.register(sub)
    return parser


def add_partitioner_option(p) -> None:
    """``--partitioner``, for the subcommands that run aotcheck's engine (check, fuzz, report)."""
    p.add_argument("--partitioner", default=None, choices=("default", "mincut"),
                   help="the partitioner aotcheck's engine uses (default: AOTCHECK_PARTITIONER, "
                        "else 'default')")


# The subcommands whose verdicts lean on the torch engines' recorded known failures.
_USES_KNOWN_FAILURES = {"check", "baseline", "fuzz", "report", "triage"}


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in _USES_KNOWN_FAILURES and not getattr(args, "baseline", None):
        # a run judged against a saved baseline does not read the built-in record: its own
        # version check is cli/check.py's _note_baseline_version
        from ..targets.known_failures import note_version_once
        note_version_once(lambda text: print(text, file=sys.stderr))
    partitioner = getattr(args, "partitioner", None)
    if partitioner is None:
        return int(args.func(args) or 0)
    from .. import flags
    with flags.overridden(flags.PARTITIONER, partitioner):   # every engine running aotcheck reads it
        return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())

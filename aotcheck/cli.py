"""The ``aotcheck`` command line. Each subcommand lives in its own module, which
defines ``register(subparsers)``; this file only lists them."""
from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS = (
    "aotcheck.check_cli",      # aotcheck check
    "aotcheck.cache_cli",      # aotcheck cache ...
    "aotcheck.fuzz_cli",       # aotcheck fuzz
    "aotcheck.ops_cli",        # aotcheck ops
    "aotcheck.report_cli",     # aotcheck report
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


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())

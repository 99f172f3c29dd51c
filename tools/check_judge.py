"""The regression command as a mutation judge: exit 1 only on a verdict stock torch did not give.

    python tools/check_judge.py BASELINE.json -- --engine torch-aot-function --no-cached

runs ``aotcheck check ARGS --jobs 1 --baseline BASELINE.json``. When BASELINE.json does not
exist (the first run of a harness, on stock torch) it is recorded first with ``aotcheck baseline
save BASELINE.json ARGS --jobs 1``, and the check then runs against it at once: a judge must pass
on the build it was recorded on, so a recording that does not reproduce itself fails here, on
stock, instead of making every mutant look caught. Exit status: the check's (0 pass, 1 NEW or
CHANGED, 2 a broken run).

# NOTE [one worker, a fixed order]
With two workers the corpus is split into chunks that the workers take as they free up, and
some verdicts depend on which cases ran before a case in the same process (state a case leaves
in torch). The built-in record was taken from such runs, so on stock torch ``check --engine
all-torch`` can report NEW failures that are only a different order. A mutation judge compares
one build with another, so it must hold the order fixed: ``--jobs 1`` (every case in corpus
order in one process) on both sides, and a baseline recorded on stock torch by the same command
rather than the built-in record.
"""
from __future__ import annotations

import os
import subprocess
import sys

CLI = "import sys; from aotcheck.cli import main; sys.exit(main())"


def aotcheck(*args: str) -> int:
    return subprocess.call([sys.executable, "-c", CLI, *args])


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[1] != "--" or any(a in ("--jobs", "-j", "--baseline")
                                                 for a in argv[2:]):
        print(__doc__, file=sys.stderr)
        return 2
    baseline, args = argv[0], [*argv[2:], "--jobs", "1"]
    if not os.path.exists(baseline):
        rc = aotcheck("baseline", "save", baseline, *args)
        if rc != 0 or not os.path.exists(baseline):
            print(f"check_judge: recording the baseline failed (rc {rc})", file=sys.stderr)
            return 2
        print(f"check_judge: baseline recorded in {baseline}; checking it reproduces")
    return aotcheck("check", *args, "--baseline", baseline)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

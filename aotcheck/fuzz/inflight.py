"""inflight: the program a fuzz run is executing, on disk, so a crash that kills the process
leaves its reproducer.

A SIGSEGV inside torch raises no Python exception for the runner to catch. So each explored
program is written to ``OUT/inflight_program.py`` before it runs, and the file is removed when
exploration ends. A file left behind by a run that died is kept as ``crashed_NN.py`` by the
next run in the same folder, which says so on stderr.
"""
from __future__ import annotations

import sys
from pathlib import Path

NAME = "inflight_program.py"
_HEADER = ("# aotcheck fuzz: the program that was running when the fuzz process died (a crash\n"
           "# that took the process down, e.g. SIGSEGV inside torch); it was not checked.\n")


class InFlight:
    """``OUT/inflight_program.py`` for one run; with ``out`` None every call does nothing."""

    def __init__(self, out):
        self.path = None if out is None else Path(out) / NAME
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            n = len(list(self.path.parent.glob("crashed_*.py")))
            kept = self.path.parent / f"crashed_{n:02d}.py"
            self.path.rename(kept)
            print(f"aotcheck fuzz: an earlier run in {self.path.parent} died while running the "
                  f"program now in {kept}", file=sys.stderr)

    def write(self, program, engine_name: str) -> None:
        if self.path is not None:
            self.path.write_text(_HEADER + f"# program: {program.to_json()}\n"
                                 + program.to_source(engine=engine_name))

    def clear(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)

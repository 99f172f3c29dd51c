"""results: the OpInfo suite's statuses and its one result record, as plain data."""
from __future__ import annotations

from dataclasses import dataclass

from .gradcheck import FAIL, PASS, VACUOUS

SCHEMA_VERSION = 2   # 2: target and speedup
ENGINE_ERROR, CRASH, SKIPPED, XFAIL, XPASS, NA = "engine error", "crash", "skipped", "xfail", "xpass", "n/a"
EAGER_FAILS = "eager fails"   # the numerical check fails for eager autograd too: tolerance, not engine
STATUSES = (PASS, FAIL, VACUOUS, ENGINE_ERROR, CRASH, SKIPPED, XFAIL, XPASS, EAGER_FAILS, NA)
CHECKS = ("forward", "backward", "numerical")
COUNTED = (PASS, FAIL, ENGINE_ERROR, CRASH, XPASS)   # statuses that enter a score


@dataclass(frozen=True)
class SampleResult:
    """One case under one seed and one engine mode. Plain data; JSON via dataclasses.asdict."""
    op: str
    variant: str
    index: int
    seed: int
    mode: str                       # "cold" or "cached", or the column: a backend's name, "kernels"
    forward: str
    backward: str
    numerical: str
    forward_detail: str = ""
    backward_detail: str = ""
    numerical_detail: str = ""
    error: str = ""                 # "TraceError: <first line>" for engine errors and crashes
    is_view: bool = False
    cache: str = ""                 # this case's change in aotcheck.counters: "hits 2, saves 1"
    seconds: float = 0.0
    target: str = ""                # the options that select the engine: "--backend inductor"
    speedup: float | None = None    # eager / compiled forward seconds (perf.py), when timed
    schema_version: int = SCHEMA_VERSION

    def status(self, check: str) -> str:
        return getattr(self, check)

    def detail(self, check: str) -> str:
        return getattr(self, f"{check}_detail")

    def repro(self) -> str:
        return (f"aotcheck ops --op {self.op} --samples all --sample-index {self.index} "
                f"--variant {self.variant}" + (f" --seed {self.seed}" if self.seed else "")
                + (" --cached" if self.mode == "cached" else "") + (f" {self.target}" if self.target else ""))

"""Verdicts: each outcome judged against the record, and the exit code.

    outcome         record entry                    verdict
    pass            none                            pass
    pass            any                             FIXED    (a recorded failure that passes)
    fail            none                            NEW      (a failure not recorded)
    fail            pinned, same fingerprint        known
    fail            pinned, other fingerprint       CHANGED  (a recorded failure, failing differently)
    fail            unpinned (reason only)          known    (counted as unpinned)
    graph break     pinned, a graph break           known    (whichever break Dynamo names first)
    not run         a recorded crash                known    (never run: it takes the process down)
    (no outcome)    a stage of a case that ran      FIXED    (no longer run: record.unreached)
    skipped         (cached run of a failing cold run: the same failure, judged once)

``exit_code(verdicts, strict)``: 1 on any NEW or CHANGED, and under ``strict`` on FIXED too;
else 0::

    >>> from .fingerprint import FailurePrint as F
    >>> from .record import Entry, Record, split_key, unreached
    >>> rec = Record("2.13.0", {"torch": {"a": Entry("why", F("values", "output 0"))}})
    >>> judge_one(rec, "torch", "cold", "a", F("values", "output 1")).kind
    <VerdictKind.CHANGED: 'CHANGED'>
    >>> str(judge_one(rec, "torch", "cold", "a", None).kind), str(judge_one(rec, "torch", "cold", "b", None).kind)
    ('FIXED', 'pass')
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from .fingerprint import FailurePrint, same_failure
from .record import Entry, Record, split_key, unreached
from .run import Status


class VerdictKind(StrEnum):
    """What the judge says of one (engine, stage, case) against the record (the table above);
    ``aotcheck check`` prints the value."""
    PASS = "pass"              # passes, and nothing is recorded
    KNOWN = "known"            # fails as recorded, or a recorded crash that was not run
    NEW = "NEW"                # fails, and nothing is recorded
    CHANGED = "CHANGED"        # a recorded failure, failing differently
    FIXED = "FIXED"            # a recorded failure that passes, or whose stage no longer runs
    SKIPPED = "skipped"        # the cached run of a failing cold run (judged once, cold)


FAILING = (VerdictKind.NEW, VerdictKind.CHANGED)
NO_LONGER_RUN = "no longer run: the case ran, but this stage was not picked or not reached"


@dataclass(frozen=True)
class Verdict:
    kind: VerdictKind
    engine: str
    stage: str
    case_id: str
    now: FailurePrint | None = None   # how it fails now (None: it passes, or was not run)
    was: Entry | None = None          # the record's entry, if any
    detail: str = ""                  # the first problem, for the printout

    @property
    def sentence(self) -> str:
        """One short line saying what changed, for the NEW / CHANGED / FIXED lists: the
        fingerprints only (``aotcheck check -v`` prints the problems in full under it)."""
        where = f"{self.case_id} [{self.engine}, {self.stage}]"
        if self.kind is VerdictKind.NEW:
            return f"{where}: {_short(str(self.now), 140)}"
        if self.kind is VerdictKind.CHANGED:
            return f"{where}: was {_short(str(self.was.fingerprint), 90)}; now {_short(str(self.now), 90)}"
        if self.kind is VerdictKind.FIXED:
            was = self.was.fingerprint or self.was.reason
            now = "this stage no longer runs" if self.detail == NO_LONGER_RUN else "now passes"
            return f"{where}: recorded as failing ({_short(str(was))}), {now}"
        return f"{where}: {self.kind}"




def _short(s: str, n: int = 160) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[:n - 1] + "…"


def judge_one(record: Record, engine: str, stage: str, case_id: str, now: FailurePrint | None,
              *, status: Status | None = None, detail: str = "") -> Verdict:
    """The verdict on one (engine, stage, case). ``status`` defaults to pass/fail from ``now``;
    "not run" and "skipped" are passed explicitly."""
    status = status or (Status.FAIL if now is not None else Status.PASS)
    entry = record.lookup(engine, stage, case_id)
    if status is Status.SKIPPED:
        kind = VerdictKind.SKIPPED
    elif status is Status.NOT_RUN:
        kind = VerdictKind.KNOWN if entry is not None else VerdictKind.NEW
        detail = detail or "not run"
    elif status is Status.PASS:
        kind = VerdictKind.FIXED if entry is not None and not entry.crashes else VerdictKind.PASS
    elif entry is None:
        kind = VerdictKind.NEW
    elif same_failure(entry.fingerprint, now):
        kind = VerdictKind.KNOWN
    else:
        kind = VerdictKind.CHANGED
    return Verdict(kind, engine, stage, case_id, now, entry, detail)


def judge(outcomes, record: Record, kinds: frozenset[str] = frozenset()) -> list[Verdict]:
    """A verdict per outcome, and a FIXED one per recorded stage of ``kinds`` that a case which
    ran did not give (``record.unreached``)."""
    out = [judge_one(record, o.engine, o.stage, o.case_id, o.fingerprint, status=o.status,
                     detail=str(o.problems[0]) if o.problems else "") for o in outcomes]
    for engine, key, entry in unreached(record, outcomes, kinds):
        stage, case_id = split_key(key)
        out.append(Verdict(VerdictKind.FIXED, engine, stage, case_id, None, entry, NO_LONGER_RUN))
    return out


def exit_code(verdicts, strict: bool = False) -> int:
    bad = FAILING + ((VerdictKind.FIXED,) if strict else ())
    return 1 if any(v.kind in bad for v in verdicts) else 0


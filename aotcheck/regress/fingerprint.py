"""How a run failed, as data: which check failed, on what, and with which error.

The oracle (``aotcheck.check.oracle``) lists divergences in a fixed order; the first one is the
failure's root. ``fingerprint(problems)`` keeps three things of it::

    >>> fingerprint(["output 1 requires_grad: eager True, compiled False", "grad of leaf 0: ..."])
    FailurePrint(check='requires_grad', subject='output 1', error='')
    >>> fingerprint(["compiled raised BackendCompilerFailed: backend='aot_eager' raised: "
    ...              "AssertionError: outs_to_grad length (1) != tangents length (2)"])
    FailurePrint(check='crash in aot_autograd', subject='', error='AssertionError: outs_to_grad length [...] != tangents length [...]')

- ``check``: the kind of check, by ``aotcheck.fuzz.fingerprint.check_kind`` (``values``,
  ``aliasing``, ``requires_grad``, ``grad presence``, ``crash in aot_autograd``, ...), plus the
  engine harness's own: ``graph break``, ``no graph`` (Dynamo), ``cache miss``, ``stale hit``
  and ``lost hit`` (key variations);
- ``subject``: the output, argument, leaf gradient or state it is about (``output 1``,
  ``argument 0``, ``grad of leaf 2``, ``state 1 / output 0``), or empty;
- ``error``: for a crash or a graph break, the exception type and the message's stem (numbers,
  quoted names and shapes removed), else empty.

Two runs fail *the same way* when their fingerprints are equal. Values are deliberately not
part of it (a tolerance miss by 1e-3 or by 10 is the same failure), numbers in messages neither.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from ..fuzz.fingerprint import _stem, check_kind

SCHEMA = 1

_FILL = "run that fills the cache: "
_STATE = re.compile(r"^in state (\d+): ")
_SUBJECT = re.compile(r"^(?:mutating |after mutating )?(output \d+|argument \d+|grad of leaf \d+|"
                      r"grad of output \d+)")


@dataclass(frozen=True)
class FailurePrint:
    check: str
    subject: str = ""
    error: str = ""

    def __str__(self) -> str:
        return ", ".join(x for x in (self.check, self.subject, self.error) if x)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "FailurePrint":
        unknown = set(d) - {"check", "subject", "error"}
        if unknown or "check" not in d:
            raise ValueError(f"not a failure fingerprint: {d!r} (fields check, subject, error)")
        return cls(str(d["check"]), str(d.get("subject", "")), str(d.get("error", "")))


def fingerprint(problems) -> FailurePrint | None:
    """The fingerprint of a run's problems (the oracle's divergences, then the harness's own),
    or None for a run without problems."""
    if not problems:
        return None
    first = problems[0]
    if first.startswith(_FILL):          # outcome(): the cached round trip's cold fill failed
        first = first[len(_FILL):]
    state = ""
    m = _STATE.match(first)
    if m:
        state, first = f"state {m.group(1)}", first[m.end():]
    check, error = _check_and_error(first)
    m = _SUBJECT.match(first)
    subject = m.group(1) if m else ""
    if state:
        subject = f"{state} / {subject}" if subject else state
    return FailurePrint(check, subject, error)


def same_failure(recorded: FailurePrint | None, now: FailurePrint | None) -> bool:
    """Whether a recorded failure (``recorded``; None: unpinned, any failure) describes the
    failure seen ``now``: the same fingerprint, or a graph break both times.

    # NOTE [graph breaks are not pinned by their reason]
    A case Dynamo cannot capture whole is recorded as "graph break" with the stem of the first
    break's reason; which break Dynamo reports first varies between runs of the same build
    (``x.set_(...)`` then ``requires_grad_()``: either one), and a break says nothing about AOT
    autograd, which runs on the pieces. So another break reason is the same known failure (and
    keeps its written reason when the record is regenerated); a graph break that turns into a
    crash, a wrong value, or a pass is still CHANGED or FIXED::

        >>> F = FailurePrint
        >>> same_failure(F("graph break", "", "a"), F("graph break", "", "b"))
        True
        >>> same_failure(F("graph break", "", "a"), F("crash in backward", "", "a"))
        False
        >>> same_failure(None, F("values", "output 0"))
        True
    """
    if recorded is None or recorded == now:
        return True
    return now is not None and recorded.check == now.check == "graph break"


def _check_and_error(first: str) -> tuple[str, str]:
    if first.startswith("Dynamo could not capture the whole function: "):
        return "graph break", _stem(first.split(": ", 1)[1], 90)
    if first.startswith("Dynamo captured no graph"):
        return "no graph", ""
    for verdict in ("stale hit", "lost hit"):
        if first.lower().startswith(verdict):
            return verdict, ""
    kind = check_kind([first])
    if kind.startswith("crash in "):
        where, _, error = kind.partition(": ")
        return where, error
    return kind, ""

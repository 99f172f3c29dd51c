"""How a run failed, as data: which check failed, on what, and with which error.

The oracle (``aotcheck.check.oracle``) lists divergences in a fixed order; the first one is the
failure's root. ``fingerprint(problems)`` keeps three things of its record
(``aotcheck.check.divergence``)::

    >>> from aotcheck.check.divergence import Check, Divergence, Subject
    >>> fingerprint([Divergence(Check.REQUIRES_GRAD, Subject.output(1), expected="True", actual="False"),
    ...              Divergence(Check.GRAD_VALUES, Subject.leaf(0), detail="...")])
    FailurePrint(check='requires_grad', subject='output 1', error='')
    >>> fingerprint([Divergence(Check.COMPILED_RAISED, error="BackendCompilerFailed: backend='aot_eager' "
    ...              "raised: AssertionError: outs_to_grad length (1) != tangents length (2)")])
    FailurePrint(check='crash in aot_autograd', subject='', error='AssertionError: outs_to_grad length [...] != tangents length [...]')

- ``check``: the kind of check, by ``aotcheck.fuzz.fingerprint.check_kind`` (``values``,
  ``aliasing``, ``requires_grad``, ``grad presence``, ``crash in aot_autograd``, ...), plus the
  engine harness's own: ``graph break``, ``no graph`` (Dynamo), ``cache miss``, ``stale hit``
  and ``lost hit`` (key variations);
- ``subject``: the output, argument, leaf gradient or state it is about (``output 1``,
  ``argument 0``, ``grad of leaf 2``, ``state 1 / output 0``), or empty: the retained-grad and
  storage-sharing checks were never pinned by what they are about, and are not now;
- ``error``: for a crash or a graph break, the exception type and the message's stem (numbers,
  quoted names and shapes removed), else empty.

Two runs fail *the same way* when their fingerprints are equal. Values are deliberately not
part of it (a tolerance miss by 1e-3 or by 10 is the same failure), numbers in messages neither.
A problem handed as a sentence has a check alone:
NOTE [harness sentences without a record] in ``aotcheck/fuzz/fingerprint.py``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..check.divergence import Check, Divergence
from ..fuzz.fingerprint import stem, check_kind, sentence_check

SCHEMA = 1

_UNPINNED_SUBJECT = (Check.RETAINS_GRAD, Check.RETAINED_GRAD_PRESENCE, Check.RETAINED_GRAD_VALUES,
                     Check.SHARING)
_VERDICTS = ("stale hit", "lost hit")


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
    if isinstance(first, str):
        verdict = next((v for v in _VERDICTS if first.lower().startswith(v)), None)
        return FailurePrint(verdict or sentence_check(first))
    check, error = _check_and_error(first.bare())
    subject = _subject(first)
    if first.state is not None:
        subject = f"state {first.state} / {subject}" if subject else f"state {first.state}"
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


def _check_and_error(d: Divergence) -> tuple[str, str]:
    if d.check is Check.GRAPH_BREAK:
        return "graph break", stem(d.detail, 90)
    if d.check is Check.NO_GRAPH:
        return "no graph", ""
    kind = check_kind([d])
    if kind.startswith("crash in "):
        where, _, error = kind.partition(": ")
        return where, error
    return kind, ""


def _subject(d: Divergence) -> str:
    """What the fingerprint says the record is about: the output or argument, the leaf or output
    whose gradient, the output mutated in place."""
    if d.subject is None or d.check in _UNPINNED_SUBJECT:
        return ""
    if d.check in (Check.GRAD_PRESENCE, Check.GRAD_VALUES):
        return f"grad of {d.subject}"
    return str(d.subject)

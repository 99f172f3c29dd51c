"""known_failures: every corpus case that an engine is expected to get wrong, with the reason.

The table is data, one file per torch release in ``records/`` beside this file
(``records/torch-2.13.0.json``, ``records/torch-2.14.1.json``, ...)::

    {"format": 2,
     "recorded_on": {"torch": "2.13.0"},
     "reasons": {"NO_GRAPH": "Dynamo captured no graph: ...", ...},
     "engines": {"torch": {"basics.returns_none": {"reason": "NO_GRAPH", "fingerprint": {...}},
                           "cached:alias_of_input.x": "a sentence of its own", ...}, ...}}

A value is an object with the reason and the failure's fingerprint (how it fails:
``aotcheck.regress.fingerprint``), or (format 1, *unpinned*) the reason alone; a reason
is a name in ``reasons`` (a reason shared by many cases) or a sentence of its own.
``"cached:<id>"``: only the cached run fails (or fails differently). A reason that
starts with "crashes the process" (:func:`crashes`) is never run, only recorded.
This module reads the reasons; ``aotcheck.regress.record`` reads the whole format.
Regenerate the table with ``aotcheck baseline save --builtin --engine all-torch``;
pin unpinned entries (added by hand, reason only) with
``tools/known_failures_migrate.py``. ``aotcheck check --engine all-torch`` and the tests
(tests/test_engines.py) keep the table exact: every entry must fail, the same way, and
nothing else may.

Each file holds what the torch engines did on one torch release, ``recorded_on``; the one for
the installed release is chosen automatically (:func:`record_path`,
NOTE [one record per torch release]). On a release with no record (a nightly, a local build, a later release)
the nearest recorded release is used and :func:`version_note` says so once:
the strict xfails then compare that build's behaviour with the recorded one, so an XPASS or
a new failure may be a difference between torch versions rather than a regression. The
note points at the baseline workflow: record main's build with ``aotcheck baseline save``
and compare a branch's build with ``aotcheck check --baseline``.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

RECORDS = Path(__file__).with_name("records")

# NOTE [one record per torch release]
# The torch engines' verdicts are a property of the torch build: a Dynamo or AOTAutograd change
# between releases turns a crash into a pass (or a silently wrong result), so one record cannot
# serve 2.13.0, 2.14.1 and 2.15.0 at once. ``records/torch-<release>.json`` holds each recorded
# release's; the installed release reads its own. A release with no file (a nightly, a local
# build, a release not yet recorded) reads the newest recorded release at or below it (a
# nightly of 2.16 reads 2.15.0's), else the oldest, and is told so once (``version_note``).
# ``aotcheck baseline save --builtin`` writes the installed release's file, starting from the
# nearest record's reasons; ``tools/torch_versions.py`` prepares the other releases' venvs and
# regenerates or checks every file.


def release(version: str) -> str:
    """``2.13.0+cpu`` -> ``2.13.0``: the local build tag does not change recorded behaviour."""
    return str(version).split("+")[0]


def _numbers(version: str) -> tuple[int, ...]:
    """``2.15.0.dev20261201`` -> ``(2, 15, 0)``: the release's leading numbers, for ordering."""
    m = re.match(r"\d+(?:\.\d+)*", release(version))
    return tuple(int(n) for n in m.group(0).split(".")) if m else ()


def recorded_releases() -> list[str]:
    """The torch releases with a record file, oldest first."""
    names = [p.name[len("torch-"):-len(".json")] for p in RECORDS.glob("torch-*.json")]
    return sorted(names, key=_numbers)


def record_path(torch_version: str | None = None) -> Path:
    """The record for ``torch_version`` (default: the installed torch): its own release's file,
    else the newest recorded release at or below it, else the oldest
    (NOTE [one record per torch release])."""
    if torch_version is None:
        import torch
        torch_version = torch.__version__
    known = recorded_releases()
    if not known:
        raise FileNotFoundError(f"no known-failures record in {RECORDS}")
    own = release(torch_version)
    if own in known:
        return RECORDS / f"torch-{own}.json"
    below = [r for r in known if _numbers(r) <= _numbers(own)]
    return RECORDS / f"torch-{below[-1] if below else known[0]}.json"


def own_record_path(torch_version: str | None = None) -> Path:
    """Where the record of ``torch_version``'s own release lives (written by ``baseline save
    --builtin``), whether or not it exists yet."""
    if torch_version is None:
        import torch
        torch_version = torch.__version__
    return RECORDS / f"torch-{release(torch_version)}.json"


def _reason(entry) -> str:
    """An entry's reason: format 2's ``{"reason": ..., "fingerprint": ...}`` or format 1's string."""
    return entry if isinstance(entry, str) else entry.get("reason", "")


def _load() -> tuple[str, dict[str, dict[str, str]]]:
    data = json.loads(record_path().read_text())
    reasons = data["reasons"]
    return data["recorded_on"]["torch"], {
        engine: {case: reasons.get(_reason(r), _reason(r)) for case, r in table.items()}
        for engine, table in data["engines"].items()}


RECORDED_ON_TORCH, KNOWN_FAILURES = _load()   # the release the table was recorded on, and the table


def version_note(torch_version: str | None = None) -> str | None:
    """None on a torch release that has its own record; otherwise one plain paragraph saying
    which recorded release stands in for it and what that means for the strict xfails."""
    if torch_version is None:
        import torch
        torch_version = torch.__version__
    if release(torch_version) in recorded_releases():
        return None
    used = record_path(torch_version).name[len("torch-"):-len(".json")]
    return (f"aotcheck: torch {torch_version} has no known-failures record of its own (recorded: "
            f"{', '.join(recorded_releases())}); the torch engines are judged against torch {used}'s. "
            f"Each known failure is a strict xfail: on this build a recorded failure that now passes "
            f"is reported as XPASS (a failure of the run), and a failure that torch {used} did not "
            f"have is reported as a failure. Either may be a difference between the two torch "
            f"versions rather than a regression of this build; the aotcheck engine's own verdicts do "
            f"not depend on the record. To compare two builds, record the reference one with "
            f"`aotcheck baseline save FILE --engine all-torch` and run `aotcheck check --engine "
            f"all-torch --baseline FILE` on the other, or record this release's own with `aotcheck "
            f"baseline save --builtin` (README: the regression workflow).")


_NOTED: list[bool] = []


def note_version_once(write) -> None:
    """Call ``write(text)`` with :func:`version_note`, at most once per process."""
    if _NOTED:
        return
    _NOTED.append(True)
    note = version_note()
    if note:
        write(note)


CRASH = "crashes the process"


def crashes(reason: str | None) -> bool:
    """A known failure that kills the process (a SIGSEGV in the engine): it is recorded, and
    never run, since a run would take the test session or the report down with it."""
    return bool(reason) and reason.startswith(CRASH)


def known_failure(engine_name: str, case_id: str, cached: bool = False) -> str | None:
    """The recorded reason ``case_id`` fails on this engine (cold or cached), or None. For
    aotcheck's own engine the corpus case's ``xfail`` counts too (the corpus tests mark it
    there), so that the engine tests and ``aotcheck report`` agree with them."""
    table = KNOWN_FAILURES.get(engine_name, {})
    if cached and f"cached:{case_id}" in table:
        return table[f"cached:{case_id}"]
    if engine_name == "aotcheck" and case_id not in table:
        return _corpus_xfails().get(case_id)
    return table.get(case_id)


_XFAILS: dict[str, str] = {}


def corpus_xfail(case_id: str) -> str | None:
    """The corpus case's own ``xfail`` reason (a known failure of aotcheck's engine), or None."""
    return _corpus_xfails().get(case_id) or None


def _corpus_xfails() -> dict[str, str]:
    """Case id -> the corpus case's ``xfail`` reason (a known failure of aotcheck's engine)."""
    if not _XFAILS:
        from ..check.corpus import all_cases
        _XFAILS.update({c.id: c.xfail for c in all_cases() if c.xfail})
        _XFAILS.setdefault("", "")      # built (even when no case has an xfail)
    return _XFAILS

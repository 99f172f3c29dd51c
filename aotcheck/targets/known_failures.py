"""known_failures: every corpus case that an engine is expected to get wrong, with the reason.

The table is data, in ``known_failures.json`` beside this file::

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

The table holds what the torch engines did on one torch build, ``recorded_on``. On any
other torch (a nightly, a local build, a later release) :func:`version_note` says so once:
the strict xfails then compare that build's behaviour with the recorded one, so an XPASS or
a new failure may be a difference between torch versions rather than a regression. The
note points at the baseline workflow: record main's build with ``aotcheck baseline save``
and compare a branch's build with ``aotcheck check --baseline``.
"""
from __future__ import annotations

import json
from pathlib import Path

_PATH = Path(__file__).with_name("known_failures.json")


def _reason(entry) -> str:
    """An entry's reason: format 2's ``{"reason": ..., "fingerprint": ...}`` or format 1's string."""
    return entry if isinstance(entry, str) else entry.get("reason", "")


def _load() -> tuple[str, dict[str, dict[str, str]]]:
    data = json.loads(_PATH.read_text())
    reasons = data["reasons"]
    return data["recorded_on"]["torch"], {
        engine: {case: reasons.get(_reason(r), _reason(r)) for case, r in table.items()}
        for engine, table in data["engines"].items()}


RECORDED_ON_TORCH, KNOWN_FAILURES = _load()   # the torch build the table was recorded on, and the table


def _release(version: str) -> str:
    """``2.13.0+cpu`` -> ``2.13.0``: the local build tag does not change recorded behaviour."""
    return version.split("+")[0]


def version_note(torch_version: str | None = None) -> str | None:
    """None on the torch build the known failures were recorded on; otherwise one plain
    paragraph saying which build that was and what it means for the strict xfails."""
    if torch_version is None:
        import torch
        torch_version = torch.__version__
    if _release(str(torch_version)) == _release(RECORDED_ON_TORCH):
        return None
    return (f"aotcheck: the torch engines' known failures were recorded on torch {RECORDED_ON_TORCH}; "
            f"this is torch {torch_version}. Each known failure is a strict xfail: on this build a "
            f"recorded failure that now passes is reported as XPASS (a failure of the run), and a "
            f"failure that torch {RECORDED_ON_TORCH} did not have is reported as a failure. Either may "
            f"be a difference between the two torch versions rather than a regression of this build; "
            f"the aotcheck engine's own verdicts do not depend on the torch version's record. To "
            f"compare two builds, record the reference one with `aotcheck baseline save FILE "
            f"--engine all-torch` and run `aotcheck check --engine all-torch --baseline FILE` "
            f"on the other (README: the regression workflow).")


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

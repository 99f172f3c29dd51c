"""known_failures: every corpus case that an engine is expected to get wrong, with the reason.

The table is data, in ``known_failures.json`` beside this file::

    {"reasons": {"NO_GRAPH": "Dynamo captured no graph: ...", ...},
     "engines": {"torch": {"basics.returns_none": "NO_GRAPH",
                           "cached:alias_of_input.x": "a sentence of its own", ...}, ...}}

A value is a name in ``reasons`` (a reason shared by many cases) or a sentence of
its own. ``"cached:<id>"``: only the cached run fails (or fails differently). A reason
that starts with "crashes the process" (:func:`crashes`) is never run, only recorded.
Regenerate the evidence with ``aotcheck report ENGINE -v`` (each failure's
divergences); the tests (tests/test_engines.py) keep the table exact: every entry
must fail, and nothing else may.
"""
from __future__ import annotations

import json
from pathlib import Path

_PATH = Path(__file__).with_name("known_failures.json")


def _load() -> dict[str, dict[str, str]]:
    data = json.loads(_PATH.read_text())
    reasons = data["reasons"]
    return {engine: {case: reasons.get(r, r) for case, r in table.items()}
            for engine, table in data["engines"].items()}


KNOWN_FAILURES: dict[str, dict[str, str]] = _load()


CRASH = "crashes the process"


def crashes(reason: str | None) -> bool:
    """A known failure that kills the process (a SIGSEGV in the engine): it is recorded, and
    never run, since a run would take the test session or the report down with it."""
    return bool(reason) and reason.startswith(CRASH)


def known_failure(engine_name: str, case_id: str, cached: bool = False) -> str | None:
    """The recorded reason ``case_id`` fails on this engine (cold or cached), or None."""
    table = KNOWN_FAILURES.get(engine_name, {})
    if cached and f"cached:{case_id}" in table:
        return table[f"cached:{case_id}"]
    return table.get(case_id)

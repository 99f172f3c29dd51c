"""Recorded failures: per engine, each failing (stage, case) with its reason and how it fails.

One format serves the built-in records (``aotcheck/targets/records/torch-<release>.json``, one
per recorded torch release; the installed release's is read) and a saved baseline
(``aotcheck baseline save FILE``)::

    {"format": 2,
     "recorded_on": {"torch": "2.13.0"},
     "reasons": {"NO_GRAPH": "Dynamo captured no graph: ...", ...},
     "engines": {"torch": {
        "basics.returns_none": {"reason": "NO_GRAPH",
                                "fingerprint": {"check": "no graph", "subject": "", "error": ""}},
        "cached:alias_of_input.x": {"reason": "a sentence of its own", "fingerprint": {...}},
        "rng.y": "a reason alone (format 1): unpinned, any failure of it is known"}}}

A key is the case id for the cold run, ``cached:<id>`` for the cached run (which falls back to
the case's own entry: a case whose cold run fails fails its cache round trip the same way), and
``variation.<name>:<id>`` for one key variation. A value is an object with ``reason`` (a name in
``reasons`` or a sentence; may be empty in a baseline) and ``fingerprint`` (see
``fingerprint.py``), or, as in format 1, the reason alone: such an entry is *unpinned* and
``tools/known_failures_migrate.py`` pins it (runs the case and writes its fingerprint);
``aotcheck baseline save --builtin`` keeps it unpinned (an entry is left unpinned on purpose where
its message differs between runs of one build).
``recorded_on`` names the torch build the failures were seen on: a fingerprint is pinned per
torch release (NOTE [one record per torch release] in ``targets/known_failures.py``), and a
release with no record of its own is told which one stands in (``known_failures.version_note``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from ..targets.known_failures import CRASH, record_path
from .fingerprint import FailurePrint, same_failure
from .run import Status

FORMAT = 2


class RecordError(ValueError):
    """A record file that cannot be read as one (names the file and the problem)."""


@dataclass(frozen=True)
class Entry:
    reason: str
    fingerprint: FailurePrint | None = None     # None: unpinned (format 1), any failure matches

    @property
    def crashes(self) -> bool:
        return self.reason.startswith(CRASH)


def key_of(stage: str, case_id: str) -> str:
    return case_id if stage == "cold" else f"{stage}:{case_id}"


def split_key(key: str) -> tuple[str, str]:
    """``cached:basics.x`` -> ``("cached", "basics.x")``; ``basics.x`` -> ``("cold", "basics.x")``."""
    stage, sep, case_id = key.partition(":")
    return (stage, case_id) if sep else ("cold", key)


def stage_kind(stage: str) -> str:
    """``cold``, ``cached``, or ``variation`` for ``variation.<name>`` (and the phase's own
    ``variation`` stage, where the harness raised)."""
    return "variation" if stage.startswith("variation") else stage


# NOTE [a recorded stage the run no longer reaches]
# A case's cold and cached stages run whenever the case does, but its variation stages are what
# the key-variation phase picks and reaches that day: a variation is picked by the subject's name
# among the variations A's run offers, and none runs when the cold run fails or A's entry is not
# saved. An entry recorded for a variation the run no longer gives would otherwise stay in the
# record for good, judged by nothing: ``unreached`` names each such entry of a case the run ran,
# of a stage kind its plan runs; ``aotcheck check`` reports it as FIXED ("no longer run"), and
# ``from_outcomes`` drops it when it regenerates a record.


def unreached(record: "Record", outcomes: Iterable, kinds: frozenset[str]) -> list[tuple[str, str, "Entry"]]:
    """(engine, key, entry) for each entry of ``record`` whose case this run ran on that engine
    (an outcome other than "not run"), whose stage is of one of ``kinds``, and for which the run
    gave no outcome (NOTE [a recorded stage the run no longer reaches])."""
    ran: dict[str, set[str]] = {}
    given: dict[str, set[str]] = {}
    for o in outcomes:
        given.setdefault(o.engine, set()).add(key_of(o.stage, o.case_id))
        if o.status is not Status.NOT_RUN:
            ran.setdefault(o.engine, set()).add(o.case_id)
    out = []
    for engine, cases in ran.items():
        for key, entry in record.engines.get(engine, {}).items():
            stage, case_id = split_key(key)
            if case_id in cases and stage_kind(stage) in kinds and key not in given[engine]:
                out.append((engine, key, entry))
    return sorted(out, key=lambda x: (x[0], x[1]))


@dataclass(frozen=True)
class Record:
    torch: str                                          # the build it was recorded on
    engines: Mapping[str, Mapping[str, Entry]]
    source: str = ""                                    # the file, for messages
    reasons: Mapping[str, str] = field(default_factory=dict)   # shared reasons, by name

    def lookup(self, engine: str, stage: str, case_id: str) -> Entry | None:
        table = self.engines.get(engine, {})
        entry = table.get(key_of(stage, case_id))
        if entry is None and stage == "cached":
            entry = table.get(case_id)
        if entry is None and engine == "aotcheck" and stage in ("cold", "cached"):
            # aotcheck's own known failures are the corpus cases' xfail (the corpus tests
            # mark them there): unpinned, any failure of the case is the known one
            from ..targets.known_failures import corpus_xfail
            reason = corpus_xfail(case_id)
            entry = Entry(reason) if reason else None
        return entry

    def crashes(self, engine: str, case_id: str) -> bool:
        e = self.engines.get(engine, {}).get(case_id)
        return e is not None and e.crashes

    def to_json(self) -> dict:
        by_text = {v: k for k, v in self.reasons.items()}
        engines = {}
        for name in sorted(self.engines):
            table = {}
            for key in sorted(self.engines[name]):
                e = self.engines[name][key]
                reason = by_text.get(e.reason, e.reason)
                table[key] = {"reason": reason, "fingerprint": e.fingerprint.to_dict()} \
                    if e.fingerprint is not None else reason
            engines[name] = table
        return {"format": FORMAT, "recorded_on": {"torch": self.torch},
                "reasons": dict(sorted(self.reasons.items())), "engines": engines}

    def save(self, path) -> None:
        """Write atomically (temp file, then rename), one entry per line."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(_dump(self.to_json()))
        tmp.replace(path)


def _dump(data: dict) -> str:
    """JSON with one entry per line, so that a diff of two records reads entry by entry."""
    lines = ["{", f' "format": {data["format"]},', f' "recorded_on": {json.dumps(data["recorded_on"])},',
             ' "reasons": {']
    rs = list(data["reasons"].items())
    lines += [f"  {json.dumps(k)}: {json.dumps(v)}" + ("," if i < len(rs) - 1 else "")
              for i, (k, v) in enumerate(rs)]
    lines += [" },", ' "engines": {']
    es = list(data["engines"].items())
    for j, (name, table) in enumerate(es):
        lines.append(f"  {json.dumps(name)}: {{")
        items = list(table.items())
        lines += [f"   {json.dumps(k)}: {json.dumps(v)}" + ("," if i < len(items) - 1 else "")
                  for i, (k, v) in enumerate(items)]
        lines.append("  }" + ("," if j < len(es) - 1 else ""))
    lines += [" }", "}"]
    return "\n".join(lines) + "\n"


def from_json(data: dict, source: str = "") -> Record:
    """A record from its JSON (format 1, reasons only, or format 2)."""
    try:
        reasons = dict(data.get("reasons", {}))
        engines: dict[str, dict[str, Entry]] = {}
        for name, table in data["engines"].items():
            out = {}
            for key, value in table.items():
                if isinstance(value, str):
                    out[key] = Entry(reasons.get(value, value))
                else:
                    fp = value.get("fingerprint")
                    r = value.get("reason", "")
                    out[key] = Entry(reasons.get(r, r), FailurePrint.from_dict(fp) if fp else None)
            engines[name] = out
        return Record(str(data["recorded_on"]["torch"]), engines, source, reasons)
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise RecordError(f"{source or 'record'}: not a known-failures record ({type(e).__name__}: {e}); "
                          f"expected {{'recorded_on': {{'torch': ...}}, 'engines': {{...}}}}") from None


def load(path=None) -> Record:
    """The record in ``path`` (default: the built-in record of the installed torch release,
    ``known_failures.record_path()``)."""
    path = Path(path) if path is not None else record_path()
    try:
        text = path.read_text()
    except OSError as e:
        raise RecordError(f"cannot read the record {path}: {e.strerror or e}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise RecordError(f"{path}: not JSON ({e})") from None
    return from_json(data, str(path))


def from_outcomes(outcomes: Iterable, torch_version: str, engines: Iterable[str],
                  previous: Record | None = None, *, keep_unrun: bool = True,
                  kinds: frozenset[str] = frozenset(("cold", "cached", "variation"))) -> Record:
    """The record of this run: every failing outcome, pinned by its fingerprint, with the
    reason ``previous`` gave it, if any; an entry of a recorded crash (never run) is kept. With
    ``keep_unrun`` (regenerating the built-in record) the result is ``previous`` updated: other
    engines' tables are kept, and so is every entry of a case this run did not run (``-k``,
    ``--theme``) or of a stage kind outside ``kinds`` (``--no-variations``); an entry of a stage
    the run no longer reaches is dropped (NOTE [a recorded stage the run no longer reaches]).
    Without it (a baseline) it holds only the engines and cases run."""
    outcomes = list(outcomes)
    engines = set(engines)
    prev = previous.engines if previous is not None else {}
    tables: dict[str, dict[str, Entry]] = {n: dict(t) for n, t in prev.items()
                                           if n not in engines and keep_unrun}
    ran: dict[str, set[str]] = {n: set() for n in engines}
    for n in engines:
        tables[n] = {}
    for o in sorted(outcomes, key=lambda o: o.stage != "cold"):   # cold first: see "cached"
        key = key_of(o.stage, o.case_id)
        ran[o.engine].add(key)
        old = prev.get(o.engine, {}).get(key)
        if o.status is Status.NOT_RUN:
            if old is not None:
                tables[o.engine][key] = old
            continue
        if o.status is not Status.FAIL or o.fingerprint is None:
            continue
        if o.stage == "cached":       # the same failure as the cold run's is the cold entry's
            cold = tables[o.engine].get(o.case_id)
            if cold is not None and cold.fingerprint == o.fingerprint:
                continue
        fallback = prev.get(o.engine, {}).get(o.case_id) if o.stage == "cached" else None
        was = old or fallback
        # a reason written for another way of failing no longer says why: dropped
        reason = was.reason if was and same_failure(was.fingerprint, o.fingerprint) else ""
        if o.fingerprint.check == "crash in process" and not reason.startswith(CRASH):
            reason = f"{CRASH} (found by a run that lost its worker process): {o.problems[0]}"
        # an entry left unpinned on purpose (its message differs between runs) stays unpinned
        pin = None if old is not None and old.fingerprint is None else o.fingerprint
        tables[o.engine][key] = Entry(reason, pin)
    gone = {(e, k) for e, k, _ in unreached(previous, outcomes, kinds)} if previous is not None else set()
    for n in engines if keep_unrun else ():     # entries for stages or cases not run
        for key, e in prev.get(n, {}).items():
            if key not in ran[n] and key not in tables[n] and (n, key) not in gone:
                tables[n][key] = e
    reasons = dict(previous.reasons) if previous is not None else {}
    return Record(torch_version, tables, "", reasons)

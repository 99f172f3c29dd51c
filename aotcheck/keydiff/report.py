"""report: the differential's findings as text and JSON, judged against the census's known gaps.

Every KEY GAP has an id: ``PROGRAM:INPUT`` for a program's input, the field's full name for a
config field. The census lists the gaps known on its torch release (``known_gaps``: id -> the
upstream report or a note); ``judge`` splits the gaps found into NEW and known, and the known
gaps that were run and not found into FIXED.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass
from pathlib import Path

from .differential import Finding
from .run import CensusResult, ProgramResult


def gap_ids(result: CensusResult) -> dict[str, str]:
    """Every KEY GAP found: id -> the component in words."""
    out = {}
    for p in result.programs:
        stem = Path(p.program).stem
        for c in p.comparisons:
            if c.verdict.finding is Finding.KEY_GAP:
                out.setdefault(f"{stem}:{c.input}", c.component)
    for f in result.config:
        if f.verdict.finding is Finding.KEY_GAP:
            out.setdefault(f.field, f.component)
    return out


def ran_ids(result: CensusResult) -> set[str]:
    ids = {f"{Path(p.program).stem}:{c.input}" for p in result.programs for c in p.comparisons}
    return ids | {f.field for f in result.config}


@dataclass(frozen=True)
class Judgement:
    new: tuple[str, ...]
    known: tuple[str, ...]
    fixed: tuple[str, ...]


def judge(result: CensusResult, known: dict[str, str]) -> Judgement:
    found, ran = gap_ids(result), ran_ids(result)
    return Judgement(tuple(sorted(k for k in found if k not in known)),
                     tuple(sorted(k for k in found if k in known)),
                     tuple(sorted(k for k in known if k in ran and k not in found)))


# ---------------------------------------------------------------- text


def format_result(result: CensusResult, known: dict[str, str], *, verbose: bool = False,
                  repros: dict[tuple[str, str, int, int], str] | None = None) -> str:
    lines = [f"aotcheck keydiff: torch {result.torch}"]
    if result.config:
        lines += _config_lines(result.config, known, verbose)
    for p in result.programs:
        lines += _program_lines(p, known, verbose, repros or {})
    j = judge(result, known)
    lines.append(summary(result, j))
    return "\n".join(lines)


def _tag(gid: str, known: dict[str, str]) -> str:
    return f"[known: {known[gid]}]" if gid in known else "[NEW]"


def _config_lines(config, known, verbose) -> list[str]:
    counts = collections.Counter(f.verdict.finding.value for f in config)
    fields = len({f.field for f in config})
    lines = [f"config: {len(config)} values of {fields} fields: "
             + ", ".join(f"{n} {k}" for k, n in counts.most_common())]
    for f in config:
        if f.verdict.finding is Finding.KEY_GAP or (verbose and f.verdict.finding is not Finding.NO_EFFECT):
            tag = _tag(f.field, known) if f.verdict.finding is Finding.KEY_GAP else ""
            lines.append(f"  {f.verdict.finding.value}  {f.component}  {tag}".rstrip())
            lines.append(f"     {f.verdict.reason}")
            if f.verdict.first:
                lines.append(f"     first difference: {f.verdict.first}")
    return lines


def _program_lines(p: ProgramResult, known, verbose, repros) -> list[str]:
    stem = Path(p.program).stem
    up = f" (upstream {p.upstream})" if p.upstream else ""
    lines = [f"{stem}{up}"]
    for c in p.comparisons:
        gap = c.verdict.finding is Finding.KEY_GAP
        if not (gap or verbose):
            continue
        tag = _tag(f"{stem}:{c.input}", known) if gap else ""
        lines.append(f"  {c.verdict.finding.value}  {c.component}  {tag}".rstrip())
        lines.append(f"     {c.verdict.reason}")
        if c.verdict.first:
            lines.append(f"     first difference: {c.verdict.first}")
        for conf in c.confirmations:
            lines.append(f"     {conf.outcome.value} (value {conf.a} wrote, value {conf.b} read): {conf.reason}")
        if (stem, c.input, c.a, c.b) in repros:
            lines.append(f"     reproducer: {repros[(stem, c.input, c.a, c.b)]}")
    counts = collections.Counter(c.verdict.finding.value for c in p.comparisons)
    lines.append("  " + ", ".join(f"{n} {k}" for k, n in counts.most_common()))
    return lines


def summary(result: CensusResult, j: Judgement) -> str:
    gaps = gap_ids(result)
    stale = {f"{Path(p.program).stem}:{c.input}" for p in result.programs for c in p.comparisons if c.stale}
    lost = sum(1 for f in result.config if f.verdict.finding is Finding.LOST_HIT) + \
        sum(1 for p in result.programs for c in p.comparisons if c.verdict.finding is Finding.LOST_HIT)
    text = (f"summary: {len(gaps)} key gaps ({len(stale)} confirmed as stale hits), {lost} lost hits; "
            f"NEW {len(j.new)}, known {len(j.known)}, FIXED {len(j.fixed)}")
    if j.new:
        text += "\nNEW: " + ", ".join(j.new)
    if j.fixed:
        text += "\nFIXED (known, not found): " + ", ".join(j.fixed)
    if result.seconds:
        text += f"\nwall time: {result.seconds:.1f} s"
    return text

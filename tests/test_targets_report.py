"""The side-by-side report (aotcheck/targets/report.py): its statuses and run modes are Enums
whose values the markdown prints, so the table reads as it did when they were strings."""
from __future__ import annotations

from aotcheck.targets.report import EngineResults, Result, RunMode, Status, _status, to_markdown


def test_status_follows_the_outcome_and_the_record():
    assert [_status(True, None), _status(True, "why"), _status(False, None), _status(False, "why")] \
        == [Status.PASS, Status.XPASS, Status.FAIL, Status.XFAIL]


def test_markdown_prints_the_values():
    runs = [EngineResults("aotcheck", RunMode.COLD, [
                Result("basics.a", "basics", Status.PASS, [], None, {}),
                Result("basics.b", "basics", Status.XFAIL, ["bad"], "known: bad", {})]),
            EngineResults("aotcheck", RunMode.CACHED, [
                Result("basics.a", "basics", Status.FAIL, ["values differ"], None, {"hits": 1, "misses": 1}),
                Result("basics.b", "basics", Status.XPASS, [], "known: bad", {})])]
    md = to_markdown(runs, ["basics"])
    assert "| theme | aotcheck cold | aotcheck cached |" in md
    assert "| basics | 1/2 (1x) | 0/2 (1f, 1xp) |" in md
    assert "| aotcheck | cached | 1 / 2 | 50.0% | 0 s |" in md
    assert "## aotcheck, cold: 1 not passing" in md
    assert "- `basics.b` **xfail**: known: bad" in md
    assert "- `basics.a` **fail**: values differ" in md
    assert "- `basics.b` **xpass**: unexpectedly passed" in md

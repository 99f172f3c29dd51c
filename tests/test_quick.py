"""The quick set (aotcheck.regress.quick) and ``aotcheck check --quick``: the built-in set names
corpus cases, reaches the share of the full run's lines it records, holds every feature;
``--quick`` runs exactly its cases plus the corpus cases newer than it, and names the ids it
cannot find; the cover never spends more than its budget."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from aotcheck.regress import quick
from aotcheck.regress.quick import Candidate, QuickCase, QuickSet, Totals

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def builtin() -> QuickSet:
    return quick.load()


@pytest.fixture(scope="module")
def corpus():
    from aotcheck.check.corpus import all_cases
    return all_cases()


# ---------------------------------------------------------------- the built-in set


def test_every_chosen_case_is_a_corpus_case(builtin, corpus):
    ids = {c.id for c in corpus}
    assert builtin.cases and len(set(builtin.ids)) == len(builtin.ids)
    assert [i for i in builtin.ids if i not in ids] == []
    assert set(builtin.ids) <= set(builtin.corpus)


def test_the_set_says_where_it_came_from(builtin):
    import torch
    from aotcheck.targets.known_failures import recorded_releases
    # measured on one recorded release (NOTE [a corpus newer than the quick set]: on another
    # torch the set still runs, and the command says it was measured elsewhere)
    assert builtin.torch in recorded_releases() and torch.__version__
    assert builtin.engines == ("torch", "torch-aot-function", "torch-inductor-lite")
    assert builtin.command.startswith("python tools/quick_cover.py")
    assert builtin.full.cases == len(builtin.corpus) and builtin.quick.cases == len(builtin.cases)


def test_the_chosen_cases_fit_the_budget(builtin):
    spent = sum(c.seconds for c in builtin.cases)
    assert spent <= builtin.budget_s
    assert abs(spent - builtin.quick.seconds) < 0.01


def test_what_the_cases_added_is_the_recorded_cover(builtin):
    """The lines, branches and features each case added, put together, are the recorded quick
    totals: no two cases claim the same line, no feature is claimed more than FEATURE_TIMES times,
    and the share of the full run is what the set says it is."""
    from collections import Counter
    picks = [quick.added(c) for c in builtin.cases]
    lines = [e for p in picks for e in p.lines]
    features = Counter(k for p in picks for k in p.features)
    assert len(lines) == len(set(lines)) and max(features.values()) <= quick.FEATURE_TIMES
    got = quick.totals(picks)
    assert (got.lines, got.engine_lines, got.features) == (
        builtin.quick.lines, builtin.quick.engine_lines, builtin.quick.features)
    assert sum(c.arcs_added for c in builtin.cases) == builtin.quick.engine_arcs
    assert all(c.n_lines_added or c.arcs_added or c.features_added for c in builtin.cases)


def test_the_set_holds_every_feature_and_most_lines_and_branches(builtin):
    assert builtin.quick.features == builtin.full.features
    assert builtin.quick.lines / builtin.full.lines >= 0.95
    assert builtin.quick.engine_arcs / builtin.full.engine_arcs >= 0.9


def test_a_chosen_case_still_reaches_the_lines_it_added(builtin, tmp_path):
    """Measured again (tools/quick_cover.py on that one case, under coverage), the cheapest chosen
    case that added lines reaches at least 95% of them: the recorded cover is not stale."""
    pytest.importorskip("coverage")
    sys.path.insert(0, str(ROOT / "tools"))
    import quick_cover
    case = min((c for c in builtin.cases if c.n_lines_added >= 20), key=lambda c: c.seconds)
    measured = tmp_path / "m.json.gz"
    subprocess.run([sys.executable, str(ROOT / "tools" / "quick_cover.py"), "-k", case.id, "--jobs", "1",
                    "--lines-only", "--measure-out", str(measured), "--out", str(tmp_path / "q.json")],
                   check=True, capture_output=True, cwd=ROOT)
    again = {c.id: c for c in quick_cover.candidates(quick_cover.load_measure(measured))}
    claimed = quick.added(case).lines
    reached = again[case.id].lines
    assert len(claimed & reached) >= 0.95 * len(claimed), sorted(claimed - reached)[:10]


# ---------------------------------------------------------------- --quick selects


def _args(**kw):
    base = dict(theme=None, pattern="", quick=True)
    return argparse.Namespace(**{**base, **kw})


def test_quick_selects_exactly_the_set_and_the_newer_cases(builtin, corpus, capsys):
    from aotcheck.cli.check import selected_cases
    got = [c.id for c in selected_cases(_args())]
    newer = [c.id for c in corpus if c.id not in set(builtin.corpus)]
    assert sorted(got) == sorted(set(builtin.ids) | set(newer))
    out = capsys.readouterr().out
    assert f"quick: {len(got)} of {len(corpus)} corpus cases" in out
    assert "aotcheck/regress/quick_set.json" in out and f"torch {builtin.torch}" in out


def test_quick_narrows_with_k(builtin, capsys):
    from aotcheck.cli.check import selected_cases
    one = builtin.ids[0]
    assert [c.id for c in selected_cases(_args(pattern=one))] == [one]


def _toy(ids, corpus_ids) -> QuickSet:
    return QuickSet("2.13.0", ("torch",), 10.0, (), tuple(corpus_ids), tuple(QuickCase(i, 1.0) for i in ids),
                    Totals(100, 100, 2, 50.0, len(corpus_ids)), Totals(90, 90, 2, 2.0, len(ids)),
                    source="toy.json")


def test_unknown_ids_are_skipped_and_named_newer_cases_run(corpus):
    a, b, c, new = corpus[:4]
    qs = _toy([a.id, "themes.renamed_case"], [a.id, b.id, c.id, "themes.renamed_case"])
    s = quick.select([a, b, c, new], qs, "2.13.0")
    assert [x.id for x in s.cases] == [a.id, new.id]
    assert (s.chosen, s.newer, s.missing) == (1, (new.id,), ("themes.renamed_case",))
    assert s.reason.startswith("2 of 4 corpus cases: 1 from the quick set toy.json")
    assert "1 newer than the set (never measured: run as well)" in s.reason
    assert "no longer in the corpus, skipped: themes.renamed_case" in s.reason
    assert s.reason.endswith("recompute with tools/quick_cover.py")


def test_another_torch_is_named(corpus):
    qs = _toy([corpus[0].id], [c.id for c in corpus[:3]])
    s = quick.select(corpus[:3], qs, "2.14.0.dev20270101")
    assert [x.id for x in s.cases] == [corpus[0].id]
    assert "this is torch 2.14.0.dev20270101: the lines may have moved" in s.reason
    assert "recompute" not in quick.select(corpus[:3], qs, "2.13.0+cpu").reason


def test_a_broken_set_file_is_named(tmp_path):
    bad = tmp_path / "q.json"
    bad.write_text(json.dumps({"schema": 99}))
    with pytest.raises(quick.QuickSetError, match="schema 99"):
        quick.load(bad)


# ---------------------------------------------------------------- the cover and the records


_line = st.tuples(st.sampled_from(["torch", "torch-aot-function"]), st.sampled_from(["a.py", "b.py"]),
                  st.integers(1, 40))
_feature = st.sampled_from(["torch:dtype:miss", "torch:autocast:miss", "torch:input[mutates_data]"])
_cand = st.builds(Candidate, st.text("abcdef", min_size=1, max_size=4), st.floats(0.0, 5.0),
                  st.frozensets(_line, max_size=30), st.frozensets(_feature),
                  st.frozensets(st.tuples(st.just("torch"), st.just("a.py"), st.integers(-5, 40),
                                          st.integers(-5, 40)), max_size=10))


@given(st.lists(_cand, max_size=8, unique_by=lambda c: c.id), st.floats(0.0, 20.0), st.integers(1, 3))
def test_the_cover_spends_at_most_its_budget_and_adds_what_is_new(cands, budget, times):
    from collections import Counter
    picks = quick.cover(cands, budget, times)
    assert sum(p.seconds for p in picks) <= budget
    seen: set = set()
    held: Counter = Counter()
    for p in picks:
        orig = next(c for c in cands if c.id == p.id)
        assert p.lines <= orig.lines and p.arcs <= orig.arcs and p.features <= orig.features
        assert p.lines or p.arcs or p.features
        assert not (p.lines | p.arcs) & seen and all(held[f] < times for f in p.features)
        seen |= p.lines | p.arcs
        held.update(p.features)
    if budget >= sum(c.seconds for c in cands):        # room for all: everything is covered
        assert seen == set().union(*(c.lines | c.arcs for c in cands)) if cands else not seen
        every = Counter(f for c in cands for f in c.features)
        assert all(held[f] == min(n, times) for f, n in every.items())


def test_a_feature_outweighs_lines():
    many = Candidate("many", 1.0, frozenset(("torch", "f.py", i) for i in range(500)))
    feature = Candidate("feature", 1.0, frozenset(), frozenset({"torch:autocast:miss"}))
    assert [p.id for p in quick.cover([many, feature], 1.0)] == ["feature"]


@given(st.frozensets(st.integers(1, 3000)))
def test_line_ranges_round_trip(lines):
    assert quick.expand_ranges(quick.ranges(lines)) == sorted(lines)


@given(st.lists(_cand, min_size=1, max_size=4, unique_by=lambda c: c.id))
def test_a_quick_set_round_trips_through_json(cands):
    picks = quick.cover(cands, 100.0)
    qs = QuickSet("2.13.0", ("torch",), 100.0, ("f.py",), tuple(c.id for c in cands),
                  tuple(quick.quick_case(p) for p in picks), quick.totals(cands), quick.totals(picks), "cmd")
    again = QuickSet.from_json(json.loads(json.dumps(qs.to_json())))
    assert again == qs
    assert [quick.added(c).lines for c in again.cases] == [p.lines for p in picks]

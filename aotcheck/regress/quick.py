"""The quick set: the few corpus cases that exercise most of what the full corpus exercises in
torch's AOT autograd, chosen by measurement, for ``aotcheck check --engine all-torch --quick``.

    quick_set.json          (beside this module; written by ``tools/quick_cover.py``)
        -> load()           a :class:`QuickSet`: the chosen cases, each with its measured cost
                            and what it added to the cover, and where the set came from
    select(cases, qs)       the corpus cases to run -> a :class:`Selection`, with the reason

# NOTE [how the quick set is chosen]
``tools/quick_cover.py`` runs every corpus case through the torch engines (cold, cached and its
key variations, exactly as ``aotcheck check --engine all-torch``) once under ``coverage`` and once
without, and records per case and engine what it exercises:
- *lines* and *branches* (coverage's arcs) of torch's AOT autograd (``torch/_functorch/
  _aot_autograd/``, ``aot_autograd.py``, ``partitioners.py``; AOTAutogradCache is
  ``_aot_autograd/autograd_cache.py``) and of the FX graph cache's key code in
  ``torch/_inductor/codecache.py``;
- *features*: what lines do not show. Each key variation's kind with the cache's answer
  (``torch:requires_grad:miss``: a cache-key mutant turns exactly that miss into a hit; grad mode
  counts once per direction, NOTE [the stale direction] in ``targets/variations.py``), and each
  fact of AOT autograd's own analysis of the function (``torch:input[mutates_data,requires_grad]``,
  ``torch:output[alias_of_input,Tensor]``, ``torch:function[aliased_outputs,mutated_inputs]``:
  ``ViewAndMutationMeta``, the vocabulary of ``schemas.py``);
- its CPU seconds, without coverage.
Lines, branches and features are counted per engine: the same line reached through
``aot_function`` and through Dynamo runs on different arguments. :func:`cover` is a greedy
weighted set cover: it takes the case with the most new elements per second until the budget is
spent. A feature weighs ``FEATURE_WEIGHT`` lines, so features are covered first, each by
``FEATURE_TIMES`` cases where the corpus has that many (NOTE [two cases per feature]); lines and
branches count once. No case is chosen by hand.

# NOTE [two cases per feature]
Lines saturate: ~70 cases reach 99% of the lines the whole corpus reaches, and most mutants of
AOT autograd sit on lines every case runs (a condition, an offset, an index), so a line-only
cover caught 17 of the 25 mutants the full run catches (docs/mutants.md). A feature is closer to
what a mutant needs (a keyed miss, an output aliasing an input that needs no grad), but one case
holding it may still not show the bug: of the 20 cases whose ``requires_grad`` variation missed
on the torch engine, 7 show a key without ``requires_grad`` (the others' outputs do not depend
on that flag). Two cases per feature halve that risk for ~2 CPU s more.

# NOTE [a corpus newer than the quick set]
The set names case ids; the corpus moves on. A corpus case that did not exist when the set was
computed (its id is not in the set's ``corpus`` list) was never measured, so it cannot have been
left out on purpose: ``select`` runs it too and says how many. A chosen id no longer in the
corpus (renamed or removed) is skipped and named. Both say to run ``tools/quick_cover.py``
again, and so does a torch other than the one the lines were measured on.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

SCHEMA = 1
BUILTIN = Path(__file__).with_name("quick_set.json")
FEATURE_WEIGHT = 100_000   # a feature outweighs any case's lines: features first
FEATURE_TIMES = 2          # NOTE [two cases per feature]


class QuickSetError(ValueError):
    """A quick-set file that cannot be read as one (names the file and the problem)."""


@dataclass(frozen=True)
class QuickCase:
    """One chosen case: its measured CPU seconds (every engine and stage), the elements it added
    to the cover when it was chosen: features (``engine:kind:miss``, ``engine:input[...]``), lines
    (engine -> file under torch/ -> line ranges, ``"12-30,45"``) and how many branches (arcs)."""
    id: str
    seconds: float
    features_added: tuple[str, ...] = ()
    lines_added: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    arcs_added: int = 0

    @property
    def n_lines_added(self) -> int:
        return sum(len(expand_ranges(r)) for files in self.lines_added.values() for r in files.values())

    def to_json(self) -> dict:
        return {"id": self.id, "seconds": self.seconds, "features_added": list(self.features_added),
                "arcs_added": self.arcs_added, "lines_added": {e: dict(f) for e, f in self.lines_added.items()}}

    @staticmethod
    def from_json(d: dict) -> "QuickCase":
        return QuickCase(d["id"], float(d["seconds"]), tuple(d.get("features_added", ())),
                         {e: dict(f) for e, f in d.get("lines_added", {}).items()}, int(d.get("arcs_added", 0)))


@dataclass(frozen=True)
class Totals:
    """What a set of cases covers: distinct lines (any engine), lines per engine summed,
    features per engine, the CPU seconds they cost, branches (arcs) per
    engine summed."""
    lines: int
    engine_lines: int
    features: int
    seconds: float
    cases: int
    engine_arcs: int = 0

    def to_json(self) -> dict:
        return {"lines": self.lines, "engine_lines": self.engine_lines, "engine_arcs": self.engine_arcs,
                "features": self.features, "seconds": self.seconds, "cases": self.cases}

    @staticmethod
    def from_json(d: dict) -> "Totals":
        return Totals(int(d["lines"]), int(d["engine_lines"]), int(d["features"]), float(d["seconds"]),
                      int(d["cases"]), int(d.get("engine_arcs", 0)))


@dataclass(frozen=True)
class QuickSet:
    torch: str                        # the torch release the lines were measured on
    engines: tuple[str, ...]
    budget_s: float                   # CPU seconds of case cost the cover could spend
    files: tuple[str, ...]            # what was measured, relative to the torch package
    corpus: tuple[str, ...]           # every corpus case id when the set was computed
    cases: tuple[QuickCase, ...]      # in the order the cover chose them
    full: Totals
    quick: Totals
    command: str = ""                 # how it was computed
    source: str = ""                  # the file, for messages

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.cases)

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "torch": self.torch, "engines": list(self.engines),
                "budget_s": self.budget_s, "command": self.command, "files": list(self.files),
                "full": self.full.to_json(), "quick": self.quick.to_json(),
                "cases": [c.to_json() for c in self.cases], "corpus": list(self.corpus)}

    @staticmethod
    def from_json(d: dict, source: str = "") -> "QuickSet":
        if d.get("schema") != SCHEMA:
            raise QuickSetError(f"{source}: schema {d.get('schema')!r}, expected {SCHEMA}")
        return QuickSet(d["torch"], tuple(d["engines"]), float(d["budget_s"]), tuple(d["files"]),
                        tuple(d["corpus"]), tuple(QuickCase.from_json(c) for c in d["cases"]),
                        Totals.from_json(d["full"]), Totals.from_json(d["quick"]),
                        d.get("command", ""), source)


def load(path: str | Path | None = None) -> QuickSet:
    """The quick set in ``path`` (default: the built-in ``quick_set.json``)."""
    p = Path(path) if path is not None else BUILTIN
    try:
        return QuickSet.from_json(json.loads(p.read_text()), _short_path(p))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise QuickSetError(f"quick set {p}: {type(e).__name__}: {e}") from e


def save(qs: QuickSet, path: str | Path) -> None:
    """Written to a temporary file, then renamed over ``path``."""
    p = Path(path)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(qs.to_json(), indent=1) + "\n")
    tmp.replace(p)


def _short_path(p: Path) -> str:
    root = Path(__file__).resolve().parent.parent.parent
    try:
        return str(p.resolve().relative_to(root))
    except ValueError:
        return str(p)


# ---------------------------------------------------------------- choosing the cases to run


@dataclass(frozen=True)
class Selection:
    """The cases ``--quick`` runs and why: the chosen ones, plus the corpus cases newer than
    the set (NOTE [a corpus newer than the quick set]); the chosen ids the corpus lacks."""
    cases: tuple                      # corpus Case records, in corpus order
    corpus: int                       # how many corpus cases there are
    newer: tuple[str, ...]            # ids not in the set's corpus: run, never measured
    missing: tuple[str, ...]          # chosen ids not in the corpus: skipped
    quick_set: QuickSet
    torch: str = ""                   # the release this runs on

    @property
    def chosen(self) -> int:
        return len(self.cases) - len(self.newer)

    @property
    def reason(self) -> str:
        """How many cases run, where the set came from, and what it could not hold."""
        qs = self.quick_set
        pct = 100 * qs.quick.lines / qs.full.lines if qs.full.lines else 0.0
        text = (f"{len(self.cases)} of {self.corpus} corpus cases: {self.chosen} from the quick set "
                f"{qs.source} ({len(qs.cases)} cases, {pct:.0f}% of the full run's lines, measured on "
                f"torch {qs.torch})")
        if self.newer:
            text += f", {len(self.newer)} newer than the set (never measured: run as well)"
        notes = []
        if self.missing:
            shown = ", ".join(self.missing[:5]) + (", ..." if len(self.missing) > 5 else "")
            notes.append(f"{len(self.missing)} chosen case{'s' if len(self.missing) != 1 else ''} no "
                         f"longer in the corpus, skipped: {shown}")
        if self.torch and self.torch != qs.torch:
            notes.append(f"this is torch {self.torch}: the lines may have moved")
        if notes or self.newer:
            notes.append("recompute with tools/quick_cover.py")
        return "; ".join([text, *notes])


def select(corpus: Sequence, qs: QuickSet, torch_version: str | None = None) -> Selection:
    """The cases of ``corpus`` (every corpus case) that the quick set runs, and why.

        >>> from types import SimpleNamespace as C
        >>> qs = QuickSet("2.13.0", ("torch",), 30.0, (), ("a", "b", "c", "gone"), (QuickCase("a", 1.0),
        ...     QuickCase("gone", 1.0)), Totals(10, 10, 1, 9.0, 4), Totals(8, 8, 1, 2.0, 2), source="q.json")
        >>> s = select([C(id="a"), C(id="b"), C(id="c"), C(id="new")], qs, "2.13.0+cpu")
        >>> [c.id for c in s.cases], s.newer, s.missing
        (['a', 'new'], ('new',), ('gone',))
        >>> print(s.reason)
        2 of 4 corpus cases: 1 from the quick set q.json (2 cases, 80% of the full run's lines, measured on torch 2.13.0), 1 newer than the set (never measured: run as well); 1 chosen case no longer in the corpus, skipped: gone; recompute with tools/quick_cover.py
    """
    ids, known = set(qs.ids), set(qs.corpus)
    present = {c.id for c in corpus}
    return Selection(tuple(c for c in corpus if c.id in ids or c.id not in known), len(corpus),
                     tuple(c.id for c in corpus if c.id not in known),
                     tuple(i for i in qs.ids if i not in present), qs,
                     (torch_version or "").split("+")[0])


# ---------------------------------------------------------------- the cover


@dataclass(frozen=True)
class Candidate:
    """A corpus case as the cover sees it: its cost, and the elements it reaches
    (NOTE [how the quick set is chosen]): lines as (engine, file, line), branches as
    (engine, file, from line, to line), features as strings that start with the engine."""
    id: str
    seconds: float
    lines: frozenset = frozenset()
    features: frozenset = frozenset()
    arcs: frozenset = frozenset()


MIN_SECONDS = 0.05      # a case never costs less than this (a measured 0.0 would divide by zero)


def cover(candidates: Sequence[Candidate], budget_s: float, feature_times: int = FEATURE_TIMES
          ) -> tuple[Candidate, ...]:
    """Greedy weighted set cover under a budget: repeatedly the case with the most new elements
    per second that still fits, until none adds anything or fits. A line or a branch counts once;
    a feature counts until ``feature_times`` chosen cases hold it (:func:`_feature_gain`). Each
    result holds only what that case *added*; ties go to the earlier candidate.

        >>> cs = [Candidate("big", 4.0, frozenset({("t", "f", i) for i in range(8)})),
        ...       Candidate("small", 1.0, frozenset({("t", "f", 0), ("t", "f", 9), ("t", "f", 10)})),
        ...       Candidate("kind", 2.0, frozenset(), frozenset({"torch:autocast:miss"}))]
        >>> [(p.id, len(p.lines), sorted(p.features)) for p in cover(cs, 7.0, feature_times=1)]
        [('kind', 0, ['torch:autocast:miss']), ('small', 3, []), ('big', 7, [])]
        >>> [p.id for p in cover(cs, 3.5, feature_times=1)]
        ['kind', 'small']
        >>> twice = cs + [Candidate("kind2", 3.0, frozenset(), frozenset({"torch:autocast:miss"}))]
        >>> [p.id for p in cover(twice, 10.0, feature_times=2)]
        ['kind', 'kind2', 'small', 'big']
    """
    index: dict = {}
    bits = [_bits(c.lines | c.arcs, index) for c in candidates]
    times: dict[str, int] = {}
    covered, spent, picks, left = 0, 0.0, [], list(range(len(candidates)))
    while True:
        best, best_score = None, 0.0
        for i in left:
            c = candidates[i]
            if spent + c.seconds > budget_s:
                continue
            gain = sum(_feature_gain(times.get(k, 0), feature_times) for k in c.features)
            gain += (bits[i] & ~covered).bit_count()
            score = gain / max(c.seconds, MIN_SECONDS)
            if gain and score > best_score:
                best, best_score = i, score
        if best is None:
            return tuple(picks)
        c = candidates[best]
        features = frozenset(k for k in c.features if times.get(k, 0) < feature_times)
        new = bits[best] & ~covered
        picks.append(Candidate(c.id, c.seconds, _unbits(new, index, c.lines), features,
                               _unbits(new, index, c.arcs)))
        for k in features:
            times[k] = times.get(k, 0) + 1
        covered |= bits[best]
        spent += c.seconds
        left.remove(best)


def _feature_gain(held: int, feature_times: int) -> int:
    """A feature no chosen case holds weighs ``FEATURE_WEIGHT``; one held, but by fewer than
    ``feature_times`` cases, a hundredth of that (every feature once before any twice); else 0."""
    if held >= feature_times:
        return 0
    return FEATURE_WEIGHT if held == 0 else FEATURE_WEIGHT // 100


def _bits(elements, index: dict) -> int:
    n = 0
    for e in elements:
        n |= 1 << index.setdefault(e, len(index))
    return n


def _unbits(n: int, index: dict, elements) -> frozenset:
    return frozenset(e for e in elements if n >> index[e] & 1)


def totals(candidates: Sequence[Candidate]) -> Totals:
    """What these cases reach together (lines: distinct (file, line) whatever the engine)."""
    lines = set().union(*(c.lines for c in candidates)) if candidates else set()
    features = set().union(*(c.features for c in candidates)) if candidates else set()
    arcs = set().union(*(c.arcs for c in candidates)) if candidates else set()
    return Totals(len({(f, n) for _, f, n in lines}), len(lines), len(features),
                  round(sum(c.seconds for c in candidates), 2), len(candidates), len(arcs))


def quick_case(pick: Candidate) -> QuickCase:
    """A chosen case as stored: the lines it added as ranges per engine and file."""
    per: dict[str, dict[str, list[int]]] = {}
    for engine, f, n in pick.lines:
        per.setdefault(engine, {}).setdefault(f, []).append(n)
    return QuickCase(pick.id, round(pick.seconds, 3), tuple(sorted(pick.features)),
                     {e: {f: ranges(ns) for f, ns in sorted(fs.items())} for e, fs in sorted(per.items())},
                     len(pick.arcs))


def added(qc: QuickCase) -> Candidate:
    """The inverse of :func:`quick_case`: what a stored case added, as a Candidate (the branches
    are stored as a count only, so they come back empty)."""
    lines = frozenset((e, f, n) for e, fs in qc.lines_added.items() for f, r in fs.items()
                      for n in expand_ranges(r))
    return Candidate(qc.id, qc.seconds, lines, frozenset(qc.features_added))


def ranges(numbers) -> str:
    """``[1, 2, 3, 7]`` -> ``"1-3,7"``."""
    out, ns = [], sorted(set(numbers))
    i = 0
    while i < len(ns):
        j = i
        while j + 1 < len(ns) and ns[j + 1] == ns[j] + 1:
            j += 1
        out.append(str(ns[i]) if i == j else f"{ns[i]}-{ns[j]}")
        i = j + 1
    return ",".join(out)


def expand_ranges(text: str) -> list[int]:
    """``"1-3,7"`` -> ``[1, 2, 3, 7]``."""
    out: list[int] = []
    for part in filter(None, text.split(",")):
        a, _, b = part.partition("-")
        out += range(int(a), int(b or a) + 1)
    return out

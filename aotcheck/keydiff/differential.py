"""differential: two observations of one program (under A and under B) compared.

Each cache is judged on what it serves on a hit:

    AOTAutogradCache   keyed by its key; serves everything produced (AOTAutograd's graphs and
                       runtime metadata, and Inductor's output code through the FX graph cache)
    FX graph cache     keyed per graph; serves that graph's output code

and the verdict, with the sentence that says why (``Verdict.reason``)::

    KEY GAP    a cache's key is equal under A and B while what it serves differs: B would be
               served A's entry (confirmed as a stale hit by confirm.py)
    LOST HIT   the keys differ while what they serve is equal: a miss that needed not be
    keyed      both differ: the key carried the change
    no effect  both equal
    no key     a side has no key to compare (the cache bypassed it; ``Observation.bypass``)
    failed     a side did not compile (``Observation.error``)

Each graph Dynamo made is judged under its own key (a graph after a graph break may be
specialized on values computed before it). For example (``programs/kd_checkpoint_allow_in_graph.py``,
SCALE [2.0] -> [3.0]): the forward graph under A multiplies by 2.0 and under B by 3.0, and both
have key ``ar4jl...``: a KEY GAP in AOTAutogradCache, first difference
``aot_forward_graph: 'mul: ... aten.mul.Tensor(primals_1, 2.0) ...' vs '... 3.0) ...'``.
"""
from __future__ import annotations

import difflib
import enum
from dataclasses import dataclass

from .observe import Graph, Observation
from ..engine import serial

INDUCTOR_CODE = "inductor_output_code"


class Finding(enum.Enum):
    KEY_GAP = "KEY GAP"
    LOST_HIT = "LOST HIT"
    KEYED = "keyed"
    NO_EFFECT = "no effect"
    NO_KEY = "no key"
    FAILED = "failed"


@dataclass(frozen=True)
class Verdict:
    """One comparison's verdict. ``cache``: the cache it is about (``"AOTAutogradCache"``, ``"FX
    graph cache"``, or ``""``); ``differs``: the produced artifacts that differ; ``first``: the
    first differing line of the first of them; ``key_components``: the AOTAutogradCache key's
    components that differ (when the observations carry them)."""
    finding: Finding
    reason: str
    cache: str = ""
    differs: tuple[str, ...] = ()
    first: str = ""
    key_components: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return serial.to_data(self)

    @staticmethod
    def from_json(d: dict) -> "Verdict":
        return serial.from_data(Verdict, d)


def compare(a: Observation, b: Observation) -> Verdict:
    """The verdict on A against B (module docstring): graph by graph, in compile order (a graph
    break makes two; a graph after a break may be specialized on values computed before it,
    so each graph is judged under its own key)."""
    if a.error or b.error:
        side, err = ("A", a.error) if a.error else ("B", b.error)
        return Verdict(Finding.FAILED, f"the compile under {side} failed: {err}")
    verdicts = [_compare_graph(n, ga, gb) for n, (ga, gb) in enumerate(zip(a.graphs, b.graphs))]
    if len(a.graphs) != len(b.graphs):
        verdicts.append(Verdict(Finding.KEYED, f"Dynamo made {len(a.graphs)} graph(s) under A and "
                                f"{len(b.graphs)} under B", "", ("graphs",), f"graphs: {len(a.graphs)} vs "
                                f"{len(b.graphs)}"))
    if not verdicts:
        return Verdict(Finding.NO_KEY, "no graph was compiled under A or B")
    for finding in (Finding.KEY_GAP, Finding.KEYED, Finding.LOST_HIT, Finding.NO_KEY):
        found = [v for v in verdicts if v.finding is finding]
        if found:
            components = key_components(a, b) if finding in (Finding.KEYED, Finding.LOST_HIT) else ()
            v = found[0]
            return Verdict(v.finding, v.reason, v.cache, v.differs, v.first, components)
    return Verdict(Finding.NO_EFFECT, "keys and everything produced are equal under A and B")


def _compare_graph(n: int, a: Graph, b: Graph) -> Verdict:
    where = f"graph {n} ({a.compile_id})"
    differs, first = produced_difference(a, b)
    if not a.aot_key or not b.aot_key:
        why = "; ".join(a.bypass + b.bypass) or f"no {a.cache} key was computed"
        return Verdict(Finding.NO_KEY, f"{where}: no key to compare ({why})", a.cache, differs, first)
    if a.aot_key == b.aot_key:
        if differs:
            return Verdict(Finding.KEY_GAP, f"{where}: {a.cache} key {a.aot_key[:12]}... is equal under A "
                           f"and B while {', '.join(differs)} differ", a.cache, differs, first)
        return _fx_gap(where, a, b) or Verdict(Finding.NO_EFFECT, f"{where}: key and what it serves are equal")
    gap = _fx_gap(where, a, b)
    if gap:
        return gap
    if differs:
        return Verdict(Finding.KEYED, f"{where}: the key differs, and so does {', '.join(differs)}",
                       a.cache, differs, first)
    return Verdict(Finding.LOST_HIT, f"{where}: the {a.cache} key differs while everything produced is "
                   f"equal", a.cache)


def produced_difference(a: Graph, b: Graph) -> tuple[tuple[str, ...], str]:
    """The artifact names whose texts differ, in A's order, and the first differing line."""
    ga, gb = _grouped(a), _grouped(b)
    names = [n for n in dict.fromkeys(list(ga) + list(gb)) if ga.get(n) != gb.get(n)]
    if not names:
        return (), ""
    n = names[0]
    return tuple(names), f"{n}: {first_difference(chr(10).join(ga.get(n, [])), chr(10).join(gb.get(n, [])))}"


def _grouped(g: Graph) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, text in g.produced:
        out.setdefault(name, []).append(text)
    return out


def first_difference(x: str, y: str) -> str:
    """``'<line under A>' vs '<line under B>'``, the first lines that differ."""
    xl, yl = x.splitlines(), y.splitlines()
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=xl, b=yl, autojunk=False).get_opcodes():
        if op != "equal":
            left = xl[i1].strip() if i1 < i2 else "(nothing)"
            right = yl[j1].strip() if j1 < j2 else "(nothing)"
            return f"{_cut(left)!r} vs {_cut(right)!r}"
    return "(equal)"


def _cut(s: str, n: int = 160) -> str:
    return s if len(s) <= n else s[:n - 3] + "..."


def key_components(a: Observation, b: Observation) -> tuple[str, ...]:
    da, db = dict(a.key_details), dict(b.key_details)
    return tuple(k for k in sorted(set(da) | set(db)) if da.get(k) != db.get(k))


def _fx_gap(where: str, a: Graph, b: Graph) -> Verdict | None:
    """An FX graph cache key equal under A and B whose output code differs (keys and codes pair
    up in the order written: one code per compiled forward or backward)."""
    ca = [t for n, t in a.produced if n == INDUCTOR_CODE]
    cb = [t for n, t in b.produced if n == INDUCTOR_CODE]
    for ka, kb, ta, tb in zip(a.fx_keys, b.fx_keys, ca, cb):
        if ka == kb and ta != tb:
            return Verdict(Finding.KEY_GAP, f"{where}: FX graph cache key {ka[:12]}... is equal under A and B "
                           f"while its output code differs", "FX graph cache", (INDUCTOR_CODE,),
                           f"{INDUCTOR_CODE}: {first_difference(ta, tb)}")
    return None

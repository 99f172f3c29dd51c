"""triage: what exactly goes wrong in one reproducer, cold and from the cache.

``triage(path)`` loads a reproducer (a file that defines ``f`` and ``make_inputs``, such as the
ones ``aotcheck fuzz`` writes), and runs it eager, compiled cold (into an empty cache
directory) and compiled again from that cache, each compared with eager by the oracle. It
reports the first divergence of each run (which output, argument mutation or gradient differs,
and by how much: the oracle's message carries the mismatch counts and greatest differences),
its check kind (``fingerprint.check_kind``), and whether it is a cache-only divergence.

For aotcheck's own engine it also runs the cold and the cached forward graphs node by node on
the same inputs (``torch.fx.Interpreter``) and names the first node whose value differs.

``explain_miss(path, cache_dir)`` says why aotcheck's lookup for the reproducer's call missed:
the key components that differ from the nearest entry in the cache directory.

``write_report(triage, out)`` writes an upstream-ready markdown file: versions, the minimal
reproducer, eager against compiled, and the smallest program that still fails (a fuzz
reproducer carries its program as JSON; it is reduced again here).
"""
from __future__ import annotations

import difflib
import json
import platform
import re
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..check.divergence import Check, Divergence, Role
from ..check.oracle import check
from .fingerprint import check_kind


@dataclass
class Triage:
    path: str
    engine: str
    cold: list[Divergence]                # the oracle's divergences, cold
    cached: list[Divergence] | None       # from the cache (None: the engine has no cache)
    hit: bool = False                     # the cached run hit every graph
    node: str = ""                        # aotcheck: first forward node differing cold/cached
    program_json: str = ""
    source: str = ""
    smallest: str = ""                    # the smallest failing program's source, if reduced
    notes: list[str] = field(default_factory=list)

    @property
    def first(self) -> tuple[str, Divergence | None]:
        """(run, divergence) of the first divergence: cold before cached."""
        if self.cold:
            return "cold", self.cold[0]
        if self.cached:
            return "cached", self.cached[0]
        return "", None

    @property
    def cache_only(self) -> bool:
        return not self.cold and bool(self.cached)

    @property
    def kind(self) -> str:
        return check_kind([self.first[1]]) if self.first[1] is not None else ""

    def __str__(self) -> str:
        def show(run):
            if run is None:
                return "not run (the engine has no cache)"
            return "matches eager" if not run else f"{len(run)} divergence(s): {run[0]}"
        lines = [f"triage {self.path} (engine {self.engine})",
                 "eager:           ran (the reference)",
                 f"compiled cold:   {show(self.cold)}",
                 f"compiled cached: {show(self.cached)}" + ("" if self.cached is None or not self.hit
                                                            else " (hit)")]
        run, first = self.first
        if first is not None:
            lines.append(f"first divergence ({run}): {first}")
            lines.append(f"check: {self.kind}" + ("; CACHE-ONLY: the cold run matches eager"
                                                   if self.cache_only else ""))
        else:
            lines.append("no divergence: the engine matches eager, cold and cached")
        if self.node:
            lines.append(f"first forward-graph node that differs between cold and cached: {self.node}")
        lines += self.notes
        return "\n".join(lines)


def load_reproducer(path: str | Path) -> dict:
    """The reproducer's namespace (run as a module, not as ``__main__``) and its header."""
    text = Path(path).read_text()
    ns: dict = {"__name__": "aotcheck_triage", "__file__": str(path)}
    exec(compile(text, str(path), "exec"), ns)
    if "f" not in ns or "make_inputs" not in ns:
        from ..errors import UnsupportedInputError
        raise UnsupportedInputError(f"{path}: a reproducer defines f(...) and make_inputs(); "
                                    f"this file defines neither (or only one)")
    m = re.search(r"^# aotcheck fuzz: engine=(\S+)", text, re.M)
    p = re.search(r"^# program: (\{.*\})$", text, re.M)
    return {"ns": ns, "text": text, "engine": m.group(1) if m else "aotcheck",
            "program": p.group(1) if p else ""}


def triage(path: str | Path, engine: str | None = None, reduce_seconds: float = 0.0) -> Triage:
    from ..targets.engines import get_engine
    rep = load_reproducer(path)
    name = engine or rep["engine"]
    eng = get_engine(name)
    fn, make = rep["ns"]["f"], rep["ns"]["make_inputs"]
    result = Triage(str(path), name, [], None, program_json=rep["program"], source=rep["text"])
    with tempfile.TemporaryDirectory(prefix="aotcheck-triage-") as d:
        cold_fn = eng.compile_cached(fn, d) if eng.supports_cache else eng.compile(fn)
        result.cold = list(check(fn, cold_fn, make).divergences)
        if result.cold:
            result.cold[0] = how_much(fn, cold_fn, make, result.cold[0])
        if eng.supports_cache:
            with eng.measure() as stats:
                cached_fn = eng.compile_cached(fn, d)
                result.cached = list(check(fn, cached_fn, make).divergences)
            if result.cached:
                result.cached[0] = how_much(fn, cached_fn, make, result.cached[0])
            result.hit = bool(stats.hits) and not stats.misses and not stats.bypasses
            if not result.hit:
                result.notes.append(f"the cached run did not hit: hits={stats.hits} "
                                    f"misses={stats.misses} bypasses={stats.bypasses}")
            if name == "aotcheck":
                result.node = first_differing_node(cold_fn, cached_fn, make)
    if reduce_seconds and rep["program"] and result.first[1] is not None:
        result.smallest = _reduce(rep["program"], eng, result, reduce_seconds)
    return result


def how_much(fn, compiled, make, d: Divergence) -> Divergence:
    """A divergence in values (of an output, of an argument after the call, of a leaf's
    gradient) with, after its detail, by how much: from one more run of each on fresh inputs."""
    import torch
    from torch.utils import _pytree as pytree

    from ..check.oracle import run_once
    if d.detail is None or d.subject is None or not (
            d.check is Check.VALUES or d.check is Check.GRAD_VALUES and d.subject.role is Role.LEAF):
        return d
    what, k = d.subject.role, d.subject.index
    runs = [run_once(g, make, True) for g in (fn, compiled)]

    def pick(run):
        inp, out, _, _ = run
        if what is Role.OUTPUT:
            items = [t for t in pytree.tree_leaves(out)]
        elif what is Role.ARGUMENT:
            items = pytree.tree_leaves((inp.args, inp.kwargs))
        else:
            items = [leaf.grad for leaf in inp.leaves]
        return items[k] if k < len(items) else None
    a, b = (pick(r) for r in runs)
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.shape != b.shape:
        return d
    a, b = a.detach().double(), b.detach().double()
    diff = (a - b).abs()
    bad = int((~torch.isclose(a, b, equal_nan=True)).sum())
    rel = (diff / a.abs().clamp_min(1e-12)).max().item() if a.numel() else 0.0
    return replace(d, detail=d.detail + (
        f" ({bad} of {a.numel()} elements differ; greatest absolute difference "
        f"{diff.max().item() if a.numel() else 0.0:.4g}, greatest relative {rel:.4g})"))


def _reduce(program_json: str, engine, result: Triage, seconds: float) -> str:
    import time

    from .programs import Program
    from .reduce import reduce_program
    from .runner import finish, run_outcome
    program = Program.from_json(program_json)
    want = f"{result.first[0]}: {result.kind}"

    def still_fails(p) -> bool:
        return finish(run_outcome(p, engine, result.first[0] != "cold")).group == want

    small = reduce_program(program, still_fails, time.perf_counter() + seconds)
    return small.function_source() + "\n\n" + small.inputs_source()


# ------------------------------------------------------------------ aotcheck: node by node

def _record_forward(compiled, make):
    """Call ``compiled`` once on fresh inputs, recording each artifact's forward inputs."""
    import torch
    seen = []
    for art in list(getattr(compiled, "_artifacts", {}).values()):
        inner = art.forward

        def recording(*args, _inner=inner, _art=art):
            seen.append((_art, [a.detach().clone() if isinstance(a, torch.Tensor) else a
                                for a in args]))
            return _inner(*args)
        art.forward = recording
    inp = make()
    try:
        compiled(*inp.args, **inp.kwargs)
    except Exception:  # noqa: BLE001 - a failing call still recorded what it ran
        pass
    return seen


def _node_values(art, args) -> list:
    import torch
    from torch import fx
    gm = fx.GraphModule(dict(art.constants), art.forward_graph)
    values = []

    class Recorder(fx.Interpreter):
        def run_node(self, n):
            v = super().run_node(n)
            values.append((n, v))
            return v
    with torch.no_grad():
        try:
            Recorder(gm).run(*args)
        except Exception as e:  # noqa: BLE001 - the graph itself raised: the last value says where
            values.append((None, e))
    return values


def first_differing_node(cold_fn, cached_fn, make) -> str:
    """The first forward-graph node whose value differs between the cold and the cached
    artifacts of aotcheck's engine, run on the same recorded inputs."""
    import torch
    cold = _record_forward(cold_fn, make)
    cached = _record_forward(cached_fn, make)
    if not cold or not cached:
        return ""
    (c_art, args), (k_art, _) = cold[0], cached[0]
    a, b = _node_values(c_art, args), _node_values(k_art, args)
    for (na, va), (nb, vb) in zip(a, b):
        if na is None or nb is None:
            return f"{(na or nb).format_node() if (na or nb) else 'graph'}: one graph raised"
        if na.op == "placeholder":
            continue
        if isinstance(va, torch.Tensor) and isinstance(vb, torch.Tensor):
            if va.shape != vb.shape or va.dtype != vb.dtype:
                return f"{nb.format_node()}: {tuple(va.shape)} {va.dtype} cold, {tuple(vb.shape)} {vb.dtype} cached"
            if not torch.equal(va, vb) and not (va.is_floating_point() and torch.allclose(va, vb, equal_nan=True)):
                diff = (va.double() - vb.double()).abs().max().item() if va.numel() else 0.0
                return (f"{nb.format_node()} (cold: {na.format_node()}): greatest absolute "
                        f"difference {diff:.4g}")
        elif na.target != nb.target:
            return f"{nb.format_node()}: cold has {na.format_node()}"
    if len(a) != len(b):
        return f"the graphs have {len(a)} and {len(b)} nodes"
    return ""


# ------------------------------------------------------------------ --miss

def explain_miss(path: str | Path, cache_dir: str | Path) -> str:
    """Why aotcheck's lookup for the reproducer's call misses in ``cache_dir``: the key
    components that differ from the nearest entry there."""
    from ..cache.key import compute_key
    from ..cache.serialize import Uncacheable
    from ..cache.store import Cache
    rep = load_reproducer(path)
    inp = rep["ns"]["make_inputs"]()
    try:
        key, comps = compute_key(rep["ns"]["f"], inp.args, inp.kwargs)
    except Uncacheable as u:
        return f"the call is never cached (a bypass): {u}"
    cache = Cache(cache_dir)
    entries = []
    for k in cache.keys():
        try:
            entry = cache.read(k, "entry.json")
        except Exception:  # noqa: BLE001 - a corrupt entry cannot be the nearest one
            continue
        if entry and "components" in entry:
            entries.append((k, entry["components"]))
    if any(k == key for k, _ in entries):
        return f"key {key[:12]} is in {cache_dir}: the lookup hits"
    if not entries:
        return f"key {key[:12]}: {cache_dir} holds no entries, so any lookup misses"
    def differing(other):
        return [c for c in sorted(set(comps) | set(other)) if comps.get(c) != other.get(c)]
    near_key, near = min(entries, key=lambda kv: len(differing(kv[1])))
    lines = [f"key {key[:12]} is not in {cache_dir} ({len(entries)} entries); the nearest, "
             f"{near_key[:12]}, differs in: {', '.join(differing(near))}"]
    for c in differing(near):
        a, b = near.get(c, "").splitlines(), comps.get(c, "").splitlines()
        diff = [line for line in difflib.unified_diff(a, b, "entry", "this call", lineterm="", n=0)
                if not line.startswith(("---", "+++", "@@"))]
        lines.append(f"  {c}:")
        lines += [f"    {line[:160]}" for line in diff[:6]]
    return "\n".join(lines)


# ------------------------------------------------------------------ --report

def write_report(t: Triage, out: str | Path) -> Path:
    import sys

    import torch

    from ..version import __version__
    src = t.source
    body = src.split('if __name__ == "__main__":')[0].rstrip()
    run, first = t.first
    md = [f"# {t.kind or 'no divergence'}: `{t.engine}` differs from eager"
          + (" (cache only)" if t.cache_only else ""), "",
          "## Versions", "",
          f"- torch {torch.__version__}, Python {sys.version.split()[0]}, "
          f"{platform.system()} {platform.machine()}, aotcheck {__version__}",
          f"- engine: `{t.engine}`" + (" (`torch.compile(f, backend=\"aot_eager\")`, "
                                       "AOTAutogradCache forced and bundled)" if t.engine == "torch" else ""),
          "", "## Minimal reproducer", "", "```python", body, "```", "",
          "`check(f, compiled, make_inputs)` (aotcheck's oracle) runs both on fresh inputs and "
          "compares outputs, aliasing, arguments after the call and gradients.", "",
          "## Eager against compiled", "",
          f"- cold: {'matches eager' if not t.cold else '; '.join(map(str, t.cold[:3]))}"]
    if t.cached is not None:
        md.append(f"- from the cache: {'matches eager' if not t.cached else '; '.join(map(str, t.cached[:3]))}")
    if first is not None:
        md.append(f"- first divergence ({run}): {first}")
    if t.node:
        md.append(f"- first forward-graph node that differs cold/cached: `{t.node}`")
    md += ["", "## Smallest program that still fails", ""]
    if t.smallest:
        md += ["```python", t.smallest.rstrip(), "```"]
    else:
        md.append("The reproducer above (no smaller program found).")
    if t.program_json:
        md += ["", "<details><summary>program (aotcheck fuzz JSON)</summary>", "",
               "```json", json.dumps(json.loads(t.program_json)), "```", "</details>"]
    path = Path(out)
    path.write_text("\n".join(md) + "\n")
    return path

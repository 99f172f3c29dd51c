"""config_run: the config census, each field compiled in-process under A and under B.

Every varied field of the census (``census.config_inputs``) is compiled with one probe program:
Inductor's fields with ``programs/kd_config_probe_inductor.py`` (Inductor on CPU, its C++
kernels generated and not built: ``observe.stubbed_kernels``), functorch's and Dynamo's with
``programs/kd_config_probe.py`` (aot_eager). The fields are split over ``jobs`` spawned
processes; each process compiles its probe once under A (every field at its default) and then
once per (field, value), each into a fresh cache directory with fresh in-memory state, and
compares each with its A (``differential.compare``).

Key first: each (field, value) is first compiled only until AOTAutogradCache has its key
(``observe(key_only=True)``: Dynamo traces, nothing is lowered; a fifth of a second). Where the
key equals A's, the field is a candidate gap, and A and B are compiled in full and compared.
Where the key differs, the field is keyed, and only with ``lost_hits`` are both compiled in full
to tell a LOST HIT (nothing produced differs) from a keyed change. The probes make one graph
each, so the first graph's key is the whole key.

A KEY GAP found here is confirmed as a stale hit by running a program made of the probe and a
VARY of that one field through ``run.run_program`` (new processes, real kernels):
``confirm_gap``.
"""
from __future__ import annotations

import multiprocessing
import tempfile
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

from . import census
from .differential import Finding, Verdict, compare
from ..engine import serial

PROBES = {"aot_eager": "kd_config_probe", "inductor": "kd_config_probe_inductor"}
SCHEMA = 1


def probe_for(field: str) -> str:
    return PROBES["inductor" if field.startswith("torch._inductor.config.") else "aot_eager"]


@dataclass(frozen=True)
class FieldResult:
    """One (field, value) of the config census: the verdict against the probe's A."""
    field: str
    value: str
    probe: str
    verdict: Verdict
    default: str = "default"

    @property
    def component(self) -> str:
        """``torch._inductor.config.foo: False -> True``."""
        return f"{self.field}: {self.default} -> {self.value}"

    def to_json(self) -> dict:
        return serial.to_data(self)

    @staticmethod
    def from_json(d: dict) -> "FieldResult":
        return serial.from_data(FieldResult, d)


def run_config(data: dict, *, jobs: int = 2, only: list[str] | None = None, lost_hits: bool = False,
               progress=None, target: str = "torch") -> list[FieldResult]:
    """The census's varied fields (``only``: those whose name contains one of these strings),
    key first (module docstring); ``lost_hits``: compile every keyed field in full too.
    ``target`` ``aotcheck`` (NOTE [the config census on aotcheck's cache])."""
    items = [(f, k) for f, values in census.config_inputs(data) for k in range(len(values))
             if not only or any(o in f for o in only)]
    chunks = []
    for probe in PROBES.values():           # one process per probe (each imports and warms torch)
        mine = [it for it in items if _probe(it[0], target) == probe]
        per = max(1, -(-len(mine) // max(1, jobs // len(PROBES))))
        chunks += [(probe, mine[k:k + per]) for k in range(0, len(mine), per)]
    ctx = multiprocessing.get_context("spawn")     # torch's thread pools do not survive a fork
    results: list[FieldResult] = []
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=ctx) as pool:
        futures = [(pool.submit(_chunk, (p, c, data["torch"], lost_hits, target)), p, c) for p, c in chunks if c]
        for future, probe, chunk in futures:
            try:
                results += [FieldResult.from_json(r) for r in future.result()]
            except BrokenProcessPool as e:     # a field that kills its process: its chunk is failed
                results += [FieldResult(f, str(k), probe, Verdict(Finding.FAILED, f"the census process died: {e}"))
                            for f, k in chunk]
            if progress:
                progress(len(results), len(items))
    return sorted(results, key=lambda r: (r.field, r.value))


# NOTE [the config census on aotcheck's cache]
# aotcheck's engine traces with its own capture, not through AOTAutograd or Inductor, so a torch
# config field changes its artifact only through what the capture calls (make_fx, decompositions,
# fake tensors). Each field is compiled in full on the aot_eager probe with aotcheck's engine
# (``observe_aotcheck``): no key-first shortcut, since aotcheck's key is computed with the
# capture itself; a field whose artifact differs while aotcheck's key is equal is a KEY GAP.


def _probe(field: str, target: str) -> str:
    return PROBES["aot_eager"] if target == "aotcheck" else probe_for(field)


def _chunk(args) -> list[dict]:
    """A pool worker: the probe under A, then each (field, value index) under B, key first."""
    probe, items, rel, lost_hits, target = args
    if target == "aotcheck":
        return _chunk_aotcheck(probe, items, rel)
    import logging
    logging.getLogger("torch._dynamo").setLevel(logging.ERROR)   # a field that breaks the graph warns once per compile
    from . import program
    data = census.load(rel)
    values, defaults = dict(census.config_inputs(data)), census.live_fields()
    module = program.load(census.PROGRAMS_DIR / f"{probe}.py").module()
    inductor = getattr(module, "BACKEND", "") == "inductor"
    from .observe import observe
    out = []
    with tempfile.TemporaryDirectory(prefix="aotcheck-keydiff-config-") as tmp:
        a_key = observe(module, {}, str(Path(tmp) / "A-key"), stub=inductor, key_only=True)
        a_full: list = []
        for n, (field, k) in enumerate(items):
            value = values[field][k]
            b = observe(module, {field: value}, str(Path(tmp) / f"{n}-key"), stub=inductor, key_only=True)
            if b.aot_keys and a_key.aot_keys and b.aot_keys != a_key.aot_keys and not b.error and not lost_hits:
                verdict = Verdict(Finding.KEYED, "the AOTAutogradCache key differs (what it serves was not "
                                  "compiled: --lost-hits compiles it)", "AOTAutogradCache")
            else:
                if not a_full:
                    a_full.append(observe(module, {}, str(Path(tmp) / "A"), stub=inductor))
                b = observe(module, {field: value}, str(Path(tmp) / str(n)), stub=inductor)
                verdict = compare(a_full[0], b)
            out.append(FieldResult(field, _text(value), probe, verdict, _text(defaults[field][0])).to_json())
    return out


def _chunk_aotcheck(probe: str, items, rel: str) -> list[dict]:
    """The probe under A, then each (field, value index) under B, in full, on aotcheck's engine."""
    from . import program
    from .observe_aotcheck import observe
    data = census.load(rel)
    values, defaults = dict(census.config_inputs(data)), census.live_fields()
    module = program.load(census.PROGRAMS_DIR / f"{probe}.py").module()
    out = []
    with tempfile.TemporaryDirectory(prefix="aotcheck-keydiff-config-") as tmp:
        a = observe(module, {}, str(Path(tmp) / "A"))
        for n, (field, k) in enumerate(items):
            value = values[field][k]
            b = observe(module, {field: value}, str(Path(tmp) / str(n)))
            out.append(FieldResult(field, _text(value), probe, compare(a, b), _text(defaults[field][0])).to_json())
    return out


def _text(value) -> str:
    from .program import _text as text
    return text(value)


# ---------------------------------------------------------------- confirming a gap


def confirm_gap(result: FieldResult, out_dir) -> Path:
    """A program file that varies ``result.field`` on the probe (for ``run.run_program``)."""
    data = census.load()
    values = dict(census.config_inputs(data))[result.field]
    value = next(v for v in values if _text(v) == result.value)
    src = (census.PROGRAMS_DIR / f"{result.probe}.py").read_text()
    name = "kd_confirm_" + "".join(c if c.isalnum() else "_" for c in result.field.split("config.", 1)[1])
    literal = _literal(value)
    path = Path(out_dir) / f"{name}.py"
    path.write_text(src + f"\n\nVARY = {{{result.field!r}: ({_default_literal(result.field)}, {literal})}}\n")
    return path


def _literal(value) -> str:
    for key, fn in census.REPLACEMENTS.items():
        if value is fn:
            return f"__import__('aotcheck.keydiff.census', fromlist=['REPLACEMENTS']).REPLACEMENTS[{key!r}]"
    return repr(value)


def _default_literal(field: str) -> str:
    return repr(census.live_fields()[field][0])


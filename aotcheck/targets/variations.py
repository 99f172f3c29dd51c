"""variations: cache-key variation, one thing at a time, against an engine's persistent cache.

A cache key is only tested by a lookup for a call that is *different* from the one that
wrote the entry. For one subject (a corpus case, or a fuzz program), the pass:

1. compiles under condition A (the subject as written) into a fresh cache directory, and runs
   it forward and backward (so every entry, the backward included, is saved);
2. for each variation B: copies that directory, compiles afresh through the copy in a state
   where the cache is what decides (a new ``AotFunction`` for aotcheck; ``torch._dynamo.reset()``
   and cleared in-memory caches for the torch engines, so no Dynamo guard answers first), calls
   it under B, and compares with eager under B through the oracle;
3. gives each variation a verdict, with its reason::

       ok-hit       a hit, and the result equals eager under B
       ok-miss      a miss where B changes something the graph depends on
       STALE HIT    a hit whose result differs from eager under B (the worst finding)
       UNKEYED HIT  every graph hit although B changed call-wide state the engine's key is
                    built to hold (``KEYED_STATE``), and the result happens to equal eager:
                    the key lost that component (NOTE [an unkeyed hit])
       LOST HIT     a miss where nothing relevant changed (B changes only tensor values)
       FAILS UNDER B  no hit, and the engine differs from eager under B (a cold failure of B)
       refused under B  no hit, and the engine refused B with a documented limit
                    (``aotcheck.errors.DOCUMENTED_LIMITS``: a named error, not a wrong result)
       eager died under B  eager itself killed the process under B (the variation made the
                    function invalid: two arguments made one tensor whose storage it frees)

Variations are plain frozen data (:class:`Variation`), derived from the subject's inputs and
the Python state its function reads (:func:`derive`), never listed by hand per case:

    grad_mode        enabled / no_grad / inference_mode (the two the subject is not called in)
    requires_grad    one floating input's requires_grad flipped
    dtype            one floating input float32 <-> float64
    shape            the inputs of one shape grow by one along the last dimension
    strides          one input laid out transposed (2-D and up) or every other element (1-D)
    memory_format    one 4-D input channels_last
    storage_offset   one input placed one element into a larger storage
    aliasing         two inputs of one shape and dtype passed as one tensor, or two aliased
                     inputs given storages of their own
    scalar           a Python int or float argument changed
    closure          a number the function closes over changed
    global           a number the function reads from its globals changed
    training         a module the function reads switched between train() and eval()
    state            the subject's own Python states (``Case.states``), state 0 -> k
    default_dtype    torch.set_default_dtype(float64) around the call
    autocast         torch.autocast("cpu", bfloat16) around the call
    deterministic    torch.use_deterministic_algorithms(True) around the call
    config           one engine config flag that changes a graph (``CONFIG_FLAGS``)
    values           every floating input's values changed, nothing else: a hit is expected,
                     and a miss is a LOST HIT
    dynamic_shape    (torch engines) A and B compiled with dynamic shapes, B's sizes made
                     smaller: a hit outside A's shape guards is UNKEYED (``shape_guards.py``)

# NOTE [the stale direction]
A key that lost grad mode serves whichever entry was written first. An entry compiled with
grad enabled and served under no_grad computes eager's values (the backward is never asked
for), but an inference graph compiled under no_grad (or inference_mode) and served to a call
with grad enabled returns outputs that do not require grad: the stale hit of issue 26. Under
the rotation a subject called without grad drew grad mode as its one kind about one time in
fifteen, so none of the corpus's did; ``pick`` therefore adds ``grad_mode=enabled`` to every
subject called without grad (a handful of cases), besides its rotated picks.

# NOTE [the guard direction]
# ``dynamic_shape`` tests the lookup's shape guards, which only a subject whose graph holds a
# guard on a size can fail (a slice bound, a window); most corpus programs hold none, and the
# rotation gives the kind to one subject in fifteen. The cases written for it are tagged
# ``size_guards`` and get it besides their rotated pick, on every torch engine.

# NOTE [what a variation run shares]
The pass compiles A once per subject and reuses its cache directory for every B (copied, so
each B sees exactly A's entries); ``pick`` chooses, per subject, the variations that apply to
its inputs, and with ``per_case`` rotates the kinds over the corpus so that every kind runs
many times while each subject costs a few compiles. ``variation_corpus.run_corpus`` splits the
cases over a pool of fresh processes (spawned: torch's thread pools do not survive a fork).
``run_subject(..., a_dir=DIR)`` takes a cache directory that an earlier clean run under A
filled (the regression command's cold run), so A is not compiled again.

Modules: ``variations.py`` (the data, ``derive``, ``pick``, ``run_subject``, ``judge``,
reproducers), ``conditions.py`` (B applied: inputs, call context, Python state),
``variation_corpus.py`` (the corpus in a pool), ``key_triage.py`` (the component a stale hit
comes from).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

import torch

from ..check.divergence import Divergence
from ..engine import serial
from .conditions import (CacheEvents, GradMode, VariationKind, _aliased, _flat, _floating,  # noqa: F401
                         _number, _new_number, _plain, _python_reads, check_under, compile_and_check, mark,
                         numeric_reads, observe, quiet_torch_logs)
from .shape_guards import dynamic_shape_engine, run_dynamic, smaller_sizes

SCHEMA = 1

OK_HIT, OK_MISS, STALE_HIT, LOST_HIT, FAILS_UNDER_B = "ok-hit", "ok-miss", "STALE HIT", "LOST HIT", \
    "FAILS UNDER B"
REFUSED = "refused under B"
EAGER_DIED = "eager died under B"
UNKEYED_HIT = "UNKEYED HIT"
VERDICTS = (OK_HIT, OK_MISS, REFUSED, EAGER_DIED, STALE_HIT, UNKEYED_HIT, LOST_HIT, FAILS_UNDER_B)
BAD = (STALE_HIT, UNKEYED_HIT, LOST_HIT, FAILS_UNDER_B)

# NOTE [an unkeyed hit]
# A stale hit shows only where the entry served under B computes something other than eager
# under B; an entry compiled with grad enabled and served under no_grad, or compiled without
# autocast and served under it to a function with no autocast-eligible op, computes the same
# values, so a key that lost grad mode or autocast passes most subjects. For the state a call
# runs in (grad mode, autocast, deterministic algorithms, the default dtype, the engine's config
# flags) torch's AOTAutogradCache key is built to hold each one for every graph it keys
# (AOTAutogradCacheDetails._record_runtime_state: grad mode, autocast, deterministic
# algorithms and the functorch config; FxGraphHashDetails: the default dtype, deterministic
# settings and the Inductor config), so under a B that changes one of them a correct key misses
# for every graph, and a B where every graph *hits* is reported as UNKEYED HIT, even where the
# result equals eager. Grad mode counts only where ``torch.is_grad_enabled()`` differs between A
# and B (the key holds that flag: no_grad and inference_mode compile one inference graph). Only where every graph hit: a graph compiled after a graph break inside a
# ``no_grad`` (or autocast) region of the function was compiled in that region's state under A
# and B alike and may hit rightly. Not for per-input kinds (an input Dynamo prunes from the
# graph may change without a miss), nor for ``torch-inductor``, whose hit count adds the FX
# graph cache's, keyed without grad mode on purpose (the same inference graph serves both).
KEYED_STATE: dict[str, frozenset[VariationKind]] = {
    name: frozenset({VariationKind.GRAD_MODE, VariationKind.AUTOCAST, VariationKind.DETERMINISTIC,
                     VariationKind.DEFAULT_DTYPE, VariationKind.CONFIG})
    for name in ("torch", "torch-inductor-lite")
}

# One flag per engine family that changes the graph it compiles: (owner, name, value under B).
CONFIG_FLAGS: dict[str, tuple[str, str, object]] = {
    "aotcheck": ("aotcheck", "AOTCHECK_PARTITIONER", "mincut"),
    "torch": ("functorch", "view_replay_for_aliased_outputs", "flip"),
    "torch-inductor": ("inductor", "fallback_random", "flip"),
}


# NOTE [which engines have a cache to vary]
# aotcheck (its own cache), torch (torch.compile aot_eager with AOTAutogradCache forced and
# bundled) and torch-inductor (AOTAutogradCache, and on its misses Inductor's FX graph cache,
# whose hits and misses ``observe`` adds). torch-aot-function has none: in torch 2.13
# ``functorch.compile.aot_function`` never calls ``AOTAutogradCache.try_load`` (only
# ``aot_module_simplified`` does, torch/_functorch/aot_autograd.py), so the pass reports it as
# not applicable instead of inventing a cache to test.



# ---------------------------------------------------------------- the data


@dataclass(frozen=True)
class Variation:
    """One change from condition A to condition B.

    ``kind`` is one of the kinds in the module docstring (a ``VariationKind``); ``target`` says
    what it changes (``"input 2"``, ``"inputs 0,1"``, a closure or global name, a config flag);
    ``b`` is the new value, as text; ``relevant`` is False only where nothing the graph depends
    on changes (a miss is then a LOST HIT)."""
    kind: VariationKind
    target: str = ""
    b: str = ""
    relevant: bool = True

    def __post_init__(self):
        if not isinstance(self.kind, VariationKind):
            raise ValueError(f"a variation's kind is a VariationKind, not {self.kind!r}")

    @property
    def label(self) -> str:
        return f"{self.kind}[{self.target}]={self.b}" if self.target else f"{self.kind}={self.b}"

    def to_json(self) -> str:
        return json.dumps({"schema": SCHEMA, **serial.to_data(self)}, sort_keys=True)

    @staticmethod
    def from_json(text: str) -> "Variation":
        d = json.loads(text)
        if d.pop("schema", None) != SCHEMA:
            raise ValueError("variation: unknown schema")
        return serial.from_data(Variation, d)


@dataclass(frozen=True)
class Result:
    """One variation's verdict on one subject, with the reason and the cache events seen."""
    subject: str
    engine: str
    variation: Variation
    verdict: str
    reason: str
    hits: int = 0
    misses: int = 0
    bypasses: int = 0
    divergences: tuple = ()     # the oracle's records (aotcheck.check.divergence)
    repro: str = ""             # the reproducer written for a bad verdict (a path), if any

    def to_json(self) -> str:
        d = {**asdict(self), "divergences": [x.to_dict() for x in self.divergences]}
        d["variation"] = json.loads(self.variation.to_json())
        return json.dumps({"schema": SCHEMA, **d}, sort_keys=True)

    @staticmethod
    def from_json(text: str) -> "Result":
        d = json.loads(text)
        if d.pop("schema", None) != SCHEMA:
            raise ValueError("variation result: unknown schema")
        d["variation"] = Variation.from_json(json.dumps(d["variation"]))
        d["divergences"] = tuple(Divergence.from_dict(x) for x in d["divergences"])
        return Result(**d)

    def __str__(self) -> str:
        return f"{self.verdict:13} {self.subject} {self.variation.label}: {self.reason}"


@dataclass(frozen=True)
class Subject:
    """What the pass runs: a function, its input maker, the grad mode it is called in, whether
    backward runs, and its Python states (a corpus case's ``states``)."""
    name: str
    fn: Callable
    make_inputs: Callable
    grad_mode: GradMode = GradMode.ENABLED
    backward: bool = True
    states: tuple = ()
    source: str = ""        # a generated program's source (defines f and make_inputs), for reproducers
    size_guards: bool = False   # a case tagged ``size_guards``: ``pick`` adds ``dynamic_shape``
    autocast: bool = False      # called inside the caller's bfloat16 autocast region (``CallMode.AUTOCAST``)

    def __post_init__(self):
        if not isinstance(self.grad_mode, GradMode):
            raise ValueError(f"a subject's grad mode is a GradMode, not {self.grad_mode!r}")

    @staticmethod
    def from_source(name: str, source: str, grad_mode: GradMode = GradMode.ENABLED,
                    backward: bool = True) -> "Subject":
        """A subject from a program's source, which defines ``f`` and ``make_inputs``."""
        ns: dict = {"__name__": f"aotcheck_subject_{abs(hash(name))}"}
        exec(compile(source, f"<{name}>", "exec"), ns)
        return Subject(name, ns["f"], ns["make_inputs"], grad_mode, backward, (), source)

    @staticmethod
    def of_case(case) -> "Subject":
        from ..check.corpus.registry import CallMode
        mode = {CallMode.INFERENCE_MODE: GradMode.INFERENCE_MODE, CallMode.NO_GRAD: GradMode.NO_GRAD}.get(
            case.call, GradMode.ENABLED)
        return Subject(case.id, case.fn, case.make_inputs, mode, case.backward, tuple(case.states),
                       size_guards="size_guards" in case.tags, autocast=case.call is CallMode.AUTOCAST)


# ---------------------------------------------------------------- deriving variations

def derive(subject: Subject, engine: str = "aotcheck") -> list[Variation]:
    """Every variation that applies to this subject, from its inputs (made once) and the
    Python state its function reads; in a fixed order."""
    torch.manual_seed(0)
    inputs = subject.make_inputs()
    flat = _flat(inputs)
    aliased = _aliased(flat)
    out = [Variation(VariationKind.GRAD_MODE, "", m.value) for m in GradMode if m is not subject.grad_mode]
    free = [i for i, t in enumerate(flat) if _plain(t) and i not in aliased]
    for i in free:
        t = flat[i]
        if _floating(t):
            out.append(Variation(VariationKind.REQUIRES_GRAD, f"input {i}", str(not t.requires_grad)))
            if t.dtype in (torch.float32, torch.float64):
                out.append(Variation(VariationKind.DTYPE, f"input {i}",
                                     "float64" if t.dtype == torch.float32 else "float32"))
    shapes: dict[tuple, list[int]] = {}
    for i in free:
        if flat[i].dim() >= 1 and flat[i].numel() >= 1:
            shapes.setdefault(tuple(flat[i].shape), []).append(i)
    for shape, idx in shapes.items():
        grown = list(shape[:-1]) + [shape[-1] + 1]
        out.append(Variation(VariationKind.SHAPE, "inputs " + ",".join(map(str, idx)), str(grown)))
    for i in free:
        t = flat[i]
        if t.dim() == 4 and t.numel() > 1:
            out.append(Variation(VariationKind.MEMORY_FORMAT, f"input {i}", "channels_last"))
        if t.numel() > 1 and (t.dim() >= 2 or t.dim() == 1):
            out.append(Variation(VariationKind.STRIDES, f"input {i}",
                                 "transposed" if t.dim() >= 2 else "every other"))
        if t.numel() >= 1:
            out.append(Variation(VariationKind.STORAGE_OFFSET, f"input {i}", "1"))
    pairs = [(i, j) for k, i in enumerate(free) for j in free[k + 1:]
             if flat[i].shape == flat[j].shape and flat[i].dtype == flat[j].dtype
             and flat[i].requires_grad == flat[j].requires_grad and flat[i].is_leaf == flat[j].is_leaf]
    if pairs:
        i, j = pairs[0]
        out.append(Variation(VariationKind.ALIASING, f"inputs {i},{j}", "same tensor"))
    if aliased:
        out.append(Variation(VariationKind.ALIASING, "inputs " + ",".join(map(str, sorted(aliased))),
                             "own storages"))
    for i, v in enumerate(flat):
        if _number(v):
            out.append(Variation(VariationKind.SCALAR, f"input {i}", repr(_new_number(v))))
    for r in numeric_reads(subject.fn):      # NOTE [numbers the compiled code reads]
        out.append(Variation(r.kind, r.label, repr(_new_number(r.value))))
    cells, gl = _python_reads(subject.fn)
    for name, v in cells + gl:
        if isinstance(v, torch.nn.Module):
            out.append(Variation(VariationKind.TRAINING, name, str(not v.training)))
    for k in range(1, len(subject.states)):
        out.append(Variation(VariationKind.STATE, "", str(k)))
    out += [Variation(VariationKind.DEFAULT_DTYPE, "", "float64"),
            Variation(VariationKind.AUTOCAST, "", "cpu:bfloat16"),
            Variation(VariationKind.DETERMINISTIC, "", "True")]
    flag = CONFIG_FLAGS.get(engine)
    if flag is not None:
        out.append(Variation(VariationKind.CONFIG, f"{flag[0]}.{flag[1]}", str(flag[2])))
    if any(_floating(flat[i]) for i in free):
        out.append(Variation(VariationKind.VALUES, "", "changed", relevant=False))
    sizes = smaller_sizes([flat[i].shape for i in free])
    cut = [i for i in free if any(s in sizes for s in flat[i].shape)]
    if cut and dynamic_shape_engine(engine):
        out.append(Variation(VariationKind.DYNAMIC_SHAPE, "inputs " + ",".join(map(str, cut)),
                             ",".join(f"{a}->{b}" for a, b in sizes.items())))
    return out


# NOTE [the subject's own kinds]
# Most kinds apply to every subject (grad mode, autocast, a dtype, a shape), and the rotation
# draws each of them for dozens of cases. A few apply only where the program itself holds the
# thing varied: its own Python states, a number it (or a helper it calls) reads from a global
# or a closure, a module's training flag, a 4-d input's memory format, a number argument. Drawn
# by the rotation they came up for 0 of the corpus's 8 subjects with states, and the classes of
# stale hit that live there (state the compiled code reads that the key does not name) were
# never asked. ``pick`` gives a subject's first draws to these kinds, rotated among them, so
# every such subject is asked within the same budget (a case draws as many variations as before).
OWN_KINDS = (VariationKind.STATE, VariationKind.GLOBAL, VariationKind.CLOSURE, VariationKind.TRAINING,
             VariationKind.MEMORY_FORMAT, VariationKind.SCALAR)


def pick(variations: list[Variation], subject_name: str, per_case: int | None,
         size_guards: bool = False) -> list[Variation]:
    """At most ``per_case`` variations of distinct kinds, chosen by a rotation that depends on
    the subject's name (so a corpus covers every kind, ``values`` included). None: all.
    ``grad_mode=enabled`` is picked besides, wherever it applies (NOTE [the stale direction]);
    so is ``dynamic_shape`` for a subject tagged ``size_guards`` (NOTE [the guard direction])."""
    if per_case is None or len(variations) <= per_case:
        return list(variations)
    stale_dir = [v for v in variations if (v.kind is VariationKind.GRAD_MODE and v.b == GradMode.ENABLED)
                 or (v.kind is VariationKind.DYNAMIC_SHAPE and size_guards)]
    own = [v for v in variations if v.kind in OWN_KINDS]        # NOTE [the subject's own kinds]
    chosen = _rotate(own, subject_name, per_case) if own else []
    chosen += _rotate([v for v in variations if v not in chosen], subject_name, per_case - len(chosen))
    return [v for v in stale_dir if v not in chosen] + chosen


def _rotate(variations: list[Variation], subject_name: str, per_case: int) -> list[Variation]:
    by_kind: dict[VariationKind, list[Variation]] = {}
    for v in variations:
        by_kind.setdefault(v.kind, []).append(v)
    h = int(hashlib.sha256(subject_name.encode()).hexdigest(), 16)
    kinds = sorted(by_kind)
    start = h % len(kinds) if kinds else 0
    chosen = [by_kind[k][(h >> 8) % len(by_kind[k])] for k in (kinds[start:] + kinds[:start])][:per_case]
    return chosen


# ---------------------------------------------------------------- observing the cache


# ---------------------------------------------------------------- running


def supports(engine) -> bool:
    """Whether the pass applies: the engine has a persistent cache."""
    return bool(getattr(engine, "supports_cache", False))


@dataclass(frozen=True)
class SubjectRun:
    """A subject's variation pass: A's outcome and one Result per variation run."""
    subject: str
    engine: str
    a: str                         # "ok", or why the variations were not run
    results: tuple[Result, ...] = ()
    seconds: float = 0.0

    def to_json(self) -> str:
        return json.dumps({"schema": SCHEMA, "subject": self.subject, "engine": self.engine, "a": self.a,
                           "results": [json.loads(r.to_json()) for r in self.results],
                           "seconds": self.seconds}, sort_keys=True)

    @staticmethod
    def from_json(text: str) -> "SubjectRun":
        d = json.loads(text)
        if d.pop("schema", None) != SCHEMA:
            raise ValueError("variation run: unknown schema")
        return SubjectRun(d["subject"], d["engine"], d["a"],
                          tuple(Result.from_json(json.dumps(r)) for r in d["results"]), d["seconds"])


def run_subject(engine, subject: Subject, variations: list[Variation] | None = None, *,
                per_case: int | None = None, repro_dir: str | os.PathLike | None = None,
                workdir: str | os.PathLike | None = None, a_dir: str | os.PathLike | None = None
                ) -> SubjectRun:
    """Compile ``subject`` under A into a fresh cache directory, then run each variation under
    B from a copy of it (module docstring). ``variations``: default ``pick(derive(...))``.
    ``a_dir``: a cache directory that a clean run of the subject under A has already filled
    (the regression command's cold run): it is not compiled again, only copied for each B."""
    t0 = time.perf_counter()
    if not supports(engine):
        return SubjectRun(subject.name, engine.name, f"engine {engine.name} has no persistent cache"
                          + (" (functorch.compile.aot_function never consults AOTAutogradCache; only "
                             "aot_module_simplified, under torch.compile, does)"
                             if engine.name == "torch-aot-function" else ""))
    if variations is None:
        variations = pick(derive(subject, engine.name), subject.name, per_case, subject.size_guards)
    with quiet_torch_logs():
        return _run_subject(engine, subject, variations, repro_dir, workdir, a_dir, t0)


def _run_subject(engine, subject, variations, repro_dir, workdir, a_dir, t0) -> SubjectRun:
    with tempfile.TemporaryDirectory(prefix="aotcheck-var-", dir=workdir) as tmp:
        dir_a = Path(tmp) / "A"
        mark(f"A\t{subject.name}\t")
        if a_dir is not None:
            shutil.copytree(a_dir, dir_a)
            why = "ok"
        else:
            why = _compile_a(engine, subject, dir_a)
        relative = why.startswith(A_DIFFERS) and (dir_a / ".").exists() and any(dir_a.iterdir())
        if why != "ok" and not relative:
            return SubjectRun(subject.name, engine.name, why, seconds=time.perf_counter() - t0)
        results = []
        for k, v in enumerate(variations):
            mark(f"B\t{subject.name}\t{v.to_json()}")
            dir_b = Path(tmp) / f"B{k}"
            shutil.copytree(dir_a, dir_b)
            r = run_relative(engine, subject, v, dir_b, Path(tmp) / f"cold{k}") if relative \
                else run_variation(engine, subject, v, dir_b)
            if r.verdict in BAD and repro_dir is not None:
                r = replace(r, repro=str(write_repro(r, subject, repro_dir)))
            results.append(r)
    return SubjectRun(subject.name, engine.name, why, tuple(results), time.perf_counter() - t0)


A_DIFFERS = "A differs from eager: "


def _compile_a(engine, subject: Subject, dir_a: Path) -> str:
    """Compile and run the subject under A into ``dir_a``: "ok", or why no B can be run."""
    try:
        events, report, _ = compile_and_check(engine, subject, None, dir_a)
    except Exception as e:  # noqa: BLE001 - recorded, not hidden
        return f"A raised {type(e).__name__}: {e}"[:300]
    if not report.ok:
        return f"{A_DIFFERS}{report.divergences[0]}"
    if events.saves == 0:
        return f"A wrote no cache entry (bypasses={events.bypasses})"
    return "ok"


def run_variation(engine, subject: Subject, v: Variation, dir_b: Path) -> Result:
    guard = ""
    try:
        if v.kind is VariationKind.DYNAMIC_SHAPE:
            why, guard, events, report = run_dynamic(engine, subject, v, dir_b)
            if why:
                return Result(subject.name, engine.name, v, REFUSED, f"does not apply: {why}")
        else:
            events, report, _ = compile_and_check(engine, subject, v, dir_b)
    except Exception as e:  # noqa: BLE001 - the engine or the variation itself failed: recorded
        first = str(e).splitlines()[0][:200] if str(e) else ""
        return Result(subject.name, engine.name, v, FAILS_UNDER_B,
                      f"the run under B raised {type(e).__name__}: {first}")
    result = judge(subject.name, engine.name, v, events, list(report.divergences),
                   keyed=bool(guard) or changes_keyed_state(engine.name, subject, v))
    if guard and result.verdict == UNKEYED_HIT:
        result = replace(result, reason=f"every graph hit (hits={events.hits}) although B's sizes "
                         f"fail a shape guard of A's entry ({guard})")
    return confirm_stale(engine, subject, v, result) if result.verdict == STALE_HIT else result


# NOTE [a variation of a subject the engine gets wrong]
# Where the engine's result under A already differs from eager, a stale hit under B cannot be
# told from eager alone: both the served entry and a right one would differ. The entry A wrote
# is still served or not, so B is compared with B's own cold compile (a fresh cache directory):
# a hit whose divergences from eager are not those of the cold compile is a STALE HIT (the cache
# changed the result); otherwise the variation is ok, and says it was judged this way. The
# divergence texts carry the mismatched values (torch.testing's greatest differences), so two
# different wrong results read differently.


def run_relative(engine, subject: Subject, v: Variation, dir_b: Path, cold_dir: Path) -> Result:
    """B over A's entries against B cold (NOTE [a variation of a subject the engine gets wrong])."""
    if v.kind is VariationKind.DYNAMIC_SHAPE:
        return Result(subject.name, engine.name, v, REFUSED, "does not apply: A differs from eager")
    try:
        events, warm, _ = compile_and_check(engine, subject, v, dir_b)
        _, cold, _ = compile_and_check(engine, subject, v, cold_dir)
    except Exception as e:  # noqa: BLE001 - recorded, not hidden
        first = str(e).splitlines()[0][:200] if str(e) else ""
        return Result(subject.name, engine.name, v, FAILS_UNDER_B, f"the run under B raised {type(e).__name__}: {first}")
    seen = f"hits={events.hits} misses={events.misses} bypasses={events.bypasses}"
    counts = dict(hits=events.hits, misses=events.misses, bypasses=events.bypasses,
                  divergences=tuple(warm.divergences))
    w, c = list(warm.divergences), list(cold.divergences)
    if events.hits and w != c:
        return Result(subject.name, engine.name, v, STALE_HIT, f"an entry written under A (which differs from "
                      f"eager) was served under B ({seen}), and B's result differs from B's own cold compile: "
                      f"{(w or ['equals eager'])[0]} / cold: {(c or ['equals eager'])[0]}", **counts)
    answer = OK_HIT if events.hits and not events.misses else OK_MISS
    return Result(subject.name, engine.name, v, answer, f"{seen}; A differs from eager, so B was compared with "
                  f"its own cold compile: the same", **counts)


def confirm_stale(engine, subject: Subject, v: Variation, stale: Result) -> Result:
    """A STALE HIT only if a cold compile under B (a fresh cache directory) is right.

    # NOTE [a stale hit is the cache's fault]
    A hit that differs from eager under B blames the cache key only where compiling B's own
    entry would have given eager's result. Where the engine fails B cold too, the same way,
    the served entry is not what went wrong: the verdict is FAILS UNDER B (the engine's bug
    under B), with the hit said in its reason. Found by the fuzzer (seed 3): a values-only
    variation of a strided non-leaf "hit stale" where B cold failed with the same error.
    Costs one more compile, and only for a stale hit."""
    try:
        with tempfile.TemporaryDirectory(prefix="aotcheck-var-cold-") as fresh:
            events, report, _ = compile_and_check(engine, subject, v, fresh,
                                                  dynamic=v.kind is VariationKind.DYNAMIC_SHAPE)
    except Exception as e:  # noqa: BLE001 - the cold run raised: the hit stays the suspect
        return replace(stale, reason=f"{stale.reason} (a cold compile under B raised "
                                     f"{type(e).__name__} instead)")
    cold = list(report.divergences)
    if cold and cold[0] == stale.divergences[0]:
        return replace(stale, verdict=FAILS_UNDER_B, reason=(
            f"the entry written under A was served under B (hits={stale.hits}), and a cold "
            f"compile under B (hits={events.hits}) differs from eager the same way: the "
            f"engine's failure under B, not the cache's: {cold[0]}"))
    return stale


def changes_keyed_state(engine: str, subject: Subject, v: Variation) -> bool:
    """Whether B changes call-wide state the engine's cache key holds (NOTE [an unkeyed hit]).
    Grad mode only where ``torch.is_grad_enabled()`` differs: the key holds that, and no_grad
    and inference_mode share one inference graph."""
    if v.kind not in KEYED_STATE.get(engine, ()):
        return False
    if v.kind is VariationKind.GRAD_MODE:
        return (subject.grad_mode is GradMode.ENABLED) != (v.b == GradMode.ENABLED)
    return True


def judge(subject: str, engine: str, v: Variation, ev: CacheEvents, divergences: list,
          keyed: bool = False) -> Result:
    """The verdict of one B run from its cache events and the oracle's divergences. ``keyed``:
    B changes state the key holds (``changes_keyed_state``), so a hit is an UNKEYED HIT."""
    counts = dict(hits=ev.hits, misses=ev.misses, bypasses=ev.bypasses, divergences=tuple(divergences))
    seen = f"hits={ev.hits} misses={ev.misses} bypasses={ev.bypasses}"
    if divergences:
        if ev.hits:
            return Result(subject, engine, v, STALE_HIT,
                          f"an entry written under A was served under B ({seen}) and differs from "
                          f"eager: {divergences[0]}", **counts)
        from ..errors import DOCUMENTED_LIMITS
        if all(any(lim in str(d) for lim in DOCUMENTED_LIMITS) for d in divergences):
            return Result(subject, engine, v, REFUSED,
                          f"no hit ({seen}); refused with a documented limit: {divergences[0]}", **counts)
        return Result(subject, engine, v, FAILS_UNDER_B,
                      f"no hit ({seen}); compiled under B differs from eager: {divergences[0]}", **counts)
    if ev.hits and not ev.misses and keyed:
        return Result(subject, engine, v, UNKEYED_HIT,      # NOTE [an unkeyed hit]
                      f"every graph hit ({seen}) although B changed {v.label}, which the cache "
                      f"key is built to hold; the result equals eager under B here", **counts)
    if ev.hits and not ev.misses:
        return Result(subject, engine, v, OK_HIT, f"{seen}; equals eager under B", **counts)
    if v.relevant:
        return Result(subject, engine, v, OK_MISS, f"{seen}; B changes what the graph depends on",
                      **counts)
    if not ev.misses:       # no graph reached a lookup (none compiled, or each one bypassed)
        return Result(subject, engine, v, OK_MISS, f"{seen}; no graph was looked up", **counts)
    return Result(subject, engine, v, LOST_HIT, f"{seen}; B changes nothing the graph depends on "
                  f"({v.label}), so every graph should have hit", **counts)


# ---------------------------------------------------------------- reproducers (read: variation_repro.py)


REPRO_MARK = "# aotcheck key-variation reproducer"
PROGRAM_BEGIN, PROGRAM_END = "# --- program: defines f and make_inputs ---", "# --- end of program ---"


def write_repro(r: Result, subject: Subject, out_dir) -> Path:
    """A runnable .py for one bad verdict: it names the engine, the subject (a corpus case id, or
    the program's source) and the variation, and replays A then B (``replay``)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    slug = "".join(ch if ch.isalnum() else "_" for ch in f"{r.engine}_{r.subject}_{r.variation.label}")[:120]
    path = out / f"keyvar_{slug}.py"
    source = getattr(subject, "source", "")
    body = [REPRO_MARK,
            f"# verdict: {r.verdict}: {r.reason}",
            "from aotcheck.targets.variation_repro import replay_file",
            f"ENGINE = {r.engine!r}",
            f"CASE = {r.subject!r}" if not source else "CASE = None",
            f"SUBJECT = {r.subject!r}",
            f"GRAD_MODE = {subject.grad_mode.value!r}",
            f"BACKWARD = {subject.backward!r}",
            f"VARIATION = {r.variation.to_json()!r}",
            ""]
    if source:
        body += [PROGRAM_BEGIN, source.strip("\n"), PROGRAM_END, ""]
    body += ["if __name__ == '__main__':", "    raise SystemExit(replay_file(__file__))", ""]
    path.write_text("\n".join(body))
    return path

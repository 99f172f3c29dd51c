"""key_triage: which key component a stale hit (or a lost hit) comes from.

A variation reproducer (``variations.write_repro``) names an engine, a subject and one
variation. ``triage_variation`` replays it, compile under A then call under B from A's cache
directory, and reads two things on each side:

- the **call's facts**, independent of any cache key: aotcheck's input signature field by
  field (``signature.grad_enabled``, ``signature.leaves[0].requires_grad``, ...), the torch
  state (each setting of ``cache/ambient.py``'s census in the key:
  ``torch_state.autocast_dtype[cpu]``, ...), the fingerprint of the Python
  state the function reads (``function.*``: closures, globals, module ``training``) and the
  config flags a variation may set (``config.*``);
- the **key as the engine computed it**, recorded at each lookup: for aotcheck, the named
  components of its key (what ``aotcheck cache explain KEY_A KEY_B`` compares), as the key
  builder hands them to ``key.key_of``; for torch, the AOTAutogradCache key's details
  (``autograd_cache_key``'s debug lines, one per detail, with its hash).

For a stale hit the keys are equal (that is why it hit) while the facts differ: the facts
that differ are what the key failed to carry, and the first one is named as **the
component**, with the key component that should have carried it. For a lost hit the facts
agree where it matters and the key differs: the key components that differ are named::

    STALE HIT aotcheck test.no_grad_entry grad_mode=enabled
      component: signature.grad_enabled (False -> True)
      key: equal under A and B (aotcheck components: none differ); the component that
           should carry it: signature
"""
from __future__ import annotations

import contextlib
import logging
import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch.utils import _pytree as pytree

from . import conditions as C
from . import variations as V


@dataclass(frozen=True)
class KeyTriage:
    engine: str
    subject: str
    variation: V.Variation
    verdict: str
    reason: str
    differed: tuple[str, ...]        # "path: A -> B" for each call fact that differs
    component: str                   # the first differing fact's path ("" when none differs)
    key_equal: bool | None           # the keys under A and B were equal (None: not recorded)
    key_diff: tuple[str, ...]        # the key components (aotcheck) or details (torch) that differ
    carrier: str = ""                # the key component that should carry ``component``

    def __str__(self) -> str:
        lines = [f"{self.verdict} {self.engine} {self.subject} {self.variation.label}",
                 f"  {self.reason}"]
        if self.component:
            first = next(d for d in self.differed if d.startswith(self.component))
            more = [d for d in self.differed if d != first]
            if self.component == "signature.groups":
                first = "signature.groups (which arguments share a storage): " + first
            lines.append(f"  component: {first}")
            if more:
                lines.append(f"  also differ: {'; '.join(more[:6])}" + (" ..." if len(more) > 6 else ""))
        else:
            lines.append("  component: none of the call's facts differ (only values changed)")
        if self.key_equal is None:
            lines.append("  key: not recorded")
        elif self.key_equal:
            what = "components" if self.engine == "aotcheck" else "AOTAutogradCache key details"
            lines.append(f"  key: equal under A and B ({self.engine} {what}: none differ)"
                         + (f"; the component that should carry it: {self.carrier}" if self.carrier else ""))
        else:
            lines.append(f"  key: differs under A and B in {', '.join(self.key_diff[:8])}")
        return "\n".join(lines)


# ---------------------------------------------------------------- the call's facts


def _paths(x, prefix: str, out: dict) -> dict:
    if isinstance(x, dict):
        for k in sorted(x, key=str):
            _paths(x[k], f"{prefix}.{k}", out)
    elif isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            _paths(v, f"{prefix}[{i}]", out)
    else:
        out[prefix] = x
    return out


def call_facts(subject: V.Subject, v: V.Variation | None) -> dict[str, object]:
    """The facts of calling the subject under A (``v`` None) or B, by dotted path."""
    from .. import flags
    from ..cache.ambient import torch_state
    from ..cache.fingerprint import fingerprint_data
    from ..engine.signature import flatten_inputs, signature
    facts: dict[str, object] = {}
    with C.state_context(subject, v):
        make = subject.make_inputs if v is None else C.vary_inputs(v, subject.make_inputs)
        torch.manual_seed(0)
        inp = make()
        with C.call_context(subject, v)():
            try:
                leaves, spec = flatten_inputs(tuple(inp.args), dict(inp.kwargs))
                _paths(asdict(signature(leaves, spec)), "signature", facts)
            except Exception:  # noqa: BLE001 - a subclass leaf: described here, by the same names
                _paths(_plain_signature(inp), "signature", facts)
            for name, value in torch_state().items():      # one fact per census setting
                facts[f"torch_state.{name}"] = tuple(map(str, value)) if isinstance(value, list) else value
        try:
            _paths(fingerprint_data(subject.fn, identity_fallback=True), "function", facts)
        except Exception as e:  # noqa: BLE001 - a fact we cannot read is named as such
            facts["function"] = f"unreadable: {type(e).__name__}"
        for f in flags.ALL:
            if f not in flags.NOT_IN_KEY or f is flags.PARTITIONER:
                facts[f"config.aotcheck.{f.name}"] = flags.get(f)
        import torch._functorch.config as fconfig
        import torch._inductor.config as iconfig
        for owner, name, _ in V.CONFIG_FLAGS.values():
            if owner != "aotcheck":
                mod = fconfig if owner == "functorch" else iconfig
                facts[f"config.{owner}.{name}"] = getattr(mod, name)
    return facts


def _plain_signature(inp) -> dict:
    """The signature's main facts for inputs aotcheck's ``signature`` does not take (a tensor
    subclass leaf): per leaf its type, dtype, geometry and autograd flags, and the grad mode."""
    leaves = []
    for x in pytree.tree_leaves((inp.args, inp.kwargs)):
        if isinstance(x, torch.Tensor):
            leaves.append({"type": type(x).__name__, "dtype": str(x.dtype), "shape": list(x.shape),
                           "stride": list(x.stride()), "offset": x.storage_offset(),
                           "requires_grad": x.requires_grad, "is_leaf": x.is_leaf})
        else:
            leaves.append({"value": repr(x)})
    return {"leaves": leaves, "grad_enabled": torch.is_grad_enabled(),
            "inference_mode": torch.is_inference_mode_enabled()}


def _component(path: str) -> str:
    """The name a fact is reported under: the aliasing groups as one component
    (``signature.groups``), anything else by its own path."""
    return "signature.groups" if path.startswith("signature.groups") else path


def diff_facts(a: dict, b: dict) -> list[tuple[str, object, object]]:
    return [(k, a.get(k, "(absent)"), b.get(k, "(absent)")) for k in sorted(set(a) | set(b), key=_order)
            if a.get(k, "(absent)") != b.get(k, "(absent)")]


def _order(path: str):
    """Grad mode and input flags before geometry, so the most telling fact is named first."""
    rank = 0 if "grad_enabled" in path or "inference_mode" in path else \
        1 if "requires_grad" in path and "groups" not in path else 2 if "groups" in path else \
        3 if "dtype" in path else 4
    return rank, path


# the key component that should carry a fact, by the fact's path prefix
_AOTCHECK_CARRIER = {"signature": "signature", "torch_state": "torch_state", "function": "function",
                     "config.aotcheck.AOTCHECK_PARTITIONER": "engine", "config.aotcheck": "flags"}
_TORCH_CARRIER = [("signature.grad_enabled", "grad_enabled"), ("signature.inference_mode", "grad_enabled"),
                  ("signature.leaves", "example_inputs / the graph's placeholder metadata"),
                  ("signature.groups", "example_inputs (aliasing)"),
                  ("torch_state.autocast", "autocast_state"), ("torch_state.deterministic",
                                                               "deterministic_algorithms"),
                  ("torch_state.default_dtype", "default_dtype"), ("config.functorch", "autograd_config"),
                  ("config.inductor", "inductor_config"), ("function", "gm (the Dynamo graph)")]


def carrier(engine: str, path: str) -> str:
    if engine == "aotcheck":
        best = max((p for p in _AOTCHECK_CARRIER if path.startswith(p)), key=len, default="")
        return _AOTCHECK_CARRIER.get(best, "")
    return next((c for p, c in _TORCH_CARRIER if path.startswith(p)), "")


# ---------------------------------------------------------------- the key, as the engine computed it


@contextlib.contextmanager
def record_aotcheck_keys(into: list):
    """Record every aotcheck cache key computed in the block: (digest, components). The key
    builder hashes its components with ``key.key_of``, which is wrapped here."""
    from ..cache import key as key_module
    original = key_module.key_of

    def recording(components):
        digest = original(components)
        into.append((digest, dict(components)))
        return digest
    key_module.key_of = recording
    try:
        yield into
    finally:
        key_module.key_of = original


@contextlib.contextmanager
def record_torch_keys(into: list):
    """Record every AOTAutogradCache key computed in the block: (key, {detail: line})."""
    import torch._functorch._aot_autograd.autograd_cache as ac
    original = ac.autograd_cache_key
    log = logging.getLogger(ac.__name__)

    def recording(*args, **kwargs):
        level, propagate = log.level, log.propagate
        handler = logging.NullHandler()
        log.setLevel(logging.DEBUG)
        log.propagate = False
        log.addHandler(handler)
        try:
            key, lines = original(*args, **kwargs)
        finally:
            log.setLevel(level)
            log.propagate = propagate
            log.removeHandler(handler)
        into.append((key, _details(lines)))
        return key, lines
    ac.autograd_cache_key = recording
    try:
        yield into
    finally:
        ac.autograd_cache_key = original


def _details(lines: list[str]) -> dict[str, str]:
    """``[hash] name: value`` debug lines as {name: hash}."""
    out = {}
    for line in lines:
        m = re.match(r"\[(\w+)\] ([^:]+):", line)
        if m:
            out[m.group(2)] = m.group(1)
    return out


# ---------------------------------------------------------------- replay and triage


def triage_variation(engine_name: str, subject: V.Subject, v: V.Variation) -> KeyTriage:
    """Replay A then B (a fresh cache directory), and name the component."""
    from .engines import get_engine
    engine = get_engine(engine_name)
    keys: dict[str, list] = {"A": [], "B": []}     # (key, {component or detail: value}) per lookup
    torch_engine = engine_name != "aotcheck" and engine_name != "dynamo-aotcheck"
    record = record_torch_keys if torch_engine else record_aotcheck_keys
    with tempfile.TemporaryDirectory(prefix="aotcheck-keytriage-") as tmp:
        a_dir = Path(tmp) / "A"
        rec = record(keys["A"])
        with rec, C.state_context(subject, None):
            compiled = engine.compile_cached(subject.fn, str(a_dir))
            a_report = V.check_under(subject, compiled, None)
        if not a_report.ok:
            return KeyTriage(engine_name, subject.name, v, "not reproduced",
                             f"A differs from eager: {a_report.divergences[0]}", (), "", None, ())
        rec = record(keys["B"])
        with rec:
            result = V.run_variation(engine, subject, v, a_dir)
    fa, fb = call_facts(subject, None), call_facts(subject, v)
    differed = diff_facts(fa, fb)
    text = tuple(f"{k}: {a!r} -> {b!r}" for k, a, b in differed)
    component = _component(differed[0][0]) if differed else ""
    ka, kb = keys["A"], keys["B"]
    if ka and kb:
        keys_a = dict(ka)
        key_equal = any(k in keys_a for k, _ in kb)
        da, db = ka[0][1], kb[0][1]
        key_diff = () if key_equal else \
            tuple(n for n in sorted(set(da) | set(db)) if da.get(n) != db.get(n))
    else:
        key_equal, key_diff = None, ()
    return KeyTriage(engine_name, subject.name, v, result.verdict, result.reason, text, component,
                     key_equal, key_diff, carrier(engine_name, component) if component else "")


def triage_repro(path) -> KeyTriage:
    """``aotcheck triage REPRO.py`` on a variation reproducer."""
    from .variation_repro import load_repro
    engine, subject, v = load_repro(path)
    return triage_variation(engine, subject, v)

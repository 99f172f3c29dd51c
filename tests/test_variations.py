"""Cache-key variation (aotcheck/targets/variations.py) and the triage of a stale hit
(aotcheck/targets/key_triage.py): compile under A, call under B from A's cache directory.

A planted key bug (a key component removed by monkeypatching aotcheck's key builder) must
show as a STALE HIT and the triage must name the component; a variation that changes
nothing relevant must hit; a few variation kinds against aotcheck's cache and one against
torch's AOTAutogradCache must give the verdicts a correct cache gives."""
from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from aotcheck.cache import key as key_module
from aotcheck.check.divergence import Check, Divergence, Subject
from aotcheck.targets import key_triage
from aotcheck.targets import variations as V
from aotcheck.targets.variation_repro import is_repro
from aotcheck.targets.conditions import vary_inputs
from aotcheck.targets.engines import get_engine

K, G = V.VariationKind, V.GradMode

# A program as text, as the fuzzer's reproducers are: an inference graph compiled under
# no_grad (or for an input that does not require grad) must never serve a call that needs grad.
PROGRAM = """
import torch

def f(x, w):
    return (x * w).sin()

def make_inputs():
    from aotcheck.check.oracle import Inputs
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(3, 4, requires_grad=True)
    return Inputs((x, w), leaves=(x, w))
"""


def _planted_values(text: str) -> Divergence:
    return Divergence(Check.VALUES, Subject.output(0), detail=f"{text} values")


def _drop_from_signature(monkeypatch, drop):
    """Plant a key bug: aotcheck's key builder writes the signature component without what
    ``drop`` removes from its JSON."""
    original = key_module._common

    def broken(sig, partitioner):
        comps = original(sig, partitioner)
        data = json.loads(comps["signature"])
        drop(data)
        comps["signature"] = json.dumps(data, sort_keys=True)
        return comps
    monkeypatch.setattr(key_module, "_common", broken)


def _no_grad_mode(d):
    d.pop("grad_enabled")
    d.pop("inference_mode")


def _no_requires_grad(d):
    for leaf in d["leaves"]:
        leaf.pop("requires_grad", None)


def test_planted_grad_mode_bug_is_a_stale_hit_and_triage_names_it(monkeypatch, tmp_path):
    _drop_from_signature(monkeypatch, _no_grad_mode)
    subject = V.Subject.from_source("planted.no_grad_entry", PROGRAM, grad_mode=G.NO_GRAD)
    v = V.Variation(K.GRAD_MODE, "", "enabled")
    run = V.run_subject(get_engine("aotcheck"), subject, [v], repro_dir=tmp_path)
    assert run.a == "ok"
    (r,) = run.results
    assert r.verdict == V.STALE_HIT, r
    assert r.hits >= 1 and r.divergences[0].check is Check.REQUIRES_GRAD
    assert is_repro(r.repro)
    t = key_triage.triage_repro(r.repro)
    assert t.verdict == V.STALE_HIT
    assert t.component == "signature.grad_enabled"
    assert t.key_equal is True and t.carrier == "signature"
    assert "component: signature.grad_enabled: False -> True" in str(t)


def test_planted_requires_grad_bug_is_a_stale_hit_and_triage_names_it(monkeypatch, tmp_path, capsys):
    _drop_from_signature(monkeypatch, _no_requires_grad)
    source = PROGRAM.replace("x = torch.randn(3, 4, requires_grad=True)", "x = torch.randn(3, 4)") \
                    .replace("w = torch.randn(3, 4, requires_grad=True)", "w = torch.randn(3, 4)") \
                    .replace("leaves=(x, w)", "leaves=()")
    subject = V.Subject.from_source("planted.requires_grad", source)
    variations = [v for v in V.derive(subject, "aotcheck") if v.kind == "requires_grad"]
    assert [v.target for v in variations] == ["input 0", "input 1"]
    run = V.run_subject(get_engine("aotcheck"), subject, variations[:1], repro_dir=tmp_path)
    (r,) = run.results
    assert r.verdict == V.STALE_HIT, r
    # the command line names it too (in this process, where the key bug is planted)
    from aotcheck.cli import main
    assert main(["triage", r.repro]) == 1
    out = capsys.readouterr().out
    assert "component: signature.leaves[0].requires_grad: False -> True" in out, out


def test_the_stock_key_gives_no_stale_hit_for_the_same_variations(tmp_path):
    """The same two variations without the planted bug: misses, each equal to eager."""
    subject = V.Subject.from_source("stock.no_grad_entry", PROGRAM, grad_mode=G.NO_GRAD)
    run = V.run_subject(get_engine("aotcheck"), subject,
                        [V.Variation(K.GRAD_MODE, "", "enabled"),
                         V.Variation(K.REQUIRES_GRAD, "input 0", "False")])
    assert [r.verdict for r in run.results] == [V.OK_MISS, V.OK_MISS], run.results


def test_a_variation_that_changes_nothing_relevant_hits():
    subject = V.Subject.from_source("values.only", PROGRAM)
    (v,) = [v for v in V.derive(subject, "aotcheck") if v.kind == "values"]
    assert not v.relevant
    (r,) = V.run_subject(get_engine("aotcheck"), subject, [v]).results
    assert r.verdict == V.OK_HIT and r.hits >= 1, r


def test_a_lost_hit_is_reported_when_the_key_reads_values(monkeypatch):
    """A key that (wrongly) hashes the inputs' values misses on the values variation: LOST HIT."""
    original = key_module._common
    salt = iter(range(10**6))

    def noisy(sig, partitioner):
        return {**original(sig, partitioner), "noise": str(next(salt))}
    monkeypatch.setattr(key_module, "_common", noisy)
    subject = V.Subject.from_source("values.lost", PROGRAM)
    (r,) = V.run_subject(get_engine("aotcheck"), subject,
                         [V.Variation(K.VALUES, "", "changed", relevant=False)]).results
    assert r.verdict == V.LOST_HIT, r


@pytest.mark.parametrize("kind", ["dtype", "strides", "storage_offset", "shape", "aliasing"])
def test_input_variation_kinds_against_aotchecks_cache(kind):
    subject = V.Subject.from_source(f"kinds.{kind}", PROGRAM)
    vs = [v for v in V.derive(subject, "aotcheck") if v.kind == kind]
    assert vs, kind
    (r,) = V.run_subject(get_engine("aotcheck"), subject, vs[:1]).results
    assert r.verdict == V.OK_MISS, r
    # B's inputs really differ from A's in that one way
    a, b = PROGRAM_INPUTS(subject, None), PROGRAM_INPUTS(subject, vs[0])
    if kind == "dtype":
        assert a[0].dtype == torch.float32 and b[0].dtype == torch.float64
    elif kind == "strides":
        assert b[0].stride() == (1, 3) and b[0].shape == a[0].shape
    elif kind == "storage_offset":
        assert b[0].storage_offset() == 1 and b[0].is_leaf and b[0].requires_grad
    elif kind == "shape":
        assert a[0].shape == (3, 4) and b[0].shape == b[1].shape == (3, 5)
    else:
        assert b[0] is b[1]


def PROGRAM_INPUTS(subject, v):
    make = subject.make_inputs if v is None else vary_inputs(v, subject.make_inputs)
    return make().args


def test_python_state_and_call_conditions_against_aotchecks_cache():
    """A closed-over number, default dtype and a grad mode: each misses (aotcheck's key has
    them), and each result equals eager under B."""
    scale = 2.0

    def f(x):
        return x * scale + torch.ones(3)

    from aotcheck.check.oracle import Inputs
    subject = V.Subject("closure", f, lambda: Inputs((torch.randn(3, requires_grad=True),)))
    kinds = {v.kind: v for v in V.derive(subject, "aotcheck")}
    assert kinds["closure"].target == "scale"
    run = V.run_subject(get_engine("aotcheck"), subject,
                        [kinds["closure"], kinds["default_dtype"], kinds["grad_mode"]])
    assert [r.verdict for r in run.results] == [V.OK_MISS] * 3, run.results
    assert scale == 2.0


def test_derive_reads_the_subject_not_a_hand_list():
    from aotcheck.check.corpus import all_cases
    cases = {c.id: c for c in all_cases()}
    state = V.Subject.of_case(cases["python_state.batchnorm_train_then_eval"])
    kinds = {v.kind for v in V.derive(state, "torch")}
    assert {"state", "grad_mode", "requires_grad", "config", "values"} <= kinds
    v = V.Variation(K.STRIDES, "input 2", "transposed")
    assert V.Variation.from_json(v.to_json()) == v
    r = V.Result("s", "aotcheck", v, V.STALE_HIT, "why", 1, 0, 0, (_planted_values("d"),))
    assert V.Result.from_json(r.to_json()) == r


def test_the_kinds_and_grad_modes_read_back_as_enums_and_print_as_their_text(tmp_path):
    """A variation's JSON and a reproducer's header spell the kind and the grad mode as text (as
    when they were strings); reading them back gives the Enums, and a kind outside the
    vocabulary is refused by name."""
    v = V.Variation(K.GRAD_MODE, "", G.ENABLED.value)
    assert v.to_json() == '{"b": "enabled", "kind": "grad_mode", "relevant": true, "schema": 1, "target": ""}'
    assert V.Variation.from_json(v.to_json()).kind is K.GRAD_MODE and v.label == "grad_mode=enabled"
    with pytest.raises(ValueError, match="'bogus' is no VariationKind"):
        V.Variation.from_json('{"kind": "bogus", "schema": 1}')
    with pytest.raises(ValueError, match="is a VariationKind"):
        V.Variation("grad_mode")
    with pytest.raises(ValueError, match="is a GradMode"):
        V.Subject.from_source("s", PROGRAM, grad_mode="no_grad")
    from aotcheck.targets.variation_repro import load_repro
    subject = V.Subject.from_source("repro.no_grad", PROGRAM, grad_mode=G.NO_GRAD)
    path = V.write_repro(V.Result(subject.name, "aotcheck", v, V.STALE_HIT, "why"), subject, tmp_path)
    assert "\nGRAD_MODE = 'no_grad'\n" in path.read_text()
    assert '"kind": "grad_mode"' in path.read_text()
    engine, back, v_back = load_repro(path)
    assert (engine, back.grad_mode, v_back) == ("aotcheck", G.NO_GRAD, v)
    from aotcheck.check.corpus import CallMode, all_cases
    by_call = {c.call: c for c in all_cases()}
    assert {m: V.Subject.of_case(c).grad_mode for m, c in by_call.items()} == {
        CallMode.GRAD: G.ENABLED, CallMode.NO_GRAD: G.NO_GRAD, CallMode.INFERENCE_MODE: G.INFERENCE_MODE,
        CallMode.SAVED_TENSORS_HOOKS: G.ENABLED, CallMode.AUTOCAST: G.ENABLED}


def test_torch_autograd_cache_has_no_stale_hit_on_a_small_case():
    """torch 2.13's AOTAutogradCache (torch.compile aot_eager, Dynamo reset between A and B):
    grad mode and requires_grad miss; changed values hit; none is stale."""
    subject = V.Subject.from_source("torch.small", PROGRAM, grad_mode=G.NO_GRAD)
    vs = [V.Variation(K.GRAD_MODE, "", "enabled"), V.Variation(K.REQUIRES_GRAD, "input 0", "False"),
          V.Variation(K.VALUES, "", "changed", relevant=False)]
    run = V.run_subject(get_engine("torch"), subject, vs)
    assert run.a == "ok", run.a
    assert [r.verdict for r in run.results] == [V.OK_MISS, V.OK_MISS, V.OK_HIT], run.results


def test_planted_torch_key_bug_is_a_stale_hit_and_triage_names_it(monkeypatch):
    """Grad mode dropped from torch's AOTAutogradCache key (its details record grad mode as
    always enabled): the no_grad entry is served to a grad call, and the triage names grad
    mode, with the key details equal under A and B."""
    import torch._functorch._aot_autograd.autograd_cache as ac
    original = ac.AOTAutogradCacheDetails._record_runtime_state

    def without_grad_mode(self, gm):
        original(self, gm)
        self.grad_enabled = True
    monkeypatch.setattr(ac.AOTAutogradCacheDetails, "_record_runtime_state", without_grad_mode)
    subject = V.Subject.from_source("planted.torch_no_grad_entry", PROGRAM, grad_mode=G.NO_GRAD)
    v = V.Variation(K.GRAD_MODE, "", "enabled")
    (r,) = V.run_subject(get_engine("torch"), subject, [v]).results
    assert r.verdict == V.STALE_HIT, r
    t = key_triage.triage_variation("torch", subject, v)
    assert t.verdict == V.STALE_HIT and t.component == "signature.grad_enabled"
    assert t.key_equal is True and t.carrier == "grad_enabled", t


def test_fuzz_key_variations_find_a_planted_key_bug(monkeypatch, tmp_path):
    """``aotcheck fuzz`` draws key variations for generated programs: with the signature
    dropped from aotcheck's key, a program's entry is served under another grad mode or
    inputs, and the run reports a stage-"variation" STALE HIT with a key-variation reproducer
    that the triage replays."""
    from aotcheck.fuzz.runner import FuzzOptions, format_summary, fuzz
    original = key_module._common
    monkeypatch.setattr(key_module, "_common",
                        lambda sig, partitioner: {**original(sig, partitioner), "signature": "dropped"})
    from aotcheck.fuzz.strategies import ISSUE13_EXTENSIONS
    r = fuzz(FuzzOptions("aotcheck", examples=4, seed=5, cached=True, shrink=False, out=tmp_path,
                         key_variations=3, strategy_options={"extensions": ISSUE13_EXTENSIONS}))
    stale = [f for sig, f in r.findings.items() if sig.startswith("variation") and "STALE HIT" in sig]
    assert stale and r.variations >= 4, format_summary(r)
    repro = r.reproducers[next(s for s, f in r.findings.items() if f is stale[0])]
    assert is_repro(repro)
    t = key_triage.triage_repro(repro)
    assert t.verdict == V.STALE_HIT and t.component.startswith("signature."), t
    assert t.key_equal is True and t.carrier == "signature"


def test_torch_serves_an_entry_compiled_for_aliased_inputs_to_disjoint_ones():
    """A torch 2.13 AOTAutogradCache bug the variation pass found on the corpus: the key has no
    component for argument aliasing (its tensor metadata even zeroes the storage offset), so an
    entry compiled for ``(a, a[1:])`` is served to disjoint inputs of the same shapes and gives
    wrong values. Triage names the aliasing groups. (When torch fixes it, this fails: move it
    to the fixed findings.)"""
    from aotcheck.check.corpus import all_cases
    case = {c.id: c for c in all_cases()}["aliased_inputs.base_and_offset_slice_mutate_base"]
    subject = V.Subject.of_case(case)
    (v,) = [v for v in V.derive(subject, "torch") if v.kind == "aliasing"]
    assert v.b == "own storages"
    (r,) = V.run_subject(get_engine("torch"), subject, [v]).results
    assert r.verdict == V.STALE_HIT and r.divergences[0].check is Check.VALUES, r
    t = key_triage.triage_variation("torch", subject, v)
    assert t.component == "signature.groups" and t.key_equal is True, t


def test_a_subject_called_without_grad_always_gets_the_stale_direction():
    """NOTE [the stale direction]: ``grad_mode=enabled`` is added to a no_grad subject's picks,
    the rotation's own picks stay what they were, and a subject called with grad gets none."""
    subject = V.Subject.from_source("direction.no_grad", PROGRAM, grad_mode=G.NO_GRAD)
    every = V.derive(subject, "torch")
    for name in ("a", "b", "c", "d", "e", "f"):
        got = V.pick(every, name, 1)
        rotated = V._rotate(every, name, 1)
        assert V.Variation(K.GRAD_MODE, "", "enabled") in got, (name, got)
        assert got[-len(rotated):] == rotated and len(got) <= 2
    from aotcheck.check.corpus import CallMode, all_cases
    no_grad = [c for c in all_cases() if c.call in (CallMode.NO_GRAD, CallMode.INFERENCE_MODE)]
    assert len(no_grad) >= 5
    for c in no_grad:
        s = V.Subject.of_case(c)
        assert V.Variation(K.GRAD_MODE, "", "enabled") in V.pick(V.derive(s, "torch"), s.name, 1), c.id
    enabled = V.Subject.from_source("direction.enabled", PROGRAM)
    assert all(v.b != "enabled" for v in V.pick(V.derive(enabled, "torch"), "x", 1))


def test_judge_unkeyed_hit_only_for_call_state_and_only_where_every_graph_hit():
    ev = V.CacheEvents
    enabled = V.Subject.from_source("keyed.enabled", PROGRAM)
    no_grad = V.Subject.from_source("keyed.no_grad", PROGRAM, grad_mode=G.NO_GRAD)
    for kind in ("grad_mode", "autocast", "deterministic", "default_dtype", "config"):
        v = V.Variation(K(kind), "", "no_grad" if kind == "grad_mode" else "x")
        for engine in ("torch", "torch-inductor-lite"):
            assert V.changes_keyed_state(engine, enabled, v)
        assert not V.changes_keyed_state("aotcheck", enabled, v)
        assert not V.changes_keyed_state("torch-inductor", enabled, v)

        def verdict(events, divergences=(), keyed=True):
            return V.judge("s", "torch", v, events, list(divergences), keyed=keyed).verdict
        assert verdict(ev(hits=1)) == V.UNKEYED_HIT
        assert verdict(ev(hits=1), keyed=False) == V.OK_HIT
        assert verdict(ev(hits=1, misses=1)) == V.OK_MISS
        assert verdict(ev(misses=1)) == V.OK_MISS
        assert verdict(ev(hits=1), ["output 0 values"]) == V.STALE_HIT
    # grad mode: only where is_grad_enabled() differs (no_grad and inference_mode share a graph)
    assert not V.changes_keyed_state("torch", no_grad, V.Variation(K.GRAD_MODE, "", "inference_mode"))
    assert V.changes_keyed_state("torch", no_grad, V.Variation(K.GRAD_MODE, "", "enabled"))
    for v in (V.Variation(K.REQUIRES_GRAD, "input 0", "False"), V.Variation(K.STORAGE_OFFSET, "input 0", "1"),
              V.Variation(K.VALUES, "", "changed", relevant=False)):
        assert not V.changes_keyed_state("torch", enabled, v)
    assert V.UNKEYED_HIT in V.BAD


def test_planted_torch_autocast_bug_is_an_unkeyed_hit_where_no_op_autocasts(monkeypatch):
    """Autocast dropped from torch's key: the entry written without autocast is served under
    ``autocast(cpu, bfloat16)`` to a function with no autocast-eligible op, so it computes
    eager's values (no stale hit), but every graph hit across a change of autocast: UNKEYED
    HIT. Stock torch misses."""
    subject = V.Subject.from_source("unkeyed.autocast_entry", PROGRAM)
    v = V.Variation(K.AUTOCAST, "", "cpu:bfloat16")
    (r,) = V.run_subject(get_engine("torch"), subject, [v]).results
    assert r.verdict == V.OK_MISS, r
    import torch._functorch._aot_autograd.autograd_cache as ac
    original = ac.AOTAutogradCacheDetails._record_runtime_state

    def without_autocast(self, gm):
        original(self, gm)
        self.autocast_state = {}
    monkeypatch.setattr(ac.AOTAutogradCacheDetails, "_record_runtime_state", without_autocast)
    (r,) = V.run_subject(get_engine("torch"), subject, [v]).results
    assert r.verdict == V.UNKEYED_HIT and r.hits >= 1 and not r.divergences, r


@pytest.mark.parametrize("cold_fails_too", [True, False], ids=["engine_bug", "cache_bug"])
def test_a_hit_that_differs_is_stale_only_if_a_cold_compile_under_b_is_right(monkeypatch, cold_fails_too):
    """NOTE [a stale hit is the cache's fault]: the oracle is planted to report a divergence
    under B; when a cold compile under B (a fresh cache dir) reports the same one, the verdict
    is the engine's failure under B, else the served entry's: a STALE HIT."""
    from aotcheck.targets import conditions
    real = conditions.check_under
    b_runs = []

    def planted(subject, compiled, v):
        report = real(subject, compiled, v)
        if v is None:
            return report
        b_runs.append(v)
        if len(b_runs) == 1 or cold_fails_too:
            return dataclasses.replace(report, divergences=[_planted_values("planted")])
        return report
    monkeypatch.setattr(conditions, "check_under", planted)
    subject = V.Subject.from_source("values.planted", PROGRAM)
    (r,) = V.run_subject(get_engine("aotcheck"), subject,
                         [V.Variation(K.VALUES, "", "changed", relevant=False)]).results
    assert len(b_runs) == 2 and r.hits >= 1, r          # B hit, then the cold confirmation ran
    assert r.verdict == (V.FAILS_UNDER_B if cold_fails_too else V.STALE_HIT), r


SLICE_PROGRAM = """
import torch

def f(x):
    return x[:, :5] * 2

def make_inputs():
    from aotcheck.check.oracle import Inputs
    x = torch.randn(3, 8, requires_grad=True)
    return Inputs((x,), leaves=(x,))
"""


def _ignore_shape_guards(monkeypatch):
    """Plant mutant ``lookup-ignores-guards``: AOTAutogradCache's lookup takes an entry
    without evaluating its shape guards."""
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    monkeypatch.setattr(ShapeEnv, "evaluate_guards_expression", lambda self, code, args: True)


@pytest.mark.parametrize("engine", ["torch", "torch-inductor-lite"])
def test_sizes_outside_a_dynamic_entrys_guards_miss_and_a_lookup_ignoring_them_is_caught(
        monkeypatch, engine):
    """``dynamic_shape``: A compiled with dynamic shapes at width 8 (guard ``5 <= x.size()[1]``),
    B at width 4. Stock torch misses (the change of input that must miss); with the guard
    check planted away every graph hits: UNKEYED HIT under aot_eager, where the stale graph
    still computes eager's values, and STALE HIT or UNKEYED HIT under Inductor (lite)."""
    subject = V.Subject.from_source("guards.slice_past_the_end", SLICE_PROGRAM)
    (v,) = [v for v in V.derive(subject, engine) if v.kind == "dynamic_shape"]
    assert (v.target, v.b) == ("inputs 0", "8->4")
    (r,) = V.run_subject(get_engine(engine), subject, [v]).results
    assert r.verdict == V.OK_MISS and r.misses >= 1, r
    _ignore_shape_guards(monkeypatch)
    (r,) = V.run_subject(get_engine(engine), subject, [v]).results
    assert r.verdict in ((V.UNKEYED_HIT,) if engine == "torch" else (V.UNKEYED_HIT, V.STALE_HIT)), r
    assert r.hits >= 1 and r.misses == 0, r
    if r.verdict == V.UNKEYED_HIT:
        assert "5 <= x.size()[1]" in r.reason, r.reason


def test_sizes_inside_a_dynamic_entrys_guards_hit():
    """B inside A's guards (every size free: an elementwise program) hits the dynamic entry
    and equals eager; a subject no torch engine can vary by size gets no ``dynamic_shape``."""
    subject = V.Subject.from_source("guards.elementwise", PROGRAM.replace("3, 4", "5, 6"))
    (v,) = [v for v in V.derive(subject, "torch") if v.kind == "dynamic_shape"]
    assert (v.target, v.b) == ("inputs 0,1", "5->3,6->4")
    (r,) = V.run_subject(get_engine("torch"), subject, [v]).results
    assert r.verdict == V.OK_HIT, r
    assert not [v for v in V.derive(subject, "aotcheck") if v.kind == "dynamic_shape"]
    small = PROGRAM.replace("3, 4", "2, 3")
    assert not [v for v in V.derive(V.Subject.from_source("s", small), "torch") if v.kind == "dynamic_shape"]


def test_a_subject_that_cannot_compile_with_dynamic_shapes_is_not_applicable(monkeypatch):
    """A's dynamic compile raising makes the variation not apply (refused, with the reason),
    never a failure of the cache."""
    eng = get_engine("torch")

    def broken(fn, cache_dir):
        raise RuntimeError("planted: no dynamic shapes here")
    monkeypatch.setattr(eng, "compile_dynamic", broken)
    subject = V.Subject.from_source("guards.refused", SLICE_PROGRAM)
    (r,) = V.run_subject(eng, subject, [V.Variation(K.DYNAMIC_SHAPE, "inputs 0", "8->4")]).results
    assert r.verdict == V.REFUSED and "planted: no dynamic shapes here" in r.reason, r


def test_a_values_variation_is_a_lost_hit_only_where_a_graph_missed():
    """``values`` changes nothing a graph depends on: a miss is a LOST HIT; where no graph was
    looked up at all (none compiled, every one bypassed: the check's cold run wrote no entry)
    there is nothing that could have hit (found on real_world.i98835 under inductor-lite)."""
    ev = V.CacheEvents
    v = V.Variation(K.VALUES, "", "changed", relevant=False)

    def verdict(events):
        return V.judge("s", "torch", v, events, []).verdict
    assert verdict(ev(misses=1)) == V.LOST_HIT
    assert verdict(ev(hits=1, misses=1)) == V.LOST_HIT
    assert verdict(ev(bypasses=1)) == V.OK_MISS
    assert verdict(ev()) == V.OK_MISS
    assert verdict(ev(hits=2)) == V.OK_HIT


# fuzz seed 1's key variations: programs whose result under no_grad and under inference_mode
# differ (a view of a Parameter made inside requires grad under no_grad, not under inference
# mode, so retain_grad() raises only there; a write in an enable_grad region is recorded by
# autograd under no_grad only)
GRAD_MODE_PROGRAMS = {
    "retain_grad_of_a_view_of_a_parameter_made_inside": """
import torch

def f(a0):
    p = torch.nn.Parameter(torch.randn((2,), dtype=torch.float64))
    v = p.reshape((2,))
    v.retain_grad()
    return (p, a0 * 2)

def make_inputs():
    from aotcheck.check.oracle import Inputs
    x = torch.randn(3, requires_grad=True)
    return Inputs((x,), leaves=(x,))
""",
    "write_of_an_aliased_view_in_an_enable_grad_region": """
import torch

def f(a0, a1):
    with torch.no_grad():
        with torch.enable_grad():
            a1.fill_(2.0)
    return (a0 * 2,)

def make_inputs():
    from aotcheck.check.oracle import Inputs
    l0 = torch.randn(2, 2, 1, 2, requires_grad=True)
    b0 = l0.clone()
    return Inputs((b0[0], b0[1]), leaves=(l0,))
""",
}


# (under inference_mode the first program raises, in eager as compiled: no entry to serve)
_GRAD_MODE_AS = [(n, a) for n in sorted(GRAD_MODE_PROGRAMS) for a in G
                 if (n, a) != ("retain_grad_of_a_view_of_a_parameter_made_inside", "inference_mode")]


@pytest.mark.parametrize("name,a", _GRAD_MODE_AS, ids=[f"{n}-{a}" for n, a in _GRAD_MODE_AS])
def test_every_grad_mode_change_misses_and_matches_eager(name, a):
    """The key's grad-mode component (grad_enabled and inference_mode in the signature)
    separates all three modes: an entry compiled under one is never served under another,
    and each B's own compile equals eager under B (no_grad and inference_mode give these
    programs different results, so a shared entry would be wrong for one of them)."""
    subject = V.Subject.from_source(f"grad_modes.{name}.{a}", GRAD_MODE_PROGRAMS[name], grad_mode=a)
    vs = [v for v in V.derive(subject, "aotcheck") if v.kind == "grad_mode"]
    assert sorted(v.b for v in vs) == sorted(m for m in G if m is not a)
    run = V.run_subject(get_engine("aotcheck"), subject, vs)
    assert run.a == "ok", run.a
    assert [r.verdict for r in run.results] == [V.OK_MISS] * len(vs), run.results
    assert all(r.hits == 0 and r.misses >= 1 for r in run.results), run.results


# ---------------------------------------------------------------- numbers past the function, own kinds, A wrong

_HELPER_SCALE = [2.0]
_HELPER_CFG = {"gain": 0.5, "name": "x"}


@torch._dynamo.allow_in_graph
def _scaled_by_a_helper(x):
    return x * _HELPER_SCALE[0] + _HELPER_CFG["gain"]


class _ShiftByGlobal(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x + _HELPER_CFG["gain"]

    @staticmethod
    def backward(ctx, g):
        return g


def test_numbers_read_past_the_function_are_found_and_put_back():
    """NOTE [numbers the compiled code reads]: a list element read by an allow_in_graph helper
    inside a checkpoint body, a dict element read by a custom Function's forward, a closure's
    dict; a string in the dict is no number. A global variation sets the number for the run
    and puts it back."""
    from aotcheck.targets.conditions import numeric_reads, state_context
    cfg = {"k": 3}

    def f(x):
        y = torch.utils.checkpoint.checkpoint(lambda t: _scaled_by_a_helper(t), x, use_reentrant=False)
        return _ShiftByGlobal.apply(y) * cfg["k"]
    reads = {(r.kind, r.label): r.value for r in numeric_reads(f)}
    assert reads[("global", "_HELPER_SCALE[0]@_scaled_by_a_helper")] == 2.0
    gains = [label for kind, label in reads if label.startswith("_HELPER_CFG['gain']@")]
    assert len(gains) == 1, reads          # one place, named by the first reader found
    assert ("closure", "cfg['k']") in reads
    assert not any("name" in label for _, label in reads)
    from aotcheck.check.oracle import Inputs
    subject = V.Subject("helper", f, lambda: Inputs((torch.randn(3, requires_grad=True),)))
    v = next(v for v in V.derive(subject, "aotcheck") if v.target == "_HELPER_SCALE[0]@_scaled_by_a_helper")
    with state_context(subject, v):
        assert _HELPER_SCALE[0] == float(v.b) != 2.0
    assert _HELPER_SCALE == [2.0]


def test_aotchecks_cache_misses_when_a_helpers_number_changes():
    """The variation against aotcheck's cache: the helper's number changed misses and equals
    eager under B (torch's AOTAutogradCache serves the stale entry: findings C4)."""
    def f(x):
        return torch.utils.checkpoint.checkpoint(_scaled_by_a_helper, x, use_reentrant=False)
    from aotcheck.check.oracle import Inputs
    subject = V.Subject("helper_global", f, lambda: Inputs((torch.randn(4, requires_grad=True),)))
    v = next(v for v in V.derive(subject, "aotcheck") if v.kind == "global" and "_HELPER_SCALE" in v.target)
    (r,) = V.run_subject(get_engine("aotcheck"), subject, [v]).results
    assert r.verdict == V.OK_MISS, r


def test_a_subjects_own_kinds_take_its_draws():
    """NOTE [the subject's own kinds]: with one draw, every corpus subject with states draws one
    of its own kinds (the rotation alone drew a state for none of them); a subject without any
    draws none of them."""
    from aotcheck.check.corpus import all_cases
    cases = {c.id: c for c in all_cases()}
    with_states = [V.Subject.of_case(c) for c in cases.values() if c.states]
    assert len(with_states) >= 8
    drawn = []
    for s in with_states:
        picked = [v for v in V.pick(V.derive(s, "torch"), s.name, 1, s.size_guards) if v.kind != "grad_mode"]
        assert len(picked) == 1 and picked[0].kind in V.OWN_KINDS, (s.name, picked)
        drawn.append(picked[0].kind)
    assert "state" in drawn
    plain = V.Subject.of_case(cases["basics.scalar_args"])
    assert not {v.kind for v in V.pick(V.derive(plain, "torch"), plain.name, 1)} & set(V.OWN_KINDS) - {"scalar"}


@pytest.mark.parametrize("same", [True, False])
def test_a_subject_the_engine_gets_wrong_is_judged_against_b_cold(monkeypatch, same):
    """NOTE [a variation of a subject the engine gets wrong]: A differs from eager (planted), so
    B over A's entries is compared with B's own cold compile: equal divergences are ok, other
    ones are a STALE HIT."""
    from aotcheck.targets import conditions
    real = conditions.check_under
    calls = []

    def planted(subject, compiled, v):
        report = real(subject, compiled, v)
        calls.append(v)
        text = "planted" if (v is None or same or len(calls) != 2) else "other"
        return dataclasses.replace(report, divergences=[_planted_values(text)])
    monkeypatch.setattr(conditions, "check_under", planted)
    subject = V.Subject.from_source("wrong.planted", PROGRAM)
    run = V.run_subject(get_engine("aotcheck"), subject, [V.Variation(K.VALUES, "", "changed", relevant=False)])
    assert run.a.startswith(V.A_DIFFERS)
    (r,) = run.results
    assert r.hits >= 1
    assert r.verdict == (V.OK_HIT if same else V.STALE_HIT), r

"""Engine tests: golden printouts of each stage, signatures and recompiles, errors on bad
input, value specialization, the lazy backward, metadata round trips, trace modes."""
import functools
import json

import expecttest
import pytest
import torch
from hypothesis import given, settings, strategies as st

import aotcheck
from aotcheck.engine.analyze import InputInfo, MutationInfo, OutputInfo, OutputKind, ViewMutationMeta
from aotcheck.engine.capture.facts import (Candidate, HookSite, MemberFacts, MetadataOp, NewLeaf, RetainKind, Retained,
                                          StorageSource)
from aotcheck.engine.capture.mode import TraceMode
from aotcheck.engine.printer import format_graph


def _explain(fn, *args):
    return aotcheck.explain(fn, *args, print_result=False).stages


class TestGolden(expecttest.TestCase):
    def test_inference_view_of_input(self):
        x = torch.randn(2, 3, requires_grad=True)
        s = _explain(lambda x: x.view(-1), x)
        self.assertEqual(s.decision.mode, "inference")
        self.assertExpectedInline(s.decision.reason, """no output requires grad except aliases of arguments, and no argument that requires grad is mutated outside no_grad""")
        self.assertExpectedInline(s.meta.format(), """\
input 0: not mutated; requires_grad, leaf
output 0: alias_of_input 0, requires_grad""")

    def test_custom_function_view_and_requires_grad_(self):
        """NOTE [custom Function views], NOTE [requires_grad_ on an argument],
        NOTE [new grad leaves] and NOTE [backward mutations] as the metadata and the joint say
        them."""
        from aotcheck.check.corpus.custom_function import (HalfGradIdentity,
                                                                 ScaleBackwardMutatesSaved)

        def f(x, y, z):
            z.requires_grad_()
            v = y.view(-1)
            v.requires_grad_()
            return HalfGradIdentity.apply(x), ScaleBackwardMutatesSaved.apply(x, y), v * z.sum()
        s = _explain(f, torch.randn(2, 3, requires_grad=True), torch.randn(2, 3), torch.randn(2))
        self.assertExpectedInline(f"{s.decision.mode}: {s.decision.reason}", """training: output 0 (alias_of_input) requires grad""")
        self.assertExpectedInline(s.meta.format(), """\
input 0: not mutated; requires_grad, leaf
input 1: not mutated; no grad, leaf
input 2: requires_grad_(True) called; no grad, leaf
output 0: alias_of_input 0 (custom Function view; gradient through graph output 2), requires_grad
output 1: fresh (graph output 0), requires_grad
output 2: fresh (graph output 1), requires_grad""")
        self.assertExpectedInline(repr((s.meta.new_leaves, s.joint.backward_mutations, s.joint.grad_inputs,
                                        s.joint.grad_reach)), """((NewLeaf(kind=<NewLeafKind.VIEW: 'view'>, source=1, shape=(6,), stride=(1,), offset=0, dtype='float32'),), ((1, True, (2, 3), (3, 1), 0),), (0, 2, 3), ((0, 1), (2,), (2,)))""")

    def test_training_mutation_only(self):
        def f(a):
            a.mul_(2)
            return ()
        leaf = torch.randn(3, requires_grad=True)
        s = _explain(f, leaf.clone())
        self.assertExpectedInline(f"{s.decision.mode}: {s.decision.reason}", """training: argument 0 requires grad and its data is mutated outside no_grad, so gradients flow through the mutation (PyTorch PR #128229)""")
        self.assertExpectedInline(format_graph(s.partitioned.forward, "forward"), """\
def forward(arg0_1: f32[3]):
    clone: f32[3] = aten.clone.default(arg0_1)
    mul: f32[3] = aten.mul.Tensor(clone, 2)
    return (mul,)""")
        self.assertExpectedInline(format_graph(s.partitioned.backward, "backward"), """\
def backward(tangents_1: f32[3]):
    mul_1: f32[3] = aten.mul.Tensor(tangents_1, 2)
    return (mul_1,)""")

    def test_no_grad_region_is_tagged(self):
        def f(x):
            with torch.no_grad():
                y = x * 2
            return y + x
        s = _explain(f, torch.randn(3, requires_grad=True))
        self.assertExpectedInline(format_graph(s.captured.graph, "captured"), """\
def captured(arg0_1: f32[3]):
    mul: f32[3] = aten.mul.Tensor(arg0_1, 2)  # no_grad
    add: f32[3] = aten.add.Tensor(mul, arg0_1)
    return (add,)""")

    def test_metadata_mutation_saved_for_backward(self):
        def f(x, y):
            x.t_()
            return x * y
        y = torch.randn(3, 2, requires_grad=True)
        s = _explain(f, torch.randn(2, 3), y)
        self.assertExpectedInline(s.meta.format(), """\
input 0: metadata mutated (under no_grad); no grad, leaf
input 1: not mutated; requires_grad, leaf
output 0: fresh (graph output 0), requires_grad""")
        self.assertExpectedInline(format_graph(s.partitioned.forward, "forward"), """\
def forward(arg0_1: f32[2, 3], arg1_1: f32[3, 2]):
    t: f32[3, 2] = aten.t.default(arg0_1)
    mul: f32[3, 2] = aten.mul.Tensor(t, arg1_1)
    clone_default: f32[3, 2] = aten.clone.default(t)
    return (mul, clone_default)""")

    def test_aliased_inputs_use_a_synthetic_base(self):
        def f(a, b):
            a.add_(1)
            return b * 2
        base = torch.randn(4, 3)
        s = _explain(f, base[:2], base[1:])
        self.assertExpectedInline(format_graph(s.captured.graph, "captured"), """\
def captured(arg0_1: f32[4, 3]):
    as_strided: f32[2, 3] = aten.as_strided.default(arg0_1, [2, 3], [3, 1], 0)
    add: f32[2, 3] = aten.add.Tensor(as_strided, 1)
    as_strided_scatter: f32[4, 3] = aten.as_strided_scatter.default(arg0_1, add, [2, 3], [3, 1], 0)
    as_strided_3: f32[3, 3] = aten.as_strided.default(as_strided_scatter, [3, 3], [3, 1], 3)
    mul: f32[3, 3] = aten.mul.Tensor(as_strided_3, 2)
    return (as_strided_scatter, mul)""")


def test_recompiles_on_new_signature_and_reuses_otherwise():
    cf = aotcheck.aot_function(lambda x, s: x * s)
    cf(torch.randn(3), 2.0)
    cf(torch.randn(3), 2.0)
    assert cf.num_compiled == 1
    cf(torch.randn(3), 3.0)                       # scalar value
    cf(torch.randn(4), 2.0)                       # shape
    cf(torch.randn(3, requires_grad=True), 2.0)   # requires_grad
    cf(torch.randn(6)[::2], 2.0)                  # stride
    with torch.no_grad():
        cf(torch.randn(3), 2.0)                   # grad mode
    assert cf.num_compiled == 6


def test_aliasing_is_part_of_the_signature():
    def f(a, b):
        a.add_(1)
        return a + b
    cf = aotcheck.aot_function(f)
    x = torch.zeros(3)
    out_alias = cf(x, x)
    y, z = torch.zeros(3), torch.zeros(3)
    out_disjoint = cf(y, z)
    assert cf.num_compiled == 2
    assert out_alias.tolist() == [2.0, 2.0, 2.0]
    assert out_disjoint.tolist() == [1.0, 1.0, 1.0]


@functools.lru_cache(maxsize=None)
def _cached_constant():
    return torch.ones(3)


_cached_constant()          # made now, outside any trace


def _view_then_transpose_then_mutate(a):
    v = a.reshape((8,))
    a.transpose_(0, 2)
    v.mul_(-1.0)
    return a.view((2, 2, 2, 1))


def _view_then_base_squeezed_then_mutated(a):
    v = a[0]
    a.squeeze_()
    a.mul_(torch.arange(3.0))
    return v * 1


def _view_of_intermediate_transposed_then_mutated(x):
    y = x * 2
    v = y[0:2, 0:2]
    v.t_()
    v.mul_(torch.arange(4.0).view(2, 2))
    return y


@pytest.mark.parametrize("fn,arg,err,text", [
    (lambda x: x @ torch.ones(5, 2), torch.randn(3), aotcheck.TraceError, "same reduction dim"),
    (lambda x: x, object(), aotcheck.UnsupportedInputError, "supports tensors"),
    (lambda x: x, torch.randn(3).to_sparse(), aotcheck.UnsupportedInputError, "strided"),
    (lambda x: {1, 2}, torch.randn(3), aotcheck.UnsupportedInputError, "output leaf 0 has type set"),
    # a tensor held where the walk cannot reach (an lru_cache's C cache; closures, globals and
    # module parameters are lifted: tests/test_lift.py)
    (lambda x: x * _cached_constant(), torch.randn(3), aotcheck.UnsupportedInputError,
     "not one of its arguments"),
])
def test_bad_input_is_a_named_error(fn, arg, err, text):
    with pytest.raises(err, match=text):
        aotcheck.aot_function(fn)(arg)


def test_value_dependent_programs_are_specialized_and_guarded(tmp_path):
    # NOTE [value specialization]: control flow on a value, .item(), a data-dependent shape
    # and equal() are traced on the call's values, and a guard recompiles when they change
    def branch(x):
        return x * 2 if x.sum() > 0 else x.exp()

    def item(x):
        return x * x.max().item()

    def shape(x):
        return x[x > 0].sum(0, keepdim=True) * x.nonzero().shape[0]

    def equal(x, y):
        return x + 1 if torch.equal(x, y) else x - 1

    def split(x, i):        # tensor_split and tolist() read memory in C++: read through item()
        return torch.stack([t.sum() for t in x.tensor_split(i)]) * len(i.tolist())

    cases = [(branch, [(torch.tensor([1., 2.]),), (torch.tensor([-1., -2.]),)]),
             (item, [(torch.tensor([1., 3.]),), (torch.tensor([2., 1.]),)]),
             (shape, [(torch.tensor([1., -2., 3.]),), (torch.tensor([-1., -2., 3.]),)]),
             (equal, [(torch.ones(2), torch.ones(2)), (torch.ones(2), torch.zeros(2))]),
             (split, [(torch.arange(6.), torch.tensor([1, 3])), (torch.arange(6.), torch.tensor([2]))])]
    for fn, calls in cases:
        for requires_grad in (False, True):
            cf = aotcheck.aot_function(fn)
            for args in calls + calls:
                args = [a.clone().requires_grad_(requires_grad and a.is_floating_point())
                        for a in args]
                want, got = fn(*args), cf(*args)
                assert torch.equal(want, got), fn.__name__
                if requires_grad:
                    gw = torch.autograd.grad(want.sum(), args[0])
                    gg = torch.autograd.grad(got.sum(), args[0])
                    assert torch.equal(gw[0], gg[0]), fn.__name__
    # a stored specialization whose guard fails is traced again and stored in its place
    x1, x2 = torch.tensor([1., -2., 3.]), torch.tensor([-1., -2., 3.])
    aotcheck.aot_function(shape, cache=str(tmp_path))(x1)
    before = dict(aotcheck.counters)
    cf = aotcheck.aot_function(shape, cache=str(tmp_path))
    assert torch.equal(cf(x2), shape(x2)) and torch.equal(cf(x1), shape(x1))
    assert aotcheck.counters["hits"] == before["hits"] + 1
    assert aotcheck.counters["saves"] == before["saves"] + 2

    # a draw made before the guard that fails is drawn again, from the same state
    def drawn(x):
        noise = torch.rand(3)
        return x[x > 0] + noise.sum()
    cf = aotcheck.aot_function(drawn)
    cf(x1)
    state = torch.random.get_rng_state()
    want = drawn(x2)
    want_state = torch.random.get_rng_state()
    torch.random.set_rng_state(state)
    assert torch.equal(cf(x2), want) and torch.equal(torch.random.get_rng_state(), want_state)


def _view_replay_from_fuzz(a0, a1):
    """From aotcheck fuzz (seed 2026): an in-place metadata change on a view, whose grad_fn
    autograd rebuilds after a mutation; under functionalization autograd replays the view's
    creation ops and gets the shape wrong (functorch's aot_function raises 'invalid
    gradient' too)."""
    v0 = a1.transpose(0, 2)
    v0.unsqueeze_(2)
    a1.zero_()
    a1.transpose_(0, 2)
    v0.copy_(a0.split(1, 1)[3])
    return ()


def _nonleaf(*shape):
    leaf = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    return leaf.clone(), leaf


@pytest.mark.parametrize("fn,make", [
    (_view_then_transpose_then_mutate, lambda: _nonleaf(1, 4, 2)),
    (_view_of_intermediate_transposed_then_mutated, lambda: (lambda t: (t, t))(
        torch.randn(3, 3, dtype=torch.float64, requires_grad=True))),
    (_view_then_base_squeezed_then_mutated, lambda: _nonleaf(1, 3)),
    (lambda x: x.view(-1).as_strided((1,), (1,), 0).add_(1), lambda: _nonleaf(1, 4, 2)),
    (lambda x: (x.view(-1).as_strided((2,), (2,), 1).mul_(3), x)[1] * 1, lambda: _nonleaf(1, 4, 2)),
], ids=["view_then_transpose", "intermediate_transposed", "base_squeezed", "as_strided_of_view",
        "as_strided_of_view_grad"])
def test_view_limits_of_functionalization_match_eager(fn, make):
    """Programs the engine used to refuse by name (the view limits of functionalization, once
    errors.DOCUMENTED_LIMITS): traced the second way now
    (NOTE [plain trace, then functionalize]), they give eager's values, mutations and gradients."""
    from aotcheck.check.oracle import Inputs, check

    def inputs():
        torch.manual_seed(0)
        arg, leaf = make()
        return Inputs((arg,), leaves=(leaf,))
    r = check(fn, aotcheck.aot_function(fn), inputs)
    assert r.ok, r.divergences


def test_view_replay_from_fuzz_matches_eager():
    from aotcheck.check.oracle import Inputs, check

    def inputs():
        torch.manual_seed(0)
        l0 = torch.randn(4, 4, 1, dtype=torch.float64, requires_grad=True)
        l1 = torch.randn(1, 3, 4, dtype=torch.float64, requires_grad=True)
        return Inputs((l0.clone(), l1.clone().transpose(-2, -1)), leaves=(l0, l1))
    r = check(_view_replay_from_fuzz, aotcheck.aot_function(_view_replay_from_fuzz), inputs)
    assert r.ok, r.divergences


def test_documented_limits_are_empty():
    """Issue 11, class 10: no refusal of a program that eager runs remains documented."""
    from aotcheck.errors import DOCUMENTED_LIMITS
    assert DOCUMENTED_LIMITS == ()


def test_squeeze_or_unsqueeze_of_a_view_then_mutation_is_compiled():
    """Not refused: a view's own squeeze_/unsqueeze_ keeps its elements in order, so the
    replay limit cannot make its gradient wrong (compare _view_then_base_squeezed_then_mutated)."""
    from aotcheck.check.oracle import Inputs, check

    def f(x):
        y = x * 2
        v = y[0:1]
        v.squeeze_(0)
        v.mul_(torch.arange(3.0))
        w = y[:, 1]
        w.unsqueeze_(0)
        y.mul_(2)
        return y, w * torch.arange(3.0)

    def make():
        x = torch.randn(3, 3, generator=torch.Generator().manual_seed(0)).requires_grad_()
        return Inputs((x,), leaves=(x,))
    report = check(f, aotcheck.aot_function(f), make)
    assert report.ok, report.divergences


def test_errors_are_runtime_errors_too():
    assert issubclass(aotcheck.AotcheckError, RuntimeError)


def test_double_backward_is_a_named_error():
    x = torch.randn(3, requires_grad=True)
    y = aotcheck.aot_function(lambda x: (x * x).sum())(x)
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    with pytest.raises(aotcheck.DoubleBackwardError, match="first-order"):
        g.sum().backward()


def test_unknown_partitioner():
    with pytest.raises(aotcheck.AotcheckError, match="supported: \\['default', 'mincut'\\]"):
        aotcheck.aot_function(lambda x: x, partitioner="nope")


def test_backward_graph_is_built_lazily():
    cf = aotcheck.aot_function(lambda x: (x.sin() * 2).sum())
    x = torch.randn(4, requires_grad=True)
    y = cf(x)
    (art,) = cf._artifacts.values()
    assert art._backward is None
    y.backward()
    assert art._backward is not None
    assert torch.allclose(x.grad, 2 * x.cos())


_names = st.sampled_from(list(OutputKind))


_ints = st.none() | st.integers(0, 5)


_dims = st.lists(st.integers(0, 9), max_size=3).map(tuple)


_dtypes = st.sampled_from(["float32", "float64", "int64", "bool"])


_sources = st.one_of(st.just(StorageSource()), st.just(StorageSource.made_inside()),
                     st.integers(0, 5).map(StorageSource.of_placeholder))


_plain = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-9, 9), st.text(max_size=3)),
                      lambda inner: st.lists(inner, max_size=3).map(tuple), max_leaves=6)


_candidates = st.builds(Candidate, _dims, _dtypes, st.booleans(), _dims, st.integers(0, 9))


_members = st.builds(MemberFacts, st.integers(0, 5), _dims, _dims, st.integers(0, 9), _sources, _ints)


_ops = st.builds(MetadataOp, st.sampled_from(["placeholder", "leaf"]), st.integers(0, 5),
                 st.sampled_from(["t_", "squeeze_", "resize_", "requires_grad_"]),
                 st.lists(_plain, max_size=3).map(tuple),
                 st.lists(st.tuples(st.text(max_size=3), _plain), max_size=2).map(tuple), st.booleans())


_new_leaves = st.builds(NewLeaf, st.sampled_from(["view", "fresh", "argument"]), _ints, _dims, _dims,
                        st.integers(0, 9), _dtypes)


_modes = st.builds(TraceMode, st.sampled_from(["functional", "plain"]), st.booleans(), st.booleans(),
                   st.lists(st.integers(0, 5), max_size=3).map(tuple), st.text(max_size=20))


_mutations = st.builds(MutationInfo, st.integers(0, 5), st.booleans(), st.booleans(), st.booleans(),
                       _ints, _dims, _dims, st.integers(0, 9), _ints, _sources, _ints, _ints)


_retained = st.builds(Retained, st.sampled_from(list(RetainKind)), st.integers(0, 5), _ints)


_hooks = st.builds(HookSite, _ints, st.booleans(), _ints)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()), max_size=4),
       st.lists(st.tuples(_names, _ints, st.lists(st.integers(0, 9), max_size=3)), max_size=4),
       st.lists(_mutations, max_size=3).map(tuple), st.lists(_members, max_size=3).map(tuple),
       st.lists(_candidates, max_size=3).map(tuple), st.lists(_ops, max_size=3).map(tuple),
       st.lists(_new_leaves, max_size=3).map(tuple), _modes,
       st.lists(_retained, max_size=3).map(tuple), st.lists(_hooks, max_size=3).map(tuple))
def test_metadata_round_trips_through_json(ins, outs, mutations, members, candidates, ops, new_leaves,
                                           mode, retained, hooks):
    meta = ViewMutationMeta(
        inputs=tuple(InputInfo(i, True, a, b, c) for i, (a, b, c) in enumerate(ins)),
        outputs=tuple(OutputInfo(k, kind, src, shape=tuple(shape)) for k, (kind, src, shape) in enumerate(outs)),
        mutations=mutations, member_metadata=members, intermediate_bases=(), candidates=candidates,
        out_tree="*", metadata_ops=ops, new_leaves=new_leaves, trace_mode=mode,
        retained=retained, hooks=hooks)
    text = meta.to_json()
    json.loads(text)
    assert ViewMutationMeta.from_json(text) == meta


@pytest.mark.parametrize("cached", [False, True])
def test_saved_tensor_modified_in_place_raises_eagers_error_at_backward(cached, tmp_path):
    """NOTE [a saved tensor modified in place]: eager's forward returns, and its backward raises
    'modified by an inplace operation' (with eager's message); so does the compiled function,
    cold and from the cache, and a caller who never calls backward gets eager's outputs."""
    def f(x):
        y = x * 1
        z = y.sin()
        y.mul_(2)
        return z, y
    x = torch.randn(3, requires_grad=True)
    z, y = f(x)
    with pytest.raises(RuntimeError) as eager:
        z.sum().backward()
    cache = str(tmp_path) if cached else None
    if cached:
        aotcheck.aot_function(f, cache=cache)(x.detach().requires_grad_())
    cz, cy = aotcheck.aot_function(f, cache=cache)(x)
    assert torch.equal(cz, z) and torch.equal(cy, y)
    with pytest.raises(RuntimeError) as compiled:
        cz.sum().backward()
    assert str(compiled.value).split(" Hint:")[0] == str(eager.value).split(" Hint:")[0]


def test_missing_derivative_raises_at_backward_as_in_eager(tmp_path):
    """Issue 11, class 11: acosh_ has no derivative. Eager runs the forward and raises at
    .backward(); the compiled function must do the same (cold, and from the cache, where the
    error travels in the metadata), not refuse at compile time."""
    from aotcheck.check.oracle import Inputs, check

    def f(x):
        y = x * 1
        y.acosh_()
        return y * 2

    def inputs():
        torch.manual_seed(0)
        leaf = (torch.rand(3, dtype=torch.float64) + 1.5).requires_grad_()
        return Inputs((leaf,), leaves=(leaf,))
    cf = aotcheck.aot_function(f)
    out = cf(inputs().args[0])
    with pytest.raises(NotImplementedError, match="derivative for 'inplace version of acosh'"):
        out.sum().backward()
    assert check(f, aotcheck.aot_function(f), inputs).ok


DEADLOCK_PROGRAM = '''
import torch, aotcheck

class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2

def f(x):
    y = x * 1
    v = y[0]
    y.add_(1)               # v's grad_fn is regenerated when Double.apply reads it
    return Double.apply(v)

x = torch.randn(2, 3, requires_grad=True)
out = aotcheck.aot_function(f)(x)
out.sum().backward()
ref = x.detach().clone().requires_grad_()
f(ref).sum().backward()
assert torch.allclose(out, f(x)) and torch.allclose(x.grad, ref.grad)
print("ok")
'''


def test_custom_function_on_a_regenerated_view_does_not_deadlock(tmp_path):
    """Found by the fuzzer (seed 11, custom_function extension): autograd regenerates a view's
    grad_fn while it holds the view's autograd lock and resets its _backward_hooks through
    Python; the recorder's TorchFunctionMode saw that setattr and read .is_leaf, which takes
    the same lock: the process hung for good. Run in a subprocess so a regression fails
    instead of hanging the suite."""
    import subprocess
    import sys
    script = tmp_path / "deadlock.py"
    script.write_text(DEADLOCK_PROGRAM)
    try:
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("aot_function deadlocked on a custom Function applied to a regenerated view")
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


def test_a_state_change_between_calls_is_seen_after_the_fingerprint_shortcut():
    """AotFunction._state reuses the last digest while the walked state data is equal; a
    closure value rebound between calls must still give a new digest and a new graph."""
    k = 2.0

    def f(x):
        return x * k

    g = aotcheck.aot_function(f)
    x = torch.randn(3)
    assert torch.equal(g(x), x * 2.0) and torch.equal(g(x), x * 2.0)
    k = 3.0
    assert torch.equal(g(x), x * 3.0)
    k = 2.0
    assert torch.equal(g(x), x * 2.0)


def test_trace_mode_says_which_way_and_why_and_is_kept_in_the_cache(tmp_path):
    """The capture's way is one record with its reason (capture/mode.py): the first way by
    default; the plain way when the flag asks for it; a synthetic base when aliased arguments
    are mutated. It is in the metadata, so a cache hit gives it back."""
    from aotcheck import flags

    def f(a, b):
        a.add_(1)
        return a * b
    base = torch.randn(4)
    first = aotcheck.explain(f, base[:2], base[1:3], print_result=False).stages.meta.trace_mode
    assert (first.way, first.synthetic) == ("functional", (0,)), first
    assert "synthetic base" in first.format()
    with flags.overridden(flags.TRACE_PLAIN, True):
        x = torch.randn(3, requires_grad=True)
        cold = aotcheck.aot_function(lambda x: x.sin() * 2, cache=str(tmp_path))
        cold(x)
        before = dict(aotcheck.counters)
        hit = aotcheck.aot_function(lambda x: x.sin() * 2, cache=str(tmp_path))
        hit(x)
        assert aotcheck.counters["hits"] == before["hits"] + 1
    (cold_art,), (hit_art,) = cold._artifacts.values(), hit._artifacts.values()
    assert hit_art.meta.trace_mode == cold_art.meta.trace_mode
    assert hit_art.meta.trace_mode.format() == \
        "way: plain; the trace_plain flag asks for the plain way"


# Corpus cases called under a changed condition (the key-variation pass's B), compared with
# eager under the same condition: each pair was a divergence that pass found.
_VARIATION_FIXES = [
    # a non-leaf argument's views under no_grad/inference_mode require grad, as their base does
    ("mutation_autograd.mutate_nonleaf_return_view", ("grad_mode", "", "no_grad")),
    ("mutation_autograd.mutate_nonleaf_return_view", ("grad_mode", "", "inference_mode")),
    ("alias_of_input.views_of_transposed_grad_input", ("grad_mode", "", "inference_mode")),
    ("alias_of_input.views_of_transposed_grad_input", ("grad_mode", "", "no_grad")),
    # an intermediate made in the caller's inference mode, then set_() onto an argument's
    # storage (or the argument onto it), is an inference tensor: eager refuses writing it
    ("input_mutation.set_an_aliased_argument_onto_a_new_storage", ("grad_mode", "", "inference_mode")),
    ("metadata_mutation.fuzz_argument_set_onto_an_element_of_an_intermediate",
     ("grad_mode", "", "inference_mode")),
    ("alias_of_input.fuzz_intermediate_set_onto_argument_returned", ("grad_mode", "", "inference_mode")),
    # y.view(-1) of a [2, 1, 4] intermediate with strides [1, 8, 2]: eager refuses, a fake
    # tensor's view does not (NOTE [view strides on fake tensors] in recorder.py)
    ("alias_of_intermediate.two_views_of_grad_intermediate_with_size_one_dim",
     ("strides", "input 0", "transposed")),
]


@pytest.mark.parametrize("shape,stride,sizes", [
    ((2, 1, 4), (1, 8, 2), [-1]), ((2, 3), (1, 2), [6]), ((2, 3), (3, 1), [3, 2]),
    ((4,), (2,), [2, 2]), ((2, 1, 4), (4, 4, 1), [8]), ((3, 4), (1, 3), [3, 2, 2]),
    ((3, 4), (1, 3), [1, 3, 4, 1])])
def test_view_rule_is_eager_s(shape, stride, sizes):
    from aotcheck.engine.capture.recorder import view_sizes, viewable
    t = torch.empty(64).as_strided(shape, stride)
    try:
        t.view(sizes)
        eager = True
    except RuntimeError:
        eager = False
    assert viewable(shape, stride, view_sizes(shape, [sizes])) == eager


@pytest.mark.parametrize("case_id,variation", _VARIATION_FIXES,
                         ids=[f"{c}-{v[0]}={v[2]}" for c, v in _VARIATION_FIXES])
def test_a_corpus_case_under_a_variation_matches_eager(case_id, variation):
    from aotcheck.check.corpus import all_cases
    from aotcheck.targets.variations import Subject, Variation, VariationKind, check_under
    case = next(c for c in all_cases() if c.id == case_id)
    subject = Subject.of_case(case)
    kind, target, b = variation
    r = check_under(subject, aotcheck.aot_function(subject.fn), Variation(VariationKind(kind), target, b))
    assert r.ok, r.divergences


def test_views_the_forward_returns_keep_the_memory_they_share():
    """NOTE [views the forward returns] (runtime/function.py): no value the compiled Function
    hands back is a view; one over memory another returned value shares stays over it (torch
    2.14 traces ``y.detach()`` as ``aten.alias``, a view), the others are copies. Direct, so
    that it is pinned on torch 2.13 too, which traces ``aten.detach``."""
    from aotcheck.engine.runtime.function import returnable
    arg = torch.randn(2, 3)
    y = torch.randn(2, 3)
    saved = torch.randn(3)
    fw = [y.t(), y, saved[1:], arg.view(-1), torch.randn(4).view(2, 2)]
    out = returnable(fw, (saved,), (arg,))
    assert not any(t._is_view() for t in out)
    shares = [t.untyped_storage()._cdata == s.untyped_storage()._cdata
              for t, s in zip(out, fw)]
    assert shares == [True, True, True, False, False]
    assert out[1] is y
    assert all(torch.equal(t, s) for t, s in zip(out, fw))


def test_a_detached_view_and_a_view_of_one_intermediate_share_it_as_in_eager():
    """alias_of_intermediate.detached_view_of_intermediate on every torch: output 1 shares
    output 0's storage (torch 2.14 gave it a copy: NOTE [views the forward returns])."""
    def f(x):
        y = x.exp()
        return y.detach().t(), y[0]
    x = torch.randn(2, 3, requires_grad=True)
    a, b = aotcheck.aot_function(f)(x)
    assert a.untyped_storage()._cdata == b.untyped_storage()._cdata
    b.sum().backward()
    assert torch.allclose(x.grad[0], x[0].exp().detach()) and not x.grad[1].any()

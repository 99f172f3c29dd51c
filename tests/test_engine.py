"""Engine tests: golden printouts of each stage, errors on bad input, signatures."""
import functools
import json

import expecttest
import pytest
import torch
from hypothesis import given, settings, strategies as st

import aotcheck
from aotcheck.engine.analyze import InputInfo, MutationInfo, OutputInfo, ViewMutationMeta, OUTPUT_KINDS
from aotcheck.engine.capture.facts import Candidate, MemberFacts, MetadataOp, NewLeaf, StorageSource
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
                                        s.joint.grad_reach)), """((NewLeaf(kind='view', source=1, shape=(6,), stride=(1,), offset=0, dtype='float32'),), ((1, True, (2, 3), (3, 1), 0),), (0, 2, 3), ((0, 1), (2,), (2,)))""")

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


def test_new_leaf_output_gets_grad_as_in_eager():
    """A leaf made inside the function and returned is a fresh leaf on every call, and
    backward accumulates its .grad (NOTE [new grad leaves])."""
    def f(x):
        w = torch.ones(3, requires_grad=True)
        return x * w, w
    cf = aotcheck.aot_function(f)
    x = torch.randn(3, requires_grad=True)
    y, w = cf(x)
    y2, w2 = cf(x)
    assert w.is_leaf and w.requires_grad and w is not w2
    assert torch.equal(w.detach(), torch.ones(3))
    (y * 2).sum().backward()
    assert torch.equal(w.grad, 2 * x.detach()) and w2.grad is None
    assert torch.equal(x.grad, torch.full((3,), 2.0))


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


_names = st.sampled_from(OUTPUT_KINDS)
_ints = st.integers(-1, 5)
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


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()), max_size=4),
       st.lists(st.tuples(_names, _ints, st.lists(st.integers(0, 9), max_size=3)), max_size=4),
       st.lists(_mutations, max_size=3).map(tuple), st.lists(_members, max_size=3).map(tuple),
       st.lists(_candidates, max_size=3).map(tuple), st.lists(_ops, max_size=3).map(tuple),
       st.lists(_new_leaves, max_size=3).map(tuple), _modes)
def test_metadata_round_trips_through_json(ins, outs, mutations, members, candidates, ops, new_leaves,
                                           mode):
    meta = ViewMutationMeta(
        inputs=tuple(InputInfo(i, True, a, b, c) for i, (a, b, c) in enumerate(ins)),
        outputs=tuple(OutputInfo(k, kind, src, shape=tuple(shape)) for k, (kind, src, shape) in enumerate(outs)),
        mutations=mutations, member_metadata=members, intermediate_bases=(), candidates=candidates,
        out_tree="*", metadata_ops=ops, new_leaves=new_leaves, trace_mode=mode)
    text = meta.to_json()
    json.loads(text)
    assert ViewMutationMeta.from_json(text) == meta


def test_saved_tensor_modified_in_place_keeps_eagers_error():
    """A saved tensor modified in place: eager's backward raises 'modified by an inplace
    operation'; the engine reports that error (not an AttributeError of its own)."""
    def f(x):
        y = x * 1
        z = y.sin()
        y.mul_(2)
        return z
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(aotcheck.TraceError, match="modified by an inplace operation"):
        aotcheck.aot_function(f)(x).sum().backward()


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


def test_data_of_another_shape_after_a_held_use_matches_eager_through_dynamo_too():
    """NOTE [.data = onto another shape while a use holds the node]: ``p.data =`` a tensor of
    another shape after a use under grad mode that the function still holds (``y``, returned):
    the later use reaches p's AccumulateGrad of the old shape, so its gradient is summed to
    (2,). Dynamo lowers ``.data =`` to set_() under no_grad, which would give the leaf a new
    one; aotcheck recognizes the lowering and gives eager's gradient there too."""
    from aotcheck.check.oracle import Inputs, check

    def f(p, inp):
        y = p * 2
        p.data = inp.detach() + 1
        return p * inp, y

    def make():
        p = torch.nn.Parameter(torch.ones(2))
        return Inputs((p, torch.arange(4.0).view(2, 2)), leaves=(p,))

    for compile_ in (aotcheck.aot_function, lambda fn: torch.compile(fn, backend="aotcheck")):
        torch._dynamo.reset()
        r = check(f, compile_(f), make)
        assert r.ok, r.divergences


def test_two_swaps_of_a_grad_leaf_onto_other_shapes_are_refused():
    """A leaf that requires grad set_() under no_grad onto one shape, used, then onto another:
    eager's leaf has an AccumulateGrad per shape; aotcheck replays one such swap and refuses
    the second by name (not an invalid-gradient error from inside the trace)."""
    from aotcheck.errors import UnsupportedInputError

    def f(p, shard, inp):
        with torch.no_grad():
            p.set_(torch.cat([shard, shard]).view(2, 2))
        z = p * inp
        with torch.no_grad():
            p.set_(shard.clone())
        return z, p * 3

    p = torch.nn.Parameter(torch.zeros(2))
    with pytest.raises(UnsupportedInputError, match="two other shapes"):
        aotcheck.aot_function(f)(p, torch.ones(2), torch.ones(2, 2))


def test_set_of_an_aliased_argument_onto_another_storage_gives_eager_result():
    """Found by aotcheck fuzz --seed 22: two arguments that are rows of one base, one of them
    set_() onto a fresh tensor. The runtime restored the member's geometry on the storage the
    rows share, which gave wrong values and a wrong alias, so it was refused by name; now the
    swap is replayed (NOTE [member storage swaps]): the caller's a2 ends on r's storage."""
    from aotcheck.check.oracle import Inputs, check

    def f(a1, a2):
        a1.transpose_(0, 1)             # an aliased argument changed in place: a synthetic base
        r = torch.rand_like(a1) + 1
        a2.set_(r)
        return r

    def make():
        b = torch.randn(2, 3, 1, generator=torch.Generator().manual_seed(0))
        return Inputs((b[0], b[1]))
    report = check(f, aotcheck.aot_function(f), make)
    assert report.ok, report.divergences
    torch.manual_seed(0)
    b = make().args
    out = aotcheck.aot_function(f)(*b)
    assert b[1].untyped_storage().data_ptr() == out.untyped_storage().data_ptr()


def test_a_strided_nonleaf_argument_is_not_written_back():
    """The traced copy of a strided non-leaf argument is written as it is made
    (NOTE [non-leaf copies]); that write is not the function's, so the runtime must not write the argument
    back: eager leaves its version alone, and the caller's saved tensors stay valid."""
    b = torch.randn(4, requires_grad=True)
    a = b.clone()[::2]
    y = a * a                   # saves a for the caller's own backward
    compiled = aotcheck.aot_function(lambda t: t.sin())
    version = a._version
    out = compiled(a)
    assert a._version == version
    (y.sum() + out.sum()).backward()        # eager: fine; a write-back made this raise
    e = b.detach().clone().requires_grad_()
    ea = e.clone()[::2]
    ((ea * ea).sum() + ea.sin().sum()).backward()
    torch.testing.assert_close(b.grad, e.grad)


def test_requires_grad_on_an_aliased_argument_is_replayed_or_refused_by_name():
    """NOTE [requires_grad_ on an aliased argument]: the flag of an alias-group member reaches
    the caller's tensor (and the arguments that view it); a value computed from the group is
    refused by name (its gradient would not reach the caller's tensor), one computed from
    other arguments only is compiled."""
    from aotcheck.check.oracle import Inputs, check

    def make():
        b = torch.randn(3, 3, 2, generator=torch.Generator().manual_seed(0))
        w = torch.randn(3, generator=torch.Generator().manual_seed(1)).requires_grad_()
        return Inputs((b, b.transpose(-2, -1), w), leaves=(w,))

    def unrelated(a0, a1, w):
        a1.squeeze_(2)
        a0.requires_grad_()
        return w * 2, a0[0], a1

    report = check(unrelated, aotcheck.aot_function(unrelated), make)
    assert report.ok, report.divergences

    def computed(a0, a1, w):
        a1.squeeze_(2)
        a0.requires_grad_()
        return a0 * 2

    with pytest.raises(aotcheck.UnsupportedInputError, match="requires_grad_"):
        aotcheck.aot_function(computed)(*make().args)


def test_resize_growing_an_arguments_storage_through_a_view_is_a_named_refusal():
    # NOTE [a storage grown by resize_]: eager grows the caller's storage (every view of the
    # argument then sits on it); the runtime replays resize_ on an argument itself only, so a
    # growth through a view made inside is refused, never run with the caller's storage small
    def f(x):
        c = x[:]
        c.resize_(6)
        c[4:].fill_(7.0)
        return c * 1
    with pytest.raises(aotcheck.UnsupportedInputError, match="grows the storage of an argument"):
        aotcheck.aot_function(f)(torch.randn(4))

    def g(x):       # the argument itself grown: replayed on the caller's tensor, as eager's
        x.resize_(6)
        x[4:].fill_(7.0)
        return x * 1
    x = torch.randn(4)
    y = x.clone()
    want, got = g(x), aotcheck.aot_function(g)(y)
    assert torch.equal(want, got) and torch.equal(x, y)
    assert y.untyped_storage().nbytes() == x.untyped_storage().nbytes() == 24


def test_a_call_under_autocast_runs_its_graphs_with_autocast_off():
    # NOTE [autocast at run time]: sdpa's decomposition holds float32 bmm ops, which the
    # caller's autocast cast to bfloat16 again at run time; the backward then raised
    # "expected scalar type Float but found BFloat16". The same function called outside
    # autocast afterwards compiles its own graphs (the in-memory key holds the autocast state)
    import torch.nn.functional as F

    def f(x, w):
        q, k, v = (x @ w).chunk(3, dim=-1)
        return F.scaled_dot_product_attention(q, k, v).float().sum(-1)

    def make():
        g = torch.Generator().manual_seed(0)
        return (torch.randn(2, 3, 4, generator=g, requires_grad=True),
                torch.randn(4, 12, generator=g, requires_grad=True))

    compiled = aotcheck.aot_function(f)
    for on in (True, False):
        runs = []
        for fn in (f, compiled):
            x, w = make()
            with torch.autocast("cpu", torch.bfloat16, enabled=on):
                out = fn(x, w)
            out.sum().backward()
            runs.append((out, x.grad, w.grad))
        (eo, *eg), (co, *cg) = runs
        assert torch.equal(eo, co)
        for a, b in zip(eg, cg):     # eager's sdpa kernel and the traced math path round apart
            torch.testing.assert_close(b, a, rtol=2e-2, atol=2e-2)
            if not on:
                torch.testing.assert_close(b, a)


def test_a_sparse_intermediate_in_a_training_graph():
    # the partitioner asked every saved value for its storage; a sparse one has none
    def f(x, w):
        return (x.to_sparse() * w.to_sparse()).to_dense().sin()
    x, w = torch.randn(3, 4, requires_grad=True), torch.randn(3, 4, requires_grad=True)
    want, got = f(x, w), aotcheck.aot_function(f)(x, w)
    assert torch.allclose(want, got)
    gw = torch.autograd.grad(want.sum(), (x, w))
    gg = torch.autograd.grad(got.sum(), (x, w))
    assert all(torch.allclose(a, b) for a, b in zip(gw, gg))


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
    from aotcheck.targets.variations import Subject, Variation, check_under
    case = next(c for c in all_cases() if c.id == case_id)
    subject = Subject.of_case(case)
    r = check_under(subject, aotcheck.aot_function(subject.fn), Variation(*variation))
    assert r.ok, r.divergences


# NOTE [subclass imperative autograd] (aotcheck/subclass/imperative.py): the subclass path
# traces aten ops only; programs from `aotcheck fuzz --engine aotcheck --seed 3` that lost a
# hook on a non-leaf argument, retain_grad() on an argument or an output, or `x.data = y`
# gave wrong results silently. They are refused by name; what the path keeps still matches.
def _hook_double(g):
    return g * 2


def _sub_then_plain(nonleaf: bool):
    from aotcheck.check.oracle import Inputs
    from torch.testing._internal.two_tensor import TwoTensor
    l0 = torch.arange(3.0, requires_grad=True)
    l1 = TwoTensor(torch.ones(3), torch.full((3,), 2.0)).requires_grad_()
    if nonleaf:
        return Inputs((l0.clone(), l1.clone()), {}, (l0, l1))
    return Inputs((l0, l1), {}, (l0, l1))


def _hook_on_argument(a0, a1):
    a0.register_hook(_hook_double)
    return (a0.sin() * a1,)


def _hook_on_subclass_argument(a0, a1):
    a1.register_hook(_hook_double)
    return (a1.sin() + a0,)


def _retain_argument(a0, a1):
    a0.retain_grad()
    return (a0 * a1,)


def _retain_output(a0, a1):
    y = a1 * 3
    y.retain_grad()
    return (y, y * 2)


def _data_set(a0, a1):
    v = a0.add(a0)
    v.data = a0
    return (v * a1,)


def _hook_on_intermediate(a0, a1):
    y = a1 * 3
    y.register_hook(_hook_double)
    return (y.sin() * a0,)


def _retain_intermediate(a0, a1):
    y = a1 * 3
    y.retain_grad()
    return (y.sin() * a0,)


@pytest.mark.parametrize("fn,nonleaf,grad", [(_retain_output, False, True)])
def test_subclass_call_refuses_imperative_autograd_it_would_lose(fn, nonleaf, grad):
    from aotcheck.errors import UnsupportedInputError
    inputs = _sub_then_plain(nonleaf)
    with torch.set_grad_enabled(grad), pytest.raises(UnsupportedInputError,
                                                      match="subclass imperative autograd"):
        aotcheck.aot_function(fn)(*inputs.args)


@pytest.mark.parametrize("fn,nonleaf", [
    (_hook_on_argument, False), (_hook_on_subclass_argument, False), (_hook_on_intermediate, True),
    (_retain_intermediate, True), (_retain_argument, True), (_retain_argument, False),
    (_hook_on_argument, True), (_hook_on_subclass_argument, True), (_data_set, False)])
def test_subclass_call_keeps_imperative_autograd_it_can(fn, nonleaf, tmp_path):
    """retain_grad() on an argument: a no-op on a leaf (fuzz seed 3, 17 programs refused), and
    on a non-leaf replayed on the caller's tensor after the call, cold and from the cache."""
    from aotcheck.check.oracle import check
    r = check(fn, aotcheck.aot_function(fn), lambda: _sub_then_plain(nonleaf))
    assert r.ok, r.divergences
    for _ in range(2):
        r = check(fn, aotcheck.aot_function(fn, cache=str(tmp_path)), lambda: _sub_then_plain(nonleaf))
        assert r.ok, r.divergences
    if fn is _retain_argument and nonleaf:
        inputs = _sub_then_plain(True)
        (out,) = aotcheck.aot_function(fn)(*inputs.args)
        out.sum().backward()
        assert inputs.args[0].retains_grad and inputs.args[0].grad is not None


def _hook_on_first(a1, a2):
    a1.register_hook(_hook_double)
    return (a1 * 3,)


def _hook_on_second(a1, a2):
    a2.register_hook(_hook_double)
    return (a1 * 3,)


@pytest.mark.parametrize("fn", [_hook_on_first, _hook_on_second])
def test_a_hook_on_an_argument_passed_twice_hits_the_cache(tmp_path, fn):
    """A cache hit collects argument hooks from a run on fake arguments (argument_hooks in
    capture/trace.py); a tensor passed twice is one fake there, which was numbered by its last
    place while the trace numbers it by its first: every later process missed (fuzz seed 3)."""
    from aotcheck.cache.store import Cache
    grads = []
    for strict in (False, True):
        p = torch.nn.Parameter(torch.ones(2))
        compiled = aotcheck.aot_function(fn, cache=Cache(tmp_path, expect_hits=strict))
        compiled(p, p)[0].sum().backward()
        grads.append(p.grad)
    p = torch.nn.Parameter(torch.ones(2))
    fn(p, p)[0].sum().backward()
    assert torch.equal(grads[0], p.grad) and torch.equal(grads[1], p.grad)


def test_a_parameter_made_under_inference_mode_beside_a_written_argument_view():
    """fuzz seed 3: torch's gradient-edge walk (``get_gradient_edge``) raised AttributeError on
    a leaf made under inference_mode, which escaped the trace as an internal TraceError; the
    per-output reach walk falls back to every output (NOTE [per-output reach])."""
    from aotcheck.check.oracle import Inputs, check

    def f(a1):
        with torch.no_grad():
            with torch.enable_grad():
                a1[:, ::3] = 0.5
        with torch.inference_mode():
            torch.nn.Parameter(torch.randn((2, 2)))
        return ()

    def make():
        torch.manual_seed(0)
        l1 = torch.randn(4, 3).requires_grad_()
        return Inputs((l1.clone().transpose(-2, -1),), {}, (l1,))
    r = check(f, aotcheck.aot_function(f), make)
    assert r.ok, r.divergences


def test_retain_grad_on_an_argument_view_written_by_a_custom_function_beside_a_subclass():
    """fuzz seed 3: retain_grad() on an argument (a transposed view written in place by a
    custom Function under no_grad) traced into the subclass joint tripped torch's internal
    assert (variable.cpp ``new_fn``); the traces skip it and the call replays it."""
    from torch.testing._internal.two_tensor import TwoTensor

    from aotcheck.check.corpus.custom_function import DoubleInPlace
    from aotcheck.check.oracle import Inputs, check

    def f(a0, a1, a2, a3):
        a0.squeeze_()
        with torch.no_grad():
            DoubleInPlace.apply(a2)
        with torch.inference_mode():
            a2.retain_grad()
        return ()

    def make():
        torch.manual_seed(0)
        l0 = torch.randn(2, 1).requires_grad_()
        l1 = TwoTensor(torch.randn(2), torch.randn(2)).requires_grad_()
        a0 = l0.clone()
        a1 = a0.t()
        return Inputs((a0, a1, a1, l1.clone()), {}, (l0, l1))
    r = check(f, aotcheck.aot_function(f), make)
    assert r.ok, r.divergences


# NOTE [where an argument's retained gradient sits] (capture/autograd_facts.py): eager's
# retain_grad() hook follows in-place writes of the tensor and stays where it was at a
# metadata call. The runtime had made every argument's retain_grad() after the write-back
# only: `x.retain_grad(); x.add_(1); return x * 2` left x.grad None (eager: 2), and
# `a.retain_grad(); a.transpose_(0, 1)` on a view gave a grad of the new shape (fuzz seed 1).
def _retain_then_write(x):
    x.retain_grad()
    x.mul_(2)
    return (x * 3,)


def _retain_then_write_twice(x):
    x.mul_(2)
    x.retain_grad()
    x.add_(1)
    return (x.sin(), x * x)


def _retain_then_transpose(x):
    x.retain_grad()
    x.transpose_(0, 1)
    return (x * torch.arange(6.0).reshape(x.shape),)


def _retain_then_unsqueeze(x):
    x.retain_grad()
    x.unsqueeze_(0)
    return ()


def _transpose_then_retain(x):
    x.t_()
    x.retain_grad()
    return (x * torch.arange(6.0).reshape(x.shape),)


def _no_grad_write_then_retain(x):
    with torch.no_grad():
        x.mul_(2)
    x.retain_grad()
    return (x * 3,)


def _retain_write_then_transpose(x):
    x.retain_grad()
    x.mul_(2)
    x.t_()
    return (x * 1,)


def _nonleaf_argument(view: bool):
    from aotcheck.check.oracle import Inputs
    leaf = torch.arange(6.0).reshape(2, 3).requires_grad_()
    x = leaf * 1
    return Inputs((x.t().t() if view else x,), {}, (leaf,))


@pytest.mark.parametrize("way", ["functional", "plain"])
@pytest.mark.parametrize("view", [False, True])
@pytest.mark.parametrize("fn", [_retain_then_write, _retain_then_write_twice,
                                _retain_then_transpose, _retain_then_unsqueeze,
                                _transpose_then_retain, _no_grad_write_then_retain])
def test_argument_retained_grad_sits_where_eager_puts_it(fn, view, way, tmp_path, monkeypatch):
    """Also the function's own uses of the argument after its last in-place call, which
    reach the compiled function's input and not the caller's new node
    (NOTE [retained outputs]): `x.t_(); x.retain_grad(); return x * w` had lost them."""
    from aotcheck.check.oracle import check
    if way == "plain":
        monkeypatch.setenv("AOTCHECK_TRACE_PLAIN", "1")
    make = lambda: _nonleaf_argument(view)      # noqa: E731
    r = check(fn, aotcheck.aot_function(fn), make)
    assert r.ok, r.divergences
    for _ in range(2):      # cold into the cache, then a hit
        r = check(fn, aotcheck.aot_function(fn, cache=str(tmp_path)), make)
        assert r.ok, r.divergences
    inputs = make()
    outs = aotcheck.aot_function(fn)(*inputs.args)
    (inputs.args[0].sum() + sum(o.sum() for o in outs)).backward()
    assert inputs.args[0].grad is not None


def _write_retain_then_transpose(x):
    x.add_(2.0)
    x.retain_grad()
    b = (x * 5).sum()
    x.t_()
    return b, x * 1.5


def _retain_transpose_then_write(x):
    x.retain_grad()
    x.t_()
    x.mul_(3)
    return (x * 1,)


def test_argument_retained_between_a_write_and_a_metadata_call_matches_eager():
    """NOTE [where an argument's retained gradient sits]: eager's hook stays on the node of
    the value between the argument's writes and its metadata calls, and .grad has that
    value's shape (fuzz seed 1: ``a0.add_(2); a0.retain_grad(); a0.t_()``, refused before).
    The function's own uses of it, before and after the metadata call, add their part."""
    from aotcheck.check.oracle import check
    make = lambda: _nonleaf_argument(False)     # noqa: E731
    for fn in (_retain_write_then_transpose, _write_retain_then_transpose):
        r = check(fn, aotcheck.aot_function(fn), make)
        assert r.ok, r.divergences
        inputs = make()
        outs = aotcheck.aot_function(fn)(*inputs.args)
        sum(o.sum() for o in outs).backward()
        assert inputs.args[0].grad.shape == (2, 3)      # its shape before t_(), as eager's


def test_argument_retained_then_transposed_then_written_raises_eagers_assert():
    """Eager's own autograd asserts (variable.cpp, 'out != nullptr') at a write after a
    metadata call left the retain hook behind; the trace meets the same assert, and
    aotcheck raises it inside its own error (never a result where eager has none)."""
    from aotcheck.errors import AotcheckError
    with pytest.raises(AotcheckError, match="out != nullptr"):
        aotcheck.aot_function(_retain_transpose_then_write)(*_nonleaf_argument(False).args)


def _use_held_then_data_of_another_shape(p):
    v = p[:, :2] * 2
    p.data = torch.zeros(2, 2)
    return p.sum(), v


def _use_dropped_then_data_of_another_shape(p):
    p[:, :2].sum()
    p.data = torch.zeros(2, 2)
    return p.sum()


def _use_dropped_between_two_later_uses(p):
    v = p[:, :2] * 2
    p.data = torch.ones(2, 2)
    w = p * 3
    del v
    return w, p.exp()


def _swap_with_a_parameter_made_inside_then_use_it(p):
    v = torch.nn.Parameter(torch.randn(2, 2))
    p[:, :2]
    p.data, v.data = v.data, p.data
    return v.mean(0, keepdim=True)


@pytest.mark.parametrize("fn", [_use_held_then_data_of_another_shape,
                                _use_dropped_then_data_of_another_shape,
                                _use_dropped_between_two_later_uses,
                                _swap_with_a_parameter_made_inside_then_use_it])
def test_data_of_another_shape_between_grad_uses_matches_eager(fn):
    # NOTE [.data = onto another shape while a use holds the node] (capture/storage/watch.py): a
    # use after the assignment reaches the leaf's node of the old shape while a tensor of the
    # function still holds an earlier use (a gradient summed to the old shape), else a new
    # node of the new shape; these were refused by name before
    from aotcheck.check.oracle import Inputs, check

    def make():
        torch.manual_seed(0)
        p = torch.nn.Parameter(torch.randn(4, 3))
        return Inputs((p,), leaves=(p,))
    r = check(fn, aotcheck.aot_function(fn), make)
    assert r.ok, r.divergences


def test_leaf_made_inside_and_a_view_written_in_inference_mode_trace_as_eager():
    # the recorder reads an output's grad_fn only for a call under grad mode that uses a grad
    # leaf made inside: reading it after a write in inference mode regenerates a view's
    # grad_fn, and autograd asserts ("new_fn INTERNAL ASSERT") where eager runs
    from aotcheck.check.oracle import Inputs, check

    def f(a):
        v = torch.nn.Parameter(torch.randn(2, 2))
        w = a[:, :2]
        with torch.no_grad():
            with torch.enable_grad():
                m = v.mean(0, keepdim=True)
        with torch.inference_mode():
            w.copy_(m)
        return ()

    def make():
        p = torch.nn.Parameter(torch.randn(4, 3))
        return Inputs((p,), leaves=(p,))
    report = check(f, aotcheck.aot_function(f), make)
    assert report.ok, report.divergences


def _diagonal_data_then_zeroed(a):           # fuzz seed 1, storage_offset[input 0]=1 (09)
    v = a.diagonal(-2, 0, 1)
    with torch.no_grad():
        with torch.enable_grad():
            a.data = v
    v1 = v[1::3]
    with torch.no_grad():
        a.zero_()
    v.data.mul_(2.0)
    v1.exp()
    with torch.inference_mode():
        a.add_(1.0)
    return ()


def _scaled_then_diagonal_data_then_zeroed(a):
    with torch.no_grad():
        a.mul_(2)
    return _diagonal_data_then_zeroed(a)


@pytest.mark.parametrize("offset", [0, 1, 2])
def test_parameter_at_an_offset_given_data_of_its_diagonal_then_written_matches_eager(offset):
    # found by the key-variation pass (storage_offset[input 0]=1) on the fuzz program of
    # input_mutation.fuzz_parameter_given_data_of_its_diagonal_then_zeroed_and_a_view_read:
    # the plain graph's zero_() read the argument's node from before its .data =, in its old
    # geometry, and zeroed all of it (before NOTE [.data assignment in the plain trace]),
    # silently at offset 0 (the storage's other elements, seen through a caller's alias); at an
    # offset the argument, not filling its storage, was refused by name (data_assign.py's
    # unfilled_own_storage), which only a write of the whole argument still needs
    results = []
    for fn in (_diagonal_data_then_zeroed, aotcheck.aot_function(_diagonal_data_then_zeroed)):
        torch.manual_seed(0)
        whole = torch.randn(14)
        p = torch.nn.Parameter(whole[offset:offset + 12].view(4, 3))
        fn(p)
        results.append((whole, p.detach().clone()))
    assert all(torch.equal(a, b) for a, b in zip(*results))


def test_parameter_at_an_offset_written_whole_then_given_data_of_its_diagonal_is_a_named_refusal():
    # the write of the whole argument makes functionalization hold it as a compact value,
    # which the storage's other elements are not part of
    p = torch.nn.Parameter(torch.randn(13)[1:].view(4, 3))
    with pytest.raises(aotcheck.UnsupportedInputError, match="does not fill"):
        aotcheck.aot_function(_scaled_then_diagonal_data_then_zeroed)(p)


# Programs from `aotcheck fuzz --engine aotcheck --examples 2000 --seed 1`'s key variations
# (compiled under grad mode A, called under B) and beside them: each must give eager's result
# when called under no_grad or inference_mode, cold, again from the in-memory artifact, and
# from the persistent cache.
def _grad_region_fill_of_an_aliased_view(a0, a1):       # fuzz 15: a1 views a0's storage
    with torch.no_grad():
        with torch.enable_grad():
            a1.fill_(2.0)
    return ()


def _grad_region_write_then_aliases(a0, a1):            # fuzz 12
    with torch.no_grad():
        with torch.enable_grad():
            a1.add_(-1.0)
    return (a0.sin(), a1)


def _grad_region_write_then_out(a0, a1):               # fuzz 16
    with torch.no_grad():
        with torch.enable_grad():
            a0.mul_(0.5)
    with torch.no_grad():
        v0 = torch.sin(a0, out=torch.empty(0, dtype=a0.dtype))
    return (a0, a0, v0, v0)


def _grad_region_write_and_output(a0, a1):
    with torch.enable_grad():
        a1.mul_(a0)
        y = a0 * 2
    return (y, a1.sum())


def _retain_grad_on_a_view_of_a_parameter_made_inside(a0, a1):      # fuzz 13
    p = torch.nn.Parameter(torch.randn((2,), dtype=torch.float64))
    v = p.reshape((2,))
    v.retain_grad()
    return (p, a0 + 1)


def _retain_grad_in_a_grad_region(a0, a1):
    with torch.enable_grad():
        y = a0 * 2
        y.retain_grad()
    return (y,)


def _views_of_a_parameters_vjp(a0, a1):                 # fuzz 14
    with torch.no_grad():
        p = torch.nn.Parameter(torch.randn((), dtype=torch.float32))
    v1 = torch.func.vjp(torch.sin, p)[1](torch.ones_like(p))[0]
    v2 = v1.as_strided((1, 1), (3, 1), 0)
    v3 = v2.sigmoid()
    return (v3, v2, v2)


def _func_grad_and_vmap_outputs(a0, a1):
    g = torch.func.grad(lambda t: (t.sin() * t).sum())(a0)
    return (g[1:], g, torch.func.vmap(torch.cos)(a1), a0.view(-1))


def _flag_on_a_base_then_its_view_written_in_a_grad_region(a0, a1):
    a0.requires_grad_()
    with torch.enable_grad():
        a1.mul_(2)
    return (a1 * 1, a0)


def _view_made_in_the_call_written_in_a_grad_region(a0, a1):
    v = a0.view(-1)
    with torch.enable_grad():
        v.mul_(2)
    return (v, a0)


def _retained_output_of_a_grad_region_that_writes_an_argument(a0, a1):
    with torch.enable_grad():
        y = a0 * 2
        y.retain_grad()
        a1.add_(y)
    return (y, a1)


def _vjp_gradient(p):
    return torch.func.vjp(torch.sin, p)[1](torch.ones_like(p))[0]


def _data_swapped_with_a_vjp_gradient_then_viewed(a0, a1):     # fuzz 06
    # under inference_mode: v1.data = an ordinary tensor's leaves v1 without a version
    # counter, so its expand raises as eager's (NOTE [inference state moved by .data =])
    v1 = a1.mean(0, keepdim=True)
    with torch.no_grad():
        with torch.enable_grad():
            v2 = _vjp_gradient(v1)
            v2.data, v1.data = v1.data, v2.data
            v3 = v1.expand((3, 3))
    return v3 * 2, a0


def _vjp_of_a_view_of_a_parameter_made_inside(a0, a1):         # fuzz 07
    # the primal vjp wraps stays an inference tensor under inference_mode; its gradient does not
    p = torch.nn.Parameter(a0 * 2)
    v = p.as_strided((2,), (2,), 0)
    return v, _vjp_gradient(v), p.as_strided((2,), (2,), 0).clone()


def _a_tensor_and_its_transpose():
    from aotcheck.check.oracle import Inputs
    torch.manual_seed(0)
    a0 = torch.randn(2, 3)
    return Inputs((a0, a0.t()), {}, ())


def _aliased_rows():
    from aotcheck.check.oracle import Inputs
    torch.manual_seed(0)
    l0 = torch.randn(2, 2, 1, 2).requires_grad_()
    b0 = l0.clone()
    return Inputs((b0[0], b0[1]), {}, (l0,))


def _two_nonleaves():
    from aotcheck.check.oracle import Inputs
    torch.manual_seed(0)
    l0, l1 = torch.randn(2, 3).requires_grad_(), torch.randn(2, 3).requires_grad_()
    return Inputs((l0.clone(), l1.clone()), {}, (l0, l1))


_GRAD_MODE_PROGRAMS = [
    (_grad_region_fill_of_an_aliased_view, _aliased_rows),
    (_grad_region_write_then_aliases, _aliased_rows),
    (_grad_region_write_then_out, _two_nonleaves),
    (_grad_region_write_and_output, _two_nonleaves),
    (_retain_grad_on_a_view_of_a_parameter_made_inside, _two_nonleaves),
    (_retain_grad_in_a_grad_region, _two_nonleaves),
    (_views_of_a_parameters_vjp, _two_nonleaves),
    (_func_grad_and_vmap_outputs, _two_nonleaves),
    (_flag_on_a_base_then_its_view_written_in_a_grad_region, _a_tensor_and_its_transpose),
    (_view_made_in_the_call_written_in_a_grad_region, _two_nonleaves),
    (_retained_output_of_a_grad_region_that_writes_an_argument, _two_nonleaves),
    (_data_swapped_with_a_vjp_gradient_then_viewed, _two_nonleaves),
    (_vjp_of_a_view_of_a_parameter_made_inside, _two_nonleaves),
]


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
@pytest.mark.parametrize("fn,make", _GRAD_MODE_PROGRAMS, ids=[f.__name__ for f, _ in _GRAD_MODE_PROGRAMS])
def test_a_call_under_no_grad_or_inference_mode_matches_eager(fn, make, mode, tmp_path):
    """NOTE [writes in an enable_grad region] (runtime/artifact.py), [views of inference
    tensors] (capture/recorder.py), [ordinary outputs of an inference call] (capture/outputs.py),
    and the aliased arguments' views made with grad on (capture/functional_run.py)."""
    from aotcheck.check.oracle import check

    def under(f):
        def called(*args):
            with torch.inference_mode() if mode == "inference_mode" else torch.no_grad():
                return f(*args)
        return called
    compiled = aotcheck.aot_function(fn)
    for _ in range(2):                  # cold, then the in-memory artifact
        r = check(under(fn), under(compiled), make)
        assert r.ok, r.divergences
    for _ in range(2):                  # a cold store, then a fresh function that hits it
        r = check(under(fn), under(aotcheck.aot_function(fn, cache=str(tmp_path))), make)
        assert r.ok, r.divergences


def _returns_an_inference_tensor_given_ordinary_data(x):
    p = x * 2
    p.data = _vjp_gradient(x)
    return p


def _returns_an_ordinary_tensor_given_inference_data(x):
    q = _vjp_gradient(x)
    q.data = x * 3
    return q + 1, q


@pytest.mark.parametrize("fn", [_returns_an_inference_tensor_given_ordinary_data,
                                _returns_an_ordinary_tensor_given_inference_data])
def test_a_tensor_whose_kind_data_assignment_changed_in_an_inference_call_is_eagers_mix(fn, tmp_path):
    """NOTE [inference state moved by .data =]: eager returns a mix (an ordinary tensor with no
    version counter, an inference tensor with one); the runtime hands back the same mix, cold
    and from the cache (fuzz seed 3's inference_mode variation: it was refused by name)."""
    from aotcheck.check.oracle import Inputs, check

    def under(f):
        def called(*args):
            with torch.inference_mode():
                return f(*args)
        return called
    make = lambda: Inputs((torch.ones(3),))     # noqa: E731
    for compiled in (aotcheck.aot_function(fn), aotcheck.aot_function(fn, cache=str(tmp_path)),
                     aotcheck.aot_function(fn, cache=str(tmp_path))):
        r = check(under(fn), under(compiled), make)
        assert r.ok, r.divergences
        with torch.inference_mode():
            out, want = compiled(torch.ones(3)), fn(torch.ones(3))
        t, w = (out[-1], want[-1]) if isinstance(out, tuple) else (out, want)
        assert t.is_inference() == w.is_inference()
        for x in (t, w):                # an inference tensor with a counter can be written
            try:                        # outside inference mode; an ordinary one with none
                x.add_(1)               # cannot
                seen = "ok"
            except RuntimeError as e:
                seen = str(e)[:40]
            if x is t:
                got = seen
        assert got == seen


def _custom_op_on_a_leaf_that_requires_grad(a0, a1):    # fuzz seed 1, requires_grad=True
    torch.ops.aotcheck_fuzz.mul2_(a0)
    a0.requires_grad_()
    return (a0 * a1,)


def _custom_op_on_a_nonleaf_and_a_view(a0, a1):
    b = a1 * 3
    torch.ops.aotcheck_fuzz.add_first_(a0, 1.5)
    torch.ops.aotcheck_fuzz.mul2_(b[1:])
    return (a0.sin(), b)


def _a_leaf_and_a_nonleaf():
    from aotcheck.check.oracle import Inputs
    torch.manual_seed(0)
    l0, l1 = torch.randn(3).requires_grad_(), torch.randn(3).requires_grad_()
    return Inputs((l0, l1.clone()), {}, (l0, l1))


@pytest.mark.parametrize("fn,make", [
    (_custom_op_on_a_leaf_that_requires_grad, _a_leaf_and_a_nonleaf),
    (_custom_op_on_a_nonleaf_and_a_view, _two_nonleaves),
], ids=["leaf", "nonleaf_and_view"])
def test_a_mutating_custom_op_that_returns_nothing_runs_where_autograd_is_on(fn, make, tmp_path):
    """NOTE [mutating custom ops]: called with grad on and an argument that requires grad, a
    custom_op that returns no tensor writes its arguments where autograd sees nothing (its
    autograd.Function marks nothing dirty), as eager does; it was refused (TraceError from
    functionalization's fallback)."""
    import aotcheck.fuzz.library_ops  # noqa: F401
    from aotcheck.check.oracle import check
    for compiled in (aotcheck.aot_function(fn), aotcheck.aot_function(fn, cache=str(tmp_path)),
                     aotcheck.aot_function(fn, cache=str(tmp_path))):
        r = check(fn, compiled, make)
        assert r.ok, r.divergences


def _sin_out_of_a_restrided_argument(a0, o):           # fuzz seed 1, strides=transposed
    a0.unsqueeze_(2)
    a0.add_(-1.0)
    with torch.no_grad():
        v0 = torch.sin(a0, out=torch.empty(0, dtype=a0.dtype))
    return (v0, v0)


def _add_out_into_an_argument(a0, o):
    torch.add(a0, 1.0, out=o)
    return (o * 2, a0.exp())


def _transposed_and_out(out_shape):
    def make():
        from aotcheck.check.oracle import Inputs
        torch.manual_seed(0)
        l0 = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
        return Inputs((l0.clone().t(), torch.zeros(out_shape, dtype=torch.float64)), {}, (l0,))
    return make


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
@pytest.mark.parametrize("out_shape", [(0,), (2, 2), (3, 4)])
@pytest.mark.parametrize("fn", [_sin_out_of_a_restrided_argument, _add_out_into_an_argument],
                         ids=["made_inside", "argument"])
def test_a_pointwise_out_tensor_that_is_resized_takes_eagers_strides(fn, out_shape, tmp_path):
    """NOTE [out= strides] (capture/resize.py): eager's TensorIterator lays out an out tensor
    it resizes as its inputs (strides (1, 3) for a transposed input); fake and meta tensors,
    and so the trace, gave it contiguous strides."""
    from aotcheck.check.oracle import check
    make = _transposed_and_out(out_shape)
    for compiled in (aotcheck.aot_function(fn), aotcheck.aot_function(fn, cache=str(tmp_path)),
                     aotcheck.aot_function(fn, cache=str(tmp_path))):
        r = check(fn, compiled, make)
        assert r.ok, r.divergences


def _a_parameter_in_two_matmuls(a0, a1):                # fuzz seed 1, autocast=cpu:bfloat16
    v1 = torch.matmul(a0, a0.mT)
    v3 = a0.unbind(0)[1]
    return (v1.unbind(1), torch.matmul(a0, v3), torch.nn.functional.linear(a1, a0.mT))


def test_a_leaf_cast_by_autocast_twice_gets_eagers_gradient(tmp_path):
    """NOTE [the autocast cache] (capture/autocast_cache.py): eager casts a leaf that requires
    grad once per autocast region (while its cache is on), so its gradients add up in
    bfloat16; the trace cast it once per op and added them in float32, a rounding apart.
    A region with cache_enabled=False adds them in float32: another key (in memory and in
    the persistent cache), whichever state comes first."""
    from aotcheck.check.oracle import Inputs, check

    def make():
        torch.manual_seed(0)
        p = torch.nn.Parameter(torch.randn(4, 3))
        x = torch.randn(2, 4, requires_grad=True)
        return Inputs((p, x), {}, (p, x))

    def under(f, cache_enabled):
        def called(*args):
            with torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=cache_enabled):
                return f(*args)
        return called
    fn = _a_parameter_in_two_matmuls
    for order in ((True, False), (False, True)):
        compiled = aotcheck.aot_function(fn)
        stored = tmp_path / str(order[0])
        for cache_enabled in order:
            for c in (compiled, aotcheck.aot_function(fn, cache=str(stored))):
                r = check(under(fn, cache_enabled), under(c, cache_enabled), make)
                assert r.ok, (order, cache_enabled, r.divergences)


def _enters_autocast_and_casts_a_leaf_twice(x, w):
    with torch.autocast("cpu"):
        return (x @ w.mT) + (x @ w)


def test_a_region_the_function_enters_caches_casts_as_eagers(tmp_path):
    """NOTE [the autocast cache]: a region the function enters itself, the caller in none,
    inherits the ambient cache setting (on by default): eager casts ``x`` once for both
    matmuls and its gradient adds up in bfloat16. The trace cast it per op (a rounding
    apart, 0.0156 on this input) before the ambient setting was emulated. With the setting
    off, eager casts per op: another graph, under another key (in memory and on disk)."""
    from aotcheck.check.oracle import Inputs, check

    def make():
        torch.manual_seed(0)
        x, w = torch.randn(8, 8, requires_grad=True), torch.randn(8, 8, requires_grad=True)
        return Inputs((x, w), {}, (x, w))
    fn = _enters_autocast_and_casts_a_leaf_twice
    compiled = aotcheck.aot_function(fn)
    for cache_enabled in (True, False, True):
        torch.set_autocast_cache_enabled(cache_enabled)
        try:
            for c in (compiled, aotcheck.aot_function(fn, cache=str(tmp_path))):
                r = check(fn, c, make)
                assert r.ok, (cache_enabled, r.divergences)
        finally:
            torch.set_autocast_cache_enabled(True)
    assert compiled.num_compiled == 2


# NOTE [hooks on returned tensors] (capture/autograd_facts.py)
def _hook_double_grad(g):
    return g * 2


def _returns_hooked_parameter_made_inside(x):
    p = torch.nn.Parameter(torch.ones(3))
    p.register_hook(_hook_double_grad)
    return (p, p * x)


def _returns_hooked_intermediate(x):
    y = x * 1
    y.register_hook(_hook_double_grad)
    return (y, y * 3)


def _hooked_parameter_made_inside_not_returned(x):
    p = torch.nn.Parameter(torch.ones(3))
    p.register_hook(_hook_double_grad)
    return (p * x,)


def test_hook_on_a_returned_leaf_made_inside_matches_eager_cold_and_cached(tmp_path):
    """NOTE [hooks on leaves made inside]: eager's hook doubles the whole gradient of the
    returned Parameter, the caller's part included (fuzz seed 3: that part bypassed it,
    silently; then it was refused by name). The runtime registers the hook on the leaf it
    makes; a cache hit collects it from a run on fake arguments. A returned intermediate's
    hook and an unreturned leaf's keep matching eager."""
    from aotcheck.cache import Cache
    from aotcheck.check.oracle import Inputs, check
    make = lambda: Inputs((torch.arange(3.0, requires_grad=True),))      # noqa: E731
    for fn in (_returns_hooked_parameter_made_inside, _returns_hooked_intermediate,
               _hooked_parameter_made_inside_not_returned):
        r = check(fn, aotcheck.aot_function(fn), make)
        assert r.ok, r.divergences
    fn = _returns_hooked_parameter_made_inside
    for hit in (False, True):       # the second compile must hit (a miss raises)
        cache = Cache(tmp_path / "c", expect_hits=hit)
        r = check(fn, aotcheck.aot_function(fn, cache=cache), make)
        assert r.ok, (hit, r.divergences)


def _bool_written_and_returned(w, s):
    m = w.gt(0)
    m[:, 1] = s
    return m, s * 2


def _bool_argument_written(m, s):
    m[:, 1] = s
    return s * 2


def _bool_written_then_read_as_float(w, s):
    m = w.gt(0)
    m[:, 1] = s
    return m.float() * 2, s * 2


def _bool_written_not_returned(w, s):
    m = w.gt(0)
    m[:, 1] = s
    return m.detach(), s * 2


@pytest.mark.parametrize("subclass", [False, True], ids=["plain", "twotensor"])
def test_bool_tensor_given_autograd_history_is_refused_where_the_caller_sees_it(subclass):
    """NOTE [outputs of a non-differentiable dtype that require grad]: eager's ``m[:, 1] = s``
    (``s`` requiring grad) gives the bool ``m`` a CopySlices node; returned, or an argument,
    aotcheck's ``m`` would come back without requires_grad (silently, before), so it is
    refused by name, by the plain engine and by the subclass path alike. The same write into
    a tensor the caller gets only detached matches eager."""
    from torch.testing._internal.two_tensor import TwoTensor

    from aotcheck.check.oracle import Inputs, check
    from aotcheck.errors import UnsupportedInputError

    def value():
        s = TwoTensor(torch.randn(()), torch.randn(())) if subclass else torch.randn(())
        return s.requires_grad_()
    w = torch.randn(2, 3)
    with pytest.raises(UnsupportedInputError, match="output leaf 0 is a torch.bool tensor that "
                                                     "requires grad: eager gives"):
        aotcheck.aot_function(_bool_written_and_returned)(w, value())
    m = w.gt(0)
    with pytest.raises(UnsupportedInputError, match="argument 0 is a torch.bool tensor that "
                                                     "requires grad after the call"):
        aotcheck.aot_function(_bool_argument_written)(m, value())
    assert not m.requires_grad
    if not subclass:
        # its backward fails inside autograd only where a gradient reaches m: one compiled
        # backward cannot tell; the subclass path traces its joint at the backward, with
        # the gradients given (the backward raises where eager's does)
        with pytest.raises(UnsupportedInputError, match="computed from a bool or integer"):
            aotcheck.aot_function(_bool_written_then_read_as_float)(w, value())
    eager_m, _ = _bool_written_and_returned(w, value())
    assert eager_m.requires_grad and eager_m.dtype == torch.bool     # eager's, refused above

    def make():
        s = value()
        return Inputs((w.clone(), s), leaves=(s,))
    for fn in (_bool_written_not_returned,) + ((_bool_written_then_read_as_float,) if subclass else ()):
        r = check(fn, aotcheck.aot_function(fn), make)
        assert r.ok, r.divergences


def _sibling_row_given_data_then_written(a0, a1):
    a1.data = a0
    a1.add_(1.0)
    return a1 * 2


def _retained_then_given_data_then_written(a0, a1):
    a1.retain_grad()
    a1.data = a0
    a1.add_(1.0)
    return a1 * 2


def _given_data_then_written_then_retained(a0, a1):
    a1.data = a0
    a1.add_(1.0)
    a1.retain_grad()
    return a1 * 2


def test_data_assignment_then_writes_refusals_are_named():
    # NOTE [.data assignment of an argument that requires grad] (capture/storage/swaps.py): the two
    # sub-cases aotcheck refuses, by name, where it would otherwise give a wrong gradient: a
    # row of a base (sharing storage with a sibling argument) given .data = of its sibling
    # and then written (the synthetic-base trace rebuilds its gradient in its old row; eager's
    # in the new one), and retain_grad() on an argument given .data = and written after
    def rows():
        b = torch.randn(2, 3, requires_grad=True).clone()
        return b[0], b[1]
    with pytest.raises(aotcheck.UnsupportedInputError, match="given .data = while that storage"):
        aotcheck.aot_function(_sibling_row_given_data_then_written)(*rows())
    for fn in (_retained_then_given_data_then_written, _given_data_then_written_then_retained):
        args = [torch.randn(3, requires_grad=True).clone() for _ in range(2)]
        with pytest.raises(aotcheck.UnsupportedInputError, match="retain_grad"):
            aotcheck.aot_function(fn)(*args)
    # eager runs all three (the refusals are aotcheck's limits, not eager's errors)
    _sibling_row_given_data_then_written(*rows())
    _retained_then_given_data_then_written(*[torch.randn(3, requires_grad=True).clone() for _ in range(2)])


def _clamp_into_float64(a):
    return torch.clamp(a * 2, -0.5, 0.5, out=torch.empty(0, dtype=torch.float64))


def _add_into_long_argument(a, o):
    torch.add(a.detach(), 1.5, out=o)
    return a + 1


def _add_with_grad_into_long_argument(a, o):
    torch.add(a, 1.5, out=o)        # autograd refuses first, before the kernel's dtype check
    return a + 1


def _sort_into_float64(a):
    return torch.sort(a, 1, out=(torch.empty(0, dtype=torch.float64), torch.empty(0, dtype=torch.long)))[0]


@pytest.mark.parametrize("fn, make", [
    (_clamp_into_float64, lambda: (torch.rand(3, 4),)),
    (_clamp_into_float64, lambda: (torch.rand(4, 3).t(),)),
    (_add_into_long_argument, lambda: (torch.rand(2, 3, requires_grad=True), torch.zeros(2, 3, dtype=torch.long))),
    (_add_with_grad_into_long_argument,
     lambda: (torch.rand(2, 3, requires_grad=True), torch.zeros(2, 3, dtype=torch.long))),
    (_sort_into_float64, lambda: (torch.rand(3, 4),)),
], ids=["clamp", "clamp_transposed", "add_long_argument", "add_with_grad", "sort"])
def test_an_out_tensor_of_a_dtype_eager_refuses_raises_eagers_error(fn, make):
    """NOTE [out= dtype checks]: eager's CPU kernel refuses these out dtypes; the fake kernels
    do not, and the functionalized call casts, so aotcheck returned a result where eager raises."""
    with pytest.raises(RuntimeError) as eager:
        fn(*make())
    args = make()
    before = [a.clone() for a in args]
    with pytest.raises(RuntimeError) as compiled:
        aotcheck.aot_function(fn)(*args)
    assert str(eager.value) in str(compiled.value)
    for a, b in zip(args, before):
        assert torch.equal(a, b)        # eager refuses before it writes anything


def _data_of_an_intermediate_then_used(a):
    b = a.cos()
    c = a.sin()
    b.data = c
    return b * 2, b


def _data_of_an_argument_then_used(a, w):
    a.data = w.detach() * 3
    return a * 2


def _data_shared_then_written(a):
    b = a.cos()
    c = a.sin()
    b.data = c
    c.mul_(2)
    return b + 1


def _parameter_made_inside_swaps_data_with_an_inference_write():
    # fuzz seed 3 repro_03: the inference_mode write sends capture the plain way
    v0 = torch.nn.Parameter(torch.randn(2))
    v1 = v0.detach().cos()
    with torch.inference_mode():
        v1.mul_(1.0)
    v1.data, v0.data = v0.data, v1.data
    return (v0,)


@pytest.mark.parametrize("plain", [False, True], ids=["chosen_way", "plain_way"])
@pytest.mark.parametrize("fn, make", [
    (_data_of_an_intermediate_then_used, lambda: (torch.randn(3),)),
    (_data_of_an_argument_then_used, lambda: (torch.randn(3), torch.randn(3))),
    (_data_shared_then_written, lambda: (torch.randn(3),)),
    (_parameter_made_inside_swaps_data_with_an_inference_write, lambda: ()),
], ids=["intermediate", "argument", "shared_then_written", "parameter_inference_write"])
def test_data_assignment_reaches_the_plain_trace(fn, make, plain):
    """NOTE [.data assignment in the plain trace]: make_fx kept a tensor given ``.data =`` on
    the node of its old value, so the plain way lost every assignment (silently wrong values)."""
    from aotcheck import flags
    torch.manual_seed(0)
    args = make()
    torch.manual_seed(1)
    expected = fn(*args)
    torch.manual_seed(0)
    args2 = make()
    torch.manual_seed(1)
    with flags.overridden(flags.TRACE_PLAIN, plain):
        got = aotcheck.aot_function(fn)(*args2)
    for e, g in zip(expected, got):
        torch.testing.assert_close(g.detach(), e.detach())
    for a, b in zip(args, args2):
        torch.testing.assert_close(b, a)


def test_data_of_another_dtype_onto_an_argument_is_refused_on_the_plain_way():
    """NOTE [.data assignment in the plain trace]: the plain way's replay kept the argument's
    old dtype (silently); it refuses by name, and the chosen (functional) way gives eager's."""
    from aotcheck import flags
    from aotcheck.errors import UnsupportedInputError

    def f(x):
        x.data = x.double()
        x.add_(1)
        return x * 2
    x = torch.rand(2, 3)
    with flags.overridden(flags.TRACE_PLAIN, True), pytest.raises(UnsupportedInputError, match="dtype"):
        aotcheck.aot_function(f)(x.clone())
    y, ref = x.clone(), x.clone()
    expected = f(ref)
    got = aotcheck.aot_function(f)(y)
    torch.testing.assert_close(got, expected)
    assert y.dtype == ref.dtype == torch.float64


def test_a_mutating_custom_op_leaves_parameter_construction_as_it_was():
    """NOTE [parameters made inside]: the recorder is re-entered for a mutating custom op's
    kernel; the inner entry took the patched ``Parameter.__new__`` for the original, so the
    patch outlived the call (every later ``nn.Parameter`` in the process went through it)."""
    import aotcheck.fuzz.library_ops  # noqa: F401
    original = torch.nn.Parameter.__dict__["__new__"]

    def f(a):
        torch.ops.aotcheck_fuzz.mul2_(a)
        return a * 2
    aotcheck.aot_function(f)(torch.randn(3))
    assert torch.nn.Parameter.__dict__["__new__"] is original


@pytest.mark.parametrize("shape", [(3,), (2, 3)], ids=["same_shape", "another_shape"])
def test_parameter_given_data_of_another_dtype_gets_a_gradient_of_that_dtype(shape, tmp_path):
    """``p.data = a0`` with a float64 ``a0`` and a float32 Parameter ``p``, then ``p * a0``:
    eager's AccumulateGrad is made at that use, with the new dtype, so ``p.grad`` is float64.
    The compiled function took its input edge before the swap was replayed (a float32
    gradient, silently) where only the shape was compared (found by aotcheck check's dtype
    variation of a stop-33 case)."""
    def f(p, a0):
        p.data = a0
        with torch.no_grad():
            p.add_(1.0)
        return p * a0

    def make():
        g = torch.Generator().manual_seed(0)
        return (torch.nn.Parameter(torch.rand(3, generator=g)),
                torch.rand(shape, generator=g, dtype=torch.float64))
    p, a0 = make()
    f(p, a0).sum().backward()
    compiled = aotcheck.aot_function(f, cache=str(tmp_path))
    for _ in range(2):          # cold, then a cache hit in this process
        q, b0 = make()
        compiled(q, b0).sum().backward()
        assert q.grad.dtype == p.grad.dtype == torch.float64
        torch.testing.assert_close(q.grad, p.grad)
        torch.testing.assert_close(q.detach(), p.detach())


def _written_then_data_of_its_own_view(a1):
    v0 = a1.narrow(0, 0, 1)
    a1.mul_(-1.0)
    with torch.no_grad():
        a1.data = v0
    return ()


def _written_then_data_of_its_own_slice(a1):
    a1.mul_(-1.0)
    a1.data = a1[:1]
    return ()


@pytest.mark.parametrize("fn", [_written_then_data_of_its_own_view, _written_then_data_of_its_own_slice])
def test_data_back_onto_its_own_storage_after_a_recorded_write_keeps_the_write(fn):
    """Fuzz seed 3 (4 programs): ``a1.mul_(-1); a1.data = a1[:1]`` on a non-leaf argument.
    Eager's a1 keeps MulBackward0; the runtime's replay onto its own storage (geometry, then
    the storage copied under no_grad) lost it, and the leaf's gradient came back +1 where
    eager's is -1 (then it was refused). The storage is now copied in under grad mode after
    the swap: the caller's later use of a1 reaches the write, and the leaf's gradient is -1."""
    for compiled in (False, True):
        leaf = torch.tensor([0.5], requires_grad=True)
        a1 = leaf.clone()
        (aotcheck.aot_function(fn) if compiled else fn)(a1)
        (a1 * 3).sum().backward()
        assert leaf.grad.tolist() == [-3.0], compiled


def _hooked_argument_and_another_output(x, y):
    x.register_hook(lambda g: g * 2)
    return x * 2, y * 3


def test_a_hooked_argument_that_the_backward_does_not_reach_is_not_called():
    """Eager's backward through ``y * 3`` alone never reaches x's node, so x's hook does not
    run; the compiled function's edge to x handed it None, and the hook raised TypeError
    (``None * 2``). The runtime's hooks skip a None gradient (imperative.skip_unreached)."""
    for fn in (_hooked_argument_and_another_output, aotcheck.aot_function(_hooked_argument_and_another_output)):
        x, y = torch.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
        a, b = fn(x, y)
        b.sum().backward(retain_graph=True)     # (the compiled outputs share one node)
        assert x.grad is None and y.grad.tolist() == [3.0] * 3
        a.sum().backward()
        assert x.grad.tolist() == [4.0] * 3             # the hook doubled it


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


def _shallow_copy_data(x, y):
    torch.ops.aten.shallow_copy_data_(x, y)


def _data_of_a_written_nonleaf(x):
    x.mul_(2)
    _shallow_copy_data(x, torch.ones(3))
    return x * 3


def _data_kept_by_an_earlier_view(x):
    v = x[0]
    with torch.no_grad():
        _shallow_copy_data(x, torch.zeros(5))
    v.add_(3)
    return v, x


def _data_of_a_parameter_of_another_shape(w):
    with torch.no_grad():
        _shallow_copy_data(w, w[:2].t().contiguous())
    return w * 2


def _nonleaf_of(*shape):
    from aotcheck.check.corpus.builders import leaf, seeded
    from aotcheck.check.oracle import Inputs

    def make():
        w = leaf(*shape)
        return Inputs((w.clone(),), leaves=(w,))
    return seeded(make)


def _plain_of(*shape):
    from aotcheck.check.corpus.builders import seeded
    from aotcheck.check.oracle import Inputs
    return seeded(lambda: Inputs((torch.randn(*shape),)))


def _parameter_of(*shape):
    from aotcheck.check.corpus.builders import seeded
    from aotcheck.check.oracle import Inputs

    def make():
        w = torch.nn.Parameter(torch.randn(*shape))
        return Inputs((w,), leaves=(w,))
    return seeded(make)


@pytest.mark.skipif(not hasattr(torch.ops.aten, "shallow_copy_data_"),
                    reason="aten.shallow_copy_data_ is new in torch 2.14")
@pytest.mark.parametrize("fn, make", [
    (_data_of_a_written_nonleaf, _nonleaf_of(3)),
    (_data_kept_by_an_earlier_view, _plain_of(2, 2)),
    (_data_of_a_parameter_of_another_shape, _parameter_of(3, 2)),
], ids=["written_nonleaf", "earlier_view", "parameter_of_another_shape"])
def test_shallow_copy_data_is_traced_as_the_data_assignment_it_is(fn, make, tmp_path):
    """NOTE [shallow_copy_data_] (capture/storage/data_assign.py): eager's ``aten.shallow_copy_data_(x, y)``
    is ``x.data = y``, and Dynamo of torch 2.14 and later writes ``.data =`` so; functionalization
    refused it ("cannot mutate tensors with frozen storage"), or aotcheck as a set_()."""
    from aotcheck.check.oracle import check
    for compiled in (aotcheck.aot_function(fn), aotcheck.aot_function(fn, cache=str(tmp_path)),
                     aotcheck.aot_function(fn, cache=str(tmp_path))):
        r = check(fn, compiled, make)
        assert r.ok, r.divergences

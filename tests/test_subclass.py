"""Tensor-subclass arguments and outputs (``aotcheck/subclass/``): eager's types, gradients
and mutations, the keys that must miss, and the named refusals."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings, strategies as st
from torch.testing._internal.two_tensor import TwoTensor

import aotcheck
from aotcheck.check.oracle import _close
from aotcheck.errors import UnsupportedInputError
from aotcheck.subclass import desugar
from aotcheck.engine.capture.facts import Poison
from aotcheck.subclass.records import Covered, LeafMade, Moved, OuterCall, OuterFacts, OutFact, Replay, ViewMode


class TaggedTwo(TwoTensor):
    """A TwoTensor whose flatten ctx carries a tag (ops on it return plain TwoTensors)."""

    def __new__(cls, a, b, tag, outer_size=None, outer_stride=None):
        return super().__new__(cls, a, b, outer_size, outer_stride)

    def __init__(self, a, b, tag, outer_size=None, outer_stride=None):
        super().__init__(a, b, outer_size, outer_stride)
        self.tag = tag

    def __tensor_flatten__(self):
        return ["a", "b"], self.tag

    @staticmethod
    def __tensor_unflatten__(inner, tag, outer_size, outer_stride):
        return TaggedTwo(inner["a"], inner["b"], tag, outer_size, outer_stride)


def two(*shape, requires_grad=False):
    t = TwoTensor(torch.randn(*shape), torch.randn(*shape))
    return t.requires_grad_() if requires_grad else t


def test_leaf_grad_is_a_twotensor_as_in_eager():
    def f(x, y):
        return (x.sin() * y).cos()
    grads = []
    for fn in (f, aotcheck.aot_function(f)):
        torch.manual_seed(0)
        x, y = two(3, 4, requires_grad=True), torch.randn(3, 4, requires_grad=True)
        out = fn(x, y)
        assert type(out) is TwoTensor and out.requires_grad
        out.sum().backward()
        grads.append((x.grad, y.grad))
    (ex, ey), (cx, cy) = grads
    assert type(cx) is TwoTensor and type(cy) is TwoTensor      # y meets x: eager's is one too
    assert _close(ex, cx) is None and _close(ey, cy) is None


def test_mutation_of_a_subclass_argument_reaches_its_inner_tensors():
    def f(x):
        x.mul_(2)
        return x.view(-1)
    torch.manual_seed(0)
    x = two(3, 4)
    a0, b0 = x.a.clone(), x.b.clone()
    out = aotcheck.aot_function(f)(x)
    assert torch.equal(x.a, a0 * 2) and torch.equal(x.b, b0 * 2)
    out.add_(1)                                   # the output is a view of the argument
    assert torch.equal(x.a, a0 * 2 + 1) and type(out) is TwoTensor and out.shape == (12,)


def test_oracle_compares_subclasses_by_type_and_inner_tensors():
    t = two(3)
    assert _close(t, TwoTensor(t.a.clone(), t.b.clone())) is None
    assert "type" in _close(t, t.a)
    assert "inner tensor 1" in _close(t, TwoTensor(t.a.clone(), t.b + 1))


def test_different_subclass_or_ctx_misses():
    def f(x):
        return x
    cf = aotcheck.aot_function(f)
    torch.manual_seed(0)
    a, b = torch.randn(3), torch.randn(3)
    o1 = cf(TaggedTwo(a, b, "one"))
    o2 = cf(TaggedTwo(a, b, "two"))
    o3 = cf(TwoTensor(a, b))
    assert len(cf._subclass) == 3
    assert (type(o1), o1.tag, type(o2), o2.tag, type(o3)) == (TaggedTwo, "one", TaggedTwo, "two", TwoTensor)
    cf(TaggedTwo(a, b, "two"))
    assert len(cf._subclass) == 3                # an equal call hits


def test_persistent_cache_hits_and_rebuilds_subclass_outputs(tmp_path):
    def f(x, y):
        return x * y, (x + 1).sum()
    outs = []
    for _ in range(2):
        cf = aotcheck.aot_function(f, cache=str(tmp_path))
        torch.manual_seed(0)
        x, y = two(2, 3, requires_grad=True), torch.randn(2, 3)
        o = cf(x, y)
        o[1].backward()
        outs.append((o, x.grad))
    (o1, g1), (o2, g2) = outs
    assert type(o2[0]) is TwoTensor and _close(o1[0], o2[0]) is None and _close(g1, g2) is None
    assert any(tmp_path.rglob("*"))


class NoFlatten(torch.Tensor):
    pass


def test_subclass_without_tensor_flatten_is_refused_by_name():
    x = torch.randn(3).as_subclass(NoFlatten)
    with pytest.raises(UnsupportedInputError, match="NoFlatten.*without __tensor_flatten__"):
        aotcheck.aot_function(lambda t: t * 2)(x)


def test_ctx_that_is_not_plain_data_is_refused():
    x = TaggedTwo(torch.randn(3), torch.randn(3), object())
    with pytest.raises(UnsupportedInputError, match="ctx holds a object"):
        aotcheck.aot_function(lambda t: t * 2)(x)


def test_a_non_leaf_subclass_argument_written_in_place_gets_eager_history():
    # NOTE [subclass non-leaf writes]: the argument is rebased onto the call, so a gradient
    # taken from it afterwards flows through the write (x 2) to the leaf, as in eager
    def f(x):
        x.mul_(2)
        return x.sum()
    base = two(3, requires_grad=True)
    arg = base * 1
    out = aotcheck.aot_function(f)(arg)
    assert arg.grad_fn is not None        # rebased by the copy back of its new value
    (arg.sum() + out).backward()
    assert base.grad.a.tolist() == [4.0, 4.0, 4.0] and base.grad.b.tolist() == [4.0, 4.0, 4.0]


def test_a_leaf_made_inside_and_an_output_computed_from_it_is_refused_by_name():
    def f(x):
        with torch.no_grad():
            v = x.add(1.0)
            v.requires_grad_()
        return v, x * v
    with pytest.raises(UnsupportedInputError, match="returns a leaf it made"):
        aotcheck.aot_function(f)(two(3, requires_grad=True))


def test_persistent_key_covers_constants_made_inside_the_function(tmp_path):
    # the desugared graphs of these two functions have the same code; only the constant differs
    def make(c):
        return lambda t: t * torch.tensor(c)
    x = TwoTensor(torch.ones(3), torch.ones(3))
    o1 = aotcheck.aot_function(make([2.0, 3.0, 4.0]), cache=str(tmp_path))(x)
    o2 = aotcheck.aot_function(make([5.0, 6.0, 7.0]), cache=str(tmp_path))(x)
    assert o1.a.tolist() == [2.0, 3.0, 4.0] and o2.a.tolist() == [5.0, 6.0, 7.0]


def test_draws_made_inside_match_eager_on_every_call():
    # a torch.Generator made inside is made anew by eager on each call, and torch.manual_seed
    # inside seeds the caller's generator on each call: the second call must draw as eager's
    def f(x):
        v = torch.rand(3, generator=torch.Generator().manual_seed(2))
        torch.manual_seed(3)
        return x * v + torch.rand(3)
    compiled = aotcheck.aot_function(f)
    for _ in range(2):
        x = two(3, requires_grad=True)
        torch.manual_seed(0)
        e = f(x)
        after_e = torch.rand(1)
        torch.manual_seed(0)
        c = compiled(x)
        after_c = torch.rand(1)
        assert torch.equal(e.a, c.a) and torch.equal(e.b, c.b)
        assert torch.equal(after_e, after_c)


def test_an_argument_set_to_a_storage_made_inside_moves_with_grad_on():
    # the graph runs on detached aliases; set_() moves the caller's argument too
    def f(a0, a1, x):
        a1.set_(a0.mean(1, keepdim=True))
        a0.mul_(2)
        return x * 2
    outs = []
    for fn in (f, aotcheck.aot_function(f)):
        torch.manual_seed(0)
        base = torch.randn(2, 4, 1)
        a1 = base[1]
        fn(base[0], a1, two(3, requires_grad=True))
        outs.append(a1)
    assert outs[1].untyped_storage().data_ptr() != outs[1]._base.untyped_storage().data_ptr()
    assert torch.equal(outs[0], outs[1])


def test_requires_grad_on_an_argument_routes_its_gradient_from_then_on():
    # NOTE [requires_grad_ on a subclass argument]: what was computed before the flag has no
    # history, what after it has, and its gradient reaches the caller's tensor
    def f(a):
        v = a * 2
        a.requires_grad_()
        return v, a * 3
    x = two(2)
    v, w = aotcheck.aot_function(f)(x)
    assert x.requires_grad and x.is_leaf and not v.requires_grad and w.grad_fn is not None
    w.sum().backward()
    assert x.grad.a.tolist() == [3.0, 3.0] and x.grad.b.tolist() == [3.0, 3.0]


def test_requires_grad_on_an_argument_whose_shape_changed_is_refused_by_name():
    # its gradient would have the new geometry, the edge of the caller's tensor the old one
    def f(a):
        a.t_()
        a.requires_grad_()
        return a * 2
    with pytest.raises(UnsupportedInputError, match="requires_grad_\\(\\) on an argument"):
        aotcheck.aot_function(f)(two(2, 3))


def test_an_output_computed_from_a_leaf_made_inside_has_history_without_grad_arguments():
    # traced in the call's grad mode: the output requires grad and has a grad_fn, as in eager
    # (its gradient goes to the leaf made inside, so the arguments get none)
    def f(x):
        w = torch.ones(2, requires_grad=True)
        return x * w
    x = two(2)
    out = aotcheck.aot_function(f)(x)
    assert out.requires_grad and out.grad_fn is not None
    out.sum().backward()
    assert x.grad is None


def test_a_view_of_a_detach_of_an_argument_requires_no_grad():
    # remade from the argument: as a view of its detach, not a no_grad view (which would
    # require grad through the argument)
    def f(a):
        return a.detach()[0]
    x = two(2, 3, requires_grad=True)
    out = aotcheck.aot_function(f)(x)
    assert not out.requires_grad and out._is_view()
    assert out.a.untyped_storage().data_ptr() == x.a.untyped_storage().data_ptr()


def _matmul_sin(x, w):
    return (x @ w).sin()


def _autocast_run(fn, autocast: bool):
    g = torch.Generator().manual_seed(0)
    a, b, w = (torch.randn(3, 3, generator=g) for _ in range(3))
    x, w = TwoTensor(a, b).requires_grad_(), w.requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        out = fn(x, w)
    out.sum().backward()     # after the autocast block, as users write it
    return out, x.grad, w.grad


@pytest.mark.parametrize("written_without_autocast", [False, True], ids=["cold", "cached_without"])
def test_the_joint_runs_in_the_autocast_state_of_the_forward(tmp_path, written_without_autocast):
    """NOTE [subclass joint in the forward's state]: the outer-level joint is traced at the first
    backward, outside the call's autocast; its gradients are eager's, cold and when a joint
    compiled without autocast sits in the cache (that one must not be served: a stale hit)."""
    if written_without_autocast:
        _autocast_run(aotcheck.aot_function(_matmul_sin, cache=str(tmp_path)), False)
    expected = _autocast_run(_matmul_sin, True)
    got = _autocast_run(aotcheck.aot_function(_matmul_sin, cache=str(tmp_path)), True)
    for e, c in zip(expected, got):
        assert e.dtype == c.dtype and _close(e, c) is None
    assert not torch.is_autocast_enabled("cpu") and torch.get_default_dtype() == torch.float32


def _outer_facts(monkeypatch, fn, *args) -> OuterFacts:
    """The outer-level facts the forward trace of ``fn(*args)`` reads (``split_rebased``'s)."""
    seen = []
    real = desugar.split_rebased

    def recorded(*a, **k):
        seen.append(real(*a, **k))
        return seen[-1]
    monkeypatch.setattr(desugar, "split_rebased", recorded)
    aotcheck.aot_function(fn)(*args)
    return seen[-1]


def test_outer_facts_are_typed_records_read_off_the_trace(monkeypatch):
    """The records' docstring examples (aotcheck/subclass/records.py) and one with a write
    after a metadata call, a view made under no_grad and one of unbind's views; each
    round-trips through JSON."""
    def f(a):
        return a[0], a.sin(), a

    def g(a):
        a.transpose_(0, 1)
        return a * 2

    def h(a):
        a.transpose_(0, 1)
        a.mul_(2)
        with torch.no_grad():
            v = a[0]
        return v, a.unbind(0)[1]
    base = two(2, 3, requires_grad=True)
    got = [_outer_facts(monkeypatch, f, base), _outer_facts(monkeypatch, g, base * 1),
           _outer_facts(monkeypatch, h, base * 1)]
    transpose = "OuterCall(method='transpose_', args=(0, 1), kwargs=(), grad_enabled=True)"
    moved = "moved=(Moved(arg=0, geometry=((3, 2), (1, 3), 0)),)"
    assert [repr(x) for x in got] == [
        "OuterFacts(outs=(OutFact(home=0, geometry=((3,), (1,), 0), mode=ViewMode.GRAD), OutFact(), "
        "OutFact(same_arg=0)))",
        f"OuterFacts(outs=(OutFact(),), {moved}, written=(0,), replay=(Replay(arg=0, "
        f"after=({transpose},)),))",
        "OuterFacts(outs=(OutFact(home=0, geometry=((2,), (3,), 0), mode=ViewMode.NO_GRAD), "
        "OutFact(home=0, geometry=((2,), (3,), 1), mode=ViewMode.GRAD, multi_output=True)), "
        f"{moved}, rebased=(0,), written=(0,), replay=(Replay(arg=0, before=({transpose},), "
        "at=((3, 2), (1, 3), 0)),))"]
    for facts in got:
        assert OuterFacts.from_json(facts.to_json()) == facts


_ints = st.none() | st.integers(0, 5)
_geometry = st.tuples(st.lists(st.integers(0, 9), max_size=3).map(tuple),
                      st.lists(st.integers(0, 9), max_size=3).map(tuple), st.integers(0, 9))
_plain = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-9, 9), st.text(max_size=3)),
                      lambda inner: st.lists(inner, max_size=3).map(tuple), max_leaves=6)
_calls = st.lists(st.builds(OuterCall, st.sampled_from(["t_", "transpose_", "squeeze_"]),
                            st.lists(_plain, max_size=3).map(tuple),
                            st.lists(st.tuples(st.text(max_size=3), _plain), max_size=2).map(tuple),
                            st.booleans()), max_size=2).map(tuple)
_outs = st.builds(OutFact, _ints, _ints, _ints, st.one_of(st.just(()), _geometry),
                  st.none() | st.sampled_from(ViewMode), st.none() | st.sampled_from(Poison),
                  st.none() | st.sampled_from(LeafMade),
                  st.booleans(), st.booleans(), st.booleans(), st.booleans(),
                  st.lists(st.booleans(), max_size=3).map(tuple), st.booleans())
_indices = st.lists(st.integers(0, 5), max_size=3).map(tuple)


@settings(max_examples=50, deadline=None)
@given(st.builds(OuterFacts, st.lists(_outs, max_size=3).map(tuple),
                 st.lists(st.builds(Moved, st.integers(0, 5), _geometry), max_size=2).map(tuple),
                 _indices, _indices, _indices, _indices, _indices,
                 st.lists(st.builds(Replay, st.integers(0, 5), _calls, _calls,
                                    st.one_of(st.just(()), _geometry),
                                    st.lists(st.lists(st.integers(1, 4), max_size=3).map(tuple),
                                             max_size=2).map(tuple)), max_size=2).map(tuple),
                 st.lists(st.builds(Covered, st.integers(0, 5), st.integers(0, 5)), max_size=2).map(tuple)))
def test_outer_facts_round_trip_through_json(facts):
    """Every field of the outer-level facts filled: plain data that JSON gives back equal."""
    assert OuterFacts.from_json(facts.to_json()) == facts


@pytest.mark.parametrize("write", [False, True])
def test_a_subclass_view_set_onto_a_plain_argument_stays_a_subclass(write):
    # NOTE [subclass output of another type over an argument's memory]: eager's set_() keeps
    # the wrapper's type; its inner tensors are over the plain argument's memory (the output
    # was remade from the argument, a plain tensor: fuzz seed 1)
    def f(a0, a1):
        v = a0.diagonal(1, 0, 1)
        v.set_(a1)
        if write:
            v.mul_(2)
        return v
    cf = aotcheck.aot_function(f)
    for _ in range(2):                  # cold, then the in-memory hit
        res = []
        for fn in (f, cf):
            torch.manual_seed(0)
            a0, a1 = two(4, 4), torch.randn(3)
            res.append((fn(a0, a1), a1))
        (e, ea1), (c, ca1) = res
        assert type(c) is TwoTensor and _close(e, c) is None and torch.equal(ea1, ca1)
        assert c.a.untyped_storage().data_ptr() == ca1.untyped_storage().data_ptr()


_seen = []


def _square_grad(g):
    _seen.append(g.detach().clone())
    return g * g                                    # not linear: sees the whole gradient


def _hook_then_write(a0, a1):
    a0.register_hook(_square_grad)
    a0.mul_(a1.sum())
    return a0 * 3


def _write_then_hook(a0, a1):
    a0.mul_(a1.sum())
    a0.register_hook(_square_grad)
    return a1 * 3       # (an output computed from a0 here misses the hook, plain path too)


def _hook_removed(a0, a1):
    h = a0.register_hook(_square_grad)
    h.remove()
    return a0 * a1.sum()


def _hook_under_no_grad(a0, a1):
    with torch.no_grad():
        a0.register_hook(_square_grad)
    return a0 * a1.sum()


@pytest.mark.parametrize("fn", [_hook_then_write, _write_then_hook, _hook_removed,
                                _hook_under_no_grad])
@pytest.mark.parametrize("nonleaf", [False, True])
@pytest.mark.parametrize("grad", [False, True])
def test_a_hook_on_an_argument_is_registered_on_the_callers_tensor(fn, nonleaf, grad, tmp_path):
    # NOTE [subclass imperative autograd]: the hook sees the argument's whole gradient (the
    # caller's use after the call too), once, at the node eager puts it on (a hook on a
    # non-leaf argument was refused: fuzz seed 1), on every call, cold and from the cache
    cf = aotcheck.aot_function(fn, cache=str(tmp_path))
    if fn in (_hook_then_write, _write_then_hook) and not nonleaf and grad:
        # eager refuses to write a leaf that requires grad, and the compiled call refuses it
        # with eager's message, cold and again where a cache directory is given
        leaf = "a leaf Variable that requires grad is being used in an in-place operation"
        with pytest.raises(RuntimeError, match=leaf):
            fn(torch.randn(3, requires_grad=True), two(3, requires_grad=True))
        for _ in range(2):
            with pytest.raises(aotcheck.TraceError, match=leaf):
                cf(torch.randn(3, requires_grad=True), two(3, requires_grad=True))
        return
    for _ in range(2):
        res = []
        for f in (fn, cf):
            torch.manual_seed(0)
            l0 = torch.randn(3, requires_grad=True)
            l1 = two(3, requires_grad=True)
            a0, a1 = (l0.clone(), l1.clone()) if nonleaf else (l0, l1)
            del _seen[:]
            with torch.set_grad_enabled(grad):
                out = f(a0, a1)
            (out.sum() + (a0 * a0).sum()).backward()
            res.append((l0.grad, l1.grad, list(_seen)))
        (e0, e1, es), (c0, c1, cs) = res
        assert len(es) == len(cs)
        for e, c in [(e0, c0), (e1, c1), *zip(es, cs)]:
            assert (e is None) == (c is None) and (e is None or _close(e, c) is None)


def test_the_joint_hits_whatever_layout_autograd_hands_the_gradient_in(tmp_path):
    # NOTE [subclass tangent layout]: the same call whose output's gradient comes in another
    # layout hits the cached joint, with eager's gradient (it missed: keyvar fuzz 19); a call
    # whose argument's dtype changed still misses
    def f(x, w):
        return x * w
    for k, (transposed, dtype) in enumerate([(False, torch.float32), (True, torch.float32),
                                             (True, torch.float64)]):
        res = []
        for fn in (f, aotcheck.aot_function(f, cache=str(tmp_path))):
            aotcheck.reset_counters()
            torch.manual_seed(0)
            x = TwoTensor(torch.randn(3, 2, dtype=dtype), torch.randn(3, 2, dtype=dtype)).requires_grad_()
            w = torch.randn(3, 2, dtype=dtype)
            g = [torch.randn(2, 3, dtype=dtype).t() if transposed else torch.randn(3, 2, dtype=dtype)
                 for _ in range(2)]
            fn(x, w).backward(TwoTensor(*g))
            res.append(x.grad)
        assert _close(res[0], res[1]) is None
        counts = dict(aotcheck.counters)
        if k == 1:
            assert counts["hits"] == 2 and counts["misses"] == 0, counts    # forward, joint
        if k == 2:
            assert counts["hits"] == 0 and counts["misses"] == 2, counts


# NOTE [subclass .data assignment]: ``x.data = y`` in a call with a subclass argument (it was
# refused: fuzz seed 1, 11 examples), onto a leaf made inside, onto an argument (of another
# shape, of another dtype), swaps; with grad and without, cold and from the cache, backward twice
def _data_onto_leaf_inside(a1, a2, a3):
    v = torch.randn((1, 1), requires_grad=True)
    v.data = a2
    w = torch.randn((1, 1), requires_grad=True)
    w.data = a3
    return v * a1.sum(), w


def _data_onto_argument(a1, a2, a3):
    a3.data = a2
    return a3 * a1.sum()


def _data_of_another_dtype(a1, a2, a3):
    a3.data = a2.double()
    return a3 * 2, a1 * 1


def _data_swap(a1, a2, a3):
    a2.data, a3.data = a3.data, a2.data
    return a2 * a1.sum(), a3 + 1


def _data_then_written(a1, a2, a3):
    a3.data = a2
    a3.data.mul_(2)
    return a1 * a3.sum()


def _data_inputs(a3_grad: bool, nonleaf: bool):
    from aotcheck.check.oracle import Inputs

    def make():
        l1 = two(2, requires_grad=True)
        l3 = torch.randn(2, 2, 2).requires_grad_(a3_grad)
        a3 = l3.clone() if nonleaf and a3_grad else l3
        return Inputs((l1.clone(), torch.randn(2, 1, 2, 2)[0], a3), {}, (l1, l3) if a3_grad else (l1,))
    return make


@pytest.mark.parametrize("fn", [_data_onto_leaf_inside, _data_onto_argument, _data_of_another_dtype,
                                _data_swap, _data_then_written])
@pytest.mark.parametrize("a3_grad,nonleaf", [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("grad", [True, False])
def test_data_assignment_in_a_subclass_call_matches_eager(fn, a3_grad, nonleaf, grad, tmp_path):
    from aotcheck.check.oracle import check
    # with _data_swap on a non-leaf eager raises at backward (the non-leaf keeps its node of the
    # old shape), and the oracle checks that the compiled call raises there too
    for cache in (None, str(tmp_path), str(tmp_path)):
        with torch.set_grad_enabled(grad):
            r = check(fn, aotcheck.aot_function(fn, cache=cache), _data_inputs(a3_grad, nonleaf))
        assert r.ok, r.divergences


def _data_after_use_dies(a1, a3):     # the use dies with the call: a node of the new shape
    v = a3.mean()
    with torch.no_grad():
        a3.data = torch.ones(()) * 3
    return (a1 * 2,)


def _data_after_use_returned(a1, a3):        # the node of the old shape lives on
    v = a3 * 2
    a3.data = torch.ones(2, 4) * 3
    return a1 * 2, v


def _data_after_use_used_after(a1, a3):      # a use after it goes to the old node too
    v = a3 * 2
    a3.data = torch.ones(3, 4) * 3
    return a3 * a1.sum(), v.sum()


@pytest.mark.parametrize("fn", [_data_after_use_dies, _data_after_use_returned,
                                _data_after_use_used_after])
def test_data_assignment_onto_another_shape_after_a_use_matches_eager(fn):
    # NOTE [subclass .data assignment onto another shape]: the leaf's node of the old shape
    # stays while a use holds it (it was refused: fuzz seed 1), the caller's use after the call
    # goes to a node of the new shape where nothing held it
    res = []
    for c in (fn, aotcheck.aot_function(fn)):
        torch.manual_seed(0)
        l1 = two(4, requires_grad=True)
        a3 = torch.randn(4, requires_grad=True)
        outs = c(l1.clone(), a3)
        loss = sum(o.sum() for o in outs)
        (loss + (a3 * 5).sum() if fn is _data_after_use_dies else loss).backward()
        res.append((a3.shape, a3.grad, l1.grad))
    (es, eg, el), (cs, cg, cl) = res
    assert es == cs and _close(eg, cg) is None and _close(el, cl) is None


def test_a_second_backward_after_data_assignment_onto_an_argument_matches_eager():
    def f(a1, a2, a3):
        s = a2.sum()
        a3.data = a2
        a2.data = torch.ones(1, 2, 2) * 2
        return a3 * a1.sum() * s, a2 * a1.sum()
    grads = []
    for fn in (f, aotcheck.aot_function(f)):
        torch.manual_seed(0)
        l1 = two(2, requires_grad=True)
        a3 = torch.randn(2, 2, 2, requires_grad=True)
        o1, o2 = fn(l1.clone(), torch.randn(1, 2, 2), a3)
        (o1.sum() + o2.sum()).backward(retain_graph=True)
        (o1.sum() + o2.sum()).backward()
        grads.append((l1.grad, a3.grad))
    assert _close(grads[0][0], grads[1][0]) is None and _close(grads[0][1], grads[1][1]) is None


@pytest.mark.parametrize("nonleaf", [False, True])
def test_a_second_backward_reads_the_primals_as_they_were_before_the_forward(nonleaf):
    # NOTE [subclass primals of a second backward]: the joint wrote the saved primals of a
    # written argument, and a second backward (retain_graph) read them doubled
    def f(a1, a2):
        a2.mul_(2)
        return a2 * a1
    grads = []
    for fn in (f, aotcheck.aot_function(f)):
        torch.manual_seed(0)
        l1 = two(2, requires_grad=True)
        l2 = torch.randn(2, requires_grad=nonleaf)
        out = fn(l1.clone(), l2.clone() if nonleaf else l2)
        out.sum().backward(retain_graph=True)
        out.sum().backward()
        grads.append((l1.grad, l2.grad))
    (e1, e2), (c1, c2) = grads
    assert _close(e1, c1) is None and (e2 is None) == (c2 is None)
    assert e2 is None or _close(e2, c2) is None


# NOTE [subclass alias groups written with grad]: arguments that view one base and require no
# grad, one written in grad mode with a value that requires grad: eager's other views of the
# base require grad from then on (the gradient reached nothing, silently, and retain_grad() on
# a view of one raised: fuzz seed 1)
def _sibling_read_after_write(a0, a1, a2, a3):
    a2.mul_(a1)
    return a3.sum() * 2, a0 * 1


def _sibling_view_retained(a0, a1, a2, a3):
    a2.mul_(a1)
    with torch.no_grad():
        v = a3.as_strided((3,), (1,), 0)
    with torch.inference_mode():
        v.retain_grad()
    return (a3 * 3,)


def _sibling_no_write(a0, a1, a2, a3):
    with torch.no_grad():
        v = a3.as_strided((3,), (1,), 0)
    v.retain_grad()         # eager raises: nothing requires grad
    return (v,)


def _siblings(detached: bool):
    from aotcheck.check.oracle import Inputs

    def make():
        b0 = torch.randn(3, 1, 1)
        l1 = TwoTensor(torch.randn(()), torch.randn(())).requires_grad_()
        a0 = b0.transpose(-2, -1)
        a3 = (b0.detach() if detached else a0).transpose(-2, -1)
        return Inputs((a0, l1.clone(), a0, a3), {}, (l1,))
    return make


@pytest.mark.parametrize("fn", [_sibling_read_after_write, _sibling_view_retained, _sibling_no_write])
@pytest.mark.parametrize("detached", [False, True])
def test_views_of_one_base_see_a_write_in_grad_mode_as_in_eager(fn, detached, tmp_path):
    from aotcheck.check.oracle import check
    for cache in (None, str(tmp_path), str(tmp_path)):
        r = check(fn, aotcheck.aot_function(fn, cache=cache), _siblings(detached))
        assert r.ok, r.divergences


def test_an_argument_and_its_view_both_written_as_in_eager(tmp_path):
    # the view written in grad mode, then its base (fuzz seed 1: the gradient was lost on
    # main; the write-back of the base and then of the view met PyTorch's stale view node)
    from aotcheck.check.oracle import Inputs, check

    def f(a0, a1, a3):
        a3.add_(a0)
        a1.zero_()
        return (a1 * 2,)

    def make():
        b0 = two(1, 1, requires_grad=True)
        b1 = torch.randn(2, 3, 3)
        return Inputs((b0, b1, b1.transpose(-2, -1)), {}, (b0,))
    for cache in (None, str(tmp_path), str(tmp_path)):
        r = check(f, aotcheck.aot_function(f, cache=cache), make)
        assert r.ok, r.divergences


@pytest.mark.parametrize("mode", ["grad", "no_grad", "inference_mode"])
def test_retain_grad_on_an_argument_that_requires_no_grad_raises_as_in_eager(mode):
    # the subclass path skipped it (replayed on the caller's tensor), where eager raises
    # (keyvar fuzz 07: requires_grad of the argument turned off); on one that requires grad it
    # runs, under inference_mode too, where the traced tensors require none (keyvar fuzz 04)
    def f(a0, a2):
        a2.retain_grad()
        return (a0 * 2,)
    ctx = {"grad": torch.enable_grad, "no_grad": torch.no_grad,
           "inference_mode": torch.inference_mode}[mode]
    cf = aotcheck.aot_function(f)
    with ctx():
        for fn in (f, cf):
            with pytest.raises(RuntimeError, match="retain_grad"):
                fn(two(2, requires_grad=True), torch.randn(2))
    for fn in (f, cf):
        a2 = torch.randn(2, requires_grad=True).clone()
        with ctx():
            fn(two(2, requires_grad=True), a2)
        assert a2.retains_grad


@pytest.mark.parametrize("ret", [False, True])
def test_a_view_written_after_its_base_argument_changed_shape_in_place(ret, tmp_path):
    # ``a2 = a1[1:]``, ``a1.squeeze_(1)``, ``a2.mul_(...)``: autograd rebuilds a view of a base
    # it writes by replaying the view's ops on the base as it is now; the write-back into the
    # view and the joint's root member as a view met it ('invalid gradient', fuzz seed 1)
    from aotcheck.check.oracle import Inputs, check

    def f(a0, a1, a2):
        a1.squeeze_(1)
        a2.mul_(1.5)
        return (a0 * 2, a2 + 1) if ret else ()

    def make():
        l0 = two(2, 1, requires_grad=True)
        b0 = l0.clone()
        return Inputs((b0, b0, b0[1:]), {}, (l0,))
    for cache in (None, str(tmp_path), str(tmp_path)):
        r = check(f, aotcheck.aot_function(f, cache=cache), make)
        assert r.ok, r.divergences


@pytest.mark.parametrize("grad_write", [True, False])
def test_data_assignment_onto_a_non_leaf_argument_written_in_place(grad_write, tmp_path):
    # a non-leaf argument written in place is traced as an alias of its input; ``.data =`` of
    # it moved the alias only, and the caller's argument kept its own memory (fuzz seed 1)
    from aotcheck.check.oracle import Inputs, check

    def f(a1, a2, a3):
        with torch.no_grad():
            a3.data = a2
        with torch.set_grad_enabled(grad_write):
            a2.zero_()
        return (a3 * a1.sum(),)

    def make():
        l1, l2, l3 = two(2, requires_grad=True), torch.randn((), requires_grad=True), \
            torch.randn((), requires_grad=True)
        return Inputs((l1.clone(), l2.clone(), l3.clone()), {}, (l1, l2, l3))
    for cache in (None, str(tmp_path), str(tmp_path)):
        r = check(f, aotcheck.aot_function(f, cache=cache), make)
        assert r.ok, r.divergences


def _retain_then_transpose(a2, a3):
    a2.retain_grad()
    a2.transpose_(0, 1)
    return (a3 * 2,)


def _retain_then_transpose_used(a2, a3):
    a2.retain_grad()
    a2.t_()
    return (a2 * a3.sum(),)


@pytest.mark.parametrize("fn", [_retain_then_transpose, _retain_then_transpose_used])
def test_retain_grad_on_an_argument_stays_where_eager_puts_it(fn, tmp_path):
    # before a metadata call (transpose_), eager's retain hook stays on the argument's node of
    # then: the caller's tensor retains its grad before the call (it did after: the grad of
    # the transposed argument, fuzz seed 1). (A write moves it along, and the function's own
    # uses after the write then reach it in eager: not yet on the subclass path.)
    from aotcheck.check.oracle import Inputs, check

    def make():
        l1 = torch.randn(3, 4, requires_grad=True)
        l3 = TwoTensor(torch.randn(()), torch.randn(())).requires_grad_()
        return Inputs((l1.clone().transpose(-2, -1), l3.clone()), {}, (l1, l3))
    for cache in (None, str(tmp_path), str(tmp_path)):
        r = check(fn, aotcheck.aot_function(fn, cache=cache), make)
        assert r.ok, r.divergences


def _grad_region_write_of_a_nonleaf(a, b):          # fuzz seed 1, grad_mode=no_grad (08)
    with torch.enable_grad():
        b.zero_()
    return a + 1


def _grad_region_output(a, b):
    with torch.enable_grad():
        return a * 2, b + 1


def _grad_region_write_with_a_view_taken_before(a, b):
    v = b.view(-1)
    with torch.enable_grad():
        b.add_(a)
    return v * 1, b, a * 3


def _leaf_and_nonleaf_pair():
    """A leaf TwoTensor and a non-leaf one (both requiring grad), for no_grad calls."""
    from aotcheck.check.oracle import Inputs
    torch.manual_seed(0)
    la, lb = two(3, requires_grad=True), two(3, requires_grad=True)
    return Inputs((la, lb * 1), leaves=(la, lb))


def _under_no_grad(f):
    def called(*args):
        with torch.no_grad():
            return f(*args)
    return called


@pytest.mark.parametrize("fn", [_grad_region_write_of_a_nonleaf, _grad_region_output,
                                _grad_region_write_with_a_view_taken_before])
def test_an_enable_grad_region_of_a_no_grad_call_matches_eager(fn, tmp_path):
    # NOTE [subclass enable_grad regions of a no_grad call]: eager's autograd records the
    # region (the non-leaf's grad_fn changes; the output requires grad), which the call
    # dropped (the write was a TraceError, the output came back without history, silently);
    # cold, from the in-memory artifact, and from the persistent cache
    from aotcheck.check.oracle import check

    compiled = aotcheck.aot_function(fn)
    for cf in (compiled, compiled, aotcheck.aot_function(fn, cache=str(tmp_path)),
               aotcheck.aot_function(fn, cache=str(tmp_path))):
        r = check(_under_no_grad(fn), _under_no_grad(cf), _leaf_and_nonleaf_pair)
        assert r.ok, r.divergences


def _no_grad_write_of_a_nonleaf(a, b):
    b.mul_(2)
    return a + b, b.t() if b.dim() > 1 else b.view(-1)


def test_a_no_grad_call_writing_a_nonleaf_subclass_argument_matches_eager():
    from aotcheck.check.oracle import check

    r = check(_under_no_grad(_no_grad_write_of_a_nonleaf),
              _under_no_grad(aotcheck.aot_function(_no_grad_write_of_a_nonleaf)), _leaf_and_nonleaf_pair)
    assert r.ok, r.divergences

"""Engine tests of storage changes (engine/capture/storage/): ``.data =`` assignment,
``set_()``, storage swaps and resizes, each compared with eager."""
import pytest
import torch

import aotcheck

from engine_inputs import vjp_gradient


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


def _returns_an_inference_tensor_given_ordinary_data(x):
    p = x * 2
    p.data = vjp_gradient(x)
    return p


def _returns_an_ordinary_tensor_given_inference_data(x):
    q = vjp_gradient(x)
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

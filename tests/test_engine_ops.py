"""Engine tests of ops with special rules: mutating custom ops, ``out=`` tensors that resize
or refuse a dtype, bool tensors given autograd history, sparse intermediates."""
import pytest
import torch

import aotcheck

from engine_inputs import two_nonleaves


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
    (_custom_op_on_a_nonleaf_and_a_view, two_nonleaves),
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


@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN])
def test_recurrent_layers_backward_matches_eager(cls):
    # mkldnn's LSTM layer makes the workspace its backward reads only under grad mode
    # (NOTE [kernels that read grad mode]); the forward graph ran with it off
    torch.manual_seed(0)
    module = cls(4, 5, num_layers=2, batch_first=True)

    def f(x):
        return module(x)[0]
    x = torch.randn(2, 3, 4, requires_grad=True)
    want = f(x)
    gw = torch.autograd.grad(want.sum(), [x, *module.parameters()])
    got = aotcheck.aot_function(f)(x)
    gg = torch.autograd.grad(got.sum(), [x, *module.parameters()])
    assert torch.allclose(want, got)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(gw, gg))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_loss_with_lists_of_lengths_matches_eager_exactly(reduction):
    # see NOTE [integer lists written into a tensor's memory] in values.py
    def f(lp, targets):
        return torch.nn.functional.ctc_loss(lp, targets, [6, 5], [3, 2], reduction=reduction)
    torch.manual_seed(0)
    lp = torch.randn(6, 2, 5).log_softmax(2).detach().requires_grad_()
    targets = torch.tensor([[1, 2, 2], [3, 4, 0]])
    want, got = f(lp, targets), aotcheck.aot_function(f)(lp, targets)
    assert torch.equal(want, got)
    assert torch.equal(torch.autograd.grad(want.sum(), lp)[0], torch.autograd.grad(got.sum(), lp)[0])

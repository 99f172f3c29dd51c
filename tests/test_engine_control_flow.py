"""Engine tests of control flow inside the function: ``torch.cond``, ``while_loop``, ``map`` and
``scan`` run inline with eager's autograd, a graph per branch pinned by guards, cold and from
the cache (``engine/capture/higher_order.py``); ``torch.utils.checkpoint``, reentrant and
selective, as eager runs it (``engine/capture/checkpoint.py``)."""
import functools

import pytest
import torch
from torch._higher_order_ops.map import map as hop_map
from torch._higher_order_ops.scan import scan
from torch._higher_order_ops.while_loop import while_loop
from torch._ops import HigherOrderOperator
from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts

import aotcheck
from aotcheck.errors import TraceError, UnsupportedInputError


def _cond_fn(x, y):
    return torch.cond(x.sum() > 0, lambda a, b: a.sin() * b, lambda a, b: a.cos() + b, (x, y))


def _grads(fn, *args):
    args = [a.detach().clone().requires_grad_(a.requires_grad) for a in args]
    out = fn(*args)
    out.sum().backward()
    return out.detach(), [a.grad for a in args]


def _same(fn, compiled, *args):
    want, want_g = _grads(fn, *args)
    got, got_g = _grads(compiled, *args)
    assert torch.allclose(want, got)
    for a, b in zip(want_g, got_g):
        assert (a is None) == (b is None)
        assert a is None or torch.allclose(a, b)


def test_cond_a_call_taking_the_other_branch_compiles_again():
    compiled = aotcheck.aot_function(_cond_fn)
    pos, neg, y = torch.ones(3), -torch.ones(3), torch.randn(3)
    _same(_cond_fn, compiled, pos.requires_grad_(), y)
    _same(_cond_fn, compiled, neg.requires_grad_(), y)      # the guard fails: compiled again
    _same(_cond_fn, compiled, pos, y)


def test_cond_from_the_cache_never_serves_the_other_branch(tmp_path):
    y = torch.randn(3)
    first = aotcheck.aot_function(_cond_fn, cache=str(tmp_path))
    _same(_cond_fn, first, torch.ones(3, requires_grad=True), y)
    second = aotcheck.aot_function(_cond_fn, cache=str(tmp_path))  # a hit, whose guard fails
    _same(_cond_fn, second, -torch.ones(3, requires_grad=True), y)


def test_cond_the_graph_holds_the_taken_branch_and_its_guard():
    ex = aotcheck.explain(_cond_fn, torch.ones(3, requires_grad=True), torch.randn(3),
                          print_result=False)
    code = ex.stages.captured.graph.code
    assert "guard_value" in code and "sin" in code and "cos" not in code


def test_cond_every_output_requires_grad_and_unused_operands_get_zeros():
    def f(x, w):
        return torch.cond(x.sum() > 0, lambda a, b: b.detach() * 2, lambda a, b: a * b, (x, w))
    x, w = torch.ones(3, requires_grad=True), torch.randn(3, requires_grad=True)
    got = aotcheck.aot_function(f)(x, w)
    assert got.requires_grad            # eager's Function: an operand requires grad
    got.sum().backward()
    assert torch.equal(x.grad, torch.zeros(3)) and torch.equal(w.grad, torch.zeros(3))


def test_cond_parameters_read_only_by_the_branch_not_taken_get_zero_gradients():
    def f(x, wa, wb):
        return torch.cond(x.sum() > 0, lambda a: a * wa, lambda a: a * wb, (x,))
    args = (torch.ones(3), torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True))
    _same(f, aotcheck.aot_function(f), *args)
    _, grads = _grads(aotcheck.aot_function(f), *args)
    assert torch.equal(grads[2], torch.zeros(3))


def test_while_loop_trip_count_changes_compile_again():
    def f(n, x):
        return while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * 1.5),
                          (torch.tensor(0), x))[1]
    compiled = aotcheck.aot_function(f)
    for n in (2, 4, 2):
        x = torch.randn(3, requires_grad=True)
        assert torch.allclose(compiled(torch.tensor(n), x), x * 1.5 ** n)


def test_map_and_scan_match_eager():
    def m(xs, w):
        return hop_map(lambda r, v: (r * v).sin(), xs, w)

    def s(init, xs):
        return scan(lambda c, x: (c * x, (c + x).cos()), init, xs)[1]
    _same(m, aotcheck.aot_function(m), torch.randn(4, 3, requires_grad=True),
          torch.randn(3, requires_grad=True))
    _same(s, aotcheck.aot_function(s), torch.randn(3, requires_grad=True),
          torch.randn(5, 3, requires_grad=True))


def test_a_random_op_in_a_branch_under_autograd_is_refused():
    def f(x):
        return torch.cond(x.sum() > 0, lambda a: torch.nn.functional.dropout(a, 0.5),
                          lambda a: a * 2, (x,))
    with pytest.raises(UnsupportedInputError, match="draws again"):
        aotcheck.aot_function(f)(torch.ones(3, requires_grad=True))


def test_a_branch_writing_its_operand_is_refused_under_grad_as_eager_refuses():
    def f(x):
        return torch.cond(x.sum() > 0, lambda a: a.add_(1), lambda a: a * 2, (x,))
    with pytest.raises(Exception):      # eager: Dynamo's "do not support input mutation"
        f(torch.ones(3))
    with pytest.raises(TraceError, match="input mutation"):
        aotcheck.aot_function(f)(torch.ones(3))
    with torch.no_grad():
        x = torch.ones(3)
        out = aotcheck.aot_function(f)(x)
    assert torch.equal(x, torch.full((3,), 2.0)) and torch.equal(out, x)


def test_the_dispatch_of_higher_order_ops_is_torchs_again_after_a_trace():
    before = HigherOrderOperator.__call__
    aotcheck.aot_function(_cond_fn)(torch.ones(3), torch.ones(3))
    assert HigherOrderOperator.__call__ is before


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_with_dropout_matches_eager_values_gradients_and_generator(reentrant):
    def f(x, w):
        return checkpoint(lambda a, b: torch.nn.functional.dropout(a @ b, 0.5).tanh(), x, w,
                          use_reentrant=reentrant)
    x, w = torch.randn(4, 5), torch.randn(5, 5)
    torch.manual_seed(0)
    want, want_g = _grads(f, x.requires_grad_(), w.requires_grad_())
    state = torch.get_rng_state()
    torch.manual_seed(0)
    got, got_g = _grads(aotcheck.aot_function(f), x, w)
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.allclose(want, got) and all(torch.allclose(a, b) for a, b in zip(want_g, got_g))


def test_reentrant_checkpoint_with_no_argument_requiring_grad_gives_no_history():
    def f(x, w):
        return checkpoint(lambda a: a @ w, x, use_reentrant=True)
    out = aotcheck.aot_function(f)(torch.randn(2, 3), torch.randn(3, 2, requires_grad=True))
    assert not out.requires_grad


def test_selective_checkpoint_with_dropout_matches_eager():
    def f(x, w):
        ctx = functools.partial(create_selective_checkpoint_contexts, [torch.ops.aten.mm.default])
        return checkpoint(lambda a, b: torch.nn.functional.dropout(a @ b, 0.3) @ b, x, w,
                          use_reentrant=False, context_fn=ctx)
    torch.manual_seed(0)
    want = _grads(f, torch.randn(3, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True))
    torch.manual_seed(0)
    got = _grads(aotcheck.aot_function(f), torch.randn(3, 4, requires_grad=True),
                 torch.randn(4, 4, requires_grad=True))
    assert torch.allclose(want[0], got[0])
    assert all(torch.allclose(a, b) for a, b in zip(want[1], got[1]))

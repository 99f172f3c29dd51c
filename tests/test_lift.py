"""NOTE [lifted tensors] (aotcheck/lift.py): tensors a function reads without being passed
them (closures, globals, module parameters and buffers) are arguments of the graph: their
values are read at each call, gradients reach them, and mutations are written into them,
cold and from the cache."""
from __future__ import annotations

import copy

import pytest
import torch

import aotcheck

G = torch.randn(3)            # a global the functions below read


def _twins(make):
    """Two identical (module, input) pairs, one for eager and one for the compiled run."""
    torch.manual_seed(0)
    a = make()
    return a, copy.deepcopy(a)


def _same_grads(m1, m2):
    for (n, p1), (_, p2) in zip(m1.named_parameters(), m2.named_parameters()):
        assert (p1.grad is None) == (p2.grad is None), n
        if p1.grad is not None:
            torch.testing.assert_close(p1.grad, p2.grad, msg=n)


@pytest.mark.parametrize("cached", [False, True])
def test_module_parameters_and_buffers_are_arguments(cached, tmp_path):
    """A module called from a closure, in train mode: parameters get gradients, BatchNorm's
    running statistics (buffers, mutated in place) move as in eager, call after call."""
    def make():
        return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.ReLU())
    m1, m2 = _twins(make)
    cache = str(tmp_path) if cached else None
    for step in range(3):
        x = torch.randn(5, 4)
        cf = aotcheck.aot_function(lambda x: m2(x), cache=cache)     # a new wrapper each step
        want, got = m1(x), cf(x)
        torch.testing.assert_close(got, want)
        want.sum().backward()
        got.sum().backward()
        _same_grads(m1, m2)
        for b1, b2 in zip(m1.buffers(), m2.buffers()):
            torch.testing.assert_close(b1, b2)
        with torch.no_grad():                                          # an optimizer step
            for p1, p2 in zip(m1.parameters(), m2.parameters()):
                p1 -= 0.1 * p1.grad
                p2 -= 0.1 * p2.grad


def test_a_module_itself_compiles_and_eval_mode_recompiles():
    m1, m2 = _twins(lambda: torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.0),
                                                torch.nn.BatchNorm1d(4)))
    cf = aotcheck.aot_function(m2)
    x = torch.randn(6, 4)
    torch.testing.assert_close(cf(x), m1(x))
    m1.eval()
    m2.eval()
    torch.testing.assert_close(cf(x), m1(x))
    assert cf.num_compiled == 2


def test_a_closure_tensor_is_read_at_each_call_and_gets_its_gradient():
    w = torch.randn(3, requires_grad=True)
    cf = aotcheck.aot_function(lambda x: (x * w).sin())
    x = torch.randn(3)
    out = cf(x)
    torch.testing.assert_close(out, (x * w).sin())
    out.sum().backward()
    torch.testing.assert_close(w.grad, (x * w).cos() * x)
    with torch.no_grad():
        w.mul_(2)                                 # changed between calls: the graph reads it
    torch.testing.assert_close(cf(x), (x * w).sin())
    assert cf.num_compiled == 1


def test_a_global_is_read_and_rebinding_it_to_another_shape_recompiles():
    global G
    cf = aotcheck.aot_function(lambda x: x + G)
    saved = G
    try:
        torch.testing.assert_close(cf(torch.ones(3)), torch.ones(3) + G)
        G = torch.randn(2, 3)
        torch.testing.assert_close(cf(torch.ones(3)), torch.ones(3) + G)
        assert cf.num_compiled == 2
    finally:
        G = saved


def test_a_closure_tensor_mutated_inside_is_written_back():
    acc = torch.zeros(3)

    def f(x):
        acc.add_(x)
        return acc * 2
    cf = aotcheck.aot_function(f)
    cf(torch.ones(3))
    out = cf(torch.ones(3))
    torch.testing.assert_close(acc, torch.full((3,), 2.0))
    torch.testing.assert_close(out, torch.full((3,), 4.0))


def test_a_closure_tensor_that_is_also_passed_is_one_tensor():
    w = torch.randn(3, requires_grad=True)

    def f(x):
        return x * w
    cf = aotcheck.aot_function(f)
    out = cf(w)
    out.sum().backward()
    torch.testing.assert_close(w.grad, 2 * w.detach())


def test_returning_a_closure_tensor_returns_that_tensor():
    w = torch.randn(3)
    cf = aotcheck.aot_function(lambda x: (x + 1, w))
    _, got = cf(torch.zeros(3))
    assert got is w or (got.data_ptr() == w.data_ptr() and torch.equal(got, w))


def test_changing_a_lifted_tensors_metadata_misses_the_cache(tmp_path):
    """The lifted tensors are leaves of the signature, so a key component: a closure tensor
    of another shape (or requires_grad) must not hit the entry stored for the first one."""
    box = {"w": torch.randn(3)}

    def f(x):
        return x * box["w"]
    aotcheck.reset_counters()
    aotcheck.aot_function(f, cache=str(tmp_path))(torch.ones(3))
    box["w"] = torch.randn(2, 3)
    got = aotcheck.aot_function(f, cache=str(tmp_path))(torch.ones(3))
    torch.testing.assert_close(got, torch.ones(3) * box["w"])
    box["w"] = torch.randn(2, 3, requires_grad=True)
    got = aotcheck.aot_function(f, cache=str(tmp_path))(torch.ones(3))
    assert got.requires_grad
    c = aotcheck.counters
    assert c["hits"] == 0 and c["misses"] == 3, c


def test_a_tensor_subclass_in_a_closure_keeps_the_named_refusal():
    from torch.testing._internal.two_tensor import TwoTensor
    w = TwoTensor(torch.randn(3), torch.randn(3))
    with pytest.raises(aotcheck.UnsupportedInputError, match="not one of its arguments"):
        aotcheck.aot_function(lambda x: x * w)(torch.randn(3))

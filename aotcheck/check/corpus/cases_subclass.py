"""Corpus theme ``subclass``: traceable wrapper subclasses (``TwoTensor``, which runs every op
on both of its inner tensors) as arguments and outputs. Eager autograd works at the OUTER
level: the ``.grad`` of a TwoTensor leaf is a TwoTensor, and so is that of a plain tensor
that meets a TwoTensor. See the NOTEs in ``aotcheck/subclass.py``.
"""
from __future__ import annotations

from torch.testing._internal.two_tensor import TwoTensor

from . import Inputs, case
from .cases_basic import leaf, rand, seeded


def two(*shape, requires_grad=False) -> TwoTensor:
    t = TwoTensor(rand(*shape), rand(*shape))
    return t.requires_grad_() if requires_grad else t


@case("subclass", mode="training")
def twotensor_pointwise_leaf():
    def f(x):
        return (x.sin() * 2).cos()
    def make():
        x = two(3, 4, requires_grad=True)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("subclass", mode="training", tags=("mixed",))
def twotensor_times_plain_leaf():
    # the plain leaf's .grad is a TwoTensor in eager: autograd adds the two branches' grads
    # as a TwoTensor, not as one plain sum
    def f(x, y):
        return x * y + y.exp()
    def make():
        x, y = two(3, 4, requires_grad=True), leaf(3, 4)
        return Inputs((x, y), leaves=(x, y))
    return f, seeded(make)


@case("subclass", mode="training", tags=("mixed",))
def twotensor_matmul_plain_weight():
    def f(x, w, b):
        return (x @ w + b).relu().sum(0)
    def make():
        x, w, b = two(3, 4, requires_grad=True), leaf(4, 5), leaf(5)
        return Inputs((x, w, b), leaves=(x, w, b))
    return f, seeded(make)


@case("subclass", mode="inference", tags=("mutation",))
def twotensor_argument_mutated_in_place():
    def f(x, y):
        x.mul_(2)
        x.add_(y)
        return x.sum(1)
    return f, seeded(lambda: Inputs((two(3, 4), rand(3, 4))))


@case("subclass", mode="inference", tags=("alias",))
def twotensor_output_is_view_of_argument():
    def f(x):
        return x.t()[1:], x * 3
    return f, seeded(lambda: Inputs((two(3, 4),)))


@case("subclass", mode="training", tags=("scalars",))
def twotensor_mixed_outputs_and_scalars():
    # a plain output built from the inner tensors does not require grad (autograd is outer)
    def f(x, s, flag):
        y = x * s if flag else x
        return {"sub": y.exp(), "plain": x.a + x.b, "n": 3}
    def make():
        x = two(2, 3, requires_grad=True)
        return Inputs((x, 0.5, True), leaves=(x,))
    return f, seeded(make)


@case("subclass", mode="training", tags=("nested",))
def twotensor_nested_in_twotensor():
    def f(x, y):
        return (x * y).tanh()
    def make():
        x = TwoTensor(two(4), two(4)).requires_grad_()
        y = leaf(4)
        return Inputs((x, y), leaves=(x, y))
    return f, seeded(make)


@case("subclass", mode="training", tags=("non_leaf",))
def twotensor_non_leaf_argument():
    def f(x):
        return x.sigmoid() * x
    def make():
        base = two(3, 3, requires_grad=True)
        return Inputs((base * 2,), leaves=(base,))
    return f, seeded(make)


@case("subclass", mode="training", tags=("alias",))
def twotensor_argument_returned_unchanged():
    # eager returns the argument object itself (the oracle checks identity)
    def f(x, y):
        return x, y, x * y
    def make():
        x, y = two(3, requires_grad=True), leaf(3)
        return Inputs((x, y), leaves=(x, y))
    return f, seeded(make)

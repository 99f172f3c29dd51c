"""Corpus theme ``non_differentiable``: outputs autograd does not differentiate (integer and
bool results, ``argmax``, ``detach``ed values) beside differentiable ones.
"""
from __future__ import annotations

import torch
from .builders import leaf, seeded
from .registry import Inputs, case


# ---------------------------------------------------------------- from cases_basic


@case("non_differentiable", mode="inference")
def argmax_only():
    def f(x):
        return x.argmax(dim=1)
    def make():
        x = leaf(3, 4)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("non_differentiable", mode="training")
def argmax_with_values():
    def f(x):
        return x.sin(), x.argmax()
    def make():
        x = leaf(3, 4)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("non_differentiable", mode="training")
def comparisons():
    def f(x, y):
        return x > 0, x == y, x * (x > 0)
    def make():
        x, y = leaf(6), leaf(6)
        return Inputs((x, y), leaves=(x, y))
    return f, seeded(make)


@case("non_differentiable", mode="inference")
def comparisons_only():
    def f(x, y):
        return x >= y, (x > 0).any(), (x > 0).sum()
    def make():
        x, y = leaf(6), leaf(6)
        return Inputs((x, y), leaves=(x, y))
    return f, seeded(make)


@case("non_differentiable", mode="training", tags=("int",))
def integer_index_input():
    def f(x, idx):
        return x.index_select(0, idx), idx * 2
    def make():
        x = leaf(5, 2)
        return Inputs((x, torch.tensor([4, 0, 2])), leaves=(x,))
    return f, seeded(make)


@case("non_differentiable", mode="training", tags=("bool",))
def where_bool_mask():
    def f(x, y, m):
        return torch.where(m, x, y), m.logical_not()
    def make():
        x, y = leaf(6), leaf(6)
        return Inputs((x, y, torch.tensor([True, False, True, True, False, False])), leaves=(x, y))
    return f, seeded(make)


@case("non_differentiable", mode="training")
def long_output_and_floor():
    def f(x):
        return (x * 10).long(), x.floor(), x.sign()
    def make():
        x = leaf(5)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("non_differentiable", mode="inference", tags=("int",))
def integer_only():
    def f(a, b):
        return a + b, a * 2, a // (b.abs() + 1)
    def make():
        return Inputs((torch.randint(-5, 5, (4,)), torch.randint(-5, 5, (4,))))
    return f, seeded(make)


@case("non_differentiable", mode="training")
def topk_values_and_indices():
    def f(x):
        v, i = x.topk(2, dim=-1)
        return v, i
    def make():
        x = leaf(3, 5)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("non_differentiable", mode="training")
def sort_values_and_indices():
    def f(x):
        v, i = x.sort(dim=-1, descending=True)
        return v * 2, i
    def make():
        x = leaf(2, 4)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("non_differentiable", mode="training")
def gather_by_argmax():
    def f(x, y):
        i = x.argmax(dim=1, keepdim=True)
        return y.gather(1, i), i
    def make():
        x, y = leaf(3, 4), leaf(3, 4)
        return Inputs((x, y), leaves=(x, y))
    return f, seeded(make)


@case("non_differentiable", mode="training", tags=("bool",))
def masked_fill_from_comparison():
    def f(x):
        m = x < 0
        return x.masked_fill(m, 0.0), m
    def make():
        x = leaf(8)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)

"""Corpus cases: grad modes and requires_grad.

Tag ``no_grad_call`` (or ``inference_mode_call``): the test calls both eager
and compiled inside ``torch.no_grad()`` (or ``torch.inference_mode()``).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from . import Inputs, case
from .cases_basic import leaf, one_leaf as _one_leaf, rand, seeded


@case("requires_grad_modes", mode="inference", tags=("no_grad_call",))
def call_under_no_grad():
    def f(x, w):
        return x @ w, w.sum()
    def make():
        w = leaf(3, 2)
        return Inputs((rand(2, 3), w), leaves=(w,))
    return f, seeded(make)


@case("requires_grad_modes", mode="inference", tags=("no_grad_call", "mutation"))
def call_under_no_grad_with_mutation():
    def f(a, w):
        a.add_(w)
        return a * 2
    def make():
        w = leaf(3)
        return Inputs((rand(3), w), leaves=(w,))
    return f, seeded(make)


@case("requires_grad_modes", mode="inference", tags=("no_grad_call", "mutation"))
def call_under_no_grad_mutating_grad_leaf():
    def f(w):
        w.mul_(0.5)
        return w + 1
    def make():
        w = leaf(3)
        return Inputs((w,), leaves=(w,))
    return f, seeded(make)


@case("requires_grad_modes", mode="inference", tags=("no_grad_call", "alias"))
def call_under_no_grad_view_output():
    def f(x):
        return x.view(-1), x * 2
    return f, seeded(lambda: Inputs((leaf(2, 2),)))


@case("requires_grad_modes", mode="inference", tags=("inference_mode_call",))
def call_under_inference_mode():
    def f(x, w):
        return (x * w).sum(0)
    def make():
        w = leaf(3)
        return Inputs((rand(2, 3), w), leaves=(w,))
    return f, seeded(make)


@case("requires_grad_modes", mode="inference", tags=("inference_mode_call", "mutation"))
def call_under_inference_mode_with_mutation():
    def f(a):
        a.mul_(2)
        return a[0]
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("requires_grad_modes", mode="training", tags=("partial",))
def some_outputs_not_requiring_grad():
    def f(x, y):
        return x * 2, y * 2, (x + y).sum()
    def make():
        x = leaf(3)
        return Inputs((x, rand(3)), leaves=(x,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("partial",))
def requires_grad_on_middle_arg_only():
    def f(x, y, z):
        return x * y + z, z - x
    def make():
        y = leaf(4)
        return Inputs((rand(4), y, rand(4)), leaves=(y,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("partial", "kwargs"))
def requires_grad_on_kwarg_only():
    def f(x, *, w):
        return x @ w
    def make():
        w = leaf(3, 3)
        return Inputs((rand(2, 3),), {"w": w}, leaves=(w,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("region",))
def no_grad_region_inside():
    def f(x):
        with torch.no_grad():
            y = x * 2
        return y, x * 3, x * y
    return f, _one_leaf(3)


@case("requires_grad_modes", mode="training", tags=("region",))
def set_grad_enabled_false_region():
    def f(x):
        y = x.exp()
        with torch.set_grad_enabled(False):
            z = y * 3
        return y + z, z
    return f, _one_leaf(4)


@case("requires_grad_modes", mode="training", tags=("region",))
def enable_grad_region_inside():
    def f(x, w):
        with torch.enable_grad():
            y = x * w
        return y.sum(), y
    def make():
        x, w = leaf(3), leaf(3)
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("region", "no_grad_call"))
def enable_grad_region_inside_no_grad_call():
    def f(x, w):
        with torch.enable_grad():
            y = x * w
        return y, x + 1
    def make():
        x, w = leaf(3), leaf(3)
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make)


@case("requires_grad_modes", mode="inference", tags=("region",))
def everything_under_no_grad_region():
    def f(x, w):
        with torch.no_grad():
            return x * w, (x @ w.unsqueeze(1)).squeeze(1)
    def make():
        x, w = leaf(2, 3), leaf(3)
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("detach",))
def detach_one_operand():
    def f(x, w):
        return x.detach() * w, x * w.detach()
    def make():
        x, w = leaf(3), leaf(3)
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("region",))
def inference_mode_region_inside():
    def f(x):
        with torch.inference_mode():
            y = x * 2
        return x + y
    return f, _one_leaf(3)


@case("requires_grad_modes", mode="training", tags=("nonleaf",))
def grad_nonleaf_input():
    def f(a, b):
        return a * b
    def make():
        x = leaf(3)
        return Inputs((x.exp(), rand(3)), leaves=(x,))
    return f, seeded(make)


@case("requires_grad_modes", mode="inference", tags=("partial",))
def no_input_requires_grad():
    def f(x, y):
        return x * y, (x - y).abs()
    return f, seeded(lambda: Inputs((rand(3), rand(3))))


@case("requires_grad_modes", mode="inference", tags=("inference_mode_call", "alias"))
def call_under_inference_mode_view_output():
    def f(x):
        return x[0], x * 2
    return f, _one_leaf(2, 2)


@case("requires_grad_modes", mode="inference", tags=("region", "alias"))
def views_of_intermediate_in_no_grad_region():
    def f(x):
        with torch.no_grad():
            y = x * 2
            return y.t(), y
    return f, _one_leaf(2, 3)


# ---------------------------------------------------------------- inference tensors (issue 11, class 12)


def _inference_linear(*shape):
    """A Linear built under inference_mode: its parameters are inference tensors that require
    grad (NOTE [inference tensors] in aotcheck/engine/functional.py)."""
    def make():
        with torch.inference_mode():
            lin = torch.nn.Linear(*shape)
            x = torch.randn(2, shape[0])
        return Inputs((lin.weight, lin.bias, x))
    return seeded(make)


@case("requires_grad_modes", mode="inference", tags=("inference_mode_call", "inference_tensor"))
def inference_tensor_parameters_that_require_grad():
    def f(w, b, x):
        return F.linear(x, w, b).relu(), w.t(), b
    return f, _inference_linear(3, 4)


@case("requires_grad_modes", mode="inference",
      tags=("inference_mode_call", "inference_tensor", "mutation"))
def inference_tensor_parameter_mutated():
    def f(w, b, x):
        b.mul_(0.5)
        x.add_(1)
        return x @ w.t() + b
    return f, _inference_linear(3, 2)

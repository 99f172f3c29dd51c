"""Corpus theme ``autocast``: autocast regions, the caller's and the function's, nested.

Eager's forward casts where the innermost region says (off, or on with its dtype); its backward
runs at ``.backward()``, after the regions closed, at the dtypes the forward's casts gave
(NOTE [autocast in the backward] in engine/capture/functional.py). A compiled function that
traces its backward under the caller's region casts the derivatives of a region the function
ran with autocast off: the weight's gradient becomes a bfloat16 product, silently (issue 39).
``CallMode.AUTOCAST`` calls eager and the compiled function alike inside
``torch.autocast("cpu", dtype=torch.bfloat16)``; backward runs after it.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from .builders import leaf, rand, seeded
from .registry import CallMode, Inputs, case


def _x_and_weight(n: int = 4, m: int = 4):
    def make():
        x, w = rand(3, n), leaf(m, n)
        return Inputs((x, w), leaves=(w,))
    return seeded(make)


@case("autocast", mode="training", call=CallMode.AUTOCAST, tags=("issue:39",))
def region_disabled_inside_the_callers_region():
    def f(x, w):
        y = F.linear(x, w)                      # bfloat16, the caller's region
        with torch.autocast("cpu", enabled=False):
            return F.linear(y.float(), w)       # float32, its gradient too
    return f, _x_and_weight()


@case("autocast", mode="training")
def region_disabled_inside_the_functions_region():
    def f(x, w):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ w.t()
            with torch.autocast("cpu", enabled=False):
                z = y.float() @ w.t()
        return z
    return f, _x_and_weight()


@case("autocast", mode="training", call=CallMode.AUTOCAST)
def region_of_another_dtype_inside_the_callers_region():
    def f(x, w):
        y = x @ w.t()                           # bfloat16
        with torch.autocast("cpu", dtype=torch.float16):
            z = y @ w.t()                       # float16
        return z.float().tanh()
    return f, _x_and_weight()


@case("autocast", mode="training", call=CallMode.AUTOCAST)
def disabled_then_enabled_again_inside_the_callers_region():
    def f(x, w):
        with torch.autocast("cpu", enabled=False):
            y = x @ w.t()                       # float32
            with torch.autocast("cpu", dtype=torch.bfloat16):
                z = y @ w.t()                   # bfloat16 again
        return y.sum(0) + z.float().sum(0)
    return f, _x_and_weight()


@case("autocast", mode="training")
def region_without_its_weight_cache():
    def f(x, w):
        with torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=False):
            a = x @ w.t()
            b = (x * 2) @ w.t()                 # the weight cast twice, no cached copy
        with torch.autocast("cpu", enabled=False):
            c = x @ w.t()
        return a.float() + b.float() + c
    return f, _x_and_weight()


@case("autocast", mode="training", call=CallMode.AUTOCAST)
def module_weight_gradient_through_a_disabled_region():
    lin = torch.nn.Linear(4, 4)

    def f(x, weight, bias):
        h = torch.relu(F.linear(x, weight, bias))
        with torch.autocast("cpu", enabled=False):
            return F.linear(h.float(), weight, bias).sum(1)

    def make():
        weight = lin.weight.detach().clone().requires_grad_()
        bias = lin.bias.detach().clone().requires_grad_()
        x = rand(5, 4)
        return Inputs((x, weight, bias), leaves=(weight, bias))
    return f, seeded(make)

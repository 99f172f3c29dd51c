"""Corpus theme ``dtypes``: dtypes other than float32 (float64, half, bfloat16, integer, bool,
complex) and casts between them.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from .builders import leaf, rand, seeded
from .registry import Inputs, case


# ---------------------------------------------------------------- from cases_basic


@case("dtypes", mode="training")
def float64():
    def f(x, y):
        return (x * y).exp(), x.sum()
    def make():
        x, y = leaf(4, dtype=torch.float64), leaf(4, dtype=torch.float64)
        return Inputs((x, y), leaves=(x, y))
    return f, seeded(make)


@case("dtypes", mode="training", tags=("mutation", "casts"))
def grad_value_written_into_a_bool_cast():
    """``m = w.to(torch.bool); m[:, 3] = s`` with ``s`` requiring grad: eager's copy_ records no
    autograd for a bool tensor; functionalization's slice_scatter of the two does, and autograd
    refuses the dtype ('Autograd not support dtype: Bool'). The engine takes the second way
    (plain trace). Found by aotcheck fuzz --seed 1 with nn.Parameter inputs. (``m`` itself,
    returned, is a bool tensor that requires grad in eager, through CopySlices: refused by
    name, NOTE [outputs of a non-differentiable dtype that require grad].)"""
    def f(s, w):
        m = w.to(torch.bool)
        m[:, 3] = s
        return (w * 2,)

    def make():
        s, w = torch.nn.Parameter(torch.randn(())), torch.nn.Parameter(torch.randn(2, 4))
        return Inputs((s, w), leaves=(s, w))
    return f, seeded(make)


@case("dtypes", mode="training")
def float16_pointwise():
    def f(x, y):
        return x * y + x, (x - y).abs()
    def make():
        x, y = leaf(6, dtype=torch.float16), leaf(6, dtype=torch.float16)
        return Inputs((x, y), leaves=(x, y))
    return f, seeded(make)


@case("dtypes", mode="training")
def bfloat16_matmul():
    def f(x, w):
        return x @ w
    def make():
        x, w = leaf(2, 4, dtype=torch.bfloat16), leaf(4, 3, dtype=torch.bfloat16)
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make)


@case("dtypes", mode="training")
def bfloat16_softmax():
    def f(x):
        return F.softmax(x, dim=-1)
    def make():
        x = leaf(3, 4, dtype=torch.bfloat16)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("dtypes", mode="training", tags=("int",))
def int_times_float():
    def f(x, n):
        return x * n, n + 1
    def make():
        x = leaf(4)
        return Inputs((x, torch.tensor([1, 2, 3, 4])), leaves=(x,))
    return f, seeded(make)


@case("dtypes", mode="training")
def mixed_float32_float64_promotion():
    def f(x, y):
        return x + y, x.double() * 2
    def make():
        x, y = leaf(3), leaf(3, dtype=torch.float64)
        return Inputs((x, y), leaves=(x, y))
    return f, seeded(make)


@case("dtypes", mode="training")
def cast_down_and_up():
    def f(x):
        return x.to(torch.float16).float() * 3, x.to(torch.bfloat16)
    def make():
        x = leaf(4)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("dtypes", mode="inference", tags=("int",))
def int64_reductions():
    def f(a):
        return a.sum(), a.cumsum(0), a.max()
    def make():
        return Inputs((torch.randint(0, 10, (5,)),))
    return f, seeded(make)


@case("dtypes", mode="inference", tags=("bool",))
def bool_input():
    def f(m, x):
        return m & (x > 0), m.sum(), x * m
    def make():
        return Inputs((torch.tensor([True, False, True, True]), rand(4)))
    return f, seeded(make)


@case("dtypes", mode="inference", tags=("alias",))
def dtype_view_of_input():
    def f(x):
        return x.view(torch.int32)
    def make():
        return Inputs((rand(4),))
    return f, seeded(make)


@case("dtypes", mode="training")
def float16_layer_norm_float32_params():
    def f(x, w):
        return F.layer_norm(x.float(), (4,), w).half()
    def make():
        x, w = leaf(2, 4, dtype=torch.float16), leaf(4)
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make)


@case("dtypes", mode="training", tags=("int",))
def int_scalar_tensor_and_float64():
    def f(x, k):
        return x.pow(2) * k, x.to(torch.float32)
    def make():
        x = leaf(3, dtype=torch.float64)
        return Inputs((x, torch.tensor(3)), leaves=(x,))
    return f, seeded(make)


@case("dtypes", mode="training", tags=("mutation",))
def float16_mutation_with_grad():
    def f(a, w):
        a.mul_(w)
        return a.sum()
    def make():
        x, w = leaf(3, dtype=torch.float16), leaf(3, dtype=torch.float16)
        return Inputs((x.clone(), w), leaves=(x, w))
    return f, seeded(make)

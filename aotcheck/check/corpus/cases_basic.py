"""Corpus cases: basics, non-differentiable outputs, layers and dtypes.

Also holds the two helpers every case module uses: ``seeded`` (a builder of
fresh, deterministic inputs) and ``leaf`` (a tensor that requires grad).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .registry import Inputs, case


def seeded(build):
    """``make_inputs`` from ``build``: seed torch, then build fresh tensors on every call."""
    def make_inputs() -> Inputs:
        torch.manual_seed(0)
        return build()
    make_inputs.__name__ = getattr(build, "__name__", "make_inputs")
    return make_inputs


def leaf(*shape, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype, requires_grad=True)


def one_leaf(*shape):
    """``make_inputs`` for a single argument that is a leaf requiring grad."""
    def make():
        x = leaf(*shape)
        return Inputs((x,), leaves=(x,))
    return seeded(make)


def rand(*shape, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype)


# ---------------------------------------------------------------- basics

@case("basics", mode="training", tags=("scalars",))
def scalar_args():
    def f(x, n, s, flag):
        return x * n + s if flag else x - s
    def make():
        x = leaf(3)
        return Inputs((x, 2, 0.5, True), leaves=(x,))
    return f, seeded(make)


@case("basics", mode="training", tags=("scalars",))
def false_flag_and_negative_float():
    def f(x, n, s, flag):
        return x * n + s if flag else x * s
    def make():
        x = leaf(2, 3)
        return Inputs((x, -3, -0.25, False), leaves=(x,))
    return f, seeded(make)


@case("basics", mode="training", tags=("none",))
def none_argument():
    def f(x, bias):
        y = x * 2
        return y if bias is None else y + bias
    def make():
        x = leaf(4)
        return Inputs((x, None), leaves=(x,))
    return f, seeded(make)


@case("basics", mode="training", tags=("kwargs",))
def kwargs_only():
    def f(x, *, scale, bias):
        return x * scale + bias
    def make():
        x, b = leaf(3), leaf(3)
        return Inputs((x,), {"scale": 1.5, "bias": b}, leaves=(x, b))
    return f, seeded(make)


@case("basics", mode="training", tags=("kwargs", "none"))
def kwargs_with_defaults_and_none():
    def f(x, w=None, *, alpha=1.0, mask=None):
        y = x if w is None else x @ w
        return y * alpha if mask is None else y.masked_fill(mask, 0.0)
    def make():
        x, w = leaf(2, 3), leaf(3, 2)
        return Inputs((x, w), {"alpha": 0.5, "mask": None}, leaves=(x, w))
    return f, seeded(make)


@case("basics", mode="training", tags=("nested",))
def nested_inputs_and_outputs():
    def f(xs, d):
        a, (b, c) = xs[0], xs[1]
        return {"sum": a + b, "list": [c * d["k"], (a * d["w"],)], "n": d["k"]}
    def make():
        a, b, c, w = leaf(3), leaf(3), leaf(2), leaf(3)
        return Inputs(((a, [b, c]), {"w": w, "k": 3}), leaves=(a, b, c, w))
    return f, seeded(make)


@case("basics", mode="training", tags=("nested", "none"))
def nested_output_with_none():
    def f(x):
        return [x * 2, None, (x.sum(), {"max": x.amax()})]
    def make():
        x = leaf(2, 2)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("basics", mode="training", tags=("scalars", "none"))
def python_scalar_outputs():
    def f(x):
        return x + 1, 3, 2.5, True, None, "tag"
    def make():
        x = leaf(3)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("basics", mode="inference", tags=("none",))
def returns_none():
    def f(x):
        return None
    def make():
        x = leaf(3)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("basics", mode="inference", tags=("scalars",))
def returns_only_python_scalar():
    def f(x, n):
        return n * 2 + 1
    def make():
        return Inputs((rand(3), 4))
    return f, seeded(make)


@case("basics", mode="training")
def single_tensor_output():
    def f(x, y):
        return x @ y
    def make():
        x, y = leaf(2, 3), leaf(3, 4)
        return Inputs((x, y), leaves=(x, y))
    return f, seeded(make)


@case("basics", mode="inference")
def empty_tuple_output():
    def f(x):
        return ()
    def make():
        x = leaf(3)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("basics", mode="training", tags=("scalars",))
def string_argument():
    def f(x, act):
        return x.relu() if act == "relu" else x.tanh()
    def make():
        x = leaf(5)
        return Inputs((x, "tanh"), leaves=(x,))
    return f, seeded(make)


@case("basics", mode="training", tags=("scalars",))
def int_argument_in_shape():
    def f(x, n):
        return x.reshape(n, -1).sum(0)
    def make():
        x = leaf(12)
        return Inputs((x, 3), leaves=(x,))
    return f, seeded(make)


@case("basics", mode="training", tags=("scalars",))
def shape_arithmetic():
    def f(x):
        return x * x.shape[0], x.numel(), x.dim()
    def make():
        x = leaf(4, 2)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("basics", mode="training")
def zero_dim_tensors():
    def f(x, s):
        return x * s, s.exp(), (x * s).sum()
    def make():
        x, s = leaf(3), torch.tensor(2.0, requires_grad=True)
        return Inputs((x, s), leaves=(x, s))
    return f, seeded(make)


@case("basics", mode="training")
def many_outputs():
    def f(x, y):
        return x + y, x - y, x * y, x / (y.abs() + 1), x.sin(), y.cos()
    def make():
        x, y = leaf(4), leaf(4)
        return Inputs((x, y), leaves=(x, y))
    return f, seeded(make)


@case("basics", mode="inference")
def no_grad_inputs_nested_output():
    def f(x, y):
        return {"a": (x + y, [x * y]), "b": x.sum()}
    def make():
        return Inputs((rand(3), rand(3)))
    return f, seeded(make)


@case("basics", mode="training")
def unused_argument():
    def f(x, y):
        return x * 2
    def make():
        x, y = leaf(3), leaf(3)
        return Inputs((x, y), leaves=(x, y))
    return f, seeded(make)


@case("basics", mode="training")
def input_used_twice_in_expression():
    def f(x):
        return x * x + x.exp() * x
    def make():
        x = leaf(4)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


# ---------------------------------------------------------------- non_differentiable

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


# ---------------------------------------------------------------- layers

@case("layers", mode="training")
def linear():
    def f(x, w, b):
        return F.linear(x, w, b)
    def make():
        x, w, b = leaf(2, 4), leaf(3, 4), leaf(3)
        return Inputs((x, w, b), leaves=(x, w, b))
    return f, seeded(make)


@case("layers", mode="training")
def conv2d():
    def f(x, w, b):
        return F.conv2d(x, w, b, padding=1)
    def make():
        x, w, b = leaf(1, 2, 5, 5), leaf(3, 2, 3, 3), leaf(3)
        return Inputs((x, w, b), leaves=(x, w, b))
    return f, seeded(make)


@case("layers", mode="training")
def conv2d_stride_pool():
    def f(x, w):
        return F.max_pool2d(F.relu(F.conv2d(x, w, stride=1)), 2)
    def make():
        x, w = leaf(1, 1, 6, 6), leaf(2, 1, 3, 3)
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make)


@case("layers", mode="training")
def layer_norm():
    def f(x, w, b):
        return F.layer_norm(x, (8,), w, b)
    def make():
        x, w, b = leaf(3, 8), leaf(8), leaf(8)
        return Inputs((x, w, b), leaves=(x, w, b))
    return f, seeded(make)


@case("layers", mode="training")
def softmax_and_log_softmax():
    def f(x):
        return F.softmax(x, dim=-1), F.log_softmax(x, dim=0)
    def make():
        x = leaf(3, 5)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("layers", mode="training", tags=("int",))
def embedding():
    def f(idx, weight):
        return F.embedding(idx, weight)
    def make():
        w = leaf(10, 4)
        return Inputs((torch.tensor([[1, 3], [3, 9]]), w), leaves=(w,))
    return f, seeded(make)


@case("layers", mode="training")
def dropout_eval():
    def f(x, w):
        return F.dropout(F.linear(x, w), p=0.5, training=False)
    def make():
        x, w = leaf(2, 4), leaf(3, 4)
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make)


@case("layers", mode="training")
def mlp():
    def f(x, w1, b1, w2, b2):
        return F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2).relu()
    def make():
        x, w1, b1, w2, b2 = leaf(2, 4), leaf(8, 4), leaf(8), leaf(3, 8), leaf(3)
        return Inputs((x, w1, b1, w2, b2), leaves=(x, w1, b1, w2, b2))
    return f, seeded(make)


@case("layers", mode="training")
def batchnorm_eval():
    def f(x, rm, rv, w, b):
        return F.batch_norm(x, rm, rv, w, b, training=False)
    def make():
        x, w, b = leaf(4, 3), leaf(3), leaf(3)
        return Inputs((x, torch.zeros(3), torch.ones(3), w, b), leaves=(x, w, b))
    return f, seeded(make)


@case("layers", mode="training")
def attention():
    def f(q, k, v):
        a = F.softmax(q @ k.transpose(-2, -1) / 2.0, dim=-1)
        return a @ v
    def make():
        q, k, v = leaf(3, 4), leaf(3, 4), leaf(3, 4)
        return Inputs((q, k, v), leaves=(q, k, v))
    return f, seeded(make)


@case("layers", mode="training", tags=("int",))
def cross_entropy():
    def f(logits, target):
        return F.cross_entropy(logits, target)
    def make():
        x = leaf(4, 5)
        return Inputs((x, torch.tensor([0, 4, 2, 2])), leaves=(x,))
    return f, seeded(make)


@case("layers", mode="training")
def group_norm_and_avg_pool():
    def f(x, w, b):
        return F.avg_pool2d(F.group_norm(x, 2, w, b), 2)
    def make():
        x, w, b = leaf(1, 4, 4, 4), leaf(4), leaf(4)
        return Inputs((x, w, b), leaves=(x, w, b))
    return f, seeded(make)


@case("layers", mode="training")
def mse_loss():
    def f(pred, target):
        return F.mse_loss(pred, target), F.smooth_l1_loss(pred, target)
    def make():
        p = leaf(6)
        return Inputs((p, rand(6)), leaves=(p,))
    return f, seeded(make)


# ---------------------------------------------------------------- dtypes

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


@case("basics", mode="training", tags=("scalars", "size"))
def returns_torch_size():
    def f(x):
        return x * 2, x.shape
    return f, one_leaf(2, 3)


@case("dtypes", mode="training", tags=("mutation",))
def float16_mutation_with_grad():
    def f(a, w):
        a.mul_(w)
        return a.sum()
    def make():
        x, w = leaf(3, dtype=torch.float16), leaf(3, dtype=torch.float16)
        return Inputs((x.clone(), w), leaves=(x, w))
    return f, seeded(make)


# ---------------------------------------------------------------- basics: is_compiling (issue 11, class 8)


@case("basics", mode="training", tags=("is_compiling",))
def is_compiling_skips_data_dependent_shortcut():
    # transformers' _ignore_causal_mask_sdpa: a value-dependent early exit guarded by
    # is_compiling(); under tracing the answer is True, as under PyTorch's own tracers
    def f(x, mask):
        if not torch.compiler.is_compiling() and torch.all(mask == 1):
            return x.softmax(-1)
        return x.masked_fill(mask == 0, float("-inf")).softmax(-1)
    def make():
        x = leaf(2, 3, 3)
        return Inputs((x, torch.ones(2, 3, 3)), leaves=(x,))
    return f, seeded(make)


@case("basics", mode="training", tags=("is_compiling", "module"))
def is_compiling_in_module_through_functional_call():
    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q = torch.nn.Linear(4, 4)
            self.k = torch.nn.Linear(4, 4)

        def forward(self, h, mask):
            causal = None
            if torch.compiler.is_compiling() or not bool((mask == 1).all()):
                causal = torch.ones(h.shape[1], h.shape[1]).tril().bool() & mask[:, None, :].bool()
            scores = self.q(h) @ self.k(h).transpose(-1, -2)
            if causal is not None:
                scores = scores.masked_fill(~causal, -1e9)
            return scores.softmax(-1) @ h
    model = Attention()
    names = [n for n, _ in model.named_parameters()]

    def f(*args):
        *params, h, mask = args
        return torch.func.functional_call(model, dict(zip(names, params)), (h, mask))

    def make():
        params = [p.detach().clone().requires_grad_() for p in model.parameters()]
        h = leaf(2, 3, 4)
        mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
        return Inputs((*params, h, mask), leaves=(*params, h))
    return f, seeded(make)


# ---------------------------------------------------------------- sizes under shape guards
# Programs whose graphs, compiled with dynamic shapes, hold a guard on an input's size (a
# slice bound, a window): tagged ``size_guards``, so the key-variation pass always runs its
# ``dynamic_shape`` variation on them (NOTE [the guard direction] in targets/variations.py).


@case("basics", mode="training", tags=("size_guards",))
def slice_up_to_a_constant_bound():
    """x[:, :5] of a (3, 8) leaf: under dynamic shapes the graph holds ``5 <= x.size(1)``."""
    def f(x):
        return x[:, :5] * 2
    return f, one_leaf(3, 8)


@case("basics", mode="training", tags=("size_guards",))
def window_between_two_constants():
    """x[2:6] of a vector of 9: both bounds guard the size."""
    def f(x):
        return x[2:6].cos() + x[:6].sum()
    return f, one_leaf(9)


@case("input_mutation", mode="training", tags=("size_guards",))
def write_into_a_constant_window_of_an_argument():
    """buf[:, 1:5] += x[:, :4] on a (4, 7) buffer: an input mutation through a guarded slice."""
    def f(x, buf):
        buf[:, 1:5].add_(x[:, :4])
        return buf.sum(1) * x.sum()
    return f, seeded(lambda: (lambda x: Inputs((x, rand(4, 7)), leaves=(x,)))(leaf(4, 6)))


@case("basics", mode="training", tags=("size_guards",))
def matmul_of_constant_row_blocks():
    """The first 4 rows of a (6, 5) weight times a (5, 3) leaf, and the rest apart."""
    def f(w, x):
        top = w[:4] @ x
        return top.tanh(), (w[4:] @ x).sum()
    return f, seeded(lambda: (lambda w, x: Inputs((w, x), leaves=(w, x)))(leaf(6, 5), leaf(5, 3)))

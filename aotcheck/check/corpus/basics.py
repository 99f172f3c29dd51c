"""Corpus theme ``basics``: pure functions, scalars, kwargs, containers and outputs that are
inputs, None or Python values; and ``torch.func`` transforms inside the function (grad, vjp,
jvp, vmap, hessian, jacrev on functorch's wrappers, returning plain tensors): the compiled
function gives eager's values and the gradients through the transform.
"""
from __future__ import annotations

import torch
from torch.func import grad, grad_and_value, hessian, jacrev, jvp, vjp, vmap
from .builders import leaf, leaves, one_leaf, plain, rand, seeded
from .registry import Inputs, case


# ---------------------------------------------------------------- from cases_basic


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


@case("basics", mode="training", tags=("scalars", "size"))
def returns_torch_size():
    def f(x):
        return x * 2, x.shape
    return f, one_leaf(2, 3)


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


@case("basics", mode="training", tags=("size_guards",))
def matmul_of_constant_row_blocks():
    """The first 4 rows of a (6, 5) weight times a (5, 3) leaf, and the rest apart."""
    def f(w, x):
        top = w[:4] @ x
        return top.tanh(), (w[4:] @ x).sum()
    return f, seeded(lambda: (lambda w, x: Inputs((w, x), leaves=(w, x)))(leaf(6, 5), leaf(5, 3)))


# ---------------------------------------------------------------- from cases_memory


@case("basics", mode="inference", tags=("strides", "noncontiguous"))
def unary_and_scalar_ops_of_a_transposed_argument_with_a_size_one_dim():
    """A (2, 1, 4) argument of strides (4, 8, 1): eager keeps them for ``x * 2`` and
    lays ``sin(x)`` out contiguously; each stride tuple is returned so the oracle sees the
    size-1 dimension's stride."""
    def f(x):
        a, b, c = x * 2, torch.sin(x), x + x
        return a, b, c, tuple(a.stride()), tuple(b.stride()), tuple(c.stride())
    return f, seeded(lambda: Inputs((rand(1, 2, 4).transpose(1, 0),)))


@case("basics", mode="training", tags=("strides", "broadcast", "noncontiguous"))
def broadcast_where_of_permuted_arguments_keeps_eager_strides():
    """where(c, a, b) with a permuted 3-d argument and a broadcast one: eager's
    TensorIterator order, returned as a stride tuple, and the gradients."""
    def f(a, b):
        out = torch.where(a > 0, a, b * 3)
        return out, tuple(out.stride()), tuple(torch.atan2(a, b).stride())
    def make():
        a = torch.randn(3, 1, 4).permute(2, 1, 0).requires_grad_()
        b = leaf(1, 1, 3)
        return Inputs((a, b), leaves=(a, b))
    return f, seeded(make)


# ---------------------------------------------------------------- from cases_transforms


@case("basics", mode="training", tags=("torch_func",))
def func_grad_differentiated_again():
    """grad of a cubic inside; the caller's backward differentiates 3x^2 again."""
    def f(x):
        return grad(lambda t: (t ** 3).sum())(x)
    return f, one_leaf(5)


@case("basics", mode="training", tags=("torch_func", "input_mutation"))
def func_vmap_over_in_place_writes_to_a_clone():
    """vmap of a function that clones its row and writes into the clone and a slice of it."""
    def f(x):
        def g(r):
            y = r.clone()
            y.mul_(2)
            y[0] += 1
            return y.sum()
        return vmap(g)(x)
    return f, one_leaf(3, 4)


@case("basics", mode="training", tags=("torch_func",))
def func_hessian_inside():
    def f(x):
        return hessian(lambda t: (t.sin() * t).sum())(x)
    return f, one_leaf(3)


@case("basics", mode="training", tags=("torch_func",))
def func_jacrev_of_a_matmul():
    def f(x):
        return jacrev(lambda t: (t @ torch.ones(3, 2)).sin())(x).sum(0)
    return f, one_leaf(2, 3)


@case("basics", mode="training", tags=("torch_func", "nonleaf"))
def func_vjp_of_a_view_of_a_nonleaf_argument():
    def f(x):
        out, pull = vjp(torch.tanh, x[1:])
        return pull(torch.ones_like(out))[0] + out
    def make():
        w = leaf(4)
        return Inputs((w * 2,), leaves=(w,))
    return f, seeded(make)


@case("basics", mode="training", tags=("torch_func",))
def func_grad_and_value_with_aux():
    def f(x):
        g, (value, aux) = grad_and_value(lambda t: ((t ** 2).sum(), t.cos()), has_aux=True)(x)
        return g, value, aux
    return f, one_leaf(4)


@case("basics", mode="inference", tags=("torch_func", "index_mutation"))
def func_grad_over_an_accumulating_index_put():
    def f(x):
        def g(t):
            y = torch.zeros(6)
            y.index_put_((torch.tensor([0, 2, 2, 5]),), t * t, accumulate=True)
            return y.sum()
        return grad(g)(x)
    return f, plain((4,))


@case("basics", mode="training", tags=("torch_func",))
def func_grad_of_grad_and_vmap_of_grad():
    def f(x, m):
        gg = grad(lambda a: grad(lambda b: (b ** 4).sum())(a).sum())(x)
        return gg, vmap(grad(lambda r: r.exp().sum()))(m)
    return f, leaves((3,), (2, 3))


@case("basics", mode="training", tags=("torch_func",))
def func_jvp_times_its_primal():
    def f(x):
        return jvp(torch.sin, (x,), (torch.ones_like(x),))[1] * x
    return f, one_leaf(4)

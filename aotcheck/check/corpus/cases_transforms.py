"""Corpus cases: ``torch.func`` transforms and mutating ``torch.library`` custom ops inside
the function (issue 27), beyond the ``real_world`` theme's programs.

Eager runs a transform (grad, vjp, jvp, vmap, hessian, jacrev) on functorch's wrappers and
returns plain tensors; the compiled function must give the same values, gradients through
the transform (a training case differentiates the transform's result again), and the
writes a custom op makes inside it to a tensor the transformed function closes over
(eager refuses a plain in-place op on such a tensor inside grad; the op's kernel runs
below the transform). A custom op that mutates
(``mutates_args``) must leave its arguments, and views of them, as eager's kernel does.
See NOTE [calls inside a torch.func transform] (engine/capture/recorder.py) and
NOTE [mutating custom ops] (engine/capture/custom_ops.py).
"""
from __future__ import annotations

import torch
from torch.func import grad, grad_and_value, hessian, jacrev, jvp, vjp, vmap

from .cases_basic import leaf, one_leaf, rand, seeded
from .registry import Inputs, case


def _leaves(*shapes):
    def make():
        ts = tuple(leaf(*s) for s in shapes)
        return Inputs(ts, leaves=ts)
    return seeded(make)


def _plain(*shapes):
    return seeded(lambda: Inputs(tuple(rand(*s) for s in shapes)))


# ---------------------------------------------------------------- torch.func inside

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


@case("input_mutation", mode="inference", tags=("torch_func",))
def func_argument_written_after_grad():
    def f(x):
        g = grad(lambda t: (t * t).sum())(x)
        x.mul_(3)
        return g + x
    return f, _plain((3,))


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
    return f, _plain((4,))


@case("basics", mode="training", tags=("torch_func",))
def func_grad_of_grad_and_vmap_of_grad():
    def f(x, m):
        gg = grad(lambda a: grad(lambda b: (b ** 4).sum())(a).sum())(x)
        return gg, vmap(grad(lambda r: r.exp().sum()))(m)
    return f, _leaves((3,), (2, 3))


@case("basics", mode="training", tags=("torch_func",))
def func_jvp_times_its_primal():
    def f(x):
        return jvp(torch.sin, (x,), (torch.ones_like(x),))[1] * x
    return f, one_leaf(4)


# ---------------------------------------------------------------- torch.library custom ops

@torch.library.custom_op("aotcheck_tr::scale_", mutates_args=("x",))
def _scale_(x: torch.Tensor, by: float) -> None:
    x.mul_(by)


@torch.library.custom_op("aotcheck_tr::bump_tail_", mutates_args=("x",))
def _bump_tail_(x: torch.Tensor) -> None:
    """Writes a view of its argument made inside the kernel."""
    x[1:].add_(10)


@torch.library.custom_op("aotcheck_tr::split_into", mutates_args=("lo", "hi"))
def _split_into(x: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
    """Writes two arguments and returns a fresh tensor."""
    lo.copy_(x.clamp(max=0))
    hi.copy_(x.clamp(min=0))
    return x.abs()


@_split_into.register_fake
def _split_into_fake(x, lo, hi):
    return torch.empty_like(x)


@torch.library.custom_op("aotcheck_tr::per_device_", mutates_args=("x",))
def _per_device_(x: torch.Tensor) -> None:
    x.add_(1)


@_per_device_.register_kernel("cpu")
def _per_device_cpu(x):
    x.add_(1000)        # eager runs the CPU kernel on CPU tensors, not the default


@case("input_mutation", mode="inference", tags=("custom_op",))
def custom_op_scales_a_transposed_argument():
    def f(x):
        torch.ops.aotcheck_tr.scale_(x, 3.0)
        return x.sum(0)
    return f, seeded(lambda: Inputs((rand(4, 3).t(),)))


@case("input_mutation", mode="inference", tags=("custom_op",))
def custom_op_kernel_writes_a_view_it_makes():
    """The kernel writes x[1:]; the argument is itself a column of a larger tensor."""
    def f(x):
        torch.ops.aotcheck_tr.bump_tail_(x)
        torch.ops.aotcheck_tr.bump_tail_(x)
        return x * 2
    return f, seeded(lambda: Inputs((rand(5, 3)[:, 1],)))


@case("input_mutation", mode="inference", tags=("custom_op",))
def custom_op_writes_two_arguments_and_returns_a_fresh_tensor():
    def f(x, lo, hi):
        a = torch.ops.aotcheck_tr.split_into(x, lo, hi)
        return a + lo - hi, lo
    return f, _plain((6,), (6,), (6,))


@case("aliased_inputs", mode="inference", tags=("custom_op",))
def custom_op_writes_one_of_two_overlapping_arguments():
    """Two overlapping slices of one tensor: the op writes the first, the function reads the second."""
    def f(a, b):
        torch.ops.aotcheck_tr.scale_(a, -2.0)
        return b + 1
    def make():
        base = rand(8)
        return Inputs((base[:5], base[3:]))
    return f, seeded(make)


@case("input_mutation", mode="inference", tags=("custom_op",))
def custom_op_runs_the_kernel_of_the_tensors_device():
    def f(x):
        torch.ops.aotcheck_tr.per_device_(x)
        return x.clone()
    return f, _plain((3,))


@case("requires_grad_modes", mode="inference", tags=("custom_op", "no_grad_call"))
def custom_op_under_no_grad_on_a_nonleaf_that_requires_grad():
    """Called under no_grad: autograd records nothing of the op; the argument's new values and
    its version are eager's."""
    def f(x, w):
        torch.ops.aotcheck_tr.scale_(x, 0.5)
        return x * w
    def make():
        w = leaf(4)
        return Inputs((w.clone() * 1, rand(4)), leaves=(w,))
    return f, seeded(make)


@case("input_mutation", mode="inference", tags=("custom_op", "torch_func"))
def custom_op_inside_torch_func_grad_on_a_closed_over_buffer():
    """A mutating custom op on a buffer the transformed function closes over, inside grad."""
    def f(x, buf):
        def g(t):
            torch.ops.aotcheck_tr.scale_(buf, 2.0)
            return (t * t).sum()
        return grad(g)(x), buf
    return f, _plain((3,), (3,))

"""Corpus cases: input data mutation, mutation and autograd, metadata mutation.

A mutated argument that requires grad must be a non-leaf (in-place on a leaf
that requires grad is an error in eager), so those cases pass ``leaf.clone()``
and compare the gradient of ``leaf``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .registry import Inputs, case
from .cases_basic import leaf, one_leaf, rand, seeded

# ---------------------------------------------------------------- input_mutation


@case("input_mutation", mode="inference")
def mutate_simple():
    def f(a):
        a.mul_(2)
        return a + 1
    return f, seeded(lambda: Inputs((rand(3),)))


@case("input_mutation", mode="inference")
def mutate_two_inputs():
    def f(a, b):
        a.add_(1)
        b.mul_(2)
        return a * b
    return f, seeded(lambda: Inputs((rand(4), rand(4))))


@case("input_mutation", mode="inference", tags=("noncontiguous",))
def mutate_transposed_input():
    def f(a):
        a.mul_(2)
        return a.sum(0)
    return f, seeded(lambda: Inputs((rand(3, 4).t(),)))


@case("input_mutation", mode="inference", tags=("noncontiguous",))
def mutate_strided_slice_input():
    def f(a, b):
        a.add_(b)
        return a * 2
    return f, seeded(lambda: Inputs((rand(8)[::2], rand(4))))


@case("input_mutation", mode="inference", tags=("noncontiguous",))
def mutate_column_slice_input():
    def f(a):
        a.sub_(1)
        return a.clone()
    return f, seeded(lambda: Inputs((rand(4, 4)[:, 1:3],)))


@case("input_mutation", mode="inference", tags=("returned",))
def mutated_input_returned():
    def f(a):
        a.add_(1)
        return a
    return f, seeded(lambda: Inputs((rand(4),)))


@case("input_mutation", mode="inference", tags=("returned",))
def mutated_input_returned_with_view():
    def f(a):
        a.mul_(3)
        return a, a[1], a + 1
    return f, seeded(lambda: Inputs((rand(3, 2),)))


@case("input_mutation", mode="inference", tags=("view",))
def mutate_through_select():
    def f(a):
        a[0].mul_(2)
        return a.sum()
    return f, seeded(lambda: Inputs((rand(3, 2),)))


@case("input_mutation", mode="inference", tags=("view",))
def mutate_through_flat_view():
    def f(a):
        a.view(-1).add_(1)
        return ()
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("input_mutation", mode="inference", tags=("view", "noncontiguous"))
def mutate_through_view_of_transposed_input():
    def f(a):
        a[:, 0].zero_()
        return a * 2
    return f, seeded(lambda: Inputs((rand(3, 4).t(),)))


@case("input_mutation", mode="inference", tags=("index",))
def indexed_assignment():
    def f(a, b):
        a[1:3] = b
        return a.sum(0)
    return f, seeded(lambda: Inputs((rand(4, 2), rand(2, 2))))


@case("input_mutation", mode="inference", tags=("index", "int"))
def index_put_with_tensor_index():
    def f(a, idx):
        a[idx] = 0.5
        return a + 1
    return f, seeded(lambda: Inputs((rand(5), torch.tensor([0, 3]))))


@case("input_mutation", mode="inference", tags=("copy",))
def copy_into_input():
    def f(a, b):
        a.copy_(b * 2)
        return b + 1
    return f, seeded(lambda: Inputs((rand(3), rand(3))))


@case("input_mutation", mode="inference", tags=("copy", "broadcast"))
def copy_broadcast_into_input():
    def f(a, b):
        a.copy_(b)
        return ()
    return f, seeded(lambda: Inputs((rand(3, 4), rand(4))))


@case("input_mutation", mode="inference", tags=("batchnorm",))
def batchnorm_running_stats():
    def f(x, running_mean, running_var):
        return F.batch_norm(x, running_mean, running_var, training=True)
    return f, seeded(lambda: Inputs((rand(6, 3), torch.zeros(3), torch.ones(3))))


@case("input_mutation", mode="training", tags=("batchnorm",))
def batchnorm_running_stats_with_affine_grad():
    def f(x, running_mean, running_var, w, b):
        return F.batch_norm(x, running_mean, running_var, w, b, training=True, momentum=0.3)
    def make():
        x, w, b = leaf(6, 3), leaf(3), leaf(3)
        return Inputs((x, torch.zeros(3), torch.ones(3), w, b), leaves=(x, w, b))
    return f, seeded(make)


@case("input_mutation", mode="inference")
def mutate_twice_and_read_between():
    def f(a):
        a.add_(1)
        b = a * 2
        a.mul_(3)
        return b, a.sum()
    return f, seeded(lambda: Inputs((rand(4),)))


@case("input_mutation", mode="inference")
def masked_fill_in_place():
    def f(a):
        a.masked_fill_(a > 0, 0.0)
        return None
    return f, seeded(lambda: Inputs((rand(6),)))


@case("input_mutation", mode="inference", tags=("kwargs",))
def mutate_kwarg_out():
    def f(x, *, out):
        out.copy_(x * 2)
        return x + 1
    return f, seeded(lambda: Inputs((rand(3),), {"out": torch.zeros(3)}))


@case("input_mutation", mode="inference", tags=("nested",))
def mutate_tensor_in_list():
    def f(xs):
        xs[0].add_(1)
        xs[1].mul_(2)
        return xs[0] + xs[1]
    return f, seeded(lambda: Inputs(([rand(3), rand(3)],)))


@case("input_mutation", mode="inference", tags=("int",))
def mutate_int_input():
    def f(a):
        a.add_(3)
        return a * 2
    return f, seeded(lambda: Inputs((torch.randint(0, 5, (4,)),)))


@case("input_mutation", mode="training")
def mutate_nongrad_input_use_grad_input():
    def f(a, w):
        a.mul_(2)
        return a * w
    def make():
        w = leaf(3)
        return Inputs((rand(3), w), leaves=(w,))
    return f, seeded(make)


@case("input_mutation", mode="inference", tags=("out",))
def out_kwarg_of_an_op():
    def f(a, b, c):
        torch.add(a, b, out=c)
        return c * 2
    return f, seeded(lambda: Inputs((rand(3), rand(3), torch.zeros(3))))


@case("input_mutation", mode="inference", tags=("dtype",))
def float_input_mutated_by_int_tensor():
    def f(a, n):
        a.add_(n)
        return a.sum()
    return f, seeded(lambda: Inputs((rand(3), torch.tensor([1, 2, 3]))))


# ---------------------------------------------------------------- mutation_autograd


@case("mutation_autograd", mode="training", tags=("no_functional_kernel",))
def polygamma_in_place_on_nonleaf():
    """Issue 11, class 11: functionalization has no kernel for polygamma_ (its out-of-place
    twin takes (n, self)); the engine raised a TraceError. Traced the second way now, where
    it runs as polygamma then copy_."""
    def f(x):
        y = x * 1
        y.polygamma_(1)
        return y.sum(0), x.polygamma(2)
    def make():
        x = (torch.rand(2, 3) + 0.5).requires_grad_()
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("missing_derivative",))
def inplace_op_without_derivative():
    """Issue 11, class 11: acosh_ has no derivative; eager runs the forward and raises
    NotImplementedError at .backward(). The engine refused it while tracing the joint."""
    def f(x):
        y = x * 1
        y.acosh_()
        return y * 2, x.sin()
    def make():
        x = (torch.rand(3) + 1.5).requires_grad_()
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("mutation_autograd", mode="training")
def mul_nonleaf_return_empty():
    def f(a):
        a.mul_(2)
        return ()
    def make():
        x = leaf(3)
        return Inputs((x.clone(),), leaves=(x,))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("detach",))
def detach_then_mutate():
    def f(a):
        tmp = a.detach()
        a.mul_(2)
        return a, tmp
    def make():
        x = leaf(3)
        return Inputs((x.clone(),), leaves=(x,))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("no_grad",))
def no_grad_mutation_of_leaf_then_use():
    def f(x, w):
        with torch.no_grad():
            w.add_(1)
        return x * w
    def make():
        x, w = leaf(3), leaf(3)
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make)


@case("mutation_autograd", mode="inference", tags=("no_grad",))
def no_grad_mutation_of_leaf_only():
    def f(w):
        with torch.no_grad():
            w.mul_(0.5)
        return ()
    def make():
        w = leaf(4)
        return Inputs((w,), leaves=(w,))
    return f, seeded(make)


@case("mutation_autograd", mode="inference", tags=("no_grad", "returned"))
def no_grad_mutation_of_leaf_returned():
    def f(w):
        with torch.no_grad():
            w.sub_(1)
        return w
    def make():
        w = leaf(4)
        return Inputs((w,), leaves=(w,))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("detach",))
def detach_mutation_of_leaf():
    def f(x):
        x.detach().mul_(2)
        return x * 3
    def make():
        x = leaf(4)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("mutation_autograd", mode="inference", tags=("detach",))
def detach_mutation_of_leaf_only():
    def f(x):
        x.detach().add_(1)
        return ()
    def make():
        x = leaf(4)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("mutation_autograd", mode="training")
def nongrad_input_mutated_with_grad_value():
    def f(a, w):
        a.add_(w)
        return a * 2
    def make():
        w = leaf(3)
        return Inputs((rand(3), w), leaves=(w,))
    return f, seeded(make)


@case("mutation_autograd", mode="training")
def nongrad_input_mutated_with_grad_value_return_empty():
    def f(a, w):
        a.add_(w)
        return ()
    def make():
        w = leaf(3)
        return Inputs((rand(3), w), leaves=(w,))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("unused",))
def unused_mutated_nonleaf_input():
    def f(a, b):
        a.mul_(2)
        return b * 3
    def make():
        x, b = leaf(3), leaf(3)
        return Inputs((x.clone(), b), leaves=(x, b))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("unused", "no_grad"))
def unused_leaf_mutated_under_no_grad():
    def f(a, b):
        with torch.no_grad():
            a.mul_(2)
        return b * 3
    def make():
        a, b = leaf(3), leaf(3)
        return Inputs((a, b), leaves=(a, b))
    return f, seeded(make)


@case("mutation_autograd", mode="training")
def mutate_nonleaf_with_grad_value():
    def f(a, b):
        a.add_(b)
        return a.sum()
    def make():
        x, b = leaf(3), leaf(3)
        return Inputs((x.clone(), b), leaves=(x, b))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("view",))
def mutate_nonleaf_return_view():
    def f(a):
        a.mul_(2)
        return a.view(-1)
    def make():
        x = leaf(2, 3)
        return Inputs((x.clone(),), leaves=(x,))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("view",))
def mutate_row_of_nonleaf_with_grad_value():
    def f(a, b):
        a[0].mul_(b)
        return a + 1
    def make():
        x, b = leaf(2, 3), leaf(3)
        return Inputs((x.clone(), b), leaves=(x, b))
    return f, seeded(make)


@case("mutation_autograd", mode="training")
def sin_in_place_nonleaf():
    def f(a):
        a.sin_()
        return a.sum()
    def make():
        x = leaf(4)
        return Inputs((x * 1,), leaves=(x,))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("no_grad",))
def copy_grad_value_under_no_grad():
    def f(a, x):
        with torch.no_grad():
            a.copy_(x * 2)
        return x.sum()
    def make():
        x = leaf(3)
        return Inputs((rand(3), x), leaves=(x,))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("returned",))
def mutated_nonleaf_returned_and_used():
    def f(a, w):
        a.mul_(w)
        return a, a * w
    def make():
        x, w = leaf(3), leaf(3)
        return Inputs((x.clone(), w), leaves=(x, w))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("no_grad", "parameter"))
def sgd_step_on_parameter():
    def f(p, g):
        with torch.no_grad():
            p.sub_(g * 0.1)
        return p * 2
    def make():
        p = torch.nn.Parameter(torch.randn(3))
        return Inputs((p, rand(3)), leaves=(p,))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("detach", "aliased"))
def mutate_detached_twin_of_nonleaf():
    def f(a, b):
        b.mul_(2)
        return a * 3
    def make():
        x = leaf(3)
        base = x.clone()
        return Inputs((base, base.detach()), leaves=(x,))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("no_grad", "intermediate"))
def mutate_intermediate_under_no_grad():
    def f(x):
        y = x * 2
        with torch.no_grad():
            y.add_(1)
        return y
    return f, one_leaf(3)


@case("mutation_autograd", mode="training", tags=("view", "intermediate"))
def mutate_view_of_intermediate_return_base():
    def f(x):
        y = x * 2
        y.view(-1).mul_(3)
        return y
    return f, one_leaf(2, 2)


# ---------------------------------------------------------------- metadata_mutation


@case("metadata_mutation", mode="inference")
def t_only():
    def f(x):
        x.t_()
        return ()
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("metadata_mutation", mode="inference", tags=("returned",))
def t_and_return_input():
    def f(x):
        x.t_()
        return x
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("metadata_mutation", mode="inference")
def transpose_in_place():
    def f(x):
        x.transpose_(0, 1)
        return x + 1
    return f, seeded(lambda: Inputs((rand(2, 3, 2),)))


@case("metadata_mutation", mode="inference")
def unsqueeze_in_place():
    def f(x):
        x.unsqueeze_(0)
        return x * 2
    return f, seeded(lambda: Inputs((rand(3, 2),)))


@case("metadata_mutation", mode="inference")
def squeeze_in_place():
    def f(x):
        x.squeeze_()
        return x.sum(0)
    return f, seeded(lambda: Inputs((rand(1, 3, 1, 4),)))


@case("metadata_mutation", mode="inference")
def squeeze_dim_in_place():
    def f(x):
        x.squeeze_(0)
        return x * 1.5
    return f, seeded(lambda: Inputs((rand(1, 4),)))


@case("metadata_mutation", mode="inference")
def as_strided_in_place():
    def f(x):
        x.as_strided_((2, 2), (1, 2))
        return x + 1
    return f, seeded(lambda: Inputs((rand(6),)))


@case("metadata_mutation", mode="inference", tags=("data",))
def t_then_mul():
    def f(x):
        x.t_()
        x.mul_(2)
        return x + 1
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("metadata_mutation", mode="inference", tags=("data",))
def add_then_unsqueeze():
    def f(x):
        x.add_(1)
        x.unsqueeze_(1)
        return x.sum()
    return f, seeded(lambda: Inputs((rand(4),)))


@case("metadata_mutation", mode="inference", tags=("data", "view"))
def transpose_then_mutate_row():
    def f(x):
        x.transpose_(0, 1)
        x[0].zero_()
        return x[1]
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("metadata_mutation", mode="training", tags=("saved",))
def t_then_mul_by_grad_input():
    def f(x, y):
        x.t_()
        return x * y
    def make():
        y = leaf(3, 2)
        return Inputs((rand(2, 3), y), leaves=(y,))
    return f, seeded(make)


@case("metadata_mutation", mode="training", tags=("saved",))
def t_then_matmul_by_grad_input():
    def f(x, w):
        x.t_()
        return x @ w
    def make():
        w = leaf(2, 4)
        return Inputs((rand(2, 3), w), leaves=(w,))
    return f, seeded(make)


@case("metadata_mutation", mode="training", tags=("grad",))
def t_of_grad_nonleaf():
    def f(a):
        a.t_()
        return a * 2
    def make():
        x = leaf(2, 3)
        return Inputs((x.clone(),), leaves=(x,))
    return f, seeded(make)


@case("metadata_mutation", mode="training", tags=("grad", "data"))
def unsqueeze_and_mul_grad_nonleaf():
    def f(a, b):
        a.unsqueeze_(0)
        a.mul_(b)
        return a.sum(1)
    def make():
        x, b = leaf(3), leaf(1, 3)
        return Inputs((x.clone(), b), leaves=(x, b))
    return f, seeded(make)


@case("metadata_mutation", mode="inference")
def two_inputs_metadata_mutated():
    def f(x, y):
        x.t_()
        y.unsqueeze_(-1)
        return x + y
    return f, seeded(lambda: Inputs((rand(2, 3), rand(3, 1).squeeze(1))))


@case("metadata_mutation", mode="training", tags=("grad",))
def as_strided_in_place_grad_nonleaf():
    def f(a):
        a.as_strided_((2, 2), (2, 1), 1)
        return a.exp()
    def make():
        x = leaf(6)
        return Inputs((x.clone(),), leaves=(x,))
    return f, seeded(make)


@case("input_mutation", mode="inference", tags=("empty",))
def empty_input_mutated_and_returned():
    def f(x, y):
        x.add_(1)
        return y * 2, x
    return f, seeded(lambda: Inputs((rand(0, 3), rand(2))))


@case("input_mutation", mode="inference", tags=("multi_output_view",))
def mutate_through_unbind_output():
    def f(x):
        x.unbind(0)[1].mul_(2)
        return x.sum()
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("input_mutation", mode="inference", tags=("batchnorm", "noncontiguous"))
def batchnorm_noncontiguous_running_stats():
    def f(x, running_mean, running_var):
        return F.batch_norm(x, running_mean, running_var, training=True)
    return f, seeded(lambda: Inputs((rand(4, 3), torch.zeros(6)[::2], torch.ones(3, 2).t()[0])))


@case("mutation_autograd", mode="training", tags=("detach",))
def mutate_then_return_detach_of_nonleaf():
    def f(a):
        a.mul_(2)
        return a.detach(), a + 1
    def make():
        x = leaf(3)
        return Inputs((x.clone(),), leaves=(x,))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("noncontiguous",))
def mutate_transposed_grad_nonleaf():
    def f(a):
        a.mul_(2)
        return a.sum(1)
    def make():
        x = leaf(3, 2)
        return Inputs((x.clone().t(),), leaves=(x,))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("view",))
def zero_diagonal_of_grad_nonleaf():
    def f(a):
        a.diagonal().zero_()
        return a * 2
    def make():
        x = leaf(3, 3)
        return Inputs((x.clone(),), leaves=(x,))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("view",))
def copy_grad_value_into_row_of_nongrad_input():
    def f(a, w):
        a[0].copy_(w)
        return a.sum()
    def make():
        w = leaf(3)
        return Inputs((rand(2, 3), w), leaves=(w,))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("alias",))
def nongrad_input_mutated_with_grad_value_returned_as_view():
    def f(a, w):
        a.add_(w)
        return a.view(-1)
    def make():
        w = leaf(2, 2)
        return Inputs((rand(2, 2), w), leaves=(w,))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("detach", "alias"))
def mutate_nonleaf_return_detached_row():
    def f(a):
        a.add_(1)
        return a.detach()[0]
    def make():
        x = leaf(2, 2)
        return Inputs((x * 1,), leaves=(x,))
    return f, seeded(make)


@case("metadata_mutation", mode="training", tags=("data", "grad"))
def t_then_mul_by_grad_value():
    def f(a, b):
        a.t_()
        a.mul_(b)
        return a.sum(0)
    def make():
        b = leaf(3, 2)
        return Inputs((rand(2, 3), b), leaves=(b,))
    return f, seeded(make)


@case("metadata_mutation", mode="inference", tags=("grad", "returned"))
def squeeze_grad_nonleaf_and_return_it():
    def f(a):
        a.squeeze_()
        return a
    def make():
        x = leaf(1, 3)
        return Inputs((x.clone(),), leaves=(x,))
    return f, seeded(make)


@case("metadata_mutation", mode="training", tags=("data", "grad", "returned"))
def unsqueeze_nongrad_then_mul_by_grad_value():
    def f(a, w):
        a.unsqueeze_(0)
        a.mul_(w)
        return a
    def make():
        w = leaf(1, 3)
        return Inputs((rand(3), w), leaves=(w,))
    return f, seeded(make)


# ---------------------------------------------------------------- storage resizes (issue 11, class 12)
# FSDP2's pattern: a parameter's storage is freed (resized to zero bytes) between uses and
# allocated again (resized up from zero) before it is filled.
# NOTE [storage resizes] in aotcheck/engine/capture/resize.py.


def _freed(*shape) -> torch.Tensor:
    t = torch.empty(*shape)
    t.untyped_storage().resize_(0)
    return t


@case("input_mutation", mode="inference", tags=("resize",))
def resize_storage_up_from_zero_then_fill():
    def f(p, full):
        torch.ops.inductor.resize_storage_bytes_(p, full.numel() * full.element_size())
        p.copy_(full)
        return p + 1
    return f, seeded(lambda: Inputs((_freed(2, 3), rand(2, 3))))


@case("input_mutation", mode="inference", tags=("resize",))
def resize_storage_down_to_zero():
    def f(p):
        y = p * 2
        torch.ops.inductor.resize_storage_bytes_(p, 0)
        return y
    return f, seeded(lambda: Inputs((rand(4),)))


@case("input_mutation", mode="training", tags=("resize",))
def resize_up_fill_use_then_free():
    # all-gather into the parameter, use it, free it again (the backward needs only x and
    # tanh's output: eager's backward raises if it needs the freed storage)
    def f(p, full, x):
        torch.ops.inductor.resize_storage_bytes_(p, full.numel() * full.element_size())
        with torch.no_grad():
            p.copy_(full)
        out = (x + p[:2, :3] * 2).tanh()
        torch.ops.inductor.resize_storage_bytes_(p, 0)
        return out
    def make():
        x = leaf(2, 3)
        return Inputs((_freed(3, 4), rand(3, 4), x), leaves=(x,))
    return f, seeded(make)


@case("input_mutation", mode="inference", tags=("resize",))
def resize_mutate_then_free():
    # a mutation of a storage that ends at zero bytes is not written back (nothing to hold it)
    def f(p, q):
        p.mul_(2)
        q.add_(p)
        torch.ops.inductor.resize_storage_bytes_(p, 0)
        return q.clone()
    return f, seeded(lambda: Inputs((rand(3), rand(3))))


# ---------------------------------------------------------------- resize_ of arguments
# NOTE [resize_ of an argument] in aotcheck/engine/capture/resize.py. Eager's t.resize_(size) grows
# t's storage in place when size needs more bytes (old bytes kept, new ones uninitialised) and
# makes t contiguous from its offset. Each case writes every element it grows (the new ones
# are undefined in eager), so the oracle compares defined values only.


@case("input_mutation", mode="inference", tags=("resize",))
def resize_input_grow_from_empty():
    # PyTorch's test_resize_input: one tensor of 0 elements passed twice, grown to 4 and
    # zeroed; eager returns zeros(4) and the caller's tensor has shape (4,). aotcheck refused
    # it (functionalization grows only a tensor whose storage nothing else holds, and
    # aotcheck holds the argument's), or compiled a graph that crashed in the write-back
    def f(x, y):
        y.resize_(4)
        y.zero_()
        return y
    def make():
        t = rand(0)
        return Inputs((t, t))
    return f, seeded(make)


@case("input_mutation", mode="inference", tags=("resize",))
def resize_input_grow_keeps_old_elements():
    # grown from 2 elements to 2x3: the first two keep their values (the storage grows in
    # place), the rest are written; a write before the growth is kept too
    def f(y):
        y.add_(1)
        y.resize_(2, 3)
        y.view(-1)[2:] = 5.0
        return y * 2
    return f, seeded(lambda: Inputs((rand(2),)))


@case("input_mutation", mode="training", tags=("resize",))
def resize_input_grow_tail_slice_with_grad():
    # a slice ending where its storage ends (offset 1) grows from its offset; another
    # argument requires grad (a resized tensor itself never may: eager raises "cannot resize
    # variables that require grad")
    def f(x, y):
        y.resize_(4)
        y[3:] = 2.0
        return x * y[:3], y.sum()
    def make():
        x = leaf(3)
        return Inputs((x, rand(4)[1:]), leaves=(x,))
    return f, seeded(make)


@case("input_mutation", mode="inference", tags=("resize",))
def resize_input_shrink_then_write():
    def f(y):
        y.resize_(2, 2)
        y.mul_(3)
        return y.sum(0)
    return f, seeded(lambda: Inputs((rand(5),)))


@case("metadata_mutation", mode="inference", tags=("resize", "noncontiguous"))
def resize_input_same_size_keeps_strides():
    # a resize_ to the sizes a tensor has changes nothing in eager (a transposed argument
    # stays transposed); functionalization replays it as a contiguous view, which read the
    # argument's memory in another order
    def f(y):
        y.resize_(3, 2)
        y.add_(1)
        return y * 1
    return f, seeded(lambda: Inputs((rand(2, 3).t(),)))


@case("input_mutation", mode="inference", tags=("resize",))
def resize_intermediate_grow():
    def f(x):
        z = x * 2
        z.resize_(6)
        z[4:] = 1.0
        return z
    return f, seeded(lambda: Inputs((rand(4),)))


# ---------------------------------------------------------------- set_ on arguments (issue 11, class 4)
# NOTE [storage swaps] in aotcheck/engine/capture/storage/swaps.py. Each returns the swapped argument
# too, so the oracle's output mutation checks that it shares the storage eager's shares.


@case("input_mutation", mode="inference", tags=("set_",))
def set_onto_another_argument():
    def f(x, y):
        x.set_(y)
        return x, x * 2
    return f, seeded(lambda: Inputs((rand(3), rand(2, 2))))


@case("input_mutation", mode="inference", tags=("set_",))
def set_onto_a_new_storage_then_mutate():
    def f(x):
        x.set_(torch.zeros(5))
        x.add_(1)
        return x.sum(), x
    return f, seeded(lambda: Inputs((rand(3),)))


@case("input_mutation", mode="inference", tags=("set_",))
def set_then_undo_after_mutating_through_it():
    # FSDP-style: swap in another storage, write through it, swap back
    def f(x, y):
        old = x.detach()
        x.set_(y)
        x.mul_(2)
        z = x + 1
        x.set_(old)
        return z, x
    return f, seeded(lambda: Inputs((rand(3), rand(3))))


@case("input_mutation", mode="inference", tags=("set_", "alias"))
def set_onto_a_view_of_another_argument():
    def f(x, y):
        x.set_(y[1:3])
        y.add_(1)                  # x sees it: one storage
        return x.view(-1), y.sum()
    return f, seeded(lambda: Inputs((rand(3), rand(6))))


@case("input_mutation", mode="training", tags=("set_",))
def set_under_no_grad_beside_a_grad_input():
    def f(x, buf, w):
        with torch.no_grad():
            buf.set_(x.detach() * 0 + 3)
        return (w * buf).sum(), buf
    def make():
        w = leaf(4)
        return Inputs((rand(4), rand(2), w), leaves=(w,))
    return f, seeded(make)


@case("input_mutation", mode="inference", tags=("set_",))
def set_onto_a_view_of_itself_then_mutate():
    # the storage stays the argument's own, so functionalization reports no swap; the new
    # geometry is replayed as a set_ onto its own storage, then the storage's value written
    def f(x):
        x.set_(x.view(-1))
        x.mul_(2)
        return x.sum()
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("input_mutation", mode="inference", tags=("set_",))
def mutate_then_set_onto_a_smaller_view_of_itself():
    # row 1 was doubled before set_ narrowed the argument to row 0: the whole storage, not
    # only what the final geometry covers, carries the write
    def f(x):
        x.mul_(2)
        x.set_(x[0])
        return ()
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("input_mutation", mode="inference", tags=("set_", "fuzz"))
def fuzz_transpose_then_set_onto_its_own_transpose():
    # found by aotcheck fuzz --extensions ...,set_ --seed 11: the transpose_ before set_ was
    # replayed after it, leaving the argument transposed
    def f(a):
        a.transpose_(0, 1)
        a.set_(a.transpose(0, 1))
        return ()
    return f, seeded(lambda: Inputs((rand(4, 1, 4),)))


@case("input_mutation", mode="inference", tags=("set_", "fuzz", "no_grad_call"))
def fuzz_unsqueeze_then_set_back_onto_a_view_taken_before_then_doubled():
    # found by aotcheck fuzz --seed 1 (repro s32/00): a.unsqueeze_(1) under no_grad, then
    # set_() onto a.t() taken before it, which is a's geometry at the call again; the
    # unsqueeze_ was replayed and the set_ not (a geometry its logged calls do not give is a
    # swap onto its own storage, also when it is the geometry at the call)
    class _MulTwoInPlace(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    def f(a):
        v = a.t()
        with torch.no_grad():
            a.unsqueeze_(1)
        a.set_(v)
        _MulTwoInPlace.apply(a)
        return ()
    return f, seeded(lambda: Inputs((rand(4)[::2],)))


@case("input_mutation", mode="inference", tags=("set_", "view"))
def transpose_then_set_back_onto_a_view_taken_before_then_written_and_returned():
    # a 2-d argument transposed in place and set back onto a view of its geometry at the
    # call, then written in place and returned: eager's is the argument in its geometry at
    # the call, written (the view taken first is another view of the same memory)
    def f(a):
        v = a[:]
        a.t_()
        a.set_(v)
        a.add_(1)
        return a, v * 2
    return f, seeded(lambda: Inputs((rand(3, 2),)))


@case("input_mutation", mode="inference", tags=("set_", "alias"))
def set_a_row_onto_another_row_then_mutate():
    # found by the fuzzer (a0.zero_(); a1.set_(a0)): after set_, a1 is a second view of row 0,
    # so mul_ through it doubles row 0 of the argument; functionalization freezes the storage
    # on set_ of a view ("cannot mutate tensors with frozen storage"), the second way of
    # tracing (storage_views.py) re-reads a1 as a view of the argument's storage
    def f(a):
        a0, a1 = a[0], a[1]
        a1.set_(a0)
        a1.mul_(2)
        return a1, a0 + 1
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("input_mutation", mode="inference", tags=("set_", "alias", "no_grad"))
def set_a_view_onto_another_view_of_the_same_argument():
    def f(a):
        v = a[:, 1:]
        w = a.view(-1)[:2]
        w.set_(v)
        with torch.no_grad():
            w.add_(1)
        return w.sum(), a.clone()
    return f, seeded(lambda: Inputs((rand(3, 3),)))


@case("requires_grad_modes", mode="training", tags=("requires_grad_",))
def requires_grad_false_on_a_grad_leaf_argument():
    # eager: the caller's leaf stops requiring grad (its .grad stays None), the product
    # still requires grad through w; the first way's non-leaf copies cannot change the flag
    def f(x, w):
        x.requires_grad_(False)
        return (x * w).sum()
    def make():
        x, w = leaf(3), leaf(3)
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make)


# ---------------------------------------------------------------- .grad None versus zeros
# A mutated argument whose new value the backward never reaches (the oracle backpropagates
# from floating tensors only; this one is complex): eager leaves its source's .grad None,
# a compiled function that materialized zero gradients gave zeros (NOTE [per-output reach]).

@case("mutation_autograd", mode="training", tags=("grad_none",))
def mutated_complex_nonleaf_not_reached():
    def f(x, a):
        a.mul_(2)
        return x * 2
    def make():
        x, w = leaf(3), leaf(3, dtype=torch.complex64)
        return Inputs((x, w * 1), leaves=(x, w))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("grad_none",))
def mutated_with_grad_value_not_reached():
    def f(x, a, y):
        a.add_(y.to(torch.complex64))
        return x.sin()
    def make():
        x, y = leaf(3), leaf(3)
        return Inputs((x, torch.zeros(3, dtype=torch.complex64), y), leaves=(x, y))
    return f, seeded(make)


# ---------------------------------------------------------------- set_() and autograd
# set_() has no derivative; eager records it under grad mode when the argument or its source
# requires grad (a NotImplemented grad_fn), and under no_grad it moves the data only
# (NOTE [set_ recorded by autograd], NOTE [set_ under no_grad] in swap_grad.py).

@case("aliased_inputs", mode="training", tags=("set_", "alias", "fuzz"))
def fuzz_set_within_alias_group_then_grad_write_into_old_storage():
    # found by aotcheck fuzz (seed 2): a1 and a0 are transposes of one tensor; a1.set_(a0)
    # keeps the storage, and the copy of a grad-requiring value into a view taken before
    # makes the caller's base, and through it a0 and a1, require grad (eager: CopySlices on
    # the base, a0/a1 AsStridedBackward0, their gradient reaching b1). The first capture,
    # with a0 and a1 on storages of their own, saw a1 swapped onto a0's and requiring grad
    # at the end and refused, before the synthetic-base capture that replays it exactly
    # (NOTE [swaps in an alias group] in storage/swaps.py)
    def f(a0, a1, a2):
        v0 = a1[:, :1]
        with torch.no_grad():
            with torch.enable_grad():
                a1.set_(a0)
        v0.copy_(a2)
        return a0 * 2, a1 + 1
    def make():
        b0, b1 = rand(1, 1, 4), leaf(2)
        a0 = b0.transpose(-2, -1)
        return Inputs((a0, a0.transpose(-2, -1), b1[::2]), leaves=(b1,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("set_", "no_grad", "fuzz"))
def set_under_no_grad_of_arguments_requiring_grad():
    # eager: set_() under no_grad records nothing, so the leaf x stays a leaf requiring grad
    # (its .grad gets x * y's gradient, read at its new data), the non-leaf z keeps its
    # grad_fn (MulBackward0, reaching w) on k's storage, and q, set onto the leaf g that
    # requires grad, requires none (q.mul_(2) doubles g's data, not its gradient); aotcheck
    # refused any swap of an argument that requires grad or onto one that does
    def f(x, z, y, k, q, g):
        with torch.no_grad():
            x.set_(y)
            z.set_(k)
            q.set_(g)
            q.mul_(2)
        return x * y, z * 3, g * q
    def make():
        x, w, g = leaf(3), leaf(3), leaf(3)
        return Inputs((x, w * 1, rand(3), rand(3), rand(3), g), leaves=(x, w, g))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("set_", "fuzz"))
def set_onto_grad_values_recorded_by_autograd():
    # eager: under grad mode x.set_(w * 2) and z.set_(w) (x, z requiring no grad) make x and
    # z non-leaves whose grad_fn is NotImplemented; a backward through them raises
    # "derivative for set_ is not implemented" (the oracle's backward includes non-leaf
    # arguments, so both raise), while w.sin() alone would be fine; aotcheck refused the swaps
    def f(x, z, w):
        x.set_(w * 2)
        z.set_(w)
        return w.sin(), x.detach() + 1
    def make():
        w = leaf(3)
        return Inputs((rand(3), rand(3), w), leaves=(w,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("set_", "fuzz"))
def set_of_a_nonleaf_argument_recorded_by_autograd():
    # eager: x (a non-leaf requiring grad) set_() onto another argument under grad mode gets
    # a NotImplemented grad_fn; y * 2 still reaches v, x's backward raises; aotcheck refused
    def f(x, y):
        x.set_(y)
        return y * 2
    def make():
        w, v = leaf(3), leaf(2)
        return Inputs((w * 1, v * 1), leaves=(w, v))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("set_", "fuzz"))
def set_then_write_with_grad_after_the_swap():
    # eager: x.set_(y) is not recorded (nothing requires grad), x.mul_(u) is: x becomes a
    # non-leaf (MulBackward0) over y's storage, and y, which shares the new data, still
    # requires no grad; z's view v of its old storage written with u makes z a non-leaf too
    # (CopySlices: v's base is z) though z now holds k's data. aotcheck refused both swaps
    # (the argument requires grad at the end); returning () it also chose inference and
    # lost the gradient (NOTE [grad writes after a swap] in swap_grad.py)
    def f(x, y, z, k, u):
        v = z[:2]
        x.set_(y)
        x.mul_(u)
        z.set_(k)
        v.mul_(u[:2])
        return ()
    def make():
        u = leaf(3)
        return Inputs((rand(3), rand(6)[::2], rand(3), rand(3), u), leaves=(u,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("set_", "fuzz"))
def set_recorded_by_autograd_then_written():
    # eager: x.set_(w * 2) is recorded (NotImplemented), x.mul_(3) on top (MulBackward0):
    # x requires grad and any backward through it raises "derivative for set_ is not
    # implemented"; w.sin() alone is fine; aotcheck refused the swap
    def f(x, w):
        x.set_(w * 2)
        x.mul_(3)
        return w.sin()
    def make():
        w = leaf(3)
        return Inputs((rand(3), w), leaves=(w,))
    return f, seeded(make)


@case("aliased_inputs", mode="training", tags=("set_", "alias", "fuzz"))
def set_a_member_elsewhere_then_write_its_old_base_with_grad():
    # eager: x (= b[:3]) set_() onto y keeps its view metadata, so after b.copy_(u) its
    # grad_fn is rebuilt on b (AsStridedBackward0 in x's new geometry) though its data is
    # y's: x * 1 sends its gradient through b to u[:3]. aotcheck refused the member's swap
    # (it required grad at the end); the runtime moves the caller's x under no_grad after
    # writing b back, and the same rebuild happens (NOTE [member storage swaps])
    def f(b, x, y, u):
        x.set_(y)
        b.copy_(u)
        return x * 1
    def make():
        b, u = rand(4), leaf(4)
        return Inputs((b, b[:3], rand(3), u), leaves=(u,))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("value_specialization", "returned"))
def index_fill_tensor_value_on_nonleaf():
    """index_fill_ with a 0-dim tensor value on a non-leaf argument: the value's derivative
    reads the indices' values (``_unique``), so the joint is traced on real copies
    (NOTE [value specialization]). Those copies were leaves, so the argument was mutated without a
    non-leaf copy first: its gradient was taken after the fill and came back unmasked
    (``l.grad`` 1 where eager's is 0 at the filled rows; silently wrong)."""
    def f(x, idx, v):
        return x.index_fill_(0, idx, v)
    def make():
        l, v = leaf(4, 3), torch.tensor(2.0, requires_grad=True)
        return Inputs((l.clone(), torch.tensor([1, 3]), v), leaves=(l, v))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("value_specialization",))
def nonleaf_written_then_branch_on_its_value():
    """A non-leaf argument written in place, then Python control flow on its value: the
    values trace must keep the argument a non-leaf, so its gradient is the one before the
    write (eager: 2 * 3 per element)."""
    def f(x):
        x.mul_(2)
        if x.sum() > 0:
            return x * 3
        return x * 4
    def make():
        l = (torch.rand(2, 3) + 0.1).requires_grad_()
        return Inputs((l.clone(),), leaves=(l,))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("value_specialization", "noncontiguous"))
def masked_select_of_written_nonleaf_view():
    """A strided non-leaf argument written in place, then ``masked_select`` (an output shape
    that depends on the data) of it and of a leaf argument."""
    def f(x, w):
        x.add_(w)
        return x.masked_select(x > 0.5), w.masked_select(x > 0.5) * 2
    def make():
        l, w = leaf(3, 4), leaf(4, 3)
        return Inputs((l.clone().t(), w), leaves=(l, w))
    return f, seeded(make)


@case("mutation_autograd", mode="training", tags=("value_specialization",))
def index_put_bool_mask_backward_reads_the_mask():
    """``index_put`` with a boolean mask: the value's gradient is ``grad[mask]``, an output
    shape that depends on the data, pinned by a guard on the tangent's side of the joint.
    Guards stayed with the forward's draws, which cannot read a tangent: the partitioner
    crashed (``KeyError: arg3_1``; OpInfo index_put sample 1). Guards computed from a
    tangent now run in the backward, where eager reads the value."""
    def f(x, mask, v):
        return torch.index_put(x, (mask,), v) * 2
    def make():
        x, v = leaf(5, 5), leaf(5)
        return Inputs((x, torch.tensor([True, True, False, True, False]), v), leaves=(x, v))
    return f, seeded(make)


@case("input_mutation", mode="training", tags=("noncontiguous",))
def tail_slice_argument_written_beside_a_grad_argument():
    """A slice argument at offset 1 written in place (``y[3:] = 2.0``) beside an argument that
    requires grad: the written wrapper's offset drifted to 0 in the joint's run of the
    function and not in the capture's, so the engine refused a function eager runs ('traced
    differently the second time'). An argument whose metadata nothing changed now ends in its
    geometry at the call (NOTE [eager geometry]). Found through the Dynamo backend, whose graph
    after a resize_ graph break is this function."""
    def f(y, x):
        y[3:] = 2.0
        return x * y[:3], y.sum()
    def make():
        x = leaf(3)
        return Inputs((rand(5)[1:], x), leaves=(x,))
    return f, seeded(make)


@case("metadata_mutation", mode="training", tags=("set_", "requires_grad_"))
def tensor_made_inside_set_onto_a_slice_then_given_requires_grad():
    """A tensor made inside, ``set_()`` onto a slice of the argument, then ``requires_grad_()``:
    eager's leaf is the slice's (2,) at offset 1. The recorder kept the geometry the tensor had
    when it was made ((3,)), since set_ reaches no TorchFunctionMode, so the leaf came back of
    shape (3,), and the backward of an output computed from it raised ('invalid gradient')."""
    def f(a1):
        with torch.no_grad():
            v1 = a1 * 2
        v1.set_(a1[1:])
        v1.requires_grad_()
        return v1, v1 * 3
    return f, seeded(lambda: Inputs((rand(3),)))


# ---------------------------------------------------------------- .data assignment (issue 27)
# ``x.data = y`` keeps x (its identity, flag, leafness) and gives it y's storage, geometry and
# dtype; views of x taken before keep the old storage (NOTE [.data assignment]).

@case("input_mutation", mode="inference", tags=("data_assign",))
def data_assign_onto_a_slice_of_another_argument():
    """x.data = y[1:] (a view): x shares y's storage from offset 1; a later write through y
    shows in x."""
    def f(x, y):
        x.data = y[1:]
        y.mul_(2)
        return x + 1
    return f, seeded(lambda: Inputs((rand(3), rand(4))))


@case("input_mutation", mode="inference", tags=("data_assign", "dtypes"))
def data_assign_to_float64_then_written():
    """x.data = x.double(), then x.add_(1): the argument ends float64 and written."""
    def f(x):
        x.data = x.double()
        x.add_(1)
        return x * 2
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("input_mutation", mode="inference", tags=("data_assign", "no_grad_call"))
def data_assign_under_no_grad_call_keeps_an_earlier_view():
    """Called under no_grad: a view taken before x.data = new keeps the old storage and
    is written through after."""
    def f(x):
        v = x[0]
        x.data = torch.zeros(5)
        v.add_(3)
        return v, x
    return f, seeded(lambda: Inputs((rand(2, 2),)))


# NOTE [.data assignment of a viewed tensor] in aotcheck/engine/capture/storage/data_assign.py: after
# ``.data =`` of a tensor with views, a write, then a read of a view: functionalization
# replays the view's ops on the new value (IndexError); the second way runs as eager.

@case("input_mutation", mode="inference", tags=("data_assign", "view", "parameter", "fuzz"))
def fuzz_parameter_given_data_of_its_diagonal_then_zeroed_and_a_view_read():
    """Found by aotcheck fuzz --seed 1 (repro s32/01): a Parameter given .data of its own
    diagonal (inside enable_grad within no_grad), zeroed under no_grad, then exp of a slice
    of the diagonal taken before; nothing returned."""
    def f(a):
        v = a.diagonal(-2, 0, 1)
        with torch.no_grad():
            with torch.enable_grad():
                a.data = v
        v1 = v[1::3]
        with torch.no_grad():
            a.zero_()
        v1.exp()
        return ()
    def make():
        p = torch.nn.Parameter(rand(4, 3))
        return Inputs((p,), leaves=(p,))
    return f, seeded(make)


@case("input_mutation", mode="inference", tags=("data_assign", "view", "parameter", "fuzz", "storage_offset"))
def fuzz_parameter_at_an_offset_given_data_of_its_diagonal_then_written_through_it():
    """The key-variation pass's storage_offset[input 0]=1 of the case above (fuzz seed 1,
    09): a Parameter one element into its storage given .data of its diagonal, then written
    through it (zero_, .data.mul_ of the view, add_ under inference_mode): only the diagonal
    changes, as in eager (the second way's graph zeroed all of the argument before
    NOTE [.data assignment in the plain trace]; at an offset it was refused)."""
    def f(a):
        v = a.diagonal(-2, 0, 1)
        with torch.no_grad():
            with torch.enable_grad():
                a.data = v
        v1 = v[1::3]
        with torch.no_grad():
            a.zero_()
        v.data.mul_(2.0)
        e = v1.exp()
        with torch.inference_mode():
            a.add_(1.0)
        return (e.detach() * 1,)
    def make():
        p = torch.nn.Parameter(rand(13)[1:].view(4, 3))
        return Inputs((p,), leaves=(p,))
    return f, seeded(make)


@case("input_mutation", mode="inference", tags=("data_assign", "view"))
def data_assign_onto_its_own_diagonal_then_written_and_a_slice_read():
    """x.data = its own diagonal, x.zero_(), then a slice of the diagonal (a view of the old
    x, over the same memory) read: zeros; x returned plus one."""
    def f(x):
        v = x.diagonal(-2, 0, 1)
        x.data = v
        v1 = v[1::3]
        x.zero_()
        return v1.exp(), x + 1
    return f, seeded(lambda: Inputs((rand(4, 3),)))


@case("input_mutation", mode="inference", tags=("data_assign", "view", "no_grad_call"))
def data_assign_onto_its_first_column_then_doubled_with_a_row_taken_before():
    """x.data = x[:, 0], x.mul_(2): the row x[1] taken before sees its first element
    doubled (same memory); both returned, called under no_grad too."""
    def f(x):
        v = x[1]
        x.data = x[:, 0]
        x.mul_(2)
        return v * 3, x
    return f, seeded(lambda: Inputs((rand(4, 3),)))


# NOTE [.data assignment of an argument that requires grad] in aotcheck/engine/capture/storage/swaps.py:
# ``.data =`` is never recorded by autograd: the argument keeps its grad_fn and gets the
# other tensor's memory, whatever requires grad.

def _two_nonleaf(n0: int, n1: int):
    def make():
        l0, l1 = leaf(n0), leaf(n1)
        return Inputs((l0.clone(), l1.clone()), leaves=(l0, l1))
    return make


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf", "fuzz"))
def fuzz_filled_nonleaf_argument_given_data_of_another():
    """Found by aotcheck fuzz --seed 1 (repro s32/06): a1.fill_(0.5), then a1.data = a0,
    both non-leaf scalars that require grad: a1 keeps FillBackward0 over a0's memory."""
    def f(a0, a1):
        a1.fill_(0.5)
        a1.data = a0
        return ()
    def make():
        l0, l1 = leaf(()), leaf(())
        return Inputs((l0.clone(), l1.clone()), leaves=(l0, l1))
    return f, seeded(make)


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf"))
def doubled_nonleaf_argument_given_data_of_a_slice_of_another_then_used():
    """a1.mul_(2) under grad, then a1.data = a0[1:] (a0 requiring grad too), then a1 * 3 and
    a0's sum returned: a1's gradient goes through its MulBackward0 to its leaf (6), though
    its values are a0's; a0 gets 1 from the sum only."""
    def f(a0, a1):
        a1.mul_(2)
        a1.data = a0[1:]
        return a1 * 3, a0.sum()
    return f, seeded(_two_nonleaf(4, 3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf"))
def nonleaf_argument_added_to_then_given_data_of_a_tensor_made_inside():
    """a1.add_(a0), then a1.data = torch.ones(3): a1 keeps AddBackward0 (reaching both
    leaves) over the new memory."""
    def f(a0, a1):
        a1.add_(a0)
        a1.data = torch.ones(3)
        return a1 * 2
    return f, seeded(_two_nonleaf(3, 3))


# NOTE [set_ under no_grad onto another shape] in aotcheck/engine/runtime/swap_grad.py: a Parameter
# given .data of another shape after a use under grad mode keeps its AccumulateGrad of the old
# shape while that use holds it (NOTE [.data = onto another shape while a use holds the node]
# in aotcheck/engine/capture/storage/watch.py): the uses before reach it, and so does a use after
# while a tensor still holds one (a gradient of the old shape, broadcast into .grad or raising
# there); a use after all of them were dropped gets a new node of the new shape.

def _parameter(*shape):
    def make():
        p = torch.nn.Parameter(rand(*shape))
        return Inputs((p,), leaves=(p,))
    return make


def _parameter_and_input(p_shape, x_shape):
    def make():
        p = torch.nn.Parameter(rand(*p_shape))
        return Inputs((p, rand(*x_shape)), leaves=(p,))
    return make


@case("input_mutation", mode="training", tags=("data_assign", "parameter"))
def parameter_given_data_of_another_shape_after_a_dropped_use_then_used():
    """(p * 2).sum() dropped, then p.data = x + 1 of shape (2, 2) for a (2,) Parameter, then
    p * x: nothing holds p's AccumulateGrad of the old shape, so the use gets a new one of the
    new shape, and p.grad is (2, 2) with that use's gradient only."""
    def f(p, x):
        (p * 2).sum()
        p.data = x + 1
        return p * x
    return f, seeded(_parameter_and_input((2,), (2, 2)))


@case("input_mutation", mode="training", tags=("data_assign", "parameter"))
def parameter_given_data_of_another_shape_while_a_derived_tensor_holds_a_use():
    """ys = [p * 2]; y = ys[0].exp(); del ys; then p.data = x + 1 of shape (2, 2) and p * x:
    y's graph still holds the use, so p * x reaches p's AccumulateGrad of the old shape (2,):
    its gradient is summed to (2,) and broadcast into .grad."""
    def f(p, x):
        ys = [p * 2]
        y = ys[0].exp()
        del ys
        p.data = x + 1
        return p * x, y
    return f, seeded(_parameter_and_input((2,), (2, 2)))


@case("input_mutation", mode="training", tags=("data_assign", "parameter"))
def parameter_given_data_of_another_shape_then_used_after_its_first_use_is_dropped():
    """y = p * 2; p.data = x + 1; z = p * x; del y; w = p * 3: z holds the old
    AccumulateGrad when w is made, so both reach it (both gradients summed to (2,))."""
    def f(p, x):
        y = p * 2
        p.data = x + 1
        z = p * x
        del y
        w = p * 3
        return z, w
    return f, seeded(_parameter_and_input((2,), (2, 2)))


@case("input_mutation", mode="training", tags=("data_assign", "parameter"))
def parameter_given_data_of_another_shape_then_used_after_every_use_is_dropped():
    """y = p * 2; p.data = x + 1; z = p * x; del y, z; w = p * 3: nothing holds the old
    AccumulateGrad when w is made, so w's gradient reaches a new one, (2, 2)."""
    def f(p, x):
        y = p * 2
        p.data = x + 1
        z = p * x
        del y, z
        return p * 3
    return f, seeded(_parameter_and_input((2,), (2, 2)))


@case("input_mutation", mode="training", tags=("data_assign", "parameter", "leaf_inside"))
def parameter_sliced_then_data_swapped_with_a_parameter_made_inside_that_is_used():
    """The fuzz seed 1 program below with the new Parameter's mean returned: v (made (2, 2))
    takes p's (4, 3) memory and its gradient has that shape; p's slice is dropped. The
    compiled function's stand-in for p's node of before materialized a zero (4, 3) gradient
    that met p in its new (2, 2) shape at backward (it was refused before)."""
    def f(a):
        v = torch.nn.Parameter(torch.randn((2, 2)))
        a[:, :2]
        a.data, v.data = v.data, a.data
        return v.mean(0, keepdim=True)
    return f, seeded(_parameter(4, 3))


@case("input_mutation", mode="training", tags=("data_assign", "parameter", "leaf_inside", "inference_mode"))
def parameter_data_swapped_with_a_parameter_made_inside_then_its_old_slice_zeroed():
    """Found by aotcheck fuzz --seed 1: the swap above, then the slice of the argument's old
    memory (now the new Parameter's) zeroed under inference_mode, and the new Parameter's
    mean returned. Eager's argument gets no gradient; the compiled one got a zero one: the
    new Parameter had no gradient node to walk (its data written in inference mode), and
    the joint then took every output to reach every input."""
    def f(a):
        v = torch.nn.Parameter(torch.randn((2, 2)))
        w = a[:, :2]
        a.data, v.data = v.data, a.data
        with torch.inference_mode():
            w.zero_()
        with torch.no_grad():
            with torch.enable_grad():
                return v.mean(0, keepdim=True)
    return f, seeded(_parameter(4, 3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf", "view"))
def nonleaf_written_then_given_data_of_its_own_slice():
    """Found by aotcheck fuzz --seed 3: v = a[1:]; a.mul_(-1); a.data = v; a * 2 and v
    returned: a keeps the write's history (MulBackward0) over its own memory in v's
    geometry. The replay copied the storage under no_grad and lost the write (the leaf's
    gradient came back with the wrong sign, silently; then it was refused)."""
    def f(a):
        v = a[1:]
        a.mul_(-1.0)
        a.data = v
        return a * 2, v
    def make():
        l = leaf(4, 2)
        return Inputs((l.clone(),), leaves=(l,))
    return f, seeded(make)


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf", "view"))
def row_of_an_argument_taken_before_it_swaps_data_with_another():
    """v = a[0]; a.data, b.data = b.data, a.data; v returned (a, b non-leaf arguments): v is
    an autograd view of a over the memory b now has, and its gradient goes to a's leaf. It
    was rebuilt from b, whose storage it shares after the swap, and its gradient went to
    b's leaf (silently)."""
    def f(a, b):
        v = a[0]
        a.data, b.data = b.data, a.data
        return v * 1, v
    def make():
        l0, l1 = leaf(2, 3), leaf(2, 3)
        return Inputs((l0.clone(), l1.clone()), leaves=(l0, l1))
    return f, seeded(make)


@case("input_mutation", mode="inference", tags=("data_assign", "nonleaf", "view", "multi_output_view",
                                               "custom_function", "inference_mode", "aliased"))
def unbound_argument_swaps_data_with_a_custom_function_output_in_inference_mode():
    """Found by aotcheck fuzz --seed 3: a2 is a0 (passed twice); v1 = a2.unbind(0); v2 a
    custom Function's output; under inference_mode v2.data, a2.data = a2.data, v2.data; the
    unbind outputs returned. They stay autograd views of a2 (in place on one raises); the
    swap's replay by set_() bumped a2's version and their backward raised, and they were
    rebuilt from another argument."""
    from .cases_custom_function import Double

    def f(a0, a1, a2):
        v1 = a2.unbind(0)
        v2 = Double.apply(a1)
        with torch.inference_mode():
            v2.data, a2.data = a2.data, v2.data
        return v1
    def make():
        l0, l1 = leaf(2), leaf(4)
        a0 = l0.clone()
        return Inputs((a0, l1.clone()[::2], a0), leaves=(l0, l1))
    return f, seeded(make)


@case("input_mutation", mode="training", tags=("data_assign", "parameter", "view"))
def parameter_view_taken_before_its_data_is_assigned_returned():
    """v = p[:, :2]; p.data = zeros(2, 2); v * 2 and v returned: eager's v is still an
    autograd view of the Parameter p (over its old memory), so writing it in place raises;
    the compiled v was rebuilt as a view of an intermediate, and the write ran
    (NOTE [views taken before .data =])."""
    def f(p):
        v = p[:, :2]
        p.data = torch.zeros(2, 2)
        return v * 2, v
    return f, seeded(_parameter(4, 3))


@case("input_mutation", mode="training", tags=("data_assign", "parameter", "view", "multi_output_view"))
def parameter_unbound_before_its_data_is_assigned():
    """u = p.unbind(0); p.data = ones(5); u[1] and p * 2 returned: u[1] views p's old memory
    and is an output of a multi-output view op of p (in place on it raises in eager)."""
    def f(p):
        u = p.unbind(0)
        p.data = torch.ones(5)
        return u[1], p * 2
    return f, seeded(_parameter(4, 3))


@case("input_mutation", mode="training", tags=("data_assign", "parameter", "no_grad"))
def parameter_set_onto_another_shape_under_no_grad_after_a_dropped_use():
    """a[:, :2].sum() dropped, then under no_grad a.set_(zeros(2, 2)); a * 2 returned: the
    use gets a's new AccumulateGrad, (2, 2); the dropped use's node receives nothing. The
    compiled function's stand-in for that node materialized a zero gradient of the old
    shape, and backward raised."""
    def f(a):
        a[:, :2].sum()
        with torch.no_grad():
            a.set_(torch.zeros(2, 2))
        return a * 2
    return f, seeded(_parameter(4, 3))


@case("input_mutation", mode="inference", tags=("data_assign", "parameter", "fuzz"))
def fuzz_parameter_sliced_then_data_swapped_with_a_parameter_made_inside():
    """Found by aotcheck fuzz --seed 1 (repro s32/05): a (4, 3) Parameter sliced under grad
    mode, then its .data swapped with a (2, 2) Parameter made inside; nothing returned: the
    argument ends (2, 2) with the new Parameter's values."""
    def f(a):
        v = torch.nn.Parameter(torch.randn((2, 2)))
        a[:, :2]
        a.data, v.data = v.data, a.data
        return ()
    return f, seeded(_parameter(4, 3))


@case("input_mutation", mode="training", tags=("data_assign", "parameter"))
def parameter_slice_doubled_returned_then_data_of_another_shape():
    """v = p[:, :2] * 2 returned, then p.data = ones(2, 2): v's backward reaches p's
    AccumulateGrad of the old (4, 3) shape, which accumulates a (4, 3) gradient into the
    (2, 2) p: eager's backward raises there ('The size of tensor a (2) must match ...')."""
    def f(p):
        v = p[:, :2] * 2
        p.data = torch.ones(2, 2)
        return v
    return f, seeded(_parameter(4, 3))


@case("input_mutation", mode="training", tags=("data_assign", "parameter", "broadcast"))
def parameter_used_then_given_data_of_a_shape_its_gradient_broadcasts_to():
    """v = p * 2 for a (3,) Parameter, then under no_grad p.data = ones(2, 3): v's (3,)
    gradient is broadcast into p's (2, 3) .grad, as eager's AccumulateGrad does."""
    def f(p):
        v = p * 2
        with torch.no_grad():
            p.data = torch.ones(2, 3)
        return v, p.shape
    return f, seeded(_parameter(3))


@case("input_mutation", mode="training", tags=("data_assign", "parameter"))
def two_parameters_swap_data_after_one_is_used():
    """v = p.sum(0) (p (4, 3)), then p.data, q.data = q.data, p.data (q (3, 2), unused
    before), then v * q: q's gradient has its new shape (4, 3); p's goes through v to its
    AccumulateGrad of the old shape, (4, 3) again, while p is (3, 2): eager's backward
    raises there."""
    def f(p, q):
        v = p.sum(0)
        p.data, q.data = q.data, p.data
        return v * q
    def make():
        p, q = torch.nn.Parameter(rand(4, 3)), torch.nn.Parameter(rand(3, 2))
        return Inputs((p, q), leaves=(p, q))
    return f, seeded(make)


@case("input_mutation", mode="training", tags=("data_assign", "parameter", "dtypes"))
def parameter_given_data_of_another_shape_and_dtype_then_used():
    """Under no_grad, p.data = x.double().view(2, 2) for a float32 (3,) Parameter, then
    p * 2: the use reaches p's new AccumulateGrad, float64 (2, 2), and p.grad has that
    dtype and shape (fuzz seed 1, dtype variation: it was refused)."""
    def f(x, p):
        with torch.no_grad():
            p.data = x.double().view(2, 2)
        return p * 2, x + 1
    def make():
        p = torch.nn.Parameter(rand(3))
        x = rand(4).requires_grad_()
        return Inputs((x, p), leaves=(x, p))
    return f, seeded(make)


@case("input_mutation", mode="training", tags=("data_assign", "parameter", "dtypes"))
def parameter_used_then_swapped_with_a_tensor_of_another_shape_and_dtype():
    """y = p.sum() * x, then p.data and v.data swapped, v a float64 (2, 1) made inside:
    y's gradient reaches p's AccumulateGrad of before (float32 (2,)), while p is now
    float64 (2, 1); v, returned, has p's old data."""
    def f(x, p):
        y = p.sum() * x
        with torch.no_grad():
            v = x[:2].double().view(2, 1)
        p.data, v.data = v.data, p.data
        return y, v * 1
    def make():
        p = torch.nn.Parameter(rand(2))
        x = rand(4).requires_grad_()
        return Inputs((x, p), leaves=(x, p))
    return f, seeded(make)


@case("input_mutation", mode="training", tags=("data_assign", "parameter"))
def data_assign_of_a_parameter_same_shape_used_after():
    """A Parameter given .data of another tensor of its shape, then used: the output is
    computed from the new data and the gradient reaches the Parameter."""
    def f(p, x):
        with torch.no_grad():
            p.data = x * 0.5
        return (p * x).sum()
    def make():
        p = torch.nn.Parameter(rand(3))
        return Inputs((p, rand(3)), leaves=(p,))
    return f, seeded(make)


# NOTE [.data assignment of an argument that requires grad] in aotcheck/engine/capture/storage/swaps.py:
# after ``a1.data = a0`` a write to a1 is recorded on a1 (over the history a1 kept) and writes
# a0's memory with no record on a0; a1 and a0 share a0's memory after the call.

def _three_nonleaf(n0: int, n1: int, n2: int):
    def make():
        l0, l1, l2 = leaf(n0), leaf(n1), leaf(n2)
        return Inputs((l0.clone(), l1.clone(), l2.clone()), leaves=(l0, l1, l2))
    return make


def _two_nonleaf_and_a_leaf(n: int):
    def make():
        l0, l1, u = leaf(n), leaf(n), leaf(n)
        return Inputs((l0.clone(), l1.clone(), u), leaves=(l0, l1, u))
    return make


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf", "fuzz"))
def fuzz_nonleaf_argument_given_data_of_another_then_added_to():
    """Found by aotcheck fuzz --seed 1 (repro s32/04, 'nonleaf | data_set add_'): a1.data =
    a0, then a1.add_(2.0), both non-leaf scalars that require grad, nothing returned: a0's
    memory gets the add (a0's grad_fn stays CloneBackward0), a1 gets AddBackward0 over its
    own CloneBackward0 and shares a0's memory. Was refused as a set_() of an argument that
    requires grad."""
    def f(a0, a1):
        a1.data = a0
        a1.add_(2.0)
        return ()
    return f, seeded(_two_nonleaf((), ()))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf"))
def nonleaf_argument_given_data_of_another_then_multiplied_by_a_grad_value():
    """a1.data = a0; a1.mul_(u), u a leaf: u's gradient is a0's values times a1's cotangent,
    a1's leaf gets u through MulBackward0 over a1's old history, a0's leaf only its own
    cotangent (a0's memory is written with no record on a0)."""
    def f(a0, a1, u):
        a1.data = a0
        a1.mul_(u)
        return a1
    return f, seeded(_two_nonleaf_and_a_leaf(3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf"))
def nonleaf_argument_given_data_of_another_then_copied_into_from_a_grad_value():
    """a1.data = a0; a1.copy_(u * 2); a0 + 1 returned: a0's values become u * 2 (the output
    too), its gradient still goes to a0's leaf only; a1's old history gets zeros from
    CopyBackwards, u gets 2 per element of a1's cotangent."""
    def f(a0, a1, u):
        a1.data = a0
        a1.copy_(u * 2)
        return a0 + 1
    return f, seeded(_two_nonleaf_and_a_leaf(3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf", "view"))
def nonleaf_argument_given_data_of_another_then_a_slice_of_it_written():
    """a1.data = a0; a1[1:].add_(1.0); a1 returned: a0's last two elements change, a1's
    grad_fn is CopySlices over its old history."""
    def f(a0, a1):
        a1.data = a0
        a1[1:].add_(1.0)
        return a1
    return f, seeded(_two_nonleaf(3, 3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf", "view"))
def view_of_nonleaf_argument_given_data_of_another_then_written_returned():
    """a1.data = a0; a1.add_(1.0); a1[1:] returned: the output is a view of a1 over a0's
    memory, whose gradient goes to a1's leaf (it was rebuilt from a0, so its gradient went
    to a0's leaf, silently)."""
    def f(a0, a1):
        a1.data = a0
        a1.add_(1.0)
        return a1[1:]
    return f, seeded(_two_nonleaf(3, 3))


@case("input_mutation", mode="inference", tags=("data_assign", "nonleaf", "view"))
def view_of_nonleaf_argument_given_data_of_another_returned():
    """a1.data = a0; a1[1:] returned, nothing written: a view of a1 over a0's memory, whose
    gradient goes to a1's leaf, not a0's."""
    def f(a0, a1):
        a1.data = a0
        return a1[1:]
    return f, seeded(_two_nonleaf(3, 3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf"))
def nonleaf_argument_given_data_of_another_then_written_twice_both_returned():
    """a1.data = a0; a1.add_(1.0); a1.mul_(a0): the second write reads a0, which is a1's own
    memory by then (a0 * a0 after the add); both returned, sharing memory."""
    def f(a0, a1):
        a1.data = a0
        a1.add_(1.0)
        a1.mul_(a0)
        return a1, a0
    return f, seeded(_two_nonleaf(3, 3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf"))
def nonleaf_argument_given_data_of_a_plain_argument_then_doubled():
    """a0 requires no grad: a1.data = a0; a1.mul_(3.0); a1 * 2 returned: a0 is tripled and
    still requires no grad; the output's gradient goes to a1's leaf (times 6)."""
    def f(a0, a1):
        a1.data = a0
        a1.mul_(3.0)
        return a1 * 2
    def make():
        l1 = leaf(3)
        return Inputs((rand(3), l1.clone()), leaves=(l1,))
    return f, seeded(make)


@case("input_mutation", mode="training", tags=("data_assign",))
def plain_argument_given_data_of_another_then_multiplied_by_a_grad_value():
    """Neither argument requires grad: a1.data = a0; a1.mul_(u) makes a1 require grad
    (MulBackward0 to u) over a0's memory; a0 still requires none."""
    def f(a0, a1, u):
        a1.data = a0
        a1.mul_(u)
        return a1 + 0
    def make():
        u = leaf(3)
        return Inputs((rand(3), rand(3), u), leaves=(u,))
    return f, seeded(make)


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf"))
def nonleaf_argument_given_data_of_a_tensor_made_inside_then_added_to():
    """a1.data = torch.ones(3); a1.add_(a0): a1's memory is made inside; AddBackward0 over
    a1's history reaches both leaves."""
    def f(a0, a1):
        a1.data = torch.ones(3)
        a1.add_(a0)
        return a1
    return f, seeded(_two_nonleaf(3, 3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf", "leaf_inside"))
def grad_leaf_made_inside_given_to_an_argument_by_data_then_written_through_it():
    """t = zeros(3, requires_grad=True); a1.data = t; a1.add_(a0); t and a1 returned: t (a
    leaf) holds a0's values through a1's write, sharing a1's memory; t gets a gradient of its
    own only. t came back with a1's old values, sharing nothing."""
    def f(a0, a1):
        t = torch.zeros(3, requires_grad=True)
        a1.data = t
        a1.add_(a0)
        return t, a1
    return f, seeded(_two_nonleaf(3, 3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf", "leaf_inside"))
def grad_leaf_made_inside_given_to_an_argument_by_data_returned():
    """t = zeros(3, requires_grad=True); a1.data = t; both returned, nothing written: t is
    zeros and shares a1's memory (data only)."""
    def f(a0, a1):
        t = torch.zeros(3, requires_grad=True)
        a1.data = t
        return t, a1 * a0
    return f, seeded(_two_nonleaf(3, 3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf", "broadcast"))
def nonleaf_argument_given_data_of_a_shape_its_gradient_sums_to_then_written():
    """a1 of shape (3,), a1.data = a0 of shape (2, 3), a1.add_(1.0): a1's grad_fn keeps its
    input metadata (3,), so autograd sums the (2, 3) gradient down to it."""
    def f(a0, a1):
        a1.data = a0
        a1.add_(1.0)
        return a1 * 2
    def make():
        l0, l1 = leaf(2, 3), leaf(3)
        return Inputs((l0.clone(), l1.clone()), leaves=(l0, l1))
    return f, seeded(make)


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf", "backward_error"))
def nonleaf_argument_given_data_of_another_shape_then_written_backward_raises():
    """a1 of shape (3,), a1.data = a0 of shape (2,), a1.add_(1.0): the call runs; eager's
    backward raises 'AddBackward0 returned an invalid gradient ... got [2] but expected
    shape compatible with [3]' (the compiled function raised that as a TraceError at the
    call)."""
    def f(a0, a1):
        a1.data = a0
        a1.add_(1.0)
        return a1 * 2
    return f, seeded(_two_nonleaf(2, 3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf", "backward_error"))
def nonleaf_argument_given_data_of_its_own_slice_then_written_backward_raises():
    """a1.data = a1[1:] (2 of a1's 3 elements, its own memory), a1.add_(1.0): a1's memory
    from offset 1 is written; eager's backward through a1 raises 'invalid gradient'."""
    def f(a1):
        a1.data = a1[1:]
        a1.add_(1.0)
        return a1
    def make():
        l1 = leaf(3)
        return Inputs((l1.clone(),), leaves=(l1,))
    return f, seeded(make)


@case("input_mutation", mode="training", tags=("data_assign", "parameter"))
def parameter_given_data_of_a_nonleaf_then_written_under_grad_raises():
    """p.data = a0; p.add_(1.0) under grad mode: p is still a leaf that requires grad, so
    eager raises 'a leaf Variable that requires grad is being used in an in-place
    operation' (the engine: the same error, where it was a refusal of the swap)."""
    def f(p, a0):
        p.data = a0
        p.add_(1.0)
        return p
    def make():
        p, l0 = torch.nn.Parameter(rand(3)), leaf(3)
        return Inputs((p, l0.clone()), leaves=(p, l0))
    return f, seeded(make)


@case("input_mutation", mode="training", tags=("data_assign", "parameter", "no_grad"))
def parameter_given_data_of_a_nonleaf_then_written_under_no_grad_and_used():
    """p.data = a0, p.add_(1.0) under no_grad, p * a0 returned: a0's memory gets the add; p
    stays a leaf (its gradient is a0's values plus one, times the cotangent)."""
    def f(p, a0):
        p.data = a0
        with torch.no_grad():
            p.add_(1.0)
        return p * a0
    def make():
        p, l0 = torch.nn.Parameter(rand(3)), leaf(3)
        return Inputs((p, l0.clone()), leaves=(p, l0))
    return f, seeded(make)


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf"))
def nonleaf_argument_given_data_twice_with_writes_between():
    """a1.data = a0; a1.add_(1.0); a1.data = a2; a1.mul_(2.0): a0 gets the add, a2 the
    doubling; a1 ends on a2's memory with MulBackward0 over AddBackward0 over its history."""
    def f(a0, a1, a2):
        a1.data = a0
        a1.add_(1.0)
        a1.data = a2
        a1.mul_(2.0)
        return a1
    return f, seeded(_three_nonleaf(3, 3, 3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf"))
def nonleaf_arguments_swap_data_then_both_written():
    """a0.data, a1.data = a1.data, a0.data, then a0.add_(1.0), a1.mul_(2.0): each keeps its
    history over the other's memory."""
    def f(a0, a1):
        a0.data, a1.data = a1.data, a0.data
        a0.add_(1.0)
        a1.mul_(2.0)
        return a0 + a1
    return f, seeded(_two_nonleaf(3, 3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf", "saved"))
def saved_argument_read_by_backward_after_written_through_a_tensor_given_its_data():
    """y = a0 * a0 saves a0; a1.data = a0; a1.add_(2.0) writes a0's memory without bumping
    a0's version (.data = keeps a1's own version counter): eager's backward of y reads the
    written a0 (2 * (a0 + 2)) and does not raise."""
    def f(a0, a1):
        y = a0 * a0
        a1.data = a0
        a1.add_(2.0)
        return y
    return f, seeded(_two_nonleaf(3, 3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf", "no_grad_call", "region"))
def nonleaf_argument_given_data_of_another_then_written_in_an_enable_grad_region():
    """Called under no_grad: inside enable_grad, a1.data = a0; a1.add_(2.0); a1 * 3
    returned: the write is recorded on a1 as under grad mode."""
    def f(a0, a1):
        with torch.enable_grad():
            a1.data = a0
            a1.add_(2.0)
            return a1 * 3
    return f, seeded(_two_nonleaf(3, 3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf", "view"))
def row_of_a_nonleaf_given_data_of_another_then_written():
    """a1 = b[0], a view of a non-leaf that is passed too: a1.data = a0; a1.add_(2.0): a0's
    memory is written; b's values stay, but autograd records the write on a1 as a view of b
    (b's grad_fn becomes CopySlices, a1's AsStridedBackward0 over it)."""
    def f(a0, a1, b):
        a1.data = a0
        a1.add_(2.0)
        return a1 * 3, b
    def make():
        l0, l1 = leaf(3), leaf(2, 3)
        b = l1.clone()
        return Inputs((l0.clone(), b[0], b), leaves=(l0, l1))
    return f, seeded(make)


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf", "view", "aliased"))
def row_of_a_nonleaf_given_data_of_its_sibling_row():
    """a0, a1 = b[0], b[1] (rows of one non-leaf), a1.data = a0, a1 * 2 returned: .data =
    bumps no version, so a1 keeps its SelectBackward0 (index 1) though it now reads row 0;
    the output's gradient goes to the leaf's row 1. The runtime's set_() replay bumped a1's
    version, and autograd rebuilt its grad_fn on row 0 (silently wrong)."""
    def f(a0, a1):
        a1.data = a0
        return a1 * 2
    def make():
        l = leaf(2, 3)
        b = l.clone()
        return Inputs((b[0], b[1]), leaves=(l,))
    return f, seeded(make)

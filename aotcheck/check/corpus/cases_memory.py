"""Corpus cases: memory as eager sees it (issue 27): ``out=`` arguments the op resizes,
in-place ops on overlapping memory, storage changes on views, and output strides.

Variations of the real_world theme's programs on these classes: arguments that are views
or aliases, writes under no_grad, ops called twice, tuples of out tensors.
"""
from __future__ import annotations

import torch

from .registry import Inputs, case
from .cases_basic import leaf, one_leaf, rand, seeded
from .cases_custom_function import DoubleInPlace

# ---------------------------------------------------------------- out= that resizes


@case("input_mutation", mode="inference", tags=("out", "out_resize"))
def out_argument_grown_from_a_nonempty_tensor():
    """An out tensor of 2 elements resized to (3, 4): its storage grows (with eager's
    deprecation warning), then the result is written."""
    def f(x, y):
        torch.mul(x, 2, out=y)
        return y + 1
    return f, seeded(lambda: Inputs((rand(3, 4), rand(2))))


@case("input_mutation", mode="inference", tags=("out", "out_resize", "noncontiguous"))
def out_argument_restrided_to_the_same_numel():
    """A (3, 2) out tensor resized to (2, 3): no growth, its strides change to contiguous."""
    def f(x, y):
        torch.sin(x, out=y)
        return y.stride(), y * 1
    return f, seeded(lambda: Inputs((rand(2, 3), rand(3, 2))))


@case("aliased_inputs", mode="inference", tags=("out", "out_resize", "no_grad_call"))
def out_argument_aliased_with_its_transpose_resized_under_no_grad():
    """f(a, a.t(), w): under no_grad, sin(w) written into a through a resize from (3, 2) to
    (2, 1, 3); the transposed alias sees the new values in memory order."""
    def f(a, at, w):
        with torch.no_grad():
            torch.sin(w, out=a)
        return at * 1
    def make():
        base = rand(3, 2)
        w = leaf(2, 1, 3)
        return Inputs((base, base.t(), w), leaves=(w,))
    return f, seeded(make)


@case("input_mutation", mode="inference", tags=("out", "out_resize"))
def out_tuple_of_empty_tensors_for_max_along_a_dim():
    """torch.max(x, 0, out=(values, indices)) with both out tensors empty: both resized."""
    def f(x, values, indices):
        torch.max(x, 0, out=(values, indices))
        return values * 2, indices + 1
    return f, seeded(lambda: Inputs((rand(4, 3), torch.empty(0),
                                     torch.empty(0, dtype=torch.long))))


@case("input_mutation", mode="inference", tags=("out", "out_resize"))
def out_argument_resized_then_written_again():
    """cat into an empty out tensor, then an in-place op on the resized argument and a second
    out= call of the same shape (no second resize)."""
    def f(a, b, out):
        torch.cat([a, b], out=out)
        out.mul_(3)
        torch.add(out, 1, out=out)
        return out.sum()
    return f, seeded(lambda: Inputs((rand(2, 3), rand(1, 3), torch.empty(0))))


@case("alias_of_intermediate", mode="training", tags=("out", "out_resize"))
def out_intermediate_resized_then_used_in_grad():
    """An empty tensor made inside is the out tensor of a no-grad op, then used with an
    argument that requires grad."""
    def f(x, w):
        buf = torch.empty(0)
        with torch.no_grad():
            torch.exp(x, out=buf)
        return (buf * w).sum()
    def make():
        w = leaf(2, 3)
        return Inputs((rand(2, 3), w), leaves=(w,))
    return f, seeded(make)


# NOTE [out= strides] in aotcheck/engine/capture/resize.py: a structured kernel restrides
# the out tensor it resized to its meta function's strides, which follow the inputs' layout;
# other kernels leave it as they lay it out (cholesky_inverse: column-major).


@case("input_mutation", mode="inference", tags=("out", "out_resize", "noncontiguous", "no_grad_call"))
def out_fresh_tensor_of_a_pointwise_op_on_a_transposed_argument_under_no_grad():
    """torch.sin(x, out=torch.empty(0)) under no_grad, x a transposed (1, 4, 4) view of a
    tensor that requires grad: eager's out tensor is resized and then restrided like x,
    (16, 1, 4)."""
    def f(x):
        with torch.no_grad():
            v = torch.sin(x, out=torch.empty(0, dtype=x.dtype))
        return v
    def make():
        w = leaf(1, 4, 4)
        return Inputs((w.clone().transpose(-2, -1),), leaves=(w,))
    return f, seeded(make)


@case("input_mutation", mode="inference", tags=("out", "out_resize", "noncontiguous"))
def out_arguments_resized_by_structured_and_other_kernels_on_a_transposed_input():
    """Out tensors of other shapes, resized by add and max (structured: laid out like the
    transposed input) and by cholesky_inverse (not structured: its LAPACK kernel leaves it
    column-major, (1, 4), where the fake kernel says (4, 1)), an argument and tensors made
    inside; the strides of the first two are returned as well as the tensors.

    NOTE: this case used ``torch.cholesky(out=)`` (not structured, contiguous), which torch
    2.14 removed (it raises); ``cholesky_inverse`` is an out= kernel of the same kind on
    every supported version."""
    def f(x, o, values, indices):
        torch.add(x, 1, out=o)
        torch.max(x, 1, out=(values, indices))
        factor = torch.linalg.cholesky(x[0] @ x[0].mT + torch.eye(4))
        c = torch.cholesky_inverse(factor, out=torch.empty(0))
        return o.stride(), values.stride(), o, values, indices, c
    return f, seeded(lambda: Inputs((rand(2, 4, 4).transpose(-2, -1), rand(3), torch.empty(0),
                                     torch.empty(0, dtype=torch.long))))


@case("input_mutation", mode="inference", tags=("out", "out_resize", "noncontiguous"))
def out_fresh_tensors_of_pointwise_ops_on_permuted_and_broadcast_arguments():
    """clamp, where, exp of a permute and a broadcast add, each into torch.empty(0), on a
    transposed (3, 4, 5) argument: each out tensor is laid out as TensorIterator lays out
    the inputs; cumsum and sort (not pointwise) as their kernels leave them."""
    def f(a):
        return (torch.clamp(a, -0.5, 0.5, out=torch.empty(0)),
                torch.where(a > 0, a, torch.zeros(()), out=torch.empty(0)),
                torch.exp(a.permute(2, 0, 1), out=torch.empty(0)),
                torch.add(a, a[:, :1, :], out=torch.empty(0)),
                torch.cumsum(a, 0, out=torch.empty(0)),
                torch.sort(a, 1, out=(torch.empty(0), torch.empty(0, dtype=torch.long)))[0])
    return f, seeded(lambda: Inputs((rand(4, 3, 5).transpose(0, 1),)))


@case("input_mutation", mode="inference", tags=("out", "out_dtype", "out_resize"))
def out_tensors_of_other_dtypes_that_eager_accepts():
    """exp of a float32 argument into a float64 tensor and sort's values into a float32 one:
    eager accepts both (exp casts its result; sort's dtypes match), so the out= dtype check
    must not refuse them; sort into a float64 values tensor is refused by eager, caught
    inside and returned as a flag."""
    def f(a):
        e = torch.exp(a, out=torch.empty(0, dtype=torch.float64))
        v, i = torch.sort(a, 1, out=(torch.empty(0), torch.empty(0, dtype=torch.long)))
        try:
            torch.sort(a, 1, out=(torch.empty(0, dtype=torch.float64), torch.empty(0, dtype=torch.long)))
            refused = False
        except RuntimeError:
            refused = True
        return e, v, i, refused
    return f, seeded(lambda: Inputs((rand(3, 4),)))


@case("input_mutation", mode="training", tags=("out", "out_resize", "noncontiguous"))
def out_fresh_tensor_of_exp_on_a_transposed_argument_then_used_with_grad():
    """exp into an empty tensor made inside, from a transposed argument, under grad mode (an
    argument that requires no grad), then multiplied by a leaf: eager's product is laid out
    like the transposed input."""
    def f(x, w):
        buf = torch.exp(x, out=torch.empty(0))
        return buf * w, buf.stride()
    def make():
        w = leaf(3, 2)
        return Inputs((rand(2, 3).t(), w), leaves=(w,))
    return f, seeded(make)


# NOTE [set_ in the recorder] in aotcheck/engine/capture/storage/watch.py: set_() reaches no
# TorchFunctionMode, so the out= resize rule read a geometry the in-place metadata call before
# it had left (fuzz seed 1: sin's out tensor resized to [2, 1], then written with a [2] value).


@case("input_mutation", mode="inference", tags=("out", "out_resize", "set_", "metadata"))
def out_fresh_tensor_of_an_argument_set_back_after_unsqueeze_():
    """v = a.t(); a.unsqueeze_(1); a.set_(v): eager's a is [2] again (strided, over its base's
    storage), so sin(a, out=torch.empty(0)) after a write of a resizes its out tensor to [2],
    and cos(a, out=torch.empty(2)) resizes nothing."""
    def f(a):
        v = a.t()
        a.unsqueeze_(1)
        a.set_(v)
        a.mul_(2)
        return torch.sin(a, out=torch.empty(0)), torch.cos(a, out=torch.empty(2)), a
    return f, seeded(lambda: Inputs((rand(4)[::2],)))


@case("input_mutation", mode="inference", tags=("out", "out_resize", "set_", "metadata",
                                                "custom_function", "no_grad_call"))
def out_fresh_tensor_after_set_back_and_a_custom_function_write():
    """The fuzzer's program: the unsqueeze_ under no_grad, then the set_() back, a custom
    Function's in-place doubling (mark_dirty), and sin into a fresh out tensor, called twice."""
    def f(a):
        v = a.t()
        with torch.no_grad():
            a.unsqueeze_(1)
        a.set_(v)
        DoubleInPlace.apply(a)
        o = torch.sin(a, out=torch.empty(0, dtype=a.dtype))
        return o, torch.cos(a, out=o)
    return f, seeded(lambda: Inputs((rand(4)[::2],)))


@case("alias_of_intermediate", mode="training", tags=("out", "out_resize", "set_", "metadata"))
def out_argument_of_an_intermediate_set_back_after_unsqueeze_under_grad():
    """An intermediate that requires grad, unsqueeze_d and set_() back onto its transpose view
    (a [3, 2] tensor again), doubled in place, then written under no_grad into a [3, 1] out
    argument (resized to [3, 2] with eager's warning); the gradient flows through the set_()."""
    def f(x, o):
        y = x * 1
        v = y.t().t()
        y.unsqueeze_(1)
        y.set_(v)
        y.mul_(2)
        with torch.no_grad():
            torch.exp(y, out=o)
        return y * o, o.stride()
    def make():
        x = leaf(3, 2)
        return Inputs((x, rand(3, 1)), leaves=(x,))
    return f, seeded(make)


@case("input_mutation", mode="inference", tags=("out", "out_resize", "set_", "metadata",
                                                "noncontiguous"))
def out_arguments_after_set_onto_a_transposed_tensor_made_inside():
    """a.unsqueeze_(1), then a.set_() under no_grad onto a transposed (2, 3) tensor made
    inside (the aten op called directly for the second argument): sin into an empty tensor is
    laid out like that transpose, cos into a (2, 3) argument needs no resize."""
    def f(a, b, o):
        a.unsqueeze_(1)
        b.t_()
        with torch.no_grad():
            a.set_(torch.arange(6.0).view(3, 2).t())
            torch.ops.aten.set_.source_Tensor(b, a)
        return torch.sin(a, out=torch.empty(0)), torch.cos(b, out=o), a.stride(), b.stride()
    return f, seeded(lambda: Inputs((rand(2), rand(2, 3), rand(2, 3))))


# ---------------------------------------------------------------- resize_ growing a shared storage
# NOTE [a storage grown by resize_] in aotcheck/engine/capture/storage_views.py: eager grows the
# storage itself, so every tensor on it sits on the larger storage with its geometry unchanged.
# Each case writes every element it grows (the new ones are undefined in eager).


@case("alias_of_intermediate", mode="inference", tags=("resize", "view"))
def resize_grows_a_view_of_an_intermediate_returned_with_its_base():
    """Both returned: eager's share the grown storage (a's 4 elements, b's 6); a write
    through b's old elements after the growth shows in a."""
    def f(x):
        a = x * 2
        b = a.view(4)
        b.resize_(6)
        b[4:].fill_(1.0)
        b[:2].mul_(10)
        return a, b
    return f, seeded(lambda: Inputs((rand(4),)))


@case("alias_of_intermediate", mode="inference", tags=("resize", "view", "offset"))
def resize_grows_a_slice_of_an_intermediate_from_its_offset():
    """b = a[1:3] resized to 5 grows the storage from 4 to 6 elements (b starts at offset 1);
    a's last two elements are b's."""
    def f(x):
        a = x + 1
        b = a[1:3]
        b.resize_(5)
        b.fill_(1.5)
        return a * 1, b
    return f, seeded(lambda: Inputs((rand(4),)))


@case("alias_of_intermediate", mode="inference", tags=("resize", "view", "noncontiguous"))
def resize_grows_a_transposed_view_of_an_intermediate():
    """b = a.t() resized to 6: contiguous from offset 0 over the grown storage, so a (2, 2)
    reads b's first four elements in memory order."""
    def f(x):
        a = (x * 2).reshape(2, 2)
        b = a.t()
        b.resize_(6)
        b[4:].fill_(0.5)
        b[1].fill_(3.0)
        return a.sum(0), b
    return f, seeded(lambda: Inputs((rand(4),)))


@case("alias_of_intermediate", mode="training", tags=("resize", "detach"))
def resize_grows_a_detached_alias_of_an_intermediate_that_requires_grad():
    """b = a.detach() (no grad, so resize_ is allowed) grown and written: a, which requires
    grad, shares the grown storage and sees the write; its gradient is eager's."""
    def f(x):
        a = x * 2
        b = a.detach()
        b.resize_(6)
        b[4:].fill_(2.0)
        b[0].fill_(9.0)
        return a * x, a, b
    return f, seeded(one_leaf(4))


@case("alias_of_intermediate", mode="inference", tags=("resize", "view"))
def resize_grows_a_view_twice_then_writes_the_base():
    """Grown twice (6, then 8 elements), then the base written in place: b sees it."""
    def f(x):
        a = x * 2
        b = a.view(2, 2)
        b.resize_(3, 2)
        b[2].fill_(1.0)
        b.resize_(8)
        b[6:].fill_(4.0)
        a.mul_(2)
        return a.sum(), b
    return f, seeded(lambda: Inputs((rand(4),)))


@case("alias_of_intermediate", mode="inference", tags=("resize", "view"))
def resize_shrinks_a_view_then_grows_it_back():
    """Shrunk to 2 elements (a view: the storage keeps 4), written, then grown to 6: the
    storage grows from 4, a keeps its 4 elements."""
    def f(x):
        a = x * 2
        b = a.view(4)
        b.resize_(2)
        b.fill_(3.0)
        b.resize_(6)
        b[4:].fill_(1.0)
        return a + 1, b
    return f, seeded(lambda: Inputs((rand(4),)))


# ---------------------------------------------------------------- output strides


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


@case("alias_of_intermediate", mode="training", tags=("strides", "noncontiguous"))
def view_of_a_pointwise_result_of_a_transposed_argument():
    """A view of the product of a transposed argument is returned: the runtime rebuilds it
    from its base with eager's geometry (strides (8, 4, 1) over a (4, 1, 2) transposed
    product), and its stride tuple."""
    def f(x):
        y = x.mul(2).add(1)
        v = y.transpose(1, 0)
        return v, tuple(v.stride()), y.unsqueeze(0)
    def make():
        x = leaf(1, 2, 4)
        return Inputs((x.transpose(1, 0),), leaves=(x,))
    return f, seeded(make)


# ---------------------------------------------------------------- overlapping writes


@case("alias_of_intermediate", mode="inference", tags=("overlap", "unfold"))
def add_in_place_on_an_overlapping_unfold_of_an_intermediate():
    """add_(1) on unfold(0, 4, 2) of a (10,) intermediate: eager adds once per visit, so the
    locations two windows share get 2 (not idempotent, unlike abs_)."""
    def f(x):
        t = x * 1
        t.unfold(0, 4, 2).add_(1)
        return t
    return f, seeded(lambda: Inputs((rand(10),)))


@case("input_mutation", mode="inference", tags=("overlap", "unfold"))
def mul_in_place_by_a_tensor_on_an_overlapping_unfold_of_an_argument():
    """x.unfold(1, 3, 1).mul_(w): each window multiplies its elements by w in eager's
    order, the argument written back; a location is multiplied by a different w[k] per visit."""
    def f(x, w):
        x.unfold(1, 3, 1).mul_(w)
        return x + 0
    return f, seeded(lambda: Inputs((rand(2, 6), rand(3))))


@case("alias_of_intermediate", mode="inference", tags=("overlap", "unfold", "no_grad_call"))
def overlapping_iadd_of_an_unfold_returned_with_its_base():
    """v += 1 on an overlapping unfold under no_grad; v and its base both returned."""
    def f(x):
        t = x.clone()
        v = t.unfold(0, 3, 1)
        with torch.no_grad():
            v += 1
        return t, v
    return f, seeded(lambda: Inputs((rand(6),)))


@case("alias_of_intermediate", mode="inference", tags=("overlap", "expand"))
def fill_of_an_expanded_overlapping_unfold_and_clamp_of_its_slice():
    """fill_ through a stride-0 dimension runs in eager (each location gets one value), and
    clamp_ of a slice of an overlapping unfold of another clone."""
    def f(x):
        t = x.clone()
        t.unfold(0, 2, 1).expand(2, 5, 2).fill_(3.0)
        u = x.clone()
        u.unfold(0, 2, 1)[1:].clamp_(0, 0.5)
        return t, u
    return f, seeded(lambda: Inputs((rand(6),)))

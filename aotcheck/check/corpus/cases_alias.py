"""Corpus cases: outputs aliasing inputs, outputs aliasing intermediates, aliased inputs."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .registry import Inputs, case
from .cases_basic import leaf, one_leaf as _one_leaf, rand, seeded


# ---------------------------------------------------------------- alias_of_input


@case("alias_of_input", mode="inference")
def view_of_input():
    return (lambda x: x.view(-1)), _one_leaf(2, 3)


@case("alias_of_input", mode="inference")
def t_of_input():
    return (lambda x: x.t()), _one_leaf(2, 3)


@case("alias_of_input", mode="inference")
def slice_of_input():
    return (lambda x: x[1:, ::2]), _one_leaf(3, 4)


@case("alias_of_input", mode="inference")
def select_of_input():
    return (lambda x: x[1]), _one_leaf(3, 4)


@case("alias_of_input", mode="inference")
def diagonal_of_input():
    return (lambda x: x.diagonal()), _one_leaf(3, 3)


@case("alias_of_input", mode="inference")
def expand_of_input():
    return (lambda x: x.expand(3, 4)), _one_leaf(1, 4)


@case("alias_of_input", mode="inference")
def as_strided_of_input():
    return (lambda x: x.as_strided((2, 2), (1, 2), 1)), _one_leaf(6)


@case("alias_of_input", mode="inference")
def permute_unsqueeze_chain():
    return (lambda x: x.permute(1, 0).unsqueeze(0)[:, 1:]), _one_leaf(2, 3)


@case("alias_of_input", mode="inference", tags=("several",))
def several_views_of_input():
    def f(x):
        return x.view(-1), x.t(), x[0]
    return f, _one_leaf(2, 3)


@case("alias_of_input", mode="inference", tags=("several",))
def views_of_two_inputs():
    def f(x, y):
        return y[0], x.t(), y.view(-1)
    def make():
        x, y = leaf(2, 2), leaf(3, 2)
        return Inputs((x, y), leaves=(x, y))
    return f, seeded(make)


@case("alias_of_input", mode="inference", tags=("mutation",))
def mutate_then_view():
    def f(x):
        x.mul_(2)
        return x.view(-1)
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("alias_of_input", mode="inference", tags=("mutation",))
def view_then_mutate_base():
    def f(x):
        v = x[0]
        x.add_(1)
        return v
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("alias_of_input", mode="inference", tags=("multi_output_view",))
def unbind_of_input():
    return (lambda x: x.unbind(0)), _one_leaf(3, 2)


@case("alias_of_input", mode="inference", tags=("multi_output_view",))
def split_of_input():
    return (lambda x: x.split(2)), _one_leaf(5, 2)


@case("alias_of_input", mode="inference", tags=("multi_output_view",))
def chunk_of_input_dim1():
    return (lambda x: x.chunk(2, dim=1)), _one_leaf(2, 4)


@case("alias_of_input", mode="inference", tags=("is_input",))
def return_input_itself():
    return (lambda x: x), _one_leaf(3)


@case("alias_of_input", mode="inference", tags=("is_input",))
def return_input_twice_and_view():
    def f(x):
        return x, x, x[1:]
    return f, _one_leaf(3)


@case("alias_of_input", mode="inference", tags=("detach",))
def detach_returned():
    return (lambda x: x.detach()), _one_leaf(3)


@case("alias_of_input", mode="training", tags=("fresh",))
def view_and_fresh():
    def f(x):
        return x.view(-1), x * 2
    return f, _one_leaf(2, 2)


@case("alias_of_input", mode="inference", tags=("nonleaf",))
def view_of_grad_nonleaf():
    def f(a):
        return a.t()
    def make():
        x = leaf(2, 3)
        return Inputs((x * 1,), leaves=(x,))
    return f, seeded(make)


@case("alias_of_input", mode="inference", tags=("multi_output_view", "nonleaf"))
def rows_of_grad_nonleaf_returned_beside_its_flat_view():
    """The rows of an argument (one multi-output view, unbind) returned beside another view of
    it: every output must stay a view of the argument to autograd, so the flat view can be
    written in place as eager's can (torch hides only an argument's multi-output views that no
    other output aliases; found by the mutation harness, mutant meta-multi-output-view)."""
    def f(a):
        r0, r1 = a.unbind(0)
        return r0, r1, a.view(-1)
    def make():
        x = leaf(2, 3)
        return Inputs((x * 1,), leaves=(x,))
    return f, seeded(make)


@case("alias_of_input", mode="inference", tags=("is_input",))
def dropout_eval_returns_input():
    def f(x):
        return F.dropout(x, p=0.5, training=False)
    return f, _one_leaf(4)


@case("alias_of_input", mode="inference", tags=("no_grad",))
def view_under_no_grad_region():
    def f(x):
        with torch.no_grad():
            v = x.view(-1)
        return v
    return f, _one_leaf(2, 2)


@case("alias_of_input", mode="training", tags=("noncontiguous",))
def reshape_of_noncontiguous_copies():
    def f(x):
        return x.reshape(-1), x.reshape(x.shape)
    def make():
        b = leaf(3, 2)
        return Inputs((b.t(),), leaves=(b,))
    return f, seeded(make)


@case("alias_of_input", mode="inference", tags=("is_input",))
def ops_that_return_self():
    def f(x):
        return x.contiguous(), x.to(torch.float32), x.type_as(x)
    return f, _one_leaf(2, 2)


@case("alias_of_input", mode="inference", tags=("unsafe_view",))
def unsafe_split_of_input():
    """Issue 11, class 11: unsafe_split/unsafe_chunk return pieces of their input that
    autograd does not track as views; eager's outputs share the input's storage, the
    functional graph copied them (mutating one did not change the input)."""
    def f(x):
        a, b = x.unsafe_split(2)
        return a, b, x.unsafe_chunk(2, 1)[1]
    def make():
        x = leaf(4, 4)
        return Inputs((x.clone(),), leaves=(x,))
    return f, seeded(make)


@case("alias_of_input", mode="inference", tags=("unsafe_view",))
def unsafe_chunk_of_input_no_grad():
    return (lambda x: x.unsafe_chunk(3)), seeded(lambda: Inputs((rand(6, 2),)))


@case("alias_of_input", mode="inference", tags=("empty",))
def empty_slice_of_input():
    return (lambda x: (x[:0], x[1:])), _one_leaf(3)


# ---------------------------------------------------------------- alias_of_intermediate


@case("alias_of_intermediate", mode="training")
def view_of_intermediate():
    return (lambda x: (x * 2).view(-1)), _one_leaf(2, 3)


@case("alias_of_intermediate", mode="inference", tags=("metadata_mutation", "size_one"))
def two_views_of_intermediate_with_size_one_dim():
    """Issue 11, class 2: the traced intermediate's stride differs from eager's only in a
    size-1 dimension; each output got its own restrided copy, so after out0.add_(1) out1
    was stale. Both must stay views of one storage."""
    def f(a):
        a.transpose_(1, 0)
        y = a.mul(2)
        return y.view(2, 4), y.view(-1)
    return f, seeded(lambda: Inputs((rand(1, 2, 4),)))


@case("alias_of_intermediate", mode="training", tags=("metadata_mutation", "size_one"))
def two_views_of_grad_intermediate_with_size_one_dim():
    def f(a):
        a.transpose_(1, 0)
        y = a * 3
        return y[0], y.view(-1), y.permute(2, 1, 0)
    def make():
        x = leaf(1, 2, 4)
        return Inputs((x.clone(),), leaves=(x,))
    return f, seeded(make)


@case("alias_of_intermediate", mode="inference", tags=("detach",))
def detached_intermediate():
    def f(x):
        y = x * 2
        return y.detach()
    return f, _one_leaf(3)


@case("alias_of_intermediate", mode="training", tags=("detach",))
def view_and_detach_of_intermediate():
    def f(x):
        y = x * 2
        return y.view(-1), y.detach()
    return f, _one_leaf(2, 2)


@case("alias_of_intermediate", mode="training", tags=("detach",))
def detached_view_of_intermediate():
    def f(x):
        y = x.exp()
        return y.detach().t(), y[0]
    return f, _one_leaf(2, 3)


@case("alias_of_intermediate", mode="training", tags=("same",))
def same_view_returned_twice():
    def f(x):
        v = (x * 2).view(-1)
        return v, v
    return f, _one_leaf(2, 3)


@case("alias_of_intermediate", mode="training", tags=("base",))
def base_and_its_transpose():
    def f(x):
        y = x * 2
        return y, y.t()
    return f, _one_leaf(2, 3)


@case("alias_of_intermediate", mode="training", tags=("base",))
def view_then_base():
    def f(x):
        y = x + 1
        return y[1:], y
    return f, _one_leaf(3, 2)


@case("alias_of_intermediate", mode="training", tags=("hidden_base",))
def two_views_of_hidden_intermediate():
    def f(x):
        y = x * 2
        return y[0], y[1]
    return f, _one_leaf(2, 3)


@case("alias_of_intermediate", mode="training", tags=("output_of_output",))
def view_of_another_output():
    def f(x):
        a = (x + 1).t()
        return a, a[0]
    return f, _one_leaf(2, 3)


@case("alias_of_intermediate", mode="training", tags=("multi_output_view",))
def unbind_of_intermediate():
    return (lambda x: (x * 2).unbind(0)), _one_leaf(3, 2)


@case("alias_of_intermediate", mode="training", tags=("multi_output_view",))
def split_of_intermediate():
    return (lambda x: (x + 1).split(2)), _one_leaf(5)


@case("alias_of_intermediate", mode="inference")
def view_of_intermediate_no_grad():
    def f(x):
        return (x * 2).t(), (x + 1).view(-1)
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("alias_of_intermediate", mode="training", tags=("noncontiguous",))
def views_of_contiguous_transpose():
    def f(x):
        y = x.t().contiguous()
        return y.view(-1), y.t()
    return f, _one_leaf(2, 3)


@case("alias_of_intermediate", mode="training", tags=("mixed",))
def view_of_input_and_of_intermediate():
    def f(x):
        return x.view(-1), (x * 2).view(-1)
    return f, _one_leaf(2, 2)


@case("alias_of_intermediate", mode="training", tags=("mutation",))
def mutated_intermediate_then_view():
    def f(x):
        y = x * 2
        y[0].add_(1)
        return y.view(-1), y[1]
    return f, _one_leaf(2, 2)


@case("alias_of_intermediate", mode="training")
def expand_of_reduction():
    def f(x):
        return x.sum(0, keepdim=True).expand(3, 4)
    return f, _one_leaf(3, 4)


@case("alias_of_intermediate", mode="training", tags=("detach",))
def intermediate_view_detached_and_live():
    def f(x):
        y = (x * 3).view(2, 2)
        return y.detach(), y, y.detach()[0]
    return f, _one_leaf(4)


@case("alias_of_intermediate", mode="training", tags=("no_grad",))
def view_of_intermediate_under_no_grad():
    def f(x):
        y = x * 2
        with torch.no_grad():
            v = y.view(-1)
        return v, y.sum()
    return f, _one_leaf(2, 2)


# ---------------------------------------------------------------- aliased_inputs


@case("aliased_inputs", mode="inference", tags=("mutation",))
def detached_rows_of_one_tensor_one_written():
    # no argument's ._base reaches both rows, so their alias group's base is the whole storage
    # (was silently wrong: the write to the second row was lost)
    def f(a, b):
        b.mul_(2)
        return a + 1
    def make():
        x = rand(2, 3)
        return Inputs((x[0].detach(), x[1].detach()))
    return f, seeded(make)


@case("aliased_inputs", mode="training", tags=("duplicate",))
def same_tensor_twice():
    def f(a, b):
        return a * b + a
    def make():
        x = leaf(3)
        return Inputs((x, x), leaves=(x,))
    return f, seeded(make)


@case("aliased_inputs", mode="inference", tags=("duplicate", "mutation"))
def same_tensor_twice_mutated():
    def f(a, b):
        a.add_(1)
        return b * 2
    def make():
        x = rand(3)
        return Inputs((x, x))
    return f, seeded(make)


@case("aliased_inputs", mode="inference", tags=("duplicate", "mutation"))
def same_tensor_twice_both_mutated():
    def f(a, b):
        a.add_(1)
        b.mul_(2)
        return a + b
    def make():
        x = rand(3)
        return Inputs((x, x))
    return f, seeded(make)


@case("aliased_inputs", mode="training", tags=("duplicate", "mutation", "grad"))
def same_grad_nonleaf_twice_mutated():
    def f(a, b):
        a.mul_(2)
        return b + 1
    def make():
        x = leaf(3)
        base = x.clone()
        return Inputs((base, base), leaves=(x,))
    return f, seeded(make)


@case("aliased_inputs", mode="inference", tags=("overlap", "mutation"))
def base_and_offset_slice_mutate_base():
    def f(a, b):
        a.mul_(2)
        return b + 1
    def make():
        a = rand(4)
        return Inputs((a, a[1:]))
    return f, seeded(make)


@case("aliased_inputs", mode="inference", tags=("overlap", "mutation"))
def base_and_offset_slice_mutate_slice():
    def f(a, b):
        b.add_(1)
        return a * 2
    def make():
        a = rand(4)
        return Inputs((a, a[1:]))
    return f, seeded(make)


# Two views of one base that share some elements and not others, neither one the base: the
# storage relation beyond "the same tensor" and "disjoint" (issue 36). Written first, then the
# other way round; the key-variation pass serves the entry to arguments with own storages.
@case("aliased_inputs", mode="inference", tags=("overlap", "mutation"))
def partially_overlapping_views_the_earlier_one_written():
    def f(a, b):
        a.mul_(3)
        return b + 1
    def make():
        base = rand(6)
        return Inputs((base[0:4], base[2:6]))
    return f, seeded(make)


@case("aliased_inputs", mode="inference", tags=("overlap", "mutation"))
def partially_overlapping_views_the_later_one_written():
    def f(a, b):
        b.mul_(3)
        return a + 1
    def make():
        base = rand(6)
        return Inputs((base[0:4], base[2:6]))
    return f, seeded(make)


@case("aliased_inputs", mode="inference", tags=("overlap", "mutation", "prior_art"))
def zero_base_return_view_of_offset_slice():
    def f(a0, a1):
        a0.zero_()
        return a1.view(3)
    def make():
        a = rand(4)
        return Inputs((a, a[1:]))
    return f, seeded(make)


@case("aliased_inputs", mode="inference", tags=("disjoint", "mutation"))
def two_rows_of_one_base():
    def f(x, y):
        x.add_(1)
        return y * 2
    def make():
        base = rand(2, 3)
        return Inputs((base[0], base[1]))
    return f, seeded(make)


@case("aliased_inputs", mode="inference", tags=("disjoint", "mutation"))
def two_rows_of_one_base_both_mutated():
    def f(x, y):
        x.mul_(2)
        y.sub_(x)
        return ()
    def make():
        base = rand(2, 3)
        return Inputs((base[0], base[1]))
    return f, seeded(make)


@case("aliased_inputs", mode="inference", tags=("transpose", "mutation"))
def input_and_its_transpose_mutate_transpose():
    def f(a, b):
        b.mul_(2)
        return a + 1
    def make():
        a = rand(3, 3)
        return Inputs((a, a.t()))
    return f, seeded(make)


@case("aliased_inputs", mode="inference", tags=("transpose", "mutation", "prior_art"))
def input_and_its_transpose_add_return_t():
    def f(a, b):
        a.add_(1)
        return a.t()
    def make():
        a = rand(3, 3)
        return Inputs((a, a.t()))
    return f, seeded(make)


@case("aliased_inputs", mode="training", tags=("overlap", "mutation", "grad"))
def grad_base_and_offset_slice_mutated():
    def f(a, b):
        a.mul_(2)
        return b * 3
    def make():
        x = leaf(4)
        base = x.clone()
        return Inputs((base, base[1:]), leaves=(x,))
    return f, seeded(make)


@case("aliased_inputs", mode="training", tags=("disjoint", "mutation", "grad"))
def grad_rows_of_one_base_mutated():
    def f(x, y):
        x.mul_(2)
        return x + y
    def make():
        w = leaf(2, 3)
        base = w.clone()
        return Inputs((base[0], base[1]), leaves=(w,))
    return f, seeded(make)


@case("aliased_inputs", mode="training", tags=("transpose", "grad"))
def grad_leaf_and_its_transpose():
    def f(a, b):
        return a @ b
    def make():
        x = leaf(3, 3)
        return Inputs((x, x.t()), leaves=(x,))
    return f, seeded(make)


@case("aliased_inputs", mode="training", tags=("transpose", "mutation", "grad"))
def grad_nonleaf_and_its_transpose_mutated():
    def f(a, b):
        b.add_(1)
        return a * 2
    def make():
        x = leaf(2, 2)
        base = x.clone()
        return Inputs((base, base.t()), leaves=(x,))
    return f, seeded(make)


@case("aliased_inputs", mode="inference", tags=("flat_view", "mutation"))
def input_and_its_flat_view():
    def f(a, b):
        b.add_(1)
        return a.clone(), b.sum()
    def make():
        a = rand(2, 3)
        return Inputs((a, a.view(-1)))
    return f, seeded(make)


@case("aliased_inputs", mode="training", tags=("duplicate", "nested"))
def duplicate_in_list():
    def f(xs):
        return xs[0] * xs[1]
    def make():
        x = leaf(3)
        return Inputs(([x, x],), leaves=(x,))
    return f, seeded(make)


@case("aliased_inputs", mode="training", tags=("detach",))
def grad_nonleaf_and_its_detached_twin():
    def f(a, b):
        return a * b, b + 1
    def make():
        x = leaf(3)
        base = x * 1
        return Inputs((base, base.detach()), leaves=(x,))
    return f, seeded(make)


@case("alias_of_input", mode="inference", tags=("noncontiguous",))
def views_of_transposed_grad_input():
    def f(x):
        return x[0], x.t()
    def make():
        b = leaf(3, 2)
        return Inputs((b.t(),), leaves=(b,))
    return f, seeded(make)


@case("alias_of_input", mode="inference", tags=("mutation",))
def mutate_then_expand():
    def f(x):
        x.add_(1)
        return x.expand(3, 4)
    return f, seeded(lambda: Inputs((rand(1, 4),)))


@case("alias_of_input", mode="inference")
def view_as_and_reshape_of_self():
    def f(x):
        return x.view_as(x), x.reshape(x.shape)
    return f, _one_leaf(3)


@case("alias_of_intermediate", mode="training", tags=("mutation",))
def view_then_mutate_intermediate():
    def f(x):
        y = x * 2
        v = y[0]
        y.add_(1)
        return v
    return f, _one_leaf(2, 2)


@case("alias_of_intermediate", mode="training", tags=("output_of_output",))
def chain_of_views_all_returned():
    def f(x):
        a = x.exp().view(2, 3)
        b = a.t()
        return b[0], b, a
    return f, _one_leaf(6)


@case("aliased_inputs", mode="inference", tags=("overlap", "mutation"))
def base_and_strided_slice_mutate_slice():
    def f(a, b):
        b.mul_(2)
        return a + 1
    def make():
        a = rand(6)
        return Inputs((a, a[::2]))
    return f, seeded(make)


@case("aliased_inputs", mode="training", tags=("flat_view", "mutation", "grad"))
def grad_base_and_reshaped_view_mutated():
    def f(a, b):
        b.add_(1)
        return a * 2, b.sum()
    def make():
        x = leaf(4)
        base = x.clone()
        return Inputs((base, base.view(2, 2)), leaves=(x,))
    return f, seeded(make)


@case("aliased_inputs", mode="inference", tags=("disjoint", "mutation", "is_input"))
def mutate_row_return_base():
    def f(a, b):
        b.mul_(2)
        return a
    def make():
        a = rand(2, 3)
        return Inputs((a, a[0]))
    return f, seeded(make)


@case("aliased_inputs", mode="training", tags=("overlap", "mutation", "grad"))
def grad_base_and_offset_slice_mutate_slice():
    def f(a, b):
        b.mul_(2)
        return a.sum(), b + 1
    def make():
        x = leaf(4)
        base = x.clone()
        return Inputs((base, base[1:]), leaves=(x,))
    return f, seeded(make)


@case("aliased_inputs", mode="training", tags=("duplicate", "is_input"))
def same_tensor_twice_both_returned():
    def f(a, b):
        return a, b, a * 2
    def make():
        x = leaf(3)
        return Inputs((x, x), leaves=(x,))
    return f, seeded(make)


# ---------------------------------------------------------------- set_() of an aliased argument
# NOTE [member storage swaps] (engine/capture/storage/swaps.py): two rows of one tensor passed as two
# arguments, and set_() moves one of them off the storage they share. What the function then
# does to the other no longer reaches it (fuzz seed 19, all extensions).

@case("input_mutation", mode="inference", tags=("set_", "alias"))
def set_an_aliased_argument_onto_a_new_storage():
    def f(a0, a1):
        v0 = a0.sigmoid()
        a1.set_(v0)
        a0.fill_(2.0)
        return a1, v0
    def make():
        b = rand(2, 1, 4)
        return Inputs((b[0], b[1]))
    return f, seeded(make)


@case("input_mutation", mode="inference", tags=("set_", "alias"))
def set_an_aliased_argument_onto_another_argument():
    def f(a0, a1, c):
        a1.set_(c)
        a0.mul_(3)
        c.add_(1)
        return a0 + 1
    def make():
        b = rand(2, 3, 4)
        return Inputs((b[0], b[1], rand(3, 4)))
    return f, seeded(make)


@case("input_mutation", mode="inference", tags=("set_", "alias"))
def set_an_aliased_argument_onto_part_of_an_intermediate_then_mutate():
    def f(a0, a1):
        v0 = (a0 * 2).reshape(-1)
        a1.set_(v0[2:])
        a1.add_(1)
        return v0
    def make():
        b = rand(2, 1, 4)
        return Inputs((b[0], b[1]))
    return f, seeded(make)


@case("aliased_inputs", mode="inference", tags=("set_", "alias"))
def argument_set_onto_another_arguments_storage_before_the_call():
    # what Dynamo hands the backend after a graph break at ``a1.set_(v0[2:])``: a1 keeps its old
    # ._base (b), whose storage it no longer shares; the group's base must be v0's storage, or
    # the write through a1 never reaches v0 (silently wrong under dynamo-aotcheck before)
    def f(a1, v0):
        a1.add_(1)
        return v0
    def make():
        v0 = rand(8)
        a1 = rand(2, 4)[1]
        a1.set_(v0[2:])
        return Inputs((a1, v0))
    return f, seeded(make)


@case("alias_of_input", mode="training", tags=("as_strided", "non_contiguous", "nonleaf"))
def as_strided_of_a_strided_argument_reaches_outside_it():
    """``a = b[::2]`` (a non-leaf that requires grad), then ``a.as_strided(...)`` onto storage
    elements ``a`` does not reach (``b[3]``): eager reads them. The traced copy of ``a`` held
    only ``a``'s own elements, so the view read uninitialised memory (fuzz seed 21, all
    extensions); those elements get no gradient, in eager too."""
    def f(a):
        v = a.as_strided((1, 2), (9, 3), 0)
        with torch.no_grad():
            with torch.enable_grad():
                s = v.sigmoid()
        return s, a * 2
    def make():
        w = leaf(4)
        return Inputs((w.clone()[::2],), leaves=(w,))
    return f, seeded(make)


@case("alias_of_intermediate", mode="training", tags=("size_one_stride",))
def einsum_batch_of_one_output_strides():
    """``einsum`` ends with a view of its ``bmm`` result whose size-1 dimension eager strides
    8: PyTorch's fake ``view`` kernel (a Python reference) strides it 4, so the rebuilt
    output had strides (4, 4, 1) where eager's are (8, 4, 1) (OpInfo einsum samples 5 and 6).
    The trace now gives fake views eager's strides (NOTE [fake view strides])."""
    def f(a, b):
        return torch.einsum("aij,ajk->aik", a, b)
    def make():
        a, b = leaf(1, 2, 3), leaf(1, 3, 4)
        return Inputs((a, b), leaves=(a, b))
    return f, seeded(make)

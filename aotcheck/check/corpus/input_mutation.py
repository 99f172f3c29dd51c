"""Corpus theme ``input_mutation``: the function writes its arguments' data (in-place ops,
``copy_``, index writes, ``out=`` arguments the op resizes, ``.data`` and writes through views,
overlapping memory, mutating ``torch.library`` custom ops); the compiled function leaves every
argument, and views of it, as eager does.

A mutated argument that requires grad must be a non-leaf (in-place on a leaf that requires grad
is an error in eager), so those cases pass ``leaf.clone()`` and compare the gradient of ``leaf``.

Where a case came from is a tag, not a module: ``regression`` (a minimized reproducer of a bug
aotcheck's engine had, most found by ``aotcheck fuzz``), ``fuzz`` (found by the fuzzer),
``torch_finding`` (a divergence of PyTorch's own AOTAutograd from eager that the fuzzer found;
docs/findings.md has a row per case, and ``xfail_engines`` names the torch engines that fail it),
``issue:N`` (restated from PyTorch's issue N).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.func import grad
from .builders import (
    freed, leaf, one_leaf, parameter, parameter_and_input, plain, rand, randn, seeded, three_nonleaf,
    two_nonleaf, two_nonleaf_and_a_leaf
)
from .custom_function import DoubleInPlace
from .registry import CallMode, Inputs, case


# ---------------------------------------------------------------- from cases_basic


@case("input_mutation", mode="training", tags=("size_guards",))
def write_into_a_constant_window_of_an_argument():
    """buf[:, 1:5] += x[:, :4] on a (4, 7) buffer: an input mutation through a guarded slice."""
    def f(x, buf):
        buf[:, 1:5].add_(x[:, :4])
        return buf.sum(1) * x.sum()
    return f, seeded(lambda: (lambda x: Inputs((x, rand(4, 7)), leaves=(x,)))(leaf(4, 6)))


# ---------------------------------------------------------------- from cases_mutation


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


@case("input_mutation", mode="inference", tags=("resize",))
def resize_storage_up_from_zero_then_fill():
    def f(p, full):
        torch.ops.inductor.resize_storage_bytes_(p, full.numel() * full.element_size())
        p.copy_(full)
        return p + 1
    return f, seeded(lambda: Inputs((freed(2, 3), rand(2, 3))))


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
        return Inputs((freed(3, 4), rand(3, 4), x), leaves=(x,))
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


@case("input_mutation", mode="inference", tags=("resize",))
def resize_intermediate_grow():
    def f(x):
        z = x * 2
        z.resize_(6)
        z[4:] = 1.0
        return z
    return f, seeded(lambda: Inputs((rand(4),)))


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


@case("input_mutation", mode="inference", call=CallMode.NO_GRAD, tags=("set_", "fuzz"))
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


@case("input_mutation", mode="inference", call=CallMode.NO_GRAD, tags=("data_assign",))
def data_assign_under_no_grad_call_keeps_an_earlier_view():
    """Called under no_grad: a view taken before x.data = new keeps the old storage and
    is written through after."""
    def f(x):
        v = x[0]
        x.data = torch.zeros(5)
        v.add_(3)
        return v, x
    return f, seeded(lambda: Inputs((rand(2, 2),)))


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


@case("input_mutation", mode="inference", call=CallMode.NO_GRAD, tags=("data_assign", "view"))
def data_assign_onto_its_first_column_then_doubled_with_a_row_taken_before():
    """x.data = x[:, 0], x.mul_(2): the row x[1] taken before sees its first element
    doubled (same memory); both returned, called under no_grad too."""
    def f(x):
        v = x[1]
        x.data = x[:, 0]
        x.mul_(2)
        return v * 3, x
    return f, seeded(lambda: Inputs((rand(4, 3),)))


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
    return f, seeded(two_nonleaf(4, 3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf"))
def nonleaf_argument_added_to_then_given_data_of_a_tensor_made_inside():
    """a1.add_(a0), then a1.data = torch.ones(3): a1 keeps AddBackward0 (reaching both
    leaves) over the new memory."""
    def f(a0, a1):
        a1.add_(a0)
        a1.data = torch.ones(3)
        return a1 * 2
    return f, seeded(two_nonleaf(3, 3))


@case("input_mutation", mode="training", tags=("data_assign", "parameter"))
def parameter_given_data_of_another_shape_after_a_dropped_use_then_used():
    """(p * 2).sum() dropped, then p.data = x + 1 of shape (2, 2) for a (2,) Parameter, then
    p * x: nothing holds p's AccumulateGrad of the old shape, so the use gets a new one of the
    new shape, and p.grad is (2, 2) with that use's gradient only."""
    def f(p, x):
        (p * 2).sum()
        p.data = x + 1
        return p * x
    return f, seeded(parameter_and_input((2,), (2, 2)))


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
    return f, seeded(parameter_and_input((2,), (2, 2)))


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
    return f, seeded(parameter_and_input((2,), (2, 2)))


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
    return f, seeded(parameter_and_input((2,), (2, 2)))


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
    return f, seeded(parameter(4, 3))


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
    return f, seeded(parameter(4, 3))


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
    from .custom_function import Double

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
    return f, seeded(parameter(4, 3))


@case("input_mutation", mode="training", tags=("data_assign", "parameter", "view", "multi_output_view"))
def parameter_unbound_before_its_data_is_assigned():
    """u = p.unbind(0); p.data = ones(5); u[1] and p * 2 returned: u[1] views p's old memory
    and is an output of a multi-output view op of p (in place on it raises in eager)."""
    def f(p):
        u = p.unbind(0)
        p.data = torch.ones(5)
        return u[1], p * 2
    return f, seeded(parameter(4, 3))


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
    return f, seeded(parameter(4, 3))


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
    return f, seeded(parameter(4, 3))


@case("input_mutation", mode="training", tags=("data_assign", "parameter"))
def parameter_slice_doubled_returned_then_data_of_another_shape():
    """v = p[:, :2] * 2 returned, then p.data = ones(2, 2): v's backward reaches p's
    AccumulateGrad of the old (4, 3) shape, which accumulates a (4, 3) gradient into the
    (2, 2) p: eager's backward raises there ('The size of tensor a (2) must match ...')."""
    def f(p):
        v = p[:, :2] * 2
        p.data = torch.ones(2, 2)
        return v
    return f, seeded(parameter(4, 3))


@case("input_mutation", mode="training", tags=("data_assign", "parameter", "broadcast"))
def parameter_used_then_given_data_of_a_shape_its_gradient_broadcasts_to():
    """v = p * 2 for a (3,) Parameter, then under no_grad p.data = ones(2, 3): v's (3,)
    gradient is broadcast into p's (2, 3) .grad, as eager's AccumulateGrad does."""
    def f(p):
        v = p * 2
        with torch.no_grad():
            p.data = torch.ones(2, 3)
        return v, p.shape
    return f, seeded(parameter(3))


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
    return f, seeded(two_nonleaf((), ()))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf"))
def nonleaf_argument_given_data_of_another_then_multiplied_by_a_grad_value():
    """a1.data = a0; a1.mul_(u), u a leaf: u's gradient is a0's values times a1's cotangent,
    a1's leaf gets u through MulBackward0 over a1's old history, a0's leaf only its own
    cotangent (a0's memory is written with no record on a0)."""
    def f(a0, a1, u):
        a1.data = a0
        a1.mul_(u)
        return a1
    return f, seeded(two_nonleaf_and_a_leaf(3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf"))
def nonleaf_argument_given_data_of_another_then_copied_into_from_a_grad_value():
    """a1.data = a0; a1.copy_(u * 2); a0 + 1 returned: a0's values become u * 2 (the output
    too), its gradient still goes to a0's leaf only; a1's old history gets zeros from
    CopyBackwards, u gets 2 per element of a1's cotangent."""
    def f(a0, a1, u):
        a1.data = a0
        a1.copy_(u * 2)
        return a0 + 1
    return f, seeded(two_nonleaf_and_a_leaf(3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf", "view"))
def nonleaf_argument_given_data_of_another_then_a_slice_of_it_written():
    """a1.data = a0; a1[1:].add_(1.0); a1 returned: a0's last two elements change, a1's
    grad_fn is CopySlices over its old history."""
    def f(a0, a1):
        a1.data = a0
        a1[1:].add_(1.0)
        return a1
    return f, seeded(two_nonleaf(3, 3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf", "view"))
def view_of_nonleaf_argument_given_data_of_another_then_written_returned():
    """a1.data = a0; a1.add_(1.0); a1[1:] returned: the output is a view of a1 over a0's
    memory, whose gradient goes to a1's leaf (it was rebuilt from a0, so its gradient went
    to a0's leaf, silently)."""
    def f(a0, a1):
        a1.data = a0
        a1.add_(1.0)
        return a1[1:]
    return f, seeded(two_nonleaf(3, 3))


@case("input_mutation", mode="inference", tags=("data_assign", "nonleaf", "view"))
def view_of_nonleaf_argument_given_data_of_another_returned():
    """a1.data = a0; a1[1:] returned, nothing written: a view of a1 over a0's memory, whose
    gradient goes to a1's leaf, not a0's."""
    def f(a0, a1):
        a1.data = a0
        return a1[1:]
    return f, seeded(two_nonleaf(3, 3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf"))
def nonleaf_argument_given_data_of_another_then_written_twice_both_returned():
    """a1.data = a0; a1.add_(1.0); a1.mul_(a0): the second write reads a0, which is a1's own
    memory by then (a0 * a0 after the add); both returned, sharing memory."""
    def f(a0, a1):
        a1.data = a0
        a1.add_(1.0)
        a1.mul_(a0)
        return a1, a0
    return f, seeded(two_nonleaf(3, 3))


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
    return f, seeded(two_nonleaf(3, 3))


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
    return f, seeded(two_nonleaf(3, 3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf", "leaf_inside"))
def grad_leaf_made_inside_given_to_an_argument_by_data_returned():
    """t = zeros(3, requires_grad=True); a1.data = t; both returned, nothing written: t is
    zeros and shares a1's memory (data only)."""
    def f(a0, a1):
        t = torch.zeros(3, requires_grad=True)
        a1.data = t
        return t, a1 * a0
    return f, seeded(two_nonleaf(3, 3))


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
    return f, seeded(two_nonleaf(2, 3))


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
    return f, seeded(three_nonleaf(3, 3, 3))


@case("input_mutation", mode="training", tags=("data_assign", "nonleaf"))
def nonleaf_arguments_swap_data_then_both_written():
    """a0.data, a1.data = a1.data, a0.data, then a0.add_(1.0), a1.mul_(2.0): each keeps its
    history over the other's memory."""
    def f(a0, a1):
        a0.data, a1.data = a1.data, a0.data
        a0.add_(1.0)
        a1.mul_(2.0)
        return a0 + a1
    return f, seeded(two_nonleaf(3, 3))


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
    return f, seeded(two_nonleaf(3, 3))


@case("input_mutation", mode="training", call=CallMode.NO_GRAD, tags=("data_assign", "nonleaf", "region"))
def nonleaf_argument_given_data_of_another_then_written_in_an_enable_grad_region():
    """Called under no_grad: inside enable_grad, a1.data = a0; a1.add_(2.0); a1 * 3
    returned: the write is recorded on a1 as under grad mode."""
    def f(a0, a1):
        with torch.enable_grad():
            a1.data = a0
            a1.add_(2.0)
            return a1 * 3
    return f, seeded(two_nonleaf(3, 3))


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


# ---------------------------------------------------------------- from cases_alias


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


# ---------------------------------------------------------------- from cases_regressions


@case("input_mutation", mode="inference", tags=("regression", "fuzz", "input_mutation", "alias_of_input"))
def fuzz_mutated_view_of_strided_argument_returned():
    """A view of a strided slice argument, mutated and returned. Functionalization re-synced
    the view from the base's new (contiguous) value, so its recorded stride was (1,) where
    eager's is (2,), and the output was rebuilt at the wrong elements: a silently wrong
    result. Geometry now comes from an eager run on fake tensors (NOTE [eager geometry])."""
    def f(a0):
        v0 = a0.view((2,))
        v0.add_(1.0)
        return (v0,)
    return f, lambda: Inputs((randn((4,))[::2],))


@case("input_mutation", mode="inference", tags=("regression", "fuzz", "input_mutation", "alias_of_input"))
def fuzz_view_taken_after_mutating_strided_argument():
    """A view of a strided argument taken after the argument is mutated in place inherited
    the functional value's contiguous layout."""
    def f(a0):
        v0 = a0.t()
        a0.add_(1)
        return v0, a0[0]
    return f, lambda: Inputs((randn((3, 4))[:, ::2],))


@case("input_mutation", mode="training", tags=("regression", "fuzz", "detach", "parameter"))
def fuzz_expand_of_a_detached_parameter_then_add_grad_value():
    """An expand of a detached Parameter, then an in-place add of a value that requires grad
    into the detached alias: the expand is returned, with a grad_fn through the add. The
    runtime gave the alias its gradient path by copying into it, which an expand (stride 0)
    refuses ('more than one element of the written-to tensor refers to a single memory
    location'). Found by aotcheck fuzz --seed 13 (parameter extension)."""
    def f(a0, a2):
        v2 = a2.detach()
        v3 = v2.expand((3, 3))
        v2.add_(a0)
        return (v3,)

    def make():
        b0 = randn((2,)).requires_grad_()
        b1 = torch.nn.Parameter(randn((3, 1), 1))
        return Inputs((b0[0], b1), leaves=(b0, b1))
    return f, make


@case("input_mutation", mode="inference", tags=("regression", "as_strided", "mutation", "non_contiguous"))
def as_strided_view_of_an_offset_argument_read_after_the_argument_is_written():
    """``a = l[1:]`` (offset 1), ``v = a.as_strided((1, 2), (2, 1), 3)``, then ``a`` written and
    ``v`` read: functionalization replayed the as_strided (absolute offset 3) on a's compact
    new value, one element off (silently wrong values). A written argument with an as_strided
    view that does not fill its storage from offset 0 is planned as its whole storage
    (NOTE [writes outside an argument])."""
    def f(a, w):
        v = a.as_strided((1, 2), (2, 1), 3)
        a.add_(w)
        return (v.sum() + a.sum(),)
    return f, lambda: Inputs((randn((8,), 4)[1:], randn((), 5)))


@case("input_mutation", mode="training", tags=("regression", "set_", "requires_grad_", "input_mutation"))
def argument_written_set_onto_another_then_given_requires_grad_and_used():
    """An argument written, set_() onto another argument of its shape, given requires_grad_()
    and used: the write reaches the memory it had at the call, the gradient reaches it."""
    def f(a, b):
        a.mul_(3)
        a.set_(b[1:])
        a.requires_grad_()
        return (a * a).sum()

    def make():
        a = randn((3,), 1)
        return Inputs((a, randn((4,), 2)), leaves=(a,))
    return f, make


@case("input_mutation", mode="inference", tags=("regression", "fuzz", "set_", "input_mutation", "noncontiguous"))
def fuzz_argument_set_onto_a_strided_argument_written_before():
    """An argument set_() onto another argument, a strided slice that the function wrote
    before: eager's ``a0`` takes ``a2``'s geometry (stride (4, 1, 1)). Functionalization lays
    ``a2``'s new value out contiguously and its ``set_()`` copies that layout, so the runtime
    set ``a0`` onto ``a2``'s storage with stride (2, 1, 1): the wrong elements (silently wrong
    values). A swap's final geometry is now the argument's geometry in the eager-geometry run
    (set_() reaches no TorchFunctionMode). Found by aotcheck fuzz --seed 1."""
    def f(a0, a2):
        a2.clamp_(0.0, None)
        a0.set_(a2)
        return ()

    def make():
        return Inputs((randn((2, 4, 1), 17793), randn((4, 2, 1), 65536)[::2]))
    return f, make


# ---------------------------------------------------------------- from cases_torch_findings


@case("input_mutation", mode="inference", tags=("fuzz", "torch_finding", "input_mutation", "dtypes"),
      xfail_engines={"torch": "the in-place mutation of a 0-dim float64 input is dropped: the input keeps "
                              "its old value and the function reads the stale value, found by aotcheck "
                              "fuzz seed 11 (no upstream issue found)",
                     "torch-aot-function": "returns a list where eager returns a tuple (it gets the "
                                           "mutation right)"})
def fuzz_zero_dim_float64_input_mutation_lost():
    """A 0-dim float64 CPU tensor argument mutated in place. Under torch.compile(aot_eager) the
    mutation is lost: the argument keeps its value and ``a + 1`` reads the old one (eager:
    a == 3, out == 4; compiled: a == 1.5, out == 2.5). float32, or float64 with one dimension,
    is right; backend="eager" and functorch's aot_function are right. The fuzzer's shrunk
    program was ``a0.zero_(); return ()``."""
    def f(a):
        a.mul_(2)
        return (a + 1,)

    def make():
        return Inputs((torch.tensor(1.5, dtype=torch.float64),))
    return f, make


@case("input_mutation", mode="inference", tags=("fuzz", "torch_finding", "input_mutation", "as_strided"),
      xfail_engines={"torch": "compile fails (BackendCompilerFailed): 'as_strided_scatter: ... out of bounds "
                              "for storage of size 4', docs/findings.md row 43"})
def fuzz_as_strided_of_an_element_argument_mutated():
    """An argument that is one element of a base (``b[1]``, storage offset 1), viewed with
    ``as_strided`` at storage offset 0 so that the view covers the whole storage, then mutated
    through that view: eager doubles ``b[0]`` and ``b[1]``. AOT autograd writes the mutation back
    with ``as_strided_scatter`` onto the argument itself, whose one element is too small for the
    view, and compiling fails ("requiring a storage size of 8 are out of bounds for storage of
    size 4"); aot_function too. Found by ``aotcheck fuzz --engine torch --minutes 10 --seed 31``
    (``as_strided``, ``squeeze``, ``clamp_``)."""
    def f(x, b):
        x.as_strided((2,), (1,), 0).mul_(2)
        return (b + 0,)

    def make():
        b = torch.arange(2.0)
        return Inputs((b[1], b))
    return f, make


@case("input_mutation", mode="inference", tags=("fuzz", "torch_finding", "input_mutation", "as_strided"),
      xfail_engines={"torch": "compile refuses it: 'encountered a mutation on a view chain of length 2, where "
                              "view 1 was an as_strided() call' (pytorch/pytorch#104505), docs/findings.md row 46"})
def fuzz_as_strided_of_a_transpose_mutated():
    """``x.t().as_strided((2,), (1,), 0).add_(1)``: an as_strided of a view, mutated. torch.compile
    refuses it by name ("as_strided() is non-compositional, and therefore is not possible to
    functionalize properly today"), as PyTorch decided in #122502 after the wrong results of
    #104505; aot_function too. Eager adds 1 to the first two elements of the storage. Found by
    ``aotcheck fuzz --engine torch --minutes 10 --seed 41`` (``t``, ``as_strided``, a slice,
    ``add_``)."""
    def f(x):
        x.t().as_strided((2,), (1,), 0).add_(1)
        return (x * 1,)

    def make():
        return Inputs((randn((2, 2)),))
    return f, make


# ---------------------------------------------------------------- from cases_memory


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


@case("input_mutation", mode="inference", call=CallMode.NO_GRAD, tags=("out", "out_resize", "noncontiguous"))
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


@case("input_mutation", mode="inference", call=CallMode.NO_GRAD, tags=("out", "out_resize", "set_", "metadata",
                                                "custom_function"))
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


@case("input_mutation", mode="inference", tags=("overlap", "unfold"))
def mul_in_place_by_a_tensor_on_an_overlapping_unfold_of_an_argument():
    """x.unfold(1, 3, 1).mul_(w): each window multiplies its elements by w in eager's
    order, the argument written back; a location is multiplied by a different w[k] per visit."""
    def f(x, w):
        x.unfold(1, 3, 1).mul_(w)
        return x + 0
    return f, seeded(lambda: Inputs((rand(2, 6), rand(3))))


# ---------------------------------------------------------------- from cases_transforms


@case("input_mutation", mode="inference", tags=("torch_func",))
def func_argument_written_after_grad():
    def f(x):
        g = grad(lambda t: (t * t).sum())(x)
        x.mul_(3)
        return g + x
    return f, plain((3,))


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
    return f, plain((6,), (6,), (6,))


@case("input_mutation", mode="inference", tags=("custom_op",))
def custom_op_runs_the_kernel_of_the_tensors_device():
    def f(x):
        torch.ops.aotcheck_tr.per_device_(x)
        return x.clone()
    return f, plain((3,))


@case("input_mutation", mode="inference", tags=("custom_op", "torch_func"))
def custom_op_inside_torch_func_grad_on_a_closed_over_buffer():
    """A mutating custom op on a buffer the transformed function closes over, inside grad."""
    def f(x, buf):
        def g(t):
            torch.ops.aotcheck_tr.scale_(buf, 2.0)
            return (t * t).sum()
        return grad(g)(x), buf
    return f, plain((3,), (3,))


# ---------------------------------------------------------------- writes through unfold windows with gaps
# NOTE [writes through an unfold that leaves gaps] in engine/capture/overlap.py (issue 39)

@case("input_mutation", mode="inference", tags=("issue:39", "unfold"))
def write_through_unfold_windows_with_gaps_then_read_the_argument():
    def f(x):
        x.unfold(0, 2, 3).mul_(2)          # windows [0,1], [3,4], [6,7]: 2 and 5 untouched
        return x + 1
    return f, seeded(lambda: Inputs((torch.arange(8.0),)))


@case("input_mutation", mode="inference", tags=("issue:39", "unfold"))
def write_through_unfold_windows_that_miss_the_tail_of_a_strided_argument():
    def f(x):
        x.unfold(0, 2, 2).add_(1)           # 9 elements: the last is in no window
        return x.sum()
    return f, seeded(lambda: Inputs((torch.arange(27.0)[::3],)))


@case("input_mutation", mode="training", tags=("issue:39", "unfold"))
def write_through_unfold_windows_with_gaps_of_an_intermediate_with_grad():
    def f(x):
        y = x * 1
        y.view(3, 4).unfold(1, 1, 2).mul_(x[:6].view(3, 2, 1))
        return y
    return f, one_leaf(12)


# ---------------------------------------------------------------- set_() onto a storage object
# NOTE [set_ onto a storage object] in engine/capture/storage/watch.py (issue 39)

@case("input_mutation", mode="inference", tags=("issue:39", "set_"))
def argument_set_onto_a_bare_storage_after_a_view_of_it_was_taken():
    def f(x):
        v = x.view(2, 2)                        # keeps the old storage, as eager's does
        x.set_(torch.UntypedStorage(24))        # 6 float32 elements, uninitialized
        x.fill_(3.0)
        return v, x * 2
    return f, seeded(lambda: Inputs((rand(4),)))


@case("input_mutation", mode="inference", tags=("issue:39", "set_"))
def argument_set_onto_another_arguments_storage_object_with_a_geometry():
    def f(x, y):
        x.set_(y.untyped_storage(), 1, (2, 2), (1, 2))
        x.mul_(2)                               # y's memory is written too
        return x + 1
    return f, seeded(lambda: Inputs((rand(3), rand(6))))


@case("input_mutation", mode="training", tags=("issue:39", "set_"))
def intermediate_set_onto_a_bare_storage_then_written_with_grad():
    def f(x):
        y = torch.empty(0)
        y.set_(torch.UntypedStorage(12))
        y.copy_(x[:3] * 2)
        return y * x[3:]
    return f, one_leaf(6)

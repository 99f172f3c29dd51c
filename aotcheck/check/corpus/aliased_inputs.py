"""Corpus theme ``aliased_inputs``: arguments that share storage (the same tensor twice, views
of one base, overlapping slices), written or viewed by the function.

Where a case came from is a tag, not a module: ``regression`` (a minimized reproducer of a bug
aotcheck's engine had, most found by ``aotcheck fuzz``), ``fuzz`` (found by the fuzzer),
``torch_finding`` (a divergence of PyTorch's own AOTAutograd from eager that the fuzzer found;
docs/findings.md has a row per case, and ``xfail_engines`` names the torch engines that fail it),
``issue:N`` (restated from PyTorch's issue N).
"""
from __future__ import annotations

import torch
from .builders import leaf, rand, randn, seeded
from .registry import CallMode, Inputs, case


# ---------------------------------------------------------------- from cases_mutation


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


# ---------------------------------------------------------------- from cases_alias


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


# ---------------------------------------------------------------- from cases_regressions


@case("aliased_inputs", mode="inference", tags=("regression", "fuzz", "aliased_inputs", "alias_of_input"))
def fuzz_view_of_sibling_view_input():
    """Two arguments view one non-leaf base at different offsets; the output views the
    second. The engine copied a non-leaf argument with clone(), whose offset is 0, so the
    alias was rebuilt at the wrong element; and rebuilding from the *first* argument with
    as_strided dropped the gradient of elements outside it."""
    def f(a0, a1, a2):
        return (a2.view((1,)),)

    def make():
        l0 = randn((2, 1)).requires_grad_()
        b0 = l0.clone()
        a1 = b0[1]
        return Inputs((b0[0], a1, a1), leaves=(l0,))
    return f, make


@case("aliased_inputs", mode="training", tags=("regression", "fuzz", "aliased_inputs", "metadata_mutation"))
def fuzz_t_then_zero_through_view_of_twice_passed():
    """One non-leaf passed twice; ``t_`` on it, then a view of it zeroed. The engine replayed
    the metadata change with strides from functionalization ((1, 1), where eager has (1, 2)
    for a size-1 dim); it now replays the user's own ``t_`` call."""
    def f(a0, a1, a2):
        a2.t_()
        v0 = a2.view((2,))
        v0.zero_()
        return ()

    def make():
        l0 = randn((1, 2)).requires_grad_()
        b0 = l0.clone()
        return Inputs((b0, randn((1, 1, 1)), b0), leaves=(l0,))
    return f, make


@case("aliased_inputs", mode="inference", tags=("regression", "fuzz", "aliased_inputs", "metadata_mutation"))
def fuzz_t_of_argument_aliased_by_its_transpose():
    """``t_`` on an argument that another argument views (its transpose). The engine changed
    the metadata with ``as_strided_`` under no_grad, so autograd kept the old shape and the
    backward raised 'AsStridedBackward0 returned an invalid gradient'."""
    def f(a0, a1):
        a0.t_()
        return ()

    def make():
        l0 = randn((1, 2)).requires_grad_()
        b0 = l0.clone()
        return Inputs((b0, b0.t()), leaves=(l0,))
    return f, make


@case("aliased_inputs", mode="training", tags=("regression", "fuzz", "aliased_inputs", "metadata_mutation"))
def fuzz_t_and_add_on_twice_passed_returned():
    """One non-leaf passed twice, ``t_`` and ``add_`` through the second name, the first
    returned: eager's stride after ``t_`` is (1, 2); the engine gave (1, 1)."""
    def f(a0, a1, a2):
        a2.t_()
        a2.add_(1.0)
        return (a0,)

    def make():
        l0 = randn((1, 2)).requires_grad_()
        b0 = l0.clone()
        return Inputs((b0, randn((1, 1, 1)), b0), leaves=(l0,))
    return f, make


@case("aliased_inputs", mode="training", tags=("regression", "fuzz", "aliased_inputs", "metadata_mutation"))
def fuzz_transpose_root_after_mutating_its_slice():
    """f(a, a[1:]): the slice is mutated, then the root argument is transposed in place. The
    runtime replayed the transpose before copying the group's new value back, whose layout is
    the root's original one ('size of tensor a (2) must match ... (4)')."""
    def f(a0, a3):
        a3.add_(1.0)
        a0.transpose_(0, 1)
        return (a0 * 2,)

    def make():
        l0 = randn((2, 4)).requires_grad_()
        b0 = l0.clone()
        return Inputs((b0, b0[1:]), leaves=(l0,))
    return f, make


@case("aliased_inputs", mode="training", tags=("regression", "fuzz", "aliased_inputs", "metadata_mutation"))
def fuzz_unsqueeze_then_setitem_aliased_argument():
    """unsqueeze_ on an aliased argument, then an indexed assignment through it: functionalization
    raised IndexError on the member's view chain, and the engine refused it. Now traced the
    second way (NOTE [plain trace, then functionalize]). Issue 11, class 10."""
    def f(a0, a1, a2):
        a1.unsqueeze_(1)
        a2.clamp_(None, 0.0)
        a1[:, :1:2] = 0.5
        return (a0,)

    def make():
        l0 = randn((2, 4), ).double().requires_grad_()
        b0 = l0.clone()
        a0 = b0[0]
        return Inputs((a0, b0[1], a0[1:]), leaves=(l0,))
    return f, make


@case("aliased_inputs", mode="training", tags=("regression", "fuzz", "aliased_inputs", "metadata_mutation"))
def fuzz_transpose_member_then_setitem_grad_value_into_root():
    """A transposed alias of a plain argument is transposed in place, then both are written
    with values that require grad. The first way refused it (synthetic-base replay); the
    second way traced it, and the runtime then replayed the member's transpose_ with grad on
    after the root had got a grad_fn ('a leaf Variable that requires grad is being used in
    an in-place operation'). A metadata call autograd did not record is replayed under
    no_grad. Found by aotcheck fuzz --seed 2026 (after issue 11, class 10)."""
    def f(a0, a1, a2, a3):
        with torch.no_grad():
            a2.fill_(1.0)
        a3.transpose_(1, 2)
        a3[:, 1] = a2
        a1[:, 0] = a0
        v0 = a3.sin()
        return (v0, v0)

    def make():
        b0 = randn((2,)).requires_grad_()
        b1 = randn((1, 4, 3))
        l2 = randn((2,)).requires_grad_()
        b2 = l2.clone()
        return Inputs((b0[::2], b1, b2[::2], b1.transpose(-2, -1)), leaves=(b0, l2))
    return f, make


@case("aliased_inputs", mode="inference", tags=("regression", "fuzz", "set_", "aliased_inputs"))
def fuzz_set_one_row_argument_onto_another():
    """Two arguments that are rows of one base, one set_ onto the other: the storage is the
    same, so no swap shows; the set_ argument now has the other row's offset. The runtime
    left it at its own offset. Found by aotcheck fuzz --seed 12 (set_ extension)."""
    def f(a0, a1):
        a0.set_(a1)
        a1.t_()
        return ()

    def make():
        b = randn((2,))
        return Inputs((b[0], b[1]))
    return f, make


@case("aliased_inputs", mode="inference", tags=("regression", "fuzz", "requires_grad_", "aliased_inputs",
                                             "metadata_mutation"))
def fuzz_squeeze_of_a_view_argument_then_requires_grad_on_its_base():
    """Two arguments, a tensor and its transpose; squeeze_() of the transpose makes them an
    alias group with a synthetic base, then requires_grad_() on the first: eager's base and
    its view both require grad afterwards. In the trace the first is a view of the group's
    base, so the flag never reached the caller's tensor (silently wrong). The runtime now
    replays it in order with the members' metadata calls. Found by aotcheck fuzz --seed 1."""
    def f(a0, a1):
        a1.squeeze_(2)
        a0.requires_grad_()
        return ()

    def make():
        b0 = randn((3, 3, 2), 14331)
        return Inputs((b0, b0.transpose(-2, -1)))
    return f, make


@case("aliased_inputs", mode="inference", tags=("regression", "fuzz", "requires_grad_", "aliased_inputs"))
def fuzz_row_written_then_requires_grad_on_its_sibling_row():
    """Two rows of one tensor; one is written, so they share a synthetic base, and the other
    gets requires_grad_(): eager's row is a leaf that requires grad afterwards, the caller's
    was left without the flag (companion of the case above)."""
    def f(a0, a1):
        a1.mul_(2)
        a0.requires_grad_()
        return (a1,)

    def make():
        b = randn((3, 4), 5)
        return Inputs((b[0], b[1]))
    return f, make


@case("aliased_inputs", mode="inference", tags=("regression", "fuzz", "set_", "aliased_inputs"))
def fuzz_argument_clamped_then_set_onto_a_reduction_of_an_overlapping_view():
    """An argument clamped in place, then set_() onto a sum over an argument that views the
    same storage: eager clamps the memory the argument had at the call (the other argument
    sees it), then moves it. The runtime swapped the storage and dropped the write, silently
    (functionalization's wrapper reports the new storage's mutations only); the old storage's
    value is now read on an alias taken at the call and written back before the swap, and
    the write makes the pair a synthetic base. Found by aotcheck fuzz --seed 1."""
    def f(a1, a2):
        a1.clamp_(-0.5, 0.5)
        v1 = a2.sum(1, keepdim=False)
        a1.set_(v1)
        return ()

    def make():
        b1 = randn((4, 2), 1608)
        return Inputs((b1, b1[1:]))
    return f, make


@case("aliased_inputs", mode="inference", tags=("regression", "fuzz", "set_", "aliased_inputs", "metadata_mutation"))
def fuzz_argument_set_onto_an_argument_that_shares_storage_after_t_():
    """set_() of an argument onto one that shares storage with a third, which is t_()'d (so
    the pair is a synthetic base): it was refused by name; the swap's final geometry is one
    on the group's storage at its absolute offset, which the runtime now sets. Found by
    aotcheck fuzz --seed 1."""
    def f(a1, a2, a3):
        a2.t_()
        a3.set_(a1)
        return ()

    def make():
        b1 = randn((8, 1), 9243)
        a1 = b1[::2]
        return Inputs((a1, a1[1:], randn((4, 1, 3), 436)[::2]))
    return f, make


@case("aliased_inputs", mode="inference", tags=("regression", "fuzz", "set_", "requires_grad_", "aliased_inputs"))
def fuzz_argument_set_onto_another_that_then_gets_requires_grad_():
    """``a2.set_(a3)``, then ``a3.requires_grad_()`` under no_grad (a3 is a1, a2 a transpose
    of it): the swap was refused because a3 requires grad at the end; it did not when set_()
    ran, so eager's a2 requires no grad, and the runtime replays the swap under no_grad after
    setting a3's flag. Found by aotcheck fuzz --seed 1."""
    def f(a1, a2, a3):
        a2.set_(a3)
        with torch.no_grad():
            a3.requires_grad_()
        return ()

    def make():
        b1 = torch.randn((3, 2, 1), dtype=torch.float64,
                         generator=torch.Generator().manual_seed(31461))
        return Inputs((b1, b1.transpose(-2, -1), b1))
    return f, make


@case("aliased_inputs", mode="training", tags=("regression", "fuzz", "detach", "aliased_inputs", "as_strided"))
def fuzz_detach_of_an_as_strided_over_the_whole_storage_written_with_grad_value():
    """``a1.as_strided(...)`` onto the whole storage (beyond a1), detached under no_grad, then
    a slice of it assigned a value that requires grad, and returned: the runtime rebuilt the
    output as an autograd view of the argument, whose as_strided backward over the
    argument's geometry reached past it ('setStorage: ... out of bounds'). Eager's detach()
    is no view; neither is the runtime's where the output reaches outside the argument.
    Found by aotcheck fuzz --seed 1."""
    def f(a0, a1):
        v0 = a1.sum()
        v1 = a1.as_strided((2, 4), (4, 1), 0)
        with torch.no_grad():
            v5 = v1.detach()
        v5[:, 3] = v0
        return (v5,)

    def make():
        l0 = torch.randn((2, 1, 2, 2), dtype=torch.float64,
                         generator=torch.Generator().manual_seed(65535)).requires_grad_()
        b0 = l0.clone()
        return Inputs((b0[0], b0[1]), leaves=(l0,))
    return f, make


@case("aliased_inputs", mode="training", tags=("regression", "fuzz", "requires_grad_", "aliased_inputs",
                                            "inference_mode", "rng"))
def fuzz_view_argument_of_a_base_given_requires_grad_inside():
    """``a1 = a0.transpose(-2, -1)`` taken before the call, then ``a0.requires_grad_()``
    (inside inference_mode; a normal tensor's flag may be set there): eager's ``a1`` now
    requires grad through its base, with no gradient edge, so ``v1.add_(a1)`` under
    enable_grad gives a ``v1`` that requires grad and sends no gradient to ``a0``. Each
    argument was its own placeholder in the trace, so ``a1`` did not, and aotcheck returned
    ``v1`` without requires_grad (NOTE [views of an argument given requires_grad_]). Found
    by aotcheck fuzz --seed 1."""
    def f(a0, a1):
        v1 = torch.rand(a1.shape, dtype=a1.dtype, generator=torch.Generator().manual_seed(0))
        with torch.inference_mode():
            a0.requires_grad_()
        with torch.no_grad():
            with torch.enable_grad():
                v1.add_(a1)
        return (v1,)

    def make():
        b0 = randn((4, 1, 3), 16325)
        return Inputs((b0, b0.transpose(-2, -1)), leaves=(b0,))
    return f, make


@case("aliased_inputs", mode="training", tags=("regression", "fuzz", "requires_grad_", "aliased_inputs",
                                            "alias_of_input"))
def fuzz_view_argument_given_its_own_requires_grad_after_its_base():
    """The view argument of the case above, used before and after its own
    ``a1.requires_grad_()``: eager's ``v0`` requires grad (through the base, no edge),
    and ``a1`` gets a gradient edge from then on only, so ``a1.grad`` gets the second
    product's gradient and ``a0.grad`` none. aotcheck returned ``v0`` without requires_grad;
    a fix that gave the view its base's flag alone sent ``a1`` the first product's gradient
    too. Pins that the trace gives the view eager's edges, not just its flag."""
    def f(a0, a1):
        a0.requires_grad_()
        v0 = a1 * 2
        a1.requires_grad_()
        return (v0, v0 + a1 * 3, a1.view(-1))

    def make():
        b0 = randn((4, 1, 3), 16325)
        a1 = b0.transpose(-2, -1)
        return Inputs((b0, a1), leaves=(b0, a1))
    return f, make


# ---------------------------------------------------------------- from cases_torch_findings


@case("aliased_inputs", mode="training", tags=("fuzz", "torch_finding", "aliased_inputs", "mutation", "no_grad"),
      xfail_engines={"torch": "compile fails (BackendCompilerFailed): 'outs_to_grad length (1) != tangents "
                              "length (2)', found by aotcheck fuzz seed 11 (PRIOR_ART lists the same message "
                              "for one tensor passed twice; no upstream issue found)",
                     "torch-aot-function": "returns a list where eager returns a tuple (it runs the "
                                           "function right)"})
def fuzz_transposed_alias_mutated_with_grad_leaf_mutated_under_no_grad():
    """Two aliasing arguments (``a`` and ``a.t()``, no grad) are both mutated, one of them by a
    grad-requiring leaf ``w`` that the function itself mutated under no_grad. torch.compile's
    AOT autograd fails to compile it; without the no_grad mutation of ``w``, or with ``a``
    passed twice instead of with its transpose, it compiles. functorch's aot_function runs it."""
    def f(w, a, b):
        b.zero_()
        with torch.no_grad():
            w.add_(0.5)
        a.mul_(w)
        return ()

    def make():
        w = randn((), 1).requires_grad_()
        a = randn((2, 2))
        return Inputs((w, a, a.t()), leaves=(w,))
    return f, make


@case("aliased_inputs", mode="inference", tags=("fuzz", "torch_finding", "aliased_inputs", "alias_of_input"),
      xfail_engines={"torch": "raises 'incorrect out shape after application of ViewMeta sequence: (8,) "
                              "(actual) vs (4,) (expected)': the output view of the mutated argument is "
                              "regenerated from the other, aliasing argument, found by aotcheck fuzz seed 11 "
                              "(same family as pytorch/pytorch#198095, here without any offset)",
                     "torch-aot-function": "raises 'incorrect out shape after application of ViewMeta "
                                           "sequence' (see torch)"})
def fuzz_view_of_mutated_row_input_with_its_base():
    """``f(x[0], x)``: the row is mutated and a view of it returned, while the base is read.
    PyTorch regenerates the output from the base (8 elements) with the row's view sequence
    and fails an assertion; any row, column or diagonal of ``x`` does the same. The fuzzer's
    program reached it through ``a0.t_()`` and a graph break (Dynamo's second graph took the
    view and its transposed base as two inputs); passing them directly needs no break."""
    def f(a, b):
        a.add_(1.0)
        return (a.view(-1), b * 2)

    def make():
        x = randn((2, 4))
        return Inputs((x[0], x))
    return f, make


@case("aliased_inputs", mode="inference", tags=("fuzz", "torch_finding", "detach", "aliased_inputs"),
      xfail_engines={"torch": "compiled raises 'a view of a leaf Variable that requires grad is being used "
                              "in an in-place operation' on a copy_ into detach() of a view of a "
                              "grad-requiring leaf, which eager allows; found by aotcheck fuzz seed 2026 "
                              "(no upstream issue found)"})
def fuzz_copy_into_detach_of_leaf_view():
    """``a.detach().copy_(b)`` where ``a`` is a row of a leaf that requires grad. The detached
    alias is not a view autograd tracks, so eager writes through it (and the leaf changes);
    torch.compile's traced program raises the leaf-view error. Found with ``a3 = a0`` passed
    twice; one argument and any source suffice."""
    def f(a, b):
        a.detach().copy_(b)
        return ()

    def make():
        x = randn((2, 3), 21).requires_grad_()
        return Inputs((x[0], randn((3,), 22)), leaves=(x,))
    return f, make


@case("aliased_inputs", mode="training", tags=("fuzz", "torch_finding", "aliased_inputs", "no_grad"),
      xfail_engines={"torch": "compile fails (BackendCompilerFailed): 'any_leaf=True != all_leaf=False for "
                              "outer_indices=[0, 1]', docs/findings.md row 44"})
def fuzz_leaf_and_its_transpose_both_mutated_under_no_grad():
    """A grad-requiring leaf passed twice, as itself and as its transpose, both mutated under
    ``no_grad``: compiling fails on an internal assertion, ``any_leaf=True != all_leaf=False for
    outer_indices=[0, 1]`` (the synthetic base of the two aliases mixes a leaf and a view of it);
    aot_function too. Eager multiplies the leaf by 4. Found by ``aotcheck fuzz --engine torch
    --minutes 10 --seed 41`` (``clamp_`` under no_grad, ``a3[:] = a0`` under inference_mode)."""
    def f(a, at):
        with torch.no_grad():
            a.mul_(2)
            at.mul_(2)
        return (a + 0,)

    def make():
        a = randn((3, 4)).requires_grad_()
        return Inputs((a, a.t()), leaves=(a,))
    return f, make


@case("aliased_inputs", mode="training", tags=("fuzz", "torch_finding", "aliased_inputs", "as_strided", "no_grad"),
      xfail_engines={"torch": "compile fails (BackendCompilerFailed): 'outs_to_grad length (2) != tangents "
                              "length (1)', docs/findings.md row 50"})
def fuzz_overlapping_view_of_grad_leaf_used_while_another_view_is_zeroed():
    """Two views of one grad-requiring leaf passed as arguments: an overlapping ``as_strided``
    view (a stride 0) that the function uses, and a row that it zeroes under ``no_grad``.
    Compiling fails on the internal assertion ``outs_to_grad length (2) != tangents length (1)``;
    with a graph break before the use (how the fuzzer found it: a custom Function broke the
    graph), the compiled call raises 'a leaf Variable that requires grad is being used in an
    in-place operation' instead. Eager zeroes the row and gives the leaf its gradient. Found by
    ``aotcheck fuzz --engine torch --minutes 10 --seed 51``."""
    def f(v0, a1):
        v1 = v0.relu()
        with torch.no_grad():
            a1.zero_()
        return (v1,)

    def make():
        b0 = randn((2, 3, 1, 4), dtype=torch.float64).requires_grad_()
        return Inputs((b0.as_strided((3, 3), (2, 0), 12), b0[1]), leaves=(b0,))
    return f, make


@case("aliased_inputs", mode="training", tags=("fuzz", "torch_finding", "aliased_inputs", "metadata_mutation",
                                             "graph_break"),
      xfail_engines={"torch": "Dynamo fails (any backend, backend='eager' too): 'AssertionError: False != "
                              "True' in the fake-tensor metadata check of an aliased argument whose "
                              "base came to require grad through its sibling (docs/findings.md row 54)",
                     "dynamo-aotcheck": "Dynamo fails before any backend runs: 'AssertionError: False "
                                        "!= True' (docs/findings.md row 54)",
                     "torch-aot-function": "backward: only compiled raises 'one of the variables needed "
                                           "for gradient computation has been modified by an inplace "
                                           "operation' (docs/findings.md row 54)"})
def fuzz_sibling_row_written_with_a_grad_value_after_squeeze_():
    """Two rows of one tensor, the first squeeze_d in place (a graph break), then a value that
    requires grad written into the second: their base now requires grad, and so does the
    first row; Dynamo fakes it as not requiring grad and its own check fails
    (``assert_metadata_eq``: ``False != True``). Found by ``aotcheck fuzz --engine torch
    --minutes 10 --seed 61`` (4 statements)."""
    def f(a0, a1, a2):
        v0 = torch.matmul(a2, a2)
        a0.squeeze_(2)
        a1[:, 0] = v0
        return torch.matmul(a1, a0.mT)

    def make():
        b0 = randn((2, 4, 1, 4), 1, torch.float64)
        w = randn((1,), 2, torch.float64).requires_grad_()
        return Inputs((b0[0], b0[1], w.clone()), leaves=(w,))
    return f, make


# ---------------------------------------------------------------- from cases_memory


@case("aliased_inputs", mode="inference", call=CallMode.NO_GRAD, tags=("out", "out_resize"))
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


# ---------------------------------------------------------------- from cases_transforms


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

"""Corpus theme ``alias_of_intermediate``: outputs that are views of values made inside the
function, or of each other, including views taken before a write to their base.

Where a case came from is a tag, not a module: ``regression`` (a minimized reproducer of a bug
aotcheck's engine had, most found by ``aotcheck fuzz``), ``fuzz`` (found by the fuzzer),
``torch_finding`` (a divergence of PyTorch's own AOTAutograd from eager that the fuzzer found;
docs/findings.md has a row per case, and ``xfail_engines`` names the torch engines that fail it),
``issue:N`` (restated from PyTorch's issue N).
"""
from __future__ import annotations

import torch
from .builders import leaf, one_leaf, one_leaf as _one_leaf, rand, randn, seeded
from .registry import CallMode, Inputs, case


# ---------------------------------------------------------------- from cases_alias


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


# ---------------------------------------------------------------- from cases_regressions


@case("alias_of_intermediate", mode="training", tags=("regression", "fuzz", "alias_of_intermediate", "detach"))
def fuzz_detach_of_intermediate_returned_before_it():
    """An intermediate and its detach() are both returned, the detach first. The engine
    made the first one the fresh output and rebuilt the intermediate as an alias of it, so
    the intermediate lost its grad_fn (requires_grad False, no gradient). Outputs that own
    their storage and carry autograd history are now placed first."""
    def f(a0):
        v0 = a0 * 2
        v1 = v0.detach()
        return v1, v0

    def make():
        l0 = randn((3,)).requires_grad_()
        return Inputs((l0,), leaves=(l0,))
    return f, make


@case("alias_of_intermediate", mode="training", tags=("regression", "fuzz", "alias_of_intermediate", "detach"))
def fuzz_detached_alias_of_intermediate_with_grad_and_a_view():
    """A detach() of an intermediate, given a grad_fn by copy_ from a grad-requiring value,
    returned with a view of the same intermediate. Eager's two outputs share storage; the
    engine made the detached one a fresh graph output (aliasing lost). Both are now rebuilt
    from the intermediate, the detached one with its own gradient. From aotcheck fuzz
    --seed 5 --max-statements 12 (not shrunk; smaller versions did not show it)."""
    def f(a0, a1, a2):
        v0 = a0.sin()
        v0.mul_(2.0)
        v0.copy_(a0)
        v1 = a2[::2]
        v0.fill_(1.0)
        v1.copy_(a0)
        v2 = v0.as_strided((1, 1), (1, 2), 0)
        v3 = v2.detach()
        v3.copy_(a0)
        v3.t_()
        return (v3, a2, a0, v2)

    def make():
        l0 = randn((2,), 1).requires_grad_()
        l2 = randn((1, 1, 1), 7).requires_grad_()
        return Inputs((l0.clone()[::2], randn((1, 3, 2), 6), l2.clone()), leaves=(l0, l2))
    return f, make


@case("alias_of_intermediate", mode="training", tags=("regression", "fuzz", "alias_of_intermediate", "detach"))
def fuzz_detach_of_intermediate_leaves_its_input_without_grad():
    """Only a detach() of tanh(a) is returned with an unrelated output: eager leaves a.grad
    None. Rebuilding the detached output from its intermediate made the intermediate a
    differentiable graph output, so a got a zero gradient. Found by aotcheck fuzz (seed 2026)
    while fixing the case above."""
    def f(a, b):
        v1 = a.tanh().detach()
        return v1, b * 2

    def make():
        a, b = randn((3,)).requires_grad_(), randn((3,), 1).requires_grad_()
        return Inputs((a, b), leaves=(a, b))
    return f, make


@case("alias_of_intermediate", mode="inference", tags=("regression", "fuzz", "set_", "alias_of_intermediate"))
def fuzz_view_of_intermediate_set_onto_another_intermediate():
    """A diagonal view of an intermediate is set_() onto another intermediate (a 0-dim sum) and
    returned: it was rebuilt as a view of its autograd base, whose storage it no longer shares,
    so it came back with a diagonal element instead of the sum (silently wrong). Found by
    aotcheck fuzz --extensions random,set_ --seed 2."""
    def f(a0):
        v0 = a0.sum(1, keepdim=False)
        v1 = a0.sum()
        v2 = v0.diagonal(0, 0, 1)
        v2.set_(v1)
        return (v2,)
    return f, lambda: Inputs((randn((4, 3, 2), 1481).double(),))


@case("alias_of_intermediate", mode="training", tags=("regression", "fuzz", "detach", "no_grad", "alias_of_output"))
def fuzz_no_grad_expand_of_a_detach_of_a_returned_intermediate():
    """``v4 = v1.detach()`` of a returned intermediate, then ``v4.expand(...)`` returned too:
    eager's expand shares v1's storage; the engine rebuilt it from a graph value of its own
    (the detach), so the two outputs no longer shared memory. A view without grad of an
    alias of an earlier output is now cut from that output. Found by aotcheck fuzz --seed 1."""
    def f(a0):
        v0 = a0.relu()
        v1 = a0.add(v0)
        v3 = v1.unsqueeze(0)
        v3.zero_()
        v4 = v1.detach()
        with torch.no_grad():
            with torch.enable_grad():
                v5 = v4.expand((2, 3, 3))
        return (v5, v1)

    def make():
        b0 = randn((3, 3), 139).requires_grad_()
        return Inputs((b0,), leaves=(b0,))
    return f, make


@case("alias_of_intermediate", mode="training", tags=("regression", "as_strided", "mutation", "alias_of_intermediate"))
def as_strided_of_a_row_reaching_outside_it_read_after_its_base_is_written():
    """``v = x[3].as_strided(...)`` reaching row 2 of an intermediate, then ``x`` written and
    ``v`` read: eager regenerates v's grad_fn as one as_strided of x, so row 2 gets a
    gradient; autograd over functional tensors replayed the chain, the row's clip included
    (silently wrong gradient). Such a view arms the view-replay hazard (the second way).
    Found while checking NOTE [as_strided clips]."""
    def f(a):
        x = a * 2
        v = x[3].as_strided((2, 3), (3, 1), 30)
        x.add_(1)
        return (v.sum(),)

    def make():
        b = randn((4, 4, 3), 3).requires_grad_()
        return Inputs((b,), leaves=(b,))
    return f, make


@case("alias_of_intermediate", mode="inference", tags=("regression", "fuzz", "set_", "alias_of_intermediate"))
def fuzz_view_of_an_intermediate_returned_after_set_moved_the_intermediate():
    """A view of an intermediate returned after the intermediate was set_() onto an
    argument: the view was rebuilt from the intermediate, which now holds the argument's
    values (silently wrong values). The first such output's own value is now the base of
    the views of that memory. Found by aotcheck fuzz --seed 13."""
    def f(a0, a1):
        v0 = torch.matmul(a0, a0.mT)
        v2 = v0.unsqueeze(0)
        with torch.no_grad():
            v0.set_(a1)
        return (v2,)

    def make():
        b0 = torch.randn((2, 3, 3), generator=torch.Generator().manual_seed(139))
        return Inputs((b0[0], b0[1]))
    return f, make


# ---------------------------------------------------------------- from cases_torch_findings


@case("alias_of_intermediate", mode="inference", tags=("fuzz", "torch_finding", "set_", "alias_of_intermediate"),
      xfail_engines={"torch": "compile fails: 'expand: attempting to expand a dimension of length 3 -> 1' "
                              "after a view of an intermediate is set_() onto the argument and written "
                              "through (docs/findings.md row 55)",
                     "torch-aot-function": "compile fails: 'expand: attempting to expand a dimension of "
                                           "length 3 -> 1' (docs/findings.md row 55)"})
def fuzz_view_of_intermediate_set_onto_argument_then_written():
    """``v = x.relu().diagonal(0, 0, 1)``, ``v.set_(x)``, then ``v[:] = ...``: eager writes
    the argument through ``v``. Compile fails in AOT autograd (``backend="eager"`` passes):
    functionalization replays ``v``'s ``diagonal`` on the swapped storage. Found by ``aotcheck
    fuzz --engine torch --minutes 10 --seed 61`` (the enable_grad region was not needed)."""
    def f(x):
        r = x.relu()
        v = r.diagonal(0, 0, 1)
        v.set_(x)
        v[:] = r
        return ()
    return f, lambda: Inputs((randn((1, 1, 3), 3),))


# ---------------------------------------------------------------- from cases_memory


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


@case("alias_of_intermediate", mode="inference", tags=("overlap", "unfold"))
def add_in_place_on_an_overlapping_unfold_of_an_intermediate():
    """add_(1) on unfold(0, 4, 2) of a (10,) intermediate: eager adds once per visit, so the
    locations two windows share get 2 (not idempotent, unlike abs_)."""
    def f(x):
        t = x * 1
        t.unfold(0, 4, 2).add_(1)
        return t
    return f, seeded(lambda: Inputs((rand(10),)))


@case("alias_of_intermediate", mode="inference", call=CallMode.NO_GRAD, tags=("overlap", "unfold"))
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

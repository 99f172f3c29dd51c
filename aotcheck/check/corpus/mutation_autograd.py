"""Corpus theme ``mutation_autograd``: writes that autograd sees: an argument or a view of
it written under grad, so its grad_fn changes and gradients flow through the write.

Where a case came from is a tag, not a module: ``regression`` (a minimized reproducer of a bug
aotcheck's engine had, most found by ``aotcheck fuzz``), ``fuzz`` (found by the fuzzer),
``torch_finding`` (a divergence of PyTorch's own AOTAutograd from eager that the fuzzer found;
docs/findings.md has a row per case, and ``xfail_engines`` names the torch engines that fail it),
``issue:N`` (restated from PyTorch's issue N).
"""
from __future__ import annotations

import torch
from .builders import leaf, one_leaf, rand, randn, seeded
from .registry import Inputs, case


# ---------------------------------------------------------------- from cases_mutation


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


# ---------------------------------------------------------------- from cases_regressions


@case("mutation_autograd", mode="training", tags=("regression", "fuzz", "mutation_autograd", "detach"))
def fuzz_detached_alias_mutated_with_grad_value_returned():
    """A detached alias of a grad leaf is mutated in place with a grad-requiring value and
    returned. Eager's output carries AddBackward into that value; the engine rebuilt it as a
    view of the argument, so the leaf's gradient differed (silently wrong). Such an output
    now gets its gradient from its own graph value."""
    def f(a0):
        v0 = a0.tanh()
        v1 = a0.detach()
        v1.add_(v0)
        return (v1,)

    def make():
        b0 = randn(()).requires_grad_()
        return Inputs((b0,), leaves=(b0,))
    return f, make


@case("mutation_autograd", mode="training", tags=("regression", "fuzz", "mutation_autograd", "detach", "alias_of_input"))
def detached_view_of_plain_argument_mutated_with_grad_value():
    """The same, through a view of a detached alias of an argument that does not require
    grad: the output requires grad through ``w`` only, and shares the argument's storage."""
    def f(a0, w):
        v1 = a0.detach()[0]
        v1.mul_(w)
        return v1, a0

    def make():
        w = randn((4,), 1).requires_grad_()
        return Inputs((randn((2, 4)), w), leaves=(w,))
    return f, make


# ---------------------------------------------------------------- eager's error timing (issue 39)
# NOTE [a saved tensor modified in place] in engine/joint.py: eager's forward returns and only its
# backward raises; the forward-only twins fail where the compiled function raises at the call.

def _indices_and_weight():
    def make():
        w = (randn((5, 4)) * 3).requires_grad_()
        return Inputs((torch.tensor([0, 2, 2, 4]), w), leaves=(w,))
    return seeded(make)


def _embedding_renorm_after_a_use(idx, w):
    y = w.sin()                                     # saves w at version 0
    out = torch.nn.functional.embedding(idx, w, max_norm=1.0)   # renorms w's rows in place
    return out, y


@case("mutation_autograd", mode="training", tags=("issue:39", "backward_error"))
def embedding_max_norm_after_the_weight_was_used():
    return _embedding_renorm_after_a_use, _indices_and_weight()


@case("mutation_autograd", mode="training", tags=("issue:39", "backward_error"), backward=False)
def embedding_max_norm_after_the_weight_was_used_forward_only():
    return _embedding_renorm_after_a_use, _indices_and_weight()


def _saved_then_written(x):
    y = x * 1
    z = y.exp()                                     # saves its result, z
    w = y.sigmoid()                                 # saves its result, w
    w.mul_(2)                                       # w's saved value is stale now
    return z + w


@case("mutation_autograd", mode="training", tags=("issue:39", "backward_error"))
def saved_result_modified_in_place():
    return _saved_then_written, one_leaf(3, 2)


@case("mutation_autograd", mode="training", tags=("issue:39", "backward_error"), backward=False)
def saved_result_modified_in_place_forward_only():
    return _saved_then_written, one_leaf(3, 2)

"""Corpus theme ``custom_function``: a user's ``torch.autograd.Function`` inside the function.

Eager runs the Function's own forward and backward; so must the compiled function, even where
the forward returns its input as it is (autograd then makes the output a view of the input whose
grad_fn is the Function's backward), where the backward mutates a saved argument, and across the
rest of the Function API (mark_dirty, mark_non_differentiable, set_materialize_grads,
once_differentiable, needs_input_grad, non-tensor outputs).

Where a case came from is a tag, not a module: ``regression`` (a minimized reproducer of a bug
aotcheck's engine had, most found by ``aotcheck fuzz``), ``fuzz`` (found by the fuzzer),
``torch_finding`` (a divergence of PyTorch's own AOTAutograd from eager that the fuzzer found;
docs/findings.md has a row per case, and ``xfail_engines`` names the torch engines that fail it),
``issue:N`` (restated from PyTorch's issue N).
"""
from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable
from .builders import leaf, one_leaf, rand, randn, seeded
from .registry import CallMode, Inputs, case


class HalfGradIdentity(torch.autograd.Function):
    """Returns its input unchanged; the backward halves the gradient."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 0.5


class HalfGradFlatView(torch.autograd.Function):
    """Returns a flat view of its input; the backward halves the gradient."""

    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return x.view(-1)

    @staticmethod
    def backward(ctx, g):
        return g.view(ctx.shape) * 0.5


class ScaleBackwardMutatesSaved(torch.autograd.Function):
    """Saves its second argument and multiplies it by 3 in place during backward."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(y)
        return x * y

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        gx = g * y
        y.mul_(3)
        return gx, None


class TransposeSavedInBackward(torch.autograd.Function):
    """Saves its second argument and transposes it in place during backward."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(y)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        y.transpose_(0, 1)
        return g * 2, None


class DoubleInPlace(torch.autograd.Function):
    """Doubles its input in place (mark_dirty)."""

    @staticmethod
    def forward(ctx, x):
        ctx.mark_dirty(x)
        return x.mul_(2)

    @staticmethod
    def backward(ctx, g):
        return g * 2


class Double(torch.autograd.Function):
    """Doubles its input out of place; its backward doubles the gradient."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


class SortedWithIndices(torch.autograd.Function):
    """Sorts; the indices are marked non-differentiable."""

    @staticmethod
    def forward(ctx, x):
        values, idx = x.sort(dim=-1)
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        return values, idx

    @staticmethod
    def backward(ctx, g, _g_idx):
        idx, = ctx.saved_tensors
        return torch.zeros_like(g).scatter(-1, idx, g)


class TwoOutputsNoMaterialize(torch.autograd.Function):
    """Two outputs; set_materialize_grads(False), so an unused output's gradient is None."""

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g1, g2):
        out = None
        if g1 is not None:
            out = g1 * 2
        if g2 is not None:
            out = g2 * 3 if out is None else out + g2 * 3
        return out


class SinOnce(torch.autograd.Function):
    """sin, with a once_differentiable backward that reads a saved input."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * x.cos()


class MulNeedsInputGrad(torch.autograd.Function):
    """x * y, computing only the gradients that needs_input_grad asks for."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        gx = g * y if ctx.needs_input_grad[0] else None
        gy = g * x if ctx.needs_input_grad[1] else None
        return gx, gy


class ScaleWithCount(torch.autograd.Function):
    """Takes a Python scalar, returns a tensor and a Python int."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return x * k, k + 1

    @staticmethod
    def backward(ctx, g, _):
        return g * ctx.k, None


class AddGradToFirstOnly(torch.autograd.Function):
    """x + y whose backward returns None for y."""

    @staticmethod
    def forward(ctx, x, y):
        return x + y

    @staticmethod
    def backward(ctx, g):
        return g, None


def _x_and_plain_y():
    x = leaf(2, 3)
    return Inputs((x, rand(2, 3)), leaves=(x,))


def _two_leaves():
    x, y = leaf(2, 3), leaf(2, 3)
    return Inputs((x, y), leaves=(x, y))


class _ScaleSavedInBackward(torch.autograd.Function):
    """Saves a tensor made in the caller's function; its backward scales it in place."""
    @staticmethod
    def forward(ctx, x, buf):
        ctx.save_for_backward(buf)
        return x * 3

    @staticmethod
    def backward(ctx, g):
        buf, = ctx.saved_tensors
        buf.mul_(g.sum())
        return g * 3, None


# ---------------------------------------------------------------- from cases_torch_findings


@case("custom_function", mode="training", tags=("fuzz", "torch_finding", "custom_function", "cache"),
      xfail_engines={"torch": "(cached run only) AOTAutogradCache bypasses every graph with a custom autograd.Function "
                                "(bypasses=1, nothing saved): a warm start compiles again; found by "
                                "aotcheck fuzz seed 7 (no upstream issue found)"})
def fuzz_custom_function_graph_never_cached():
    """A graph that calls a custom ``autograd.Function`` is never saved by AOTAutogradCache
    (with ``force_autograd_cache`` and ``bundled_autograd_cache``): the cached run reports a
    bypass. Cold results match eager."""

    def f(x):
        return (Double.apply(x),)

    def make():
        x = randn((3,), 25).requires_grad_()
        return Inputs((x,), leaves=(x,))
    return f, make


# ---------------------------------------------------------------- from cases_custom_function


@case("custom_function", mode="training", tags=("alias",))
def identity_forward_returned():
    """The output is a view of x whose grad_fn is the Function's: x.grad is 0.5, not 1."""
    def f(x):
        return HalfGradIdentity.apply(x)
    return f, one_leaf(2, 3)


@case("custom_function", mode="training", tags=("alias",))
def flat_view_forward_returned():
    def f(x):
        return HalfGradFlatView.apply(x)
    return f, one_leaf(2, 3)


@case("custom_function", mode="training", tags=("alias",))
def view_of_identity_output_returned():
    """A view of the Function's output view: its chain still runs the Function's backward."""
    def f(x):
        y = HalfGradIdentity.apply(x)
        return y[0], y.sum()
    return f, one_leaf(2, 3)


@case("custom_function", mode="training", tags=("alias",))
def identity_forward_of_intermediate():
    def f(x):
        h = x * 2
        return HalfGradFlatView.apply(h), h
    return f, one_leaf(2, 3)


@case("custom_function", mode="training", tags=("alias",))
def identity_forward_of_intermediate_not_returned():
    def f(x):
        return HalfGradIdentity.apply(x.sin())
    return f, one_leaf(2, 3)


@case("custom_function", mode="training", tags=("alias",))
def identity_forward_used_inside():
    def f(x):
        return HalfGradIdentity.apply(x) * 3
    return f, one_leaf(2, 3)


@case("custom_function", mode="training", tags=("mutation",))
def backward_mutates_saved_argument_data():
    """Eager multiplies y by 3 when .backward() runs."""
    def f(x, y):
        return ScaleBackwardMutatesSaved.apply(x, y)
    return f, seeded(_x_and_plain_y)


@case("custom_function", mode="training", tags=("mutation", "metadata"))
def backward_transposes_saved_argument():
    """Eager transposes y (its metadata) when .backward() runs."""
    def f(x, y):
        return TransposeSavedInBackward.apply(x, y)
    return f, seeded(_x_and_plain_y)


@case("custom_function", mode="training", tags=("mutation",))
def mark_dirty_on_intermediate():
    def f(x):
        return DoubleInPlace.apply(x.clone()) + 1
    return f, one_leaf(2, 3)


@case("custom_function", mode="training", tags=("mutation",))
def mark_dirty_on_nonleaf_argument():
    def f(a):
        return DoubleInPlace.apply(a).sum(0)
    def make():
        w = leaf(2, 3)
        return Inputs((w * 1,), leaves=(w,))
    return f, seeded(make)


@case("custom_function", mode="training")
def mark_non_differentiable_indices():
    def f(x):
        values, idx = SortedWithIndices.apply(x)
        return values * 2, idx
    return f, one_leaf(2, 5)


@case("custom_function", mode="training")
def no_materialize_one_output_used():
    def f(x):
        a, _ = TwoOutputsNoMaterialize.apply(x)
        return a.sum()
    return f, one_leaf(4)


@case("custom_function", mode="training")
def no_materialize_both_outputs_returned():
    def f(x):
        return TwoOutputsNoMaterialize.apply(x)
    return f, one_leaf(4)


@case("custom_function", mode="training")
def once_differentiable_backward():
    def f(x):
        return SinOnce.apply(x) * x
    return f, one_leaf(3, 2)


@case("custom_function", mode="training")
def needs_input_grad_one_of_two():
    def f(x, y):
        return MulNeedsInputGrad.apply(x, y)
    return f, seeded(_x_and_plain_y)


@case("custom_function", mode="training")
def needs_input_grad_both():
    def f(x, y):
        return MulNeedsInputGrad.apply(x, y).sum(1)
    return f, seeded(_two_leaves)


@case("custom_function", mode="training", tags=("scalars",))
def non_tensor_output():
    def f(x):
        y, n = ScaleWithCount.apply(x, 3)
        return y, n
    return f, one_leaf(3)


@case("custom_function", mode="training")
def called_twice():
    def f(x):
        return SinOnce.apply(SinOnce.apply(x)) + SinOnce.apply(x * 2)
    return f, one_leaf(4)


@case("custom_function", mode="training")
def backward_returns_none_for_an_input():
    """y requires grad, but the backward gives it None: eager leaves y.grad None."""
    def f(x, y):
        return AddGradToFirstOnly.apply(x, y) * 2
    return f, seeded(_two_leaves)


@case("custom_function", mode="inference", call=CallMode.NO_GRAD, tags=())
def identity_forward_under_no_grad():
    def f(x):
        return HalfGradIdentity.apply(x), SinOnce.apply(x)
    return f, one_leaf(2, 3)


@case("custom_function", mode="training", tags=("backward_mutation", "noncontiguous"))
def backward_writes_a_strided_argument():
    """buf is every other element of a larger storage; the Function's backward scales it in
    place: the caller's buf keeps its strides and the elements between stay as they were
    (the runtime restrided it to its written value's compact layout and wrote it there)."""
    def f(x, buf):
        return _ScaleSavedInBackward.apply(x, buf)
    def make():
        x = leaf(3)
        return Inputs((x, rand(6)[::2]), leaves=(x,))
    return f, seeded(make)


@case("custom_function", mode="training", tags=("backward_mutation", "noncontiguous", "offset"))
def backward_writes_a_transposed_argument_written_in_forward():
    """A transposed argument at an offset, written in the forward and scaled by the
    Function's backward."""
    def f(x, buf):
        buf.add_(1)
        return _ScaleSavedInBackward.apply(x, buf)
    def make():
        x = leaf(2, 3)
        return Inputs((x, rand(16)[1:13].view(3, 4)[:, :2].t()), leaves=(x,))
    return f, seeded(make)


@case("custom_function", mode="training", tags=("backward_mutation",))
def backward_scales_a_returned_intermediate():
    """buf is made inside, saved and returned; the backward scales it: the caller's
    output changes when .backward() runs."""
    def f(x):
        buf = torch.ones(2, 2)
        return _ScaleSavedInBackward.apply(x, buf), buf
    return f, one_leaf(2, 2)


@case("custom_function", mode="training", tags=("backward_mutation",))
def backward_writes_an_argument_also_written_in_forward():
    """The function adds into an argument, then a Function saves it and the backward
    scales it: the argument carries the forward's write, then the backward's."""
    def f(x, buf):
        buf.add_(1)
        return _ScaleSavedInBackward.apply(x, buf)
    def make():
        x = leaf(3)
        return Inputs((x, rand(3)), leaves=(x,))
    return f, seeded(make)

"""Corpus theme ``requires_grad_modes``: grad modes and requires_grad: ``no_grad`` and
``inference_mode`` regions and calls, ``requires_grad_()`` and ``detach`` inside, leaves made
inside, parameters, inference tensors.

A case with ``call=CallMode.NO_GRAD`` (or ``INFERENCE_MODE``): the test calls both eager and
compiled inside ``torch.no_grad()`` (or ``torch.inference_mode()``).

Where a case came from is a tag, not a module: ``regression`` (a minimized reproducer of a bug
aotcheck's engine had, most found by ``aotcheck fuzz``), ``fuzz`` (found by the fuzzer),
``torch_finding`` (a divergence of PyTorch's own AOTAutograd from eager that the fuzzer found;
docs/findings.md has a row per case, and ``xfail_engines`` names the torch engines that fail it),
``issue:N`` (restated from PyTorch's issue N).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from .builders import leaf, one_leaf as _one_leaf, rand, randn, seeded
from .registry import BackwardPass, CallMode, Inputs, case


def _inference_linear(*shape):
    """A Linear built under inference_mode: its parameters are inference tensors that require
    grad (NOTE [inference tensors] in aotcheck/engine/capture/functional.py)."""
    def make():
        with torch.inference_mode():
            lin = torch.nn.Linear(*shape)
            x = torch.randn(2, shape[0])
        return Inputs((lin.weight, lin.bias, x))
    return seeded(make)


def _vjp_grad(p):
    return torch.func.vjp(torch.sin, p)[1](torch.ones_like(p))[0]


def _plain_arg():
    x = rand(2, 3)
    return Inputs((x,), leaves=(x,))


def _plain_and_leaf():
    x, w = rand(2, 3), leaf(2, 3)
    return Inputs((x, w), leaves=(x, w))


def _two(*shape, requires_grad=False):
    from .subclass import two
    return two(*shape, requires_grad=requires_grad)


# ---------------------------------------------------------------- from cases_mutation


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


# ---------------------------------------------------------------- from cases_grad


@case("requires_grad_modes", mode="inference", call=CallMode.NO_GRAD, tags=())
def call_under_no_grad():
    def f(x, w):
        return x @ w, w.sum()
    def make():
        w = leaf(3, 2)
        return Inputs((rand(2, 3), w), leaves=(w,))
    return f, seeded(make)


@case("requires_grad_modes", mode="inference", call=CallMode.NO_GRAD, tags=("mutation",))
def call_under_no_grad_with_mutation():
    def f(a, w):
        a.add_(w)
        return a * 2
    def make():
        w = leaf(3)
        return Inputs((rand(3), w), leaves=(w,))
    return f, seeded(make)


@case("requires_grad_modes", mode="inference", call=CallMode.NO_GRAD, tags=("mutation",))
def call_under_no_grad_mutating_grad_leaf():
    def f(w):
        w.mul_(0.5)
        return w + 1
    def make():
        w = leaf(3)
        return Inputs((w,), leaves=(w,))
    return f, seeded(make)


@case("requires_grad_modes", mode="inference", call=CallMode.NO_GRAD, tags=("alias",))
def call_under_no_grad_view_output():
    def f(x):
        return x.view(-1), x * 2
    return f, seeded(lambda: Inputs((leaf(2, 2),)))


@case("requires_grad_modes", mode="inference", call=CallMode.INFERENCE_MODE, tags=())
def call_under_inference_mode():
    def f(x, w):
        return (x * w).sum(0)
    def make():
        w = leaf(3)
        return Inputs((rand(2, 3), w), leaves=(w,))
    return f, seeded(make)


@case("requires_grad_modes", mode="inference", call=CallMode.INFERENCE_MODE, tags=("mutation",))
def call_under_inference_mode_with_mutation():
    def f(a):
        a.mul_(2)
        return a[0]
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("requires_grad_modes", mode="training", tags=("partial",))
def some_outputs_not_requiring_grad():
    def f(x, y):
        return x * 2, y * 2, (x + y).sum()
    def make():
        x = leaf(3)
        return Inputs((x, rand(3)), leaves=(x,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("partial",))
def requires_grad_on_middle_arg_only():
    def f(x, y, z):
        return x * y + z, z - x
    def make():
        y = leaf(4)
        return Inputs((rand(4), y, rand(4)), leaves=(y,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("partial", "kwargs"))
def requires_grad_on_kwarg_only():
    def f(x, *, w):
        return x @ w
    def make():
        w = leaf(3, 3)
        return Inputs((rand(2, 3),), {"w": w}, leaves=(w,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("region",))
def no_grad_region_inside():
    def f(x):
        with torch.no_grad():
            y = x * 2
        return y, x * 3, x * y
    return f, _one_leaf(3)


@case("requires_grad_modes", mode="training", tags=("region",))
def set_grad_enabled_false_region():
    def f(x):
        y = x.exp()
        with torch.set_grad_enabled(False):
            z = y * 3
        return y + z, z
    return f, _one_leaf(4)


@case("requires_grad_modes", mode="training", tags=("region",))
def enable_grad_region_inside():
    def f(x, w):
        with torch.enable_grad():
            y = x * w
        return y.sum(), y
    def make():
        x, w = leaf(3), leaf(3)
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", call=CallMode.NO_GRAD, tags=("region",))
def enable_grad_region_inside_no_grad_call():
    def f(x, w):
        with torch.enable_grad():
            y = x * w
        return y, x + 1
    def make():
        x, w = leaf(3), leaf(3)
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make)


@case("requires_grad_modes", mode="inference", tags=("region",))
def everything_under_no_grad_region():
    def f(x, w):
        with torch.no_grad():
            return x * w, (x @ w.unsqueeze(1)).squeeze(1)
    def make():
        x, w = leaf(2, 3), leaf(3)
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("detach",))
def detach_one_operand():
    def f(x, w):
        return x.detach() * w, x * w.detach()
    def make():
        x, w = leaf(3), leaf(3)
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("region",))
def inference_mode_region_inside():
    def f(x):
        with torch.inference_mode():
            y = x * 2
        return x + y
    return f, _one_leaf(3)


@case("requires_grad_modes", mode="training", tags=("region", "inference_tensor"))
def inference_mode_value_returned():
    """A value computed inside an inference_mode block and returned is an inference tensor:
    writing it in place outside the block raises. aotcheck returned an ordinary tensor
    (NOTE [inference outputs]); torch.compile does too. Found by aotcheck fuzz --engine torch --seed 31
    and 41 (``dropout`` and ``mul`` inside inference_mode)."""
    def f(x):
        with torch.inference_mode():
            y = x * 2
        return y, x + 1
    return f, _one_leaf(3)


@case("requires_grad_modes", mode="inference", tags=("region", "inference_tensor", "alias_of_intermediate"))
def inference_mode_value_and_its_view_returned():
    """Two inference tensors that share one storage (``y`` and ``y.view(-1)``, made inside the
    block): both come back as inference tensors over one storage."""
    def f(x):
        with torch.inference_mode():
            y = x * 2
            z = y.view(-1)
        return y, z
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("requires_grad_modes", mode="inference", tags=("region", "inference_tensor", "integer"))
def inference_mode_value_returned_twice():
    """``return v, v`` of an inference tensor: one tensor twice, as in eager; aotcheck gave
    the second a view of the first (fuzz seed 19, all extensions)."""
    def f(x):
        with torch.inference_mode():
            v = x.to(torch.int64)
        return v, v
    return f, seeded(lambda: Inputs((rand(2) > 0,)))


@case("requires_grad_modes", mode="training", tags=("region", "parameter"))
def parameter_mutated_inside_inference_mode_then_detached():
    """An ordinary tensor mutated in place inside inference_mode stays ordinary; under
    functionalization its new value was an inference tensor, and detach() then raised
    'Cannot set version_counter for inference tensor' (fuzz seed 19: 19 of 2278 programs)."""
    def f(p):
        with torch.inference_mode():
            p.mul_(0.5)
        d = p.detach()
        return d + 1, p * 2
    def make():
        p = torch.nn.Parameter(rand(3, 4))
        return Inputs((p,), leaves=(p,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("nonleaf",))
def grad_nonleaf_input():
    def f(a, b):
        return a * b
    def make():
        x = leaf(3)
        return Inputs((x.exp(), rand(3)), leaves=(x,))
    return f, seeded(make)


@case("requires_grad_modes", mode="inference", tags=("partial",))
def no_input_requires_grad():
    def f(x, y):
        return x * y, (x - y).abs()
    return f, seeded(lambda: Inputs((rand(3), rand(3))))


@case("requires_grad_modes", mode="inference", call=CallMode.INFERENCE_MODE, tags=("alias",))
def call_under_inference_mode_view_output():
    def f(x):
        return x[0], x * 2
    return f, _one_leaf(2, 2)


@case("requires_grad_modes", mode="inference", tags=("region", "alias"))
def views_of_intermediate_in_no_grad_region():
    def f(x):
        with torch.no_grad():
            y = x * 2
            return y.t(), y
    return f, _one_leaf(2, 3)


@case("requires_grad_modes", mode="inference", call=CallMode.INFERENCE_MODE, tags=("inference_tensor",))
def inference_tensor_parameters_that_require_grad():
    def f(w, b, x):
        return F.linear(x, w, b).relu(), w.t(), b
    return f, _inference_linear(3, 4)


@case("requires_grad_modes", mode="inference", call=CallMode.INFERENCE_MODE,
      tags=("inference_tensor", "mutation"))
def inference_tensor_parameter_mutated():
    def f(w, b, x):
        b.mul_(0.5)
        x.add_(1)
        return x @ w.t() + b
    return f, _inference_linear(3, 2)


@case("requires_grad_modes", mode="inference", call=CallMode.INFERENCE_MODE, tags=("inference_tensor", "torch_func"))
def vjp_primal_made_in_an_inference_call_stays_an_inference_tensor():
    def f(x):
        v = (x * 2).as_strided((2,), (2,), 0)
        g = _vjp_grad(v)
        return v, g, g.view(2, 1)
    return f, seeded(lambda: Inputs((rand(4),)))


@case("requires_grad_modes", mode="inference", call=CallMode.INFERENCE_MODE, tags=("inference_tensor", "torch_func"))
def data_assigned_back_to_its_kind_in_an_inference_call():
    def f(x):
        p = x * 2
        p.data = _vjp_grad(x)
        p.add_(1)
        q = p * 3
        p.data = x * 5
        return p.view(3), p, q
    return f, seeded(lambda: Inputs((rand(3),)))


@case("requires_grad_modes", mode="training", tags=("requires_grad_",))
def requires_grad_on_argument():
    def f(x, w):
        x.requires_grad_()
        return x * w
    return f, seeded(_plain_and_leaf)


@case("requires_grad_modes", mode="training", tags=("requires_grad_",))
def requires_grad_on_only_argument():
    def f(x):
        x.requires_grad_()
        return (x.sin() * 3).sum()
    return f, seeded(_plain_arg)


@case("requires_grad_modes", mode="training", tags=("requires_grad_",))
def requires_grad_on_argument_after_a_use():
    """An op before requires_grad_() records nothing: that output does not require grad."""
    def f(x, w):
        y = x * w.detach()
        x.requires_grad_()
        return y, x * w
    return f, seeded(_plain_and_leaf)


@case("requires_grad_modes", mode="inference", tags=("requires_grad_", "alias"))
def requires_grad_on_argument_returned():
    def f(x):
        x.requires_grad_()
        return x
    return f, seeded(_plain_arg)


@case("requires_grad_modes", mode="training", tags=("requires_grad_", "mutation"))
def requires_grad_after_mutating_argument():
    def f(x):
        x.mul_(2)
        x.requires_grad_()
        return x.sin()
    return f, seeded(_plain_arg)


@case("requires_grad_modes", mode="training", tags=("requires_grad_", "attribute"))
def requires_grad_attribute_on_argument():
    def f(x):
        x.requires_grad = True
        return x * 3
    return f, seeded(_plain_arg)


@case("requires_grad_modes", mode="training", tags=("requires_grad_", "alias"))
def requires_grad_on_view_of_argument():
    """The view becomes a leaf that requires grad and gets .grad; x itself does not."""
    def f(x):
        v = x.view(-1)
        v.requires_grad_()
        return v * 2, v
    return f, seeded(_plain_arg)


@case("requires_grad_modes", mode="training", tags=("requires_grad_",))
def requires_grad_on_view_not_returned():
    def f(x, w):
        v = x[0]
        v.requires_grad_()
        return (v * w).sum(), x * w
    return f, seeded(_plain_and_leaf)


@case("requires_grad_modes", mode="training", tags=("requires_grad_",))
def requires_grad_on_intermediate():
    def f(x):
        h = x * 2
        h.requires_grad_()
        return h.sin()
    return f, seeded(_plain_arg)


@case("requires_grad_modes", mode="training", tags=("requires_grad_",))
def requires_grad_on_intermediate_returned():
    def f(x, w):
        h = (x * 2).requires_grad_()
        return h * w, h
    return f, seeded(_plain_and_leaf)


@case("requires_grad_modes", mode="training", tags=("requires_grad_", "detach"))
def requires_grad_on_detach_of_grad_argument_returned():
    """A detach() of a grad-requiring non-leaf argument made a leaf that requires grad: it gets
    .grad from the other output. aotcheck's runtime made it as a no_grad view of the argument,
    which reports requires_grad through its base but had no gradient edge (no .grad; fuzz
    seed 1, 8 programs of 10,000)."""
    def f(x):
        v = x.detach()
        v.requires_grad_()
        return v * 2, v

    def make():
        w = leaf(2, 3)
        return Inputs((w * 1.5,), leaves=(w,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("requires_grad_", "detach", "aliased_inputs"))
def requires_grad_on_detach_of_product_of_two_rows():
    """``(a1 @ a0).detach().requires_grad_()`` with two rows of one base: the new leaf is a view
    of an intermediate, and the runtime returned it without its value (uninitialised memory;
    fuzz seed 1)."""
    def f(a0, a1):
        v = torch.matmul(a1, a0).detach()
        v.requires_grad_()
        return (v, v * 3)

    def make():
        w = leaf(2, 3)
        b = w * 1.0
        return Inputs((b[0], b[1]), leaves=(w,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("requires_grad_", "alias_of_intermediate"))
def view_of_a_new_leaf_returned():
    """``v.requires_grad_()`` on a value made under no_grad, then a view of ``v`` returned
    (``v`` itself is not): eager's output is a view of a leaf that requires grad, so writing it
    in place raises, and its gradient is ``v``'s. aotcheck cut the view from the graph's value
    (fuzz seed 20, all extensions)."""
    def f(x):
        with torch.no_grad():
            v = x.relu()
        v.requires_grad_()
        return v.reshape(1, -1), v.sum() * x
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("requires_grad_modes", mode="training", tags=("requires_grad_", "detach", "same_output"))
def requires_grad_on_detached_value_returned_twice():
    """A new leaf (``requires_grad_()`` on a detached value) returned twice: both outputs are
    that one leaf. The runtime's second output (the same object) looked for a value of its own
    and raised (aotcheck fuzz --seed 1, with ``rand_like`` as the value)."""
    def f(x):
        v = x.sigmoid().detach()
        v.requires_grad_()
        return (v, v, v * 3)

    def make():
        w = leaf(2, 3)
        return Inputs((w * 1.0,), leaves=(w,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("no_grad", "alias_of_intermediate"))
def view_of_a_reduction_of_a_no_grad_view_is_mutable():
    """``v = a[:, 1]`` under no_grad (a leaf that requires grad, row 18), then
    ``v.sum().reshape(())``: a plain view of an ordinary tensor whose gradient reaches no input.
    Eager lets it be mutated in place; aotcheck rebuilt it as a view through a no_grad view,
    which raises ("a view of a view which was created in no_grad mode"; fuzz seed 1, 5 of its
    30 failures)."""
    def f(a):
        with torch.no_grad():
            v = a.select(1, 1)
        return (v.sum().reshape(()), a * 2)

    def make():
        w = leaf(3, 2, 2)
        return Inputs((w * 1.5,), leaves=(w,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("requires_grad_", "factory"))
def factory_with_requires_grad_inside():
    def f(x):
        b = torch.ones(3, requires_grad=True)
        return x * b, b
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("requires_grad_modes", mode="training", tags=("grad_none",))
def unreached_output_leaves_grad_none():
    def f(x, y):
        return x * 2, (y * 3).to(torch.complex64)
    def make():
        x, y = leaf(3), leaf(3)
        return Inputs((x, y), leaves=(x, y))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("grad_none", "custom_function"))
def unreached_output_of_no_materialize_function():
    from .custom_function import TwoOutputsNoMaterialize

    def f(x, y):
        a, _ = TwoOutputsNoMaterialize.apply(x)
        return a, (y * 2).to(torch.complex64)
    def make():
        x, y = leaf(3), leaf(3)
        return Inputs((x, y), leaves=(x, y))
    return f, seeded(make)


@case("requires_grad_modes", mode="inference", tags=("fuzz", "subclass", "non_leaf", "alias_of_input"))
def fuzz_split_view_and_its_detach_beside_a_twotensor():
    """``v = a.split(1, 1)[3]; return v, v.detach()`` beside a TwoTensor: eager's ``v`` is a
    SplitBackward0 view of the non-leaf argument, and its detach shares ``v``'s storage and
    version counter without bumping it. The detach was remade with ``as_strided_`` on a detach
    of the argument, an in-place op that bumped the version they all share, so reading ``v``'s
    grad_fn (and backward) raised "Output 0 of Unbind is a view and its base ... has been
    modified inplace" (fuzz seed 1)."""
    def f(a, x):
        v = a.split(1, 1)[3]
        return v, v.detach()
    def make():
        la, lx = leaf(3, 4, 4), _two(3, 2, 2, requires_grad=True)
        return Inputs((la.clone(), lx.clone()), leaves=(la, lx))
    return f, seeded(make)


@case("requires_grad_modes", mode="inference", tags=("fuzz", "subclass", "no_grad", "alias_of_input"))
def fuzz_view_of_a_no_grad_view_beside_a_twotensor_gets_no_gradient():
    """``with no_grad: v0 = a.permute(0, 1)``, then ``v0.unbind(1)[0]`` returned, beside a
    TwoTensor: eager's output has an UnbindBackward0 whose edge stops at ``v0`` (a view without
    history), so ``a.grad`` stays None. The output was remade as a view "with grad" of ``a``
    because it had a grad_fn, so ``a`` got a gradient; now a view whose grad_fn does not reach
    its argument is remade with that edge dropped (fuzz seed 1)."""
    def f(x, a):
        with torch.no_grad():
            v0 = a.permute((0, 1))
        return v0.unbind(1)[0]
    def make():
        lx, a = _two((), requires_grad=True), leaf(1, 4, dtype=torch.float64)
        return Inputs((lx.clone(), a), leaves=(lx, a))
    return f, seeded(make)


@case("requires_grad_modes", mode="inference", tags=("fuzz", "subclass", "requires_grad_", "no_grad"))
def fuzz_view_of_a_leaf_flagged_after_the_view_gets_no_grad():
    """``v1 = torch.rand_like(x.detach()); v2 = v1[:1]; v1.requires_grad_()`` with ``v2``
    returned, ``x`` a TwoTensor: eager's ``v2`` requires grad through its base but has no
    gradient edge of its own, so backward leaves ``v2.grad`` None. It was remade as a fresh
    leaf (its own AccumulateGrad), which got a gradient (fuzz seed 1)."""
    def f(x):
        with torch.no_grad():
            v0 = x.sigmoid()
        v1 = torch.rand_like(v0)
        v2 = v1[:1:3]
        with torch.inference_mode():
            v1.requires_grad_()
        return v2
    def make():
        x = _two(1, 4, requires_grad=True)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("requires_grad_modes", mode="inference", tags=("fuzz", "subclass", "aliased_inputs", "alias_of_input"))
def fuzz_view_of_the_second_of_two_rows_beside_a_twotensor():
    """Two rows of one base passed as two arguments beside a TwoTensor, ``b[1].unsqueeze(1)``
    returned: eager's gradient reaches row 1 of the base. The output was remade from the
    first argument over that storage (row 0) with ``as_strided``, whose backward drops what
    lies outside row 0: the base's gradient was zeros. Now it is remade from the argument it
    views (fuzz seed 1)."""
    def f(x, a0, a1):
        return a1.unsqueeze(1)
    def make():
        lx, b = _two(4, requires_grad=True), leaf(2, 2)
        return Inputs((lx.clone(), b[0], b[1]), leaves=(lx, b))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("fuzz", "subclass", "requires_grad_", "aliased_inputs"))
def fuzz_requires_grad_on_a_twotensor_passed_twice_then_sum():
    """A TwoTensor that does not require grad, passed twice; ``a1.requires_grad_(); return
    a0.sum()``: eager's sum requires grad and its gradient reaches the caller's tensor. The
    call was traced under no_grad because no argument required grad at the call, so the sum
    came back without history; now the trace runs in the call's grad mode and the runtime
    sets the argument's flag before the call (NOTE [requires_grad_ on a subclass argument])
    (fuzz seed 1)."""
    def f(a0, a1):
        a1.requires_grad_()
        return a0.sum()
    def make():
        x = _two(2)
        return Inputs((x, x), leaves=(x,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("fuzz", "subclass", "detach", "mutation"))
def fuzz_detach_of_a_twotensor_written_with_a_parameter():
    """``v0 = a.detach(); v0.copy_(w); v1 = a.detach()[0]; v1.mul_(w)`` with ``a`` a TwoTensor
    that requires grad and ``w`` an ``nn.Parameter``: eager's ``v0`` and ``v1`` share ``a``'s
    storage without being autograd views of it, and the writes in grad mode give them a
    history of their own (CopyBackwards, through the view) whose gradient reaches ``w``. They
    were remade from ``a`` as plain detached aliases (``v1`` as a view with a dropped edge):
    no requires_grad, and ``w.grad`` None. Now they are remade as detached aliases over which
    the graph's value is copied in grad mode, as the plain engine's ``detached_alias`` does
    ``b.detach()[1].mul_(b[1])`` is no autograd view of ``b`` either, though its history
    reaches ``b`` through the operand (fuzz seed 1)."""
    def f(a, b, w):
        v0 = a.detach()
        v0.copy_(w)
        v1 = b.detach()[0]
        v1.mul_(w)
        v2 = b.detach()[1]
        v2.mul_(b[1])       # its history reaches b, through the operand only
        return v0, v1, v2
    def make():
        la, lb = _two(1, 1, requires_grad=True), _two(2, 3, requires_grad=True)
        w = torch.nn.Parameter(rand(()))
        return Inputs((la.clone(), lb.clone(), w), leaves=(la, lb, w))
    return f, seeded(make)


@case("requires_grad_modes", mode="inference", tags=("fuzz", "subclass", "requires_grad_", "no_grad"))
def fuzz_view_of_a_view_of_a_leaf_flagged_after_the_first_view():
    """``v1 = torch.rand_like(x.detach()); v2 = v1[:1]; v1.requires_grad_(); v3 = v2[:1]``
    with ``v3`` returned, ``x`` a TwoTensor: eager's ``v3`` is a view of the leaf ``v1``
    (``_base``), with a grad_fn whose edge ends nowhere, and writing it in place raises ("a
    view of a leaf Variable that requires grad is being used in an in-place operation"); so
    does ``v1[:, 1:]`` taken after the flag. Both came back as plain outputs of the compiled
    graph, which may be written. Now an output that views a leaf made inside is remade as such
    a view (fuzz seed 1)."""
    def f(x):
        with torch.no_grad():
            v0 = x.sigmoid()
        v1 = torch.rand_like(v0)
        v2 = v1[:1:3]
        with torch.inference_mode():
            v1.requires_grad_()
        v3 = v2[:1:3]
        v4 = torch.rand_like(v0).requires_grad_()[:, 1:]
        return v3, v4
    def make():
        x = _two(1, 4, requires_grad=True)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("imperative_autograd", "retain_grad"))
def imperative_retained_intermediate_used_twice_inside():
    """A returned intermediate retains its grad; the function uses it twice more, so its
    .grad holds the caller's part and both inner uses (NOTE [retained outputs])."""
    def f(x):
        y = x * 2
        y.retain_grad()
        return (y * 3).sin() + y.cos(), y
    return f, _one_leaf(4)


@case("requires_grad_modes", mode="training", tags=("imperative_autograd", "retain_grad", "mutation"))
def imperative_retain_grad_on_an_argument_between_a_write_and_a_transpose():
    """Found by aotcheck fuzz --seed 1: a0.add_(2); a0.retain_grad(); a0.t_() on a non-leaf
    argument of shape (3, 1), nothing returned: eager's hook stays on the add's node, so
    a0.grad (from the caller's later use of a0) has the shape (3, 1) while a0 is (1, 3). It
    was refused by name (NOTE [where an argument's retained gradient sits])."""
    def f(a0):
        a0.add_(2.0)
        a0.retain_grad()
        a0.t_()
        return ()
    def make():
        l0 = leaf(3, 1)
        return Inputs((l0.clone(),), leaves=(l0,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("imperative_autograd", "retain_grad", "mutation", "no_grad"))
def imperative_retain_grad_on_an_argument_between_a_write_and_a_transpose_then_set_under_no_grad():
    """Found by aotcheck fuzz --seed 1: the case above, then ``a0[0] = -1.0`` under no_grad:
    autograd records nothing there, so the hook stays on the add's node (a write under grad
    mode would have tripped autograd's internal assert); the values change."""
    def f(a0):
        a0.add_(2.0)
        a0.retain_grad()
        a0.t_()
        with torch.no_grad():
            a0[0] = -1.0
        return ()
    def make():
        l0 = leaf(3, 1)
        return Inputs((l0.clone(),), leaves=(l0,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("imperative_autograd", "retain_grad", "mutation"))
def imperative_retain_grad_on_an_argument_used_around_its_transpose():
    """x.mul_(w); x.retain_grad(); s = (x * 5).sum(); x.t_(); x.exp() and s returned: x.grad
    has x's shape before t_() and sums the use before the transpose, the use after it, and
    the caller's later uses."""
    def f(x, w):
        x.mul_(w)
        x.retain_grad()
        s = (x * 5).sum()
        x.t_()
        return x.exp(), s
    def make():
        l0, w = leaf(2, 3), leaf(2, 3)
        return Inputs((l0 * 1.0, w), leaves=(l0, w))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("imperative_autograd", "retain_grad"))
def imperative_retain_grad_on_an_argument_that_views_an_intermediate():
    """retain_grad() on a non-leaf argument that is a view of the caller's intermediate."""
    def f(x):
        x.retain_grad()
        return x.exp() * 2
    def make():
        base = leaf(3, 4)
        return Inputs(((base * 1.5)[1],), leaves=(base,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("imperative_autograd", "retain_grad"))
def imperative_retain_grad_on_a_returned_intermediate_and_an_argument():
    """Both an argument and a returned intermediate retain their grads."""
    def f(x, w):
        x.retain_grad()
        h = x @ w
        h.retain_grad()
        return h.tanh().sum(), h
    def make():
        a, w = leaf(2, 3), leaf(3, 3)
        return Inputs((a * 1.0, w), leaves=(a, w))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("imperative_autograd", "tensor_hook"))
def imperative_hook_on_a_leaf_argument_used_inside():
    """A hook on a leaf argument scales its whole gradient, inside uses included."""
    def f(a):
        a.register_hook(lambda g: g * 3)
        return a * a
    return f, _one_leaf(3)


@case("requires_grad_modes", mode="training", tags=("imperative_autograd", "tensor_hook"))
def imperative_hook_on_a_parameter_argument_returned_as_it_is():
    """A hook on a Parameter argument that the function returns as it is (fuzz seed 1)."""
    def f(p, x):
        p.register_hook(lambda g: g * 2 + 1)
        return p, (p * x).sum()
    def make():
        p = torch.nn.Parameter(torch.randn(3))
        return Inputs((p, rand(3)), leaves=(p,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("imperative_autograd", "tensor_hook", "mutation"))
def imperative_hook_on_a_nonleaf_argument_then_written_in_place():
    """A hook on a non-leaf argument, which the function then multiplies in place: eager's
    hook stays with the gradient of the argument as it was."""
    def f(x):
        x.register_hook(lambda g: g * 2)
        x.mul_(3)
        return x.sum()
    def make():
        a = leaf(4)
        return Inputs((a * 1.0,), leaves=(a,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("imperative_autograd", "tensor_hook"))
def imperative_hook_registered_then_removed_inside():
    """A hook whose handle the function removes before it returns never runs."""
    def f(a):
        h = a.register_hook(lambda g: g * 100)
        h.remove()
        return (a * 2).sum()
    return f, _one_leaf(3)


@case("requires_grad_modes", mode="training", tags=("imperative_autograd", "tensor_hook", "leaf_inside"))
def imperative_hook_on_a_parameter_made_inside_whose_view_is_returned():
    """Found by aotcheck fuzz --seed 1: v = Parameter(randn(())); v1 = v.unsqueeze(0);
    v.register_hook(double); v1 returned. Eager's hook doubles the whole gradient that v's
    AccumulateGrad sums, the caller's through v1 included
    (NOTE [hooks on leaves made inside]); it was refused by name."""
    def f():
        v = torch.nn.Parameter(torch.randn((), dtype=torch.float64))
        v1 = v.unsqueeze(0)
        v.register_hook(lambda g: g * 2)
        return v1
    return f, seeded(lambda: Inputs(()))


@case("requires_grad_modes", mode="training", tags=("imperative_autograd", "tensor_hook", "leaf_inside"))
def imperative_hook_on_a_leaf_made_inside_returned_and_used_inside():
    """w = ones(3, requires_grad=True) with a hook that adds 1, used inside (w * x summed)
    and returned: the hook sees the sum of the inside use's gradient and the caller's, once."""
    def f(x):
        w = torch.ones(3, requires_grad=True)
        w.register_hook(lambda g: g + 1)
        return w, (w * x).sum()
    return f, seeded(lambda: Inputs((rand(3),)))


@case("requires_grad_modes", mode="training", tags=("imperative_autograd", "tensor_hook", "leaf_inside"))
def imperative_hook_on_a_leaf_made_inside_that_nothing_uses():
    """Found by aotcheck fuzz --seed 3: v = randn((), requires_grad=True) with a hook, used
    by nothing, beside a write of the argument: eager runs no node of v, so the hook never
    runs; the compiled function's edge to v handed it None at backward (TypeError in it)."""
    def f(a):
        v = torch.randn((), requires_grad=True)
        a.zero_()
        v.register_hook(lambda g: g * 2)
        return a * 2
    def make():
        l = leaf(3)
        return Inputs((l * 1.0,), leaves=(l,))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("leaf_inside", "no_grad", "view", "no_tensor_args"))
def no_grad_view_of_a_leaf_made_inside_multiplied_in_a_grad_region():
    """Found by aotcheck fuzz --seed 1 (a regression of a change made this stop): v0 =
    randn((), requires_grad=True); v2 = v0.view(1) under no_grad; v2 @ v2 in an enable_grad
    region. v2 requires grad through its base but no gradient reaches v0; the output requires
    grad. Dropping the compiled function's edge to a leaf that no output's gradient reaches
    made the output not require grad."""
    def f():
        v0 = torch.randn((), requires_grad=True)
        with torch.no_grad():
            v2 = v0.view((1,))
        with torch.no_grad():
            with torch.enable_grad():
                return torch.matmul(v2, v2)
    return f, seeded(lambda: Inputs(()))


@case("requires_grad_modes", mode="training", tags=("imperative_autograd", "tensor_hook", "leaf_inside"))
def imperative_hook_on_a_leaf_made_inside_not_returned():
    """A hook on a leaf made inside that is only used: its gradient is unobservable, the
    function's output is not; the hook (tripling) never changes the output's gradient."""
    def f(x):
        w = torch.ones(3, requires_grad=True)
        w.register_hook(lambda g: g * 3)
        return (w * x).sum()
    return f, _one_leaf(3)


@case("requires_grad_modes", mode="training", tags=("leaf_inside", "no_tensor_args"))
def leaf_made_inside_with_only_a_scalar_argument():
    """A Python scalar argument only: a leaf made with requires_grad=True, scaled."""
    def f(s):
        w = torch.ones(3, requires_grad=True)
        return w * s
    return f, lambda: Inputs((2.5,))


@case("requires_grad_modes", mode="training", tags=("leaf_inside", "parameter"))
def parameter_made_inside_from_an_argument_and_returned():
    """nn.Parameter(x) over an argument's storage, returned with a value computed from it."""
    def f(x):
        p = torch.nn.Parameter(x)
        return p, (p * 2).sum()
    return f, seeded(lambda: Inputs((rand(3),)))


@case("requires_grad_modes", mode="training", tags=("leaf_inside", "parameter", "no_grad"))
def parameter_made_under_no_grad_written_into_an_argument():
    """A Parameter made under no_grad, copied into a slice of an int argument."""
    def f(a):
        with torch.no_grad():
            v = torch.nn.Parameter(torch.full((), 2.0))
        a[1] = v
        return (v * 3,)
    return f, lambda: Inputs((torch.arange(2),))


# ---------------------------------------------------------------- from cases_regressions


@case("requires_grad_modes", mode="inference", tags=("regression", "fuzz", "requires_grad_"))
def fuzz_requires_grad_after_the_output_is_computed():
    """requires_grad_() on an argument after the output was computed from it: eager's output
    does not require grad; the runtime set the flag before running the (inference) graph with
    grad on, so the output came back requiring grad. Found by aotcheck fuzz --seed 13."""
    def f(a0):
        v0 = a0.mean()
        a0.requires_grad_()
        return (v0,)
    return f, lambda: Inputs((randn((1,)),))


@case("requires_grad_modes", mode="training", tags=("regression", "fuzz", "requires_grad_", "detach", "non_contiguous"))
def fuzz_detach_of_a_mutated_strided_argument_made_a_grad_leaf():
    """A strided argument mutated in place, then its detach() made a leaf that requires grad
    and returned: eager's leaf has the argument's stride 2; the wrapper's geometry drifts to
    contiguous with the write, and the leaf was made with stride 1. Found by aotcheck fuzz
    --seed 22 (requires_grad_ extension)."""
    def f(a0):
        a0.add_(0.5)
        v0 = a0.detach()
        v0.requires_grad_()
        return (v0,)
    return f, lambda: Inputs((randn((8,))[::2],))


@case("requires_grad_modes", mode="training", tags=("regression", "fuzz", "requires_grad_", "detach", "non_contiguous"))
def fuzz_detach_of_an_intermediate_made_a_grad_leaf_and_returned_with_it():
    """``v2 = v0.detach()`` of an intermediate, v0 written and squeezed in place, v2 made a leaf
    that requires grad, both returned: the runtime returned v2 as the empty tensor it made
    before the graph ran (uninitialised memory: silently wrong values), and v0 in storage of
    its own (eager: v0 and v2 share it). The leaf now gets its graph value, and v0 is moved
    into the leaf's memory. Found by aotcheck fuzz --seed 32 --extensions all."""
    def f(a0):
        v0 = a0.sin()
        v2 = v0.detach()
        v0.copy_(a0)
        v2.requires_grad_()
        v0.squeeze_(1)
        v4 = v2.sum()
        return (v4, v2, v2, v0)

    def make():
        l0 = randn((6, 2), 2419).requires_grad_()
        return Inputs((l0.clone()[::2],), leaves=(l0,))
    return f, make


# ---------------------------------------------------------------- from cases_transforms


@case("requires_grad_modes", mode="inference", call=CallMode.NO_GRAD, tags=("custom_op",))
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


# ---------------------------------------------------------------- how the backward is driven
# The oracle's backward is one pass from every output by default; these cases drive it as
# training loops and higher-order code do (``backward_pass``). On the torch engines each runs
# the lazily compiled backward
# (NOTE [torch engine: torch's own cache settings] in targets/engines.py): twice over one forward
# (retain_graph), with no gradient for an output, and from a backward that itself records a graph.


def _two_leaves():
    def make():
        x, w = leaf(3, 4), leaf(4)
        return Inputs((x, w), leaves=(x, w))
    return seeded(make)


@case("requires_grad_modes", mode="training", tags=("backward_twice", "retain_graph"),
      backward_pass=BackwardPass.TWICE)
def backward_twice_with_retain_graph():
    """Two backwards over one forward, the first with ``retain_graph=True``: the compiled backward
    runs twice on the saved values it kept, and the leaves' grads accumulate to twice eager's one."""
    def f(x, w):
        h = torch.tanh(x * w)
        return h.sum(1), (h * h).mean()
    return f, _two_leaves()


@case("requires_grad_modes", mode="training", tags=("backward_twice", "retain_graph", "random"),
      backward_pass=BackwardPass.TWICE)
def backward_twice_through_dropout():
    """Two backwards over a forward that drew random numbers: the second backward must reuse the
    first's mask (the graph's saved state), not draw or replay another."""
    def f(x, w):
        return F.dropout(x * w, p=0.5, training=True).relu()
    return f, _two_leaves()


@case("requires_grad_modes", mode="training", tags=("subset_of_outputs",),
      backward_pass=BackwardPass.FIRST_OUTPUT)
def backward_through_the_first_of_three_outputs():
    """A backward from the first output alone: the compiled backward gets no gradient (None, or
    zeros) for the other two, one of which is a view of an intermediate and one a fresh tensor
    from another branch; ``w`` reaches the first output only through ``h``."""
    def f(x, w):
        h = x * w
        return h.sin(), h.view(-1), (x.exp() * 2).sum(0)
    return f, _two_leaves()


@case("requires_grad_modes", mode="training", tags=("subset_of_outputs", "mutation"),
      backward_pass=BackwardPass.FIRST_OUTPUT)
def backward_through_the_first_output_with_a_written_argument():
    """A non-leaf argument written in place under grad (``add_``, whose backward needs no old
    value: ``mul_`` here would be docs/findings.md row 2), and two outputs; the backward starts
    from the first output only, so neither the second output's nor the written argument's
    gradient is ever asked for."""
    def f(a, w):
        a.add_(w * 2)
        return (a * 3).sum(), a.cos()
    def make():
        x, w = leaf(4), leaf(4)
        return Inputs((x.clone(), w), leaves=(x, w))
    return f, seeded(make)


@case("requires_grad_modes", mode="training", tags=("double_backward", "create_graph"),
      backward_pass=BackwardPass.DOUBLE,
      xfail="refusal: DoubleBackwardError: aotcheck compiles first-order gradients only (its "
            "backward graph is not differentiable), where eager's double backward runs")
def double_backward_grad_of_grad():
    """Gradients taken with ``create_graph=True``, then a backward from those gradients (grad of
    grad, as a gradient penalty does): the compiled backward must itself be differentiable.
    torch's compiled backward is not (it raises 'torch.compile with aot_autograd does not
    currently support double backward' when differentiated); aotcheck refuses by name."""
    def f(x, w):
        return (torch.tanh(x * w) ** 2).sum(), (x.sin() * w).mean()
    return f, _two_leaves()

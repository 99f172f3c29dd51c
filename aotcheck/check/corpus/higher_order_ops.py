"""Corpus theme ``higher_order_ops``: torch's control-flow operators inside the function:
``torch.cond``, ``while_loop``, ``map`` and ``scan`` (``torch._higher_order_ops``).

Eager runs the branch (or the loop) its predicate picks, inside an ``autograd.Function`` over
the operands and the tensors the functions read from outside: every floating output requires
grad when one of those does, and an input no output depends on gets a zero gradient. The
engine traces the branch it sees and pins the predicate with a guard
(NOTE [higher-order ops, inline] in engine/capture/higher_order.py).

Where a case came from is a tag, not a module: ``project_issue:38`` (the programs aotcheck's
issue 38, item 4 lists as failing in the engine).
"""
from __future__ import annotations

import torch
from torch._higher_order_ops.map import map as hop_map
from torch._higher_order_ops.scan import scan
from torch._higher_order_ops.while_loop import while_loop
from torch.func import functional_call

from .builders import leaf, rand, seeded
from .registry import CallMode, Inputs, case

_TAGS = ("project_issue:38", "hop")


@case("higher_order_ops", mode="training", tags=_TAGS + ("cond",))
def cond_on_a_tensor_predicate():
    """The issue's program: the predicate is a tensor computed from the input."""
    def f(x, y):
        return torch.cond(x.sum() > 0, lambda a, b: a.sin() * b, lambda a, b: a.cos() + b, (x, y))

    def make():
        x = leaf(3)
        with torch.no_grad():
            x.abs_()            # the true branch
        return Inputs((x, rand(3)), leaves=(x,))
    return f, seeded(make)


@case("higher_order_ops", mode="training", tags=_TAGS + ("cond",))
def cond_false_branch_ignores_an_operand():
    """The branch taken reads one operand of two that require grad: eager's Function gives the
    other a zero gradient, and its output requires grad either way."""
    def f(x, w):
        return torch.cond(x.sum() > 0, lambda a, b: a * b, lambda a, b: b * 2, (x, w))

    def make():
        x, w = leaf(4), leaf(4)
        with torch.no_grad():
            x.copy_(-x.abs())   # the false branch
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make)


@case("higher_order_ops", mode="training", tags=_TAGS + ("cond", "module"))
def cond_branches_call_two_modules():
    """Each branch applies its own Linear layer's parameters, passed in as arguments: the
    parameters of the branch not taken still get (zero) gradients, as Dynamo lifts both
    branches' tensors into eager's Function."""
    torch.manual_seed(0)
    a, b = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    model = torch.nn.ModuleDict({"a": a, "b": b})

    def f(params, x):
        def true_fn(t):
            return functional_call(model.a, {"weight": params["a.weight"],
                                             "bias": params["a.bias"]}, (t,))

        def false_fn(t):
            return torch.nn.functional.linear(t, params["b.weight"], params["b.bias"])
        return torch.cond(x.mean() > 0, true_fn, false_fn, (x,))

    def make():
        params = {k: v.detach().clone().requires_grad_() for k, v in model.named_parameters()}
        x = rand(2, 3).abs()
        return Inputs((params, x), leaves=tuple(params.values()))
    return f, seeded(make)


class _Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * 3 * x * x


@case("higher_order_ops", mode="training", tags=_TAGS + ("cond", "custom_function"))
def cond_branch_calls_a_custom_function():
    def f(x):
        return torch.cond(x.sum() > 0, lambda a: _Cube.apply(a) + 1, lambda a: a * 3, (x,))

    def make():
        x = leaf(3)
        with torch.no_grad():
            x.abs_()
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("higher_order_ops", mode="inference", tags=_TAGS + ("cond", "mutation"),
      call=CallMode.NO_GRAD)
def cond_branch_mutates_its_operand_under_no_grad():
    """Under no_grad eager lets a branch write its operand in place, and returns it."""
    def f(x):
        return torch.cond(x.sum() > 0, lambda a: a.add_(1), lambda a: a * 2, (x,))

    def make():
        return Inputs((rand(3).abs(),))
    return f, seeded(make)


@case("higher_order_ops", mode="training", tags=_TAGS + ("while_loop",))
def while_loop_runs_a_tensor_count():
    """The trip count is an argument's value: eager runs the body that many times."""
    def f(n, x):
        return while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a.sin() * 1.5),
                          (torch.tensor(0), x))

    def make():
        x = leaf(2, 3)
        return Inputs((torch.tensor(3), x), leaves=(x,))
    return f, seeded(make)


@case("higher_order_ops", mode="training", tags=_TAGS + ("while_loop", "closure"))
def while_loop_body_reads_an_argument_from_outside():
    def f(x, w):
        return while_loop(lambda i, a: a.sum() < 50, lambda i, a: (i + 1, a * w + 1),
                          (torch.tensor(0), x))[1]

    def make():
        x, w = leaf(3), leaf(3)
        with torch.no_grad():
            x.abs_()
            w.abs_().add_(1)
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make)


@case("higher_order_ops", mode="training", tags=_TAGS + ("map",))
def map_over_rows():
    def f(xs, w):
        return hop_map(lambda row, v: (row * v).tanh(), xs, w)

    def make():
        xs, w = leaf(4, 3), leaf(3)
        return Inputs((xs, w), leaves=(xs, w))
    return f, seeded(make)


@case("higher_order_ops", mode="training", tags=_TAGS + ("scan",))
def scan_running_product():
    def f(init, xs):
        return scan(lambda c, x: (c * x, c + x), init, xs)

    def make():
        init, xs = leaf(2), leaf(4, 2)
        return Inputs((init, xs), leaves=(init, xs))
    return f, seeded(make)


@case("higher_order_ops", mode="training", tags=_TAGS + ("cond", "nested"))
def cond_inside_a_map():
    def f(xs):
        return hop_map(lambda row: torch.cond(row.sum() > 0, lambda r: r.exp(), lambda r: -r,
                                              (row,)), xs)

    def make():
        xs = leaf(3, 2)
        return Inputs((xs,), leaves=(xs,))
    return f, seeded(make)

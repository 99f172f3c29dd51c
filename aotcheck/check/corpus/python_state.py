"""Corpus theme ``python_state``: Python state the function reads, changed between calls.

Each case returns ``(fn, make_inputs, states)``; the harness calls ONE compiled function in each
state in turn and compares every call with eager (``Case.states``). A compiled graph reused
across a state change (``model.eval()``, a new closure or global value, a swapped helper, new
defaults, a hyperparameter) gives the old state's result: issue 11, class 7.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
import torch.utils.checkpoint
from torch.func import functional_call, grad
from .builders import leaf, one_leaf, seeded
from .registry import Inputs, case


def _module_inputs(model, *x_shape):
    """``make_inputs`` for ``functional_call(model, (params, buffers), (x,))``: fresh copies of
    the model's parameters (leaves that require grad) and buffers, and an input."""
    def make():
        p = {k: v.detach().clone().requires_grad_() for k, v in model.named_parameters()}
        b = {k: v.detach().clone() for k, v in model.named_buffers()}
        x = torch.randn(*x_shape)
        return Inputs((p, b, x), leaves=tuple(p.values()))
    return seeded(make)


_OFFSET = [1.0]


def _double(x):
    return x * 2


def _cube(x):
    return x ** 3


_HELPERS = {"act": _double}


_GAIN = [2.0]


@torch._dynamo.allow_in_graph
def _gained(x):
    return torch.tanh(x) * _GAIN[0]


_BOUND = [0.5]


@torch._dynamo.allow_in_graph
def _clipped(x):
    return x.clamp(-_BOUND[0], _BOUND[0])


class _ClipStraightThrough(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return _clipped(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def _autocast_dtype(dtype):
    def set_():
        torch.set_autocast_dtype("cpu", dtype)
    return set_


@torch.library.custom_op("aotcheck_ps::scaled_copy", mutates_args=())
def _scaled_copy(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


@_scaled_copy.register_fake
def _(x):
    return torch.empty_like(x)


def _formula(k):
    def set_():
        _scaled_copy.register_autograd(lambda ctx, grad: grad * k)
    return set_


_formula(1.0)()


# ---------------------------------------------------------------- from cases_python_state


@case("python_state", mode="training")
def batchnorm_train_then_eval():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU())

    def f(p, b, x):
        return functional_call(model, (p, b), (x,))
    return f, _module_inputs(model, 5, 4), (model.train, model.eval)


@case("python_state", mode="training")
def hyperparameter_changed():
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.LeakyReLU(0.1))

    def slope(v):
        def set_():
            model[1].negative_slope = v
        return set_

    def f(p, b, x):
        return functional_call(model, (p, b), (x,))
    return f, _module_inputs(model, 4, 3), (slope(0.1), slope(0.5))


@case("python_state", mode="training")
def closure_value_changed():
    cfg = {"scale": 2.0, "power": 2}

    def f(x):
        return (x * cfg["scale"]) ** cfg["power"]

    def state(scale, power):
        def set_():
            cfg.update(scale=scale, power=power)
        return set_
    return f, one_leaf(3), (state(2.0, 2), state(-1.5, 3))


@case("python_state", mode="training")
def global_value_changed():
    def f(x):
        return x.sin() + _OFFSET[0]

    def offset(v):
        def set_():
            _OFFSET[0] = v
        return set_
    return f, one_leaf(4), (offset(1.0), offset(-3.0))


@case("python_state", mode="training")
def helper_swapped():
    def f(x, w):
        return _HELPERS["act"](x * w).sum(0)

    def use(h):
        def set_():
            _HELPERS["act"] = h
        return set_

    def make():
        x, w = leaf(2, 3), leaf(3)
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make), (use(_double), use(_cube))


@case("python_state", mode="training")
def default_argument_changed():
    def f(x, k=2, mode="add"):
        return x + k if mode == "add" else x * k

    def defaults(*d):
        def set_():
            f.__defaults__ = d
        return set_
    return f, one_leaf(3), (defaults(2, "add"), defaults(3, "mul"))


@case("python_state", mode="training")
def closure_flag_picks_a_branch():
    flags = {"relu": True}

    def f(x):
        return F.relu(x) if flags["relu"] else torch.tanh(x)

    def set_flag(v):
        def set_():
            flags["relu"] = v
        return set_
    return f, one_leaf(5), (set_flag(True), set_flag(False))


@case("python_state", mode="training")
def parameterless_module_attribute():
    act = torch.nn.GELU()

    def f(x):
        return act(x) * 2

    def approx(v):
        def set_():
            act.approximate = v
        return set_
    return f, one_leaf(6), (approx("none"), approx("tanh"))


@case("python_state", mode="training")
def global_read_by_an_allow_in_graph_helper_inside_a_checkpoint_body():
    def f(x):
        return torch.utils.checkpoint.checkpoint(_gained, x, use_reentrant=False).sum(0)
    return f, one_leaf(3, 4)


@case("python_state", mode="training")
def global_read_by_an_allow_in_graph_helper_inside_a_custom_function():
    def f(x):
        return _ClipStraightThrough.apply(x) * x
    return f, one_leaf(6)


@case("python_state", mode="training", tags=("autocast",))
def autocast_without_a_dtype_in_a_checkpoint_body_after_the_ambient_dtype_changed():
    def body(x, w):
        with torch.autocast("cpu"):                 # the ambient CPU dtype, read at trace time
            return x @ w

    def f(x, w):
        return torch.utils.checkpoint.checkpoint(body, x, w, use_reentrant=False)

    def make():
        x, w = leaf(3, 4), leaf(4, 2)
        return Inputs((x, w), leaves=(x, w))
    # autocast itself is off at every call; state 0 is torch's default and is put back last
    return f, seeded(make), (_autocast_dtype(torch.bfloat16), _autocast_dtype(torch.float16))


@case("python_state", mode="training", tags=("custom_op",))
def custom_op_autograd_formula_registered_again():
    def f(x):
        return torch.ops.aotcheck_ps.scaled_copy(x).sin()
    return f, one_leaf(5), (_formula(1.0), _formula(3.0))

"""Builders the theme modules share: deterministic inputs (``seeded``, ``rand``, ``randn``),
leaves that require grad (``leaf``, ``one_leaf``, ``leaves``), parameters and non-leaf arguments,
and the small mutating helpers and custom ops several themes call.
"""
from __future__ import annotations

import torch
from .registry import Inputs


def seeded(build):
    """``make_inputs`` from ``build``: seed torch, then build fresh tensors on every call."""
    def make_inputs() -> Inputs:
        torch.manual_seed(0)
        return build()
    make_inputs.__name__ = getattr(build, "__name__", "make_inputs")
    return make_inputs


def leaf(*shape, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype, requires_grad=True)


def one_leaf(*shape):
    """``make_inputs`` for a single argument that is a leaf requiring grad."""
    def make():
        x = leaf(*shape)
        return Inputs((x,), leaves=(x,))
    return seeded(make)


def rand(*shape, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype)


def freed(*shape) -> torch.Tensor:
    t = torch.empty(*shape)
    t.untyped_storage().resize_(0)
    return t


def two_nonleaf(n0: int, n1: int):
    def make():
        l0, l1 = leaf(n0), leaf(n1)
        return Inputs((l0.clone(), l1.clone()), leaves=(l0, l1))
    return make


def parameter(*shape):
    def make():
        p = torch.nn.Parameter(rand(*shape))
        return Inputs((p,), leaves=(p,))
    return make


def parameter_and_input(p_shape, x_shape):
    def make():
        p = torch.nn.Parameter(rand(*p_shape))
        return Inputs((p, rand(*x_shape)), leaves=(p,))
    return make


def three_nonleaf(n0: int, n1: int, n2: int):
    def make():
        l0, l1, l2 = leaf(n0), leaf(n1), leaf(n2)
        return Inputs((l0.clone(), l1.clone(), l2.clone()), leaves=(l0, l1, l2))
    return make


def two_nonleaf_and_a_leaf(n: int):
    def make():
        l0, l1, u = leaf(n), leaf(n), leaf(n)
        return Inputs((l0.clone(), l1.clone(), u), leaves=(l0, l1, u))
    return make


def randn(shape, seed=0, dtype=torch.float32):
    return torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def one_parameter(shape):
    """Inputs of one ``nn.Parameter`` argument (its own leaf)."""
    def make():
        p = torch.nn.Parameter(randn(shape))
        return Inputs((p,), leaves=(p,))
    return make


def leaves(*shapes):
    def make():
        ts = tuple(leaf(*s) for s in shapes)
        return Inputs(ts, leaves=ts)
    return seeded(make)


def plain(*shapes):
    return seeded(lambda: Inputs(tuple(rand(*s) for s in shapes)))


@torch.library.custom_op("aotcheck_tr::scale_", mutates_args=("x",))
def scale_(x: torch.Tensor, by: float) -> None:
    x.mul_(by)


@torch.library.custom_op("aotcheck_tr::bump_tail_", mutates_args=("x",))
def bump_tail_(x: torch.Tensor) -> None:
    """Writes a view of its argument made inside the kernel."""
    x[1:].add_(10)


@torch.library.custom_op("aotcheck_tr::split_into", mutates_args=("lo", "hi"))
def split_into(x: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
    """Writes two arguments and returns a fresh tensor."""
    lo.copy_(x.clamp(max=0))
    hi.copy_(x.clamp(min=0))
    return x.abs()


@split_into.register_fake
def split_into_fake(x, lo, hi):
    return torch.empty_like(x)


@torch.library.custom_op("aotcheck_tr::per_device_", mutates_args=("x",))
def per_device_(x: torch.Tensor) -> None:
    x.add_(1)


@per_device_.register_kernel("cpu")
def per_device_cpu(x):
    x.add_(1000)        # eager runs the CPU kernel on CPU tensors, not the default

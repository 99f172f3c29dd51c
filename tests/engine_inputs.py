"""Inputs several engine test files build (tests/test_engine_*.py)."""
import torch


def vjp_gradient(p):
    return torch.func.vjp(torch.sin, p)[1](torch.ones_like(p))[0]


def two_nonleaves():
    from aotcheck.check.oracle import Inputs
    torch.manual_seed(0)
    l0, l1 = torch.randn(2, 3).requires_grad_(), torch.randn(2, 3).requires_grad_()
    return Inputs((l0.clone(), l1.clone()), {}, (l0, l1))


def nonleaf_argument(view: bool):
    from aotcheck.check.oracle import Inputs
    leaf = torch.arange(6.0).reshape(2, 3).requires_grad_()
    x = leaf * 1
    return Inputs((x.t().t() if view else x,), {}, (leaf,))

"""(a) a module global read by an ``allow_in_graph`` helper called from a custom
``autograd.Function``'s forward (with ``autograd_cache_allow_custom_autograd_functions``).

Dynamo traces the Function into ``autograd_function_apply`` with its forward and backward as
subgraphs; the helper's call inside them is keyed by import path only (the subgraphs' nodes
are not vetted), so an entry compiled with OFFSET 1.0 is served when it is 5.0.
Upstream: pytorch/pytorch PR #194658 (open; it names custom-autograd bodies beside
checkpoint bodies).
"""
import torch

KIND = "reached"
UPSTREAM = "pytorch/pytorch#194658"
CONFIG = {"torch._functorch.config.autograd_cache_allow_custom_autograd_functions": True}
OFFSET = 1.0


@torch._dynamo.allow_in_graph
def _shift(x):
    return x + OFFSET


class Shift(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return _shift(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


def fn(x):
    return Shift.apply(x) * 2


def inputs():
    return (torch.randn(4, requires_grad=True),)


VARY = {"OFFSET": (1.0, 5.0)}

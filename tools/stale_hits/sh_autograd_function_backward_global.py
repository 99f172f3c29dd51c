"""Class: state reached from the function, inside a higher-order op's body. A custom
``autograd.Function`` whose forward calls an ``allow_in_graph`` helper that reads a module
global (a clipping bound), traced into the ``autograd_function_apply`` subgraph.
Restated from pytorch/pytorch PR #194658 (open: custom autograd bodies are not vetted)."""
import torch

UPSTREAM = "pytorch/pytorch#194658"
CONFIG = {"torch._functorch.config.autograd_cache_allow_custom_autograd_functions": True}
BOUND = 0.25


@torch._dynamo.allow_in_graph
def _clip(x):
    return x.clamp(-BOUND, BOUND)


class Clip(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _clip(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3.0


def fn(x, y):
    return Clip.apply(x) + y.sin()


def inputs():
    return (torch.randn(5, requires_grad=True), torch.randn(5, requires_grad=True))


VARY = {"BOUND": (0.25, 1.5)}

"""(c) a custom-operator registration that changes between processes: the autograd formula
given to ``register_autograd``.

The key names a custom op by its qualified name; the backward formula is traced into the
backward graph, so an entry compiled with ``grad * 1.0`` is served to a process whose formula
is ``grad * 2.0``: the gradient is stale.
Upstream: pytorch/pytorch#144344 (open), whose report has this program.
"""
import torch
from torch import Tensor

KIND = "registration"
UPSTREAM = "pytorch/pytorch#144344"


def setup(name, value):
    @torch.library.custom_op("kdiff::scaled_clone", mutates_args=())
    def scaled_clone(x: Tensor) -> Tensor:
        return x.clone()

    @scaled_clone.register_fake
    def _(x):
        return torch.empty_like(x)

    def backward(ctx, grad):
        return value * grad
    scaled_clone.register_autograd(backward)


def fn(x):
    return torch.ops.kdiff.scaled_clone(x)


def inputs():
    return (torch.randn(3, requires_grad=True),)


VARY = {"backward_scale": (1.0, 2.0)}

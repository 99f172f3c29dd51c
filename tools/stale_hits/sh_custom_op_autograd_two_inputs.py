"""Class: custom-operator registrations that change between processes. A two-input custom op
whose ``register_autograd`` formula differs between two processes (the second routes the
gradient to the other input); the key names the op, not its formula.
Restated from pytorch/pytorch#144344 (open)."""
import torch
from torch import Tensor

UPSTREAM = "pytorch/pytorch#144344"


def setup(name, value):
    @torch.library.custom_op("heldout::blend", mutates_args=())
    def blend(x: Tensor, y: Tensor) -> Tensor:
        return x * 0.75 + y * 0.25

    @blend.register_fake
    def _(x, y):
        return torch.empty_like(x)

    def backward(ctx, grad):
        return (grad * 0.75, grad * 0.25) if value == "right" else (grad * 0.25, grad * 0.75)
    blend.register_autograd(backward)


def fn(x, y):
    return torch.ops.heldout.blend(x, y).exp()


def inputs():
    return (torch.randn(4, requires_grad=True), torch.randn(4, requires_grad=True))


VARY = {"formula": ("wrong", "right")}

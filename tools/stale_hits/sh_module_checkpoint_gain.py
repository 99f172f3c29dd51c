"""Class: state reached from the function. An nn.Module whose forward checkpoints a block that
calls an ``allow_in_graph`` helper reading a module-level dict (``GAIN["w"]``).
Restated from pytorch/pytorch PR #194658 (open): the key vets the root graph, not the bodies
of higher-order ops, and keys an allow_in_graph function by its import path."""
import torch
from torch.utils.checkpoint import checkpoint

UPSTREAM = "pytorch/pytorch#194658"
GAIN = {"w": 0.5}


@torch._dynamo.allow_in_graph
def _gated(x):
    return torch.tanh(x) * GAIN["w"]


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(6, 6)

    def forward(self, x):
        return checkpoint(lambda t: _gated(self.lin(t)), x, use_reentrant=False)


torch.manual_seed(0)
MODEL = Block()


def fn(x):
    return MODEL(x).sum(dim=1)


def inputs():
    return (torch.randn(3, 6, requires_grad=True),)


VARY = {"GAIN": ({"w": 0.5}, {"w": 4.0})}

"""Class: ambient state that changes a graph while not "on". ``torch.autocast("cpu")`` without a
dtype around a linear layer inside a checkpoint body; the program changes
``torch.set_autocast_dtype("cpu", ...)`` with autocast itself off.
Restated from pytorch/pytorch PR #191110 (open)."""
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

UPSTREAM = "pytorch/pytorch#191110"


def _mixed(x, w, b):
    with torch.autocast("cpu"):
        return F.relu(F.linear(x, w, b))


def fn(x, w, b):
    return checkpoint(_mixed, x, w, b, use_reentrant=False)


def inputs():
    return (torch.randn(2, 8, requires_grad=True), torch.randn(4, 8, requires_grad=True),
            torch.randn(4, requires_grad=True))


VARY = {"ambient:autocast_dtype.cpu": (torch.bfloat16, torch.float16)}

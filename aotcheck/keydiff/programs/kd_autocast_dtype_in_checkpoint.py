"""(b) ambient state that changes a graph while not "on": the CPU autocast dtype
(``torch.set_autocast_dtype``) while autocast is off, read by a ``torch.autocast("cpu")``
region without a dtype inside a checkpoint body.

The key records the autocast dtype of enabled devices only; the autocast region sits in the
checkpoint body, which is not vetted (a root-graph ``_enter_autocast`` bypasses the cache on
2.13), and its dtype resolves from the ambient setting at trace time: an entry traced with
bfloat16 is served when the ambient dtype is float16.
Upstream: pytorch/pytorch PR #191110 (open; review: "a child containing dtype=None autocast
is invisible to the root-only scan").
"""
import torch
from torch.utils.checkpoint import checkpoint

KIND = "ambient"
UPSTREAM = "pytorch/pytorch#191110"


def _body(x, w):
    with torch.autocast("cpu"):
        return x @ w


def fn(x, w):
    return checkpoint(_body, x, w, use_reentrant=False)


def inputs():
    return (torch.randn(4, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True))


VARY = {"ambient:autocast_dtype.cpu": (torch.bfloat16, torch.float16)}

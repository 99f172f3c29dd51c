"""(b) every ambient torch setting of ``setters.AMBIENT`` (the CPU and CUDA autocast dtypes with
autocast off, the autocast cache, the default dtype, deterministic algorithms, float32 matmul
precision, mkldnn, the thread count), and the storage relations of its two arguments: no VARY,
so the inputs are derived. The function reaches the settings where it can: an autocast region
without a dtype inside a checkpoint body, a factory op without a dtype, a matmul.
"""
import torch
from torch.utils.checkpoint import checkpoint

KIND = "ambient"
UPSTREAM = ""


def _body(x, w):
    with torch.autocast("cpu"):
        return x @ w


def fn(x, w):
    return checkpoint(_body, x, w, use_reentrant=False).float() + torch.ones(4, 4)


def inputs():
    return (torch.randn(4, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True))

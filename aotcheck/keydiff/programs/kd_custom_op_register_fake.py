"""(c) a custom-operator registration that changes between processes: the fake kernel given to
``register_fake``.

The fake kernel decides the metadata AOTAutograd traces with (here the output's dtype); the key
names the op only, so an entry traced with a fake kernel that says float32 is served when the
fake kernel says float64.
Upstream: pytorch/pytorch#160472 (open).
"""
import torch
from torch import Tensor

KIND = "registration"
UPSTREAM = "pytorch/pytorch#160472"
BACKWARD = False


def setup(name, value):
    @torch.library.custom_op("kdiff::widen", mutates_args=())
    def widen(x: Tensor) -> Tensor:
        return (x * 2).to(torch.float64)

    @widen.register_fake
    def _(x):
        return torch.empty_like(x, dtype=getattr(torch, value))


def fn(x):
    return torch.ops.kdiff.widen(x) + x


def inputs():
    return (torch.ones(3),)


VARY = {"fake_dtype": ("float32", "float64")}

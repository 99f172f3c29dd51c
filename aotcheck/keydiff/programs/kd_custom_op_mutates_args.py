"""(c) a custom-operator registration that changes between processes: the schema's
``mutates_args``.

An op declared with ``mutates_args=()`` that writes its ``out`` argument is traced as pure, so
its write is lost (the compile under A already differs from eager); correcting the schema to
``mutates_args=("out",)`` does not change the key (it names the op, not its schema), so the
corrected program is still served the entry that lost the write.
Upstream: pytorch/pytorch#187319 (open).
"""
import torch
from torch import Tensor

KIND = "registration"
UPSTREAM = "pytorch/pytorch#187319"
BACKWARD = False


def setup(name, value):
    @torch.library.custom_op("kdiff::fill_out", mutates_args=value)
    def fill_out(x: Tensor, out: Tensor) -> None:
        out.copy_(x + 1)

    @fill_out.register_fake
    def _(x, out):
        return None


def fn(x, out):
    torch.ops.kdiff.fill_out(x, out)
    return out + 0


def inputs():
    return (torch.ones(3), torch.zeros(3))


VARY = {"mutates_args": ((), ("out",))}

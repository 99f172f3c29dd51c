"""Class: compile entry points other than a torch.compile'd function with a named backend. A
backend built with ``aot_autograd(...)`` whose decomposition table differs between processes
(``silu`` decomposed wrongly in one); the key does not hold the table."""
import torch
from torch._dynamo.backends.common import aot_autograd
from torch._dynamo.backends.debugging import boxed_nop

UPSTREAM = ""
TABLE = {}


def wrong_silu(x):
    return x * torch.sigmoid(2 * x)


def BACKEND():
    return aot_autograd(fw_compiler=boxed_nop, bw_compiler=boxed_nop, decompositions=dict(TABLE))


def fn(x):
    return torch.nn.functional.silu(x).sum()


def inputs():
    return (torch.randn(8, requires_grad=True),)


VARY = {"TABLE": ({torch.ops.aten.silu.default: wrong_silu}, {})}

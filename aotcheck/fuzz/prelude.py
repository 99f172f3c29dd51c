"""prelude: the text every generated program's source starts with, in parts that
``Program.prelude()`` joins as its statements need them: the imports and input makers,
integer inputs, the TwoTensor subclass, the custom autograd.Functions, issue 27's imperative
helpers (a hook, the functions torch.func differentiates) and the torch.library ops.

Source text only; nothing here runs in aotcheck's process (``strategies`` executes the whole
prelude once to vouch for drawn programs)."""
from __future__ import annotations

_PRELUDE = '''import sys

import torch

from aotcheck.check.oracle import Inputs, check


def _randn(shape, dtype, seed):
    return torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))
'''


_RANDINT = '''

def _randint(shape, seed):
    return torch.randint(-3, 4, shape, generator=torch.Generator().manual_seed(seed))
'''

_TWO_TENSOR = '''

from torch.testing._internal.two_tensor import TwoTensor
'''

_CUSTOM_FUNCTIONS = '''

class _Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


class _MulTwoInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2
'''

# the helpers of issue 27's ops: a hook whose effect the gradients show, and the functions the
# torch.func transforms differentiate (one writes a row of an intermediate in place)
_IMPERATIVE_HELPER_OPS = frozenset({"hook", "func_grad", "func_grad_index"})
_IMPERATIVE_HELPERS = '''

def _double_grad(g):
    return g * 2


def _sin_sum(t):
    return t.sin().sum()


def _first_row_tripled_square_sum(t):
    u = t * 1.0
    u[0] *= 3.0
    return (u * u).sum()
'''

# ops from torch.library, registered once per process by importing the module
_LIBRARY_OPS = '''

import aotcheck.fuzz.library_ops  # noqa: F401  (torch.ops.aotcheck_fuzz.mul2_, add_first_)
'''

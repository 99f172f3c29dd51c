"""Custom ops from ``torch.library`` that the fuzzer's grammar calls (issue 27): each mutates
its argument, and says so in its schema (``Tensor(a0!) x``), as ``custom_op`` writes it from
``mutates_args``. Importing this module registers them once per process; a program's printed
source imports it, so a reproducer runs on its own.

    >>> import torch
    >>> x = torch.ones(2, 2)
    >>> torch.ops.aotcheck_fuzz.add_first_(x, 1.0)
    >>> x
    tensor([[2., 2.],
            [1., 1.]])
    >>> str(torch.ops.aotcheck_fuzz.mul2_.default._schema)
    'aotcheck_fuzz::mul2_(Tensor(a0!) x) -> ()'

Neither has an autograd formula: the grammar calls them only where autograd records nothing
(on tensors that need no grad, or under ``no_grad``), as eager PyTorch warns it will refuse
otherwise.
"""
from __future__ import annotations

import torch


@torch.library.custom_op("aotcheck_fuzz::mul2_", mutates_args=("x",))
def mul2_(x: torch.Tensor) -> None:
    """``x *= 2``, in place: a mutation of the whole argument."""
    x.mul_(2)


@mul2_.register_fake
def _mul2_fake(x: torch.Tensor) -> None:
    return None


@torch.library.custom_op("aotcheck_fuzz::add_first_", mutates_args=("x",))
def add_first_(x: torch.Tensor, value: float) -> None:
    """``x[0] += value``, in place, through a view of the argument made inside the op (the
    argument may itself be a view of a program's value); a 0-d ``x`` gets the whole add."""
    (x[0] if x.ndim else x).add_(value)


@add_first_.register_fake
def _add_first_fake(x: torch.Tensor, value: float) -> None:
    return None

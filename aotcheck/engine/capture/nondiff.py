"""nondiff: tensors of a non-differentiable dtype (bool, integers) that require grad in eager.

# NOTE [outputs of a non-differentiable dtype that require grad]
``m = w.to(torch.bool); m[:, 3] = s`` with ``s`` requiring grad: eager's setitem gives the
bool tensor ``m`` a CopySlices node, so ``m`` (and a view of it) requires grad, and so does a
float computed from it, whose backward then fails inside autograd ("isDifferentiableType ...
INTERNAL ASSERT FAILED"; docs/findings.md). A bool or integer argument written so requires
grad after the call. The runtime's outputs come out of an autograd.Function, which attaches no
history to an output of a non-differentiable dtype, and its write-back of such an argument
records none: the caller would get ``m`` without requires_grad, silently. So such an output,
or such an argument, is refused by name; the same write into a tensor the caller never sees
(fuzz seed 1) runs as eager. So is a function whose joint sends a gradient into such a tensor
(``return m.float() * 2``): eager's forward runs, and its backward raises only where a
gradient reaches ``m``, which one compiled backward for all outputs cannot tell apart. (On fake tensors the setitem itself raises "Autograd not support
dtype: Bool": the plain engine takes the second way, the subclass path traces on real copies.)
"""
from __future__ import annotations

import torch

from ...errors import UnsupportedInputError

_WHY = ("eager gives a tensor of a non-differentiable dtype autograd history when a value that "
        "requires grad is written into it in place (m[i] = s: a CopySlices node), and "
        "aotcheck's runtime gives such tensors none; write s.detach() into it")


def differentiable(dtype: torch.dtype) -> bool:
    return dtype.is_floating_point or dtype.is_complex


def refuse_nondiff_output(k: int, t: torch.Tensor, requires_grad: bool) -> None:
    """Refuse output leaf ``k`` (``t``, whose eager requires_grad is ``requires_grad``) if it
    is such a tensor. The subclass path asks too, for its outer outputs."""
    if requires_grad and not differentiable(t.dtype):
        raise UnsupportedInputError(
            f"output leaf {k} is a {t.dtype} tensor that requires grad: {_WHY}")


def refuse_nondiff_argument(i: int, dtype: torch.dtype, before: bool, after: bool) -> None:
    """Refuse argument leaf ``i`` if it is such a tensor: it required no grad at the call
    (``before``) and does after it (``after``). The subclass path asks too, for its outer
    arguments."""
    if after and not before and not differentiable(dtype):
        raise UnsupportedInputError(
            f"argument {i} is a {dtype} tensor that requires grad after the call: {_WHY}")


def refuse_nondiff_arguments(inputs, plan, leaves: list) -> None:
    """``refuse_nondiff_argument`` for each placeholder's facts in ``inputs``."""
    for f in inputs:
        i = plan.placeholders[f.placeholder][1]
        dtype = getattr(torch, f.final_dtype) if f.final_dtype else leaves[i].dtype
        refuse_nondiff_argument(i, dtype, leaves[i].requires_grad, f.requires_grad_after)


NONDIFF_GRAD = "isDifferentiableType(grad.scalar_type()) INTERNAL ASSERT FAILED"


def refuse_nondiff_gradient(e: Exception) -> None:
    """Refuse by name a joint whose backward (``e``: its error) sent a gradient into such a
    tensor."""
    if isinstance(e, RuntimeError) and str(e).startswith(NONDIFF_GRAD):
        raise UnsupportedInputError(
            "the function returns a value computed from a bool or integer tensor that requires "
            f"grad (m[i] = s, then m.float()): {_WHY}; eager's backward then fails inside "
            "autograd where a gradient reaches that tensor, and only there") from None

"""checkpoint: ``torch.utils.checkpoint``'s reentrant variant traced by what it means.

# NOTE [reentrant checkpoint]
``checkpoint(fn, *args, use_reentrant=True)`` is an ``autograd.Function``
(``CheckpointFunction``) whose forward runs ``fn`` under no_grad and whose backward runs it
again under grad, with the forward's random state, and calls ``torch.autograd.backward`` on
it: a nested backward, which refuses ``torch.autograd.grad``, the very call the joint trace
makes. Its meaning, which is what the engine traces instead while it traces the function:

- no tensor argument requires grad (or grad mode is off): ``fn`` runs under no_grad, and its
  outputs carry no history, even where ``fn`` reads tensors from outside that require grad;
- else ``fn`` runs inline under grad, so gradients flow through its own ops to its arguments
  and to the tensors it reads from outside (eager's nested backward reaches those too), and
  each tensor output at the top level comes out of one Function over those arguments
  (``higher_order.join``, without zero gradients: an argument no output depends on keeps
  ``None``, as eager's backward returns its unused inputs' ``.grad``, None). Tensors nested
  deeper in the outputs carry no history (eager's Function sees only the top level).

Random ops draw once, in the forward: eager's backward draws again from the forward's saved
state and puts the generator back, which gives the same values and leaves the same state.
With ``preserve_rng_state=False`` eager's backward draws anew, from wherever the generator
is then: a random op inside is refused by name.
The non-reentrant variant (saved-tensor hooks that recompute) is traced as it runs.

# NOTE [selective checkpoint while traced]
A selective-checkpoint policy (``context_fn=create_selective_checkpoint_contexts(...)``) runs
as a dispatch mode that, in eager, keeps the outputs of the ops the policy saves and lets the
backward recompute the rest. It asks whether it is being compiled (a proxy mode is active,
as in aotcheck's trace): then it keeps every op's output, for a functionalized trace whose
partitioner reads the policy off the graph, and refuses any of them later written in place
(``empty_like(x).bernoulli_(p)``, CPU dropout: "Tensor cached during selective activation
checkpoint has been mutated"). aotcheck's trace is eager's run, so while it traces,
checkpoint is told it is not compiled, and the policy keeps and recomputes what eager's does.
"""
from __future__ import annotations

import torch
import torch.utils.checkpoint as torch_checkpoint
from torch.utils import _pytree as pytree

from ...errors import UnsupportedInputError
from .higher_order import RULES, Draws, join

_EAGER = torch_checkpoint.CheckpointFunction
_EAGER_IS_COMPILING = torch_checkpoint._is_compiling


class InlineCheckpoint:
    """Stands in for ``CheckpointFunction`` while a function is traced
    (NOTE [reentrant checkpoint])."""

    @staticmethod
    def apply(function, preserve_rng_state, *args):
        lifted = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
        if not torch.is_grad_enabled() or not lifted:
            with torch.no_grad():
                return function(*args)
        with Draws() as draws:
            outs = function(*args)
        if draws.seen and not preserve_rng_state:
            raise UnsupportedInputError(
                f"a random op ({draws.seen[0]}) inside checkpoint(..., use_reentrant=True, "
                "preserve_rng_state=False): eager's backward runs the function again and draws "
                "anew, so its gradients do not follow its own forward; aotcheck cannot follow "
                "that. Keep preserve_rng_state=True, or use use_reentrant=False")
        if isinstance(outs, torch.Tensor):
            return join(outs, lifted, zeros=False)
        if not isinstance(outs, tuple):
            return pytree.tree_map_only(torch.Tensor, torch.Tensor.detach, outs)
        top = [o if isinstance(o, torch.Tensor) else
               pytree.tree_map_only(torch.Tensor, torch.Tensor.detach, o) for o in outs]
        return tuple(join(tuple(top), lifted, zeros=False))


def tagged_checkpoint(gmod, *args, **kwargs):
    """Dynamo's checkpoint region (``torch.compile(fn, backend="aotcheck")``), the
    higher-order op ``tag_activation_checkpoint``: torch's own kernel runs ``checkpoint`` with
    ``preserve_rng_state=False``, leaving the random state to Inductor's passes, so its
    backward would redraw a dropout. Here it is the ``checkpoint`` call the user wrote, with
    the user's keywords, traced as any other (NOTE [reentrant checkpoint])."""
    return torch_checkpoint.checkpoint(gmod, *args, **kwargs)


RULES["tag_activation_checkpoint"] = tagged_checkpoint     # NOTE [higher-order ops, inline]


def _not_compiling(func, args, kwargs) -> bool:
    return False


class checkpoint_as_eager:
    """While entered (re-entrant), ``checkpoint(..., use_reentrant=True)`` runs
    :class:`InlineCheckpoint` (NOTE [reentrant checkpoint]) and checkpoint does not take the
    trace for a compile (NOTE [selective checkpoint while traced])."""
    depth = 0

    def __enter__(self):
        if checkpoint_as_eager.depth == 0:
            torch_checkpoint.CheckpointFunction = InlineCheckpoint
            torch_checkpoint._is_compiling = _not_compiling
        checkpoint_as_eager.depth += 1
        return self

    def __exit__(self, *exc):
        checkpoint_as_eager.depth -= 1
        if checkpoint_as_eager.depth == 0:
            torch_checkpoint.CheckpointFunction = _EAGER
            torch_checkpoint._is_compiling = _EAGER_IS_COMPILING
        return False

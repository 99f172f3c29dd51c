"""Corpus theme ``checkpointing``: ``torch.utils.checkpoint`` inside the function, reentrant
and not, with selective-checkpoint policies, and random ops inside the checkpointed part.

Eager's checkpoint recomputes the checkpointed part in the backward (with the forward's
random state, so a dropout mask is the forward's) and gives the gradients, values and
generator state of the plain function, except where its own ``autograd.Function`` shows: a
reentrant checkpoint's outputs require grad exactly when one of its tensor arguments does
(NOTE [reentrant checkpoint] in engine/capture/checkpoint.py).

Where a case came from is a tag, not a module: ``project_issue:38`` (the programs aotcheck's
issue 38, item 4 lists as to check in the engine).
"""
from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

from .builders import leaf, rand, seeded
from .registry import Inputs, case

_TAGS = ("project_issue:38", "checkpoint")


def _block(a, w):
    return (a @ w).sin().relu() @ w.t()


def _leaves(*shapes):
    def make():
        ts = tuple(leaf(*s) for s in shapes)
        return Inputs(ts, leaves=ts)
    return seeded(make)


@case("checkpointing", mode="training", tags=_TAGS + ("non_reentrant",))
def non_reentrant_block():
    def f(x, w):
        return checkpoint(_block, x, w, use_reentrant=False).sum(0)
    return f, _leaves((3, 4), (4, 4))


@case("checkpointing", mode="training", tags=_TAGS + ("reentrant",))
def reentrant_block():
    def f(x, w):
        return checkpoint(_block, x, w, use_reentrant=True).sum(0)
    return f, _leaves((3, 4), (4, 4))


@case("checkpointing", mode="training", tags=_TAGS + ("non_reentrant", "rng"))
def non_reentrant_dropout_inside():
    """The backward's recomputation draws with the forward's state: the mask is the forward's,
    and the generator ends where eager's does."""
    def f(x, w):
        return checkpoint(lambda a, b: F.dropout(a @ b, 0.5).tanh(), x, w, use_reentrant=False)
    return f, _leaves((4, 5), (5, 5))


@case("checkpointing", mode="training", tags=_TAGS + ("reentrant", "rng"))
def reentrant_dropout_inside():
    def f(x, w):
        return checkpoint(lambda a, b: F.dropout(a @ b, 0.5).tanh(), x, w, use_reentrant=True)
    return f, _leaves((4, 5), (5, 5))


@case("checkpointing", mode="training", tags=_TAGS + ("reentrant",))
def reentrant_argument_unused_keeps_no_gradient():
    """An argument no output depends on: eager's reentrant backward returns its ``.grad``,
    None; a tensor output made from nothing that requires grad still requires grad."""
    def f(x, y):
        return checkpoint(lambda a, b: (a.exp(), torch.ones(2)), x, y, use_reentrant=True)
    return f, _leaves((3,), (3,))


@case("checkpointing", mode="training", tags=_TAGS + ("reentrant",))
def reentrant_only_an_outside_tensor_requires_grad():
    """The weight is read from outside the checkpointed function and no argument of it
    requires grad: eager's reentrant checkpoint runs it under no_grad, so the output carries
    no history and the weight gets no gradient. Another output does require grad."""
    def f(x, w):
        return checkpoint(lambda a: a @ w, x, use_reentrant=True), (w * 2).sum()

    def make():
        w = leaf(4, 2)
        return Inputs((rand(3, 4), w), leaves=(w,))
    return f, seeded(make)


@case("checkpointing", mode="training", tags=_TAGS + ("non_reentrant", "selective"))
def selective_checkpoint_saves_matmuls():
    """A selective-checkpoint policy given as the ops to save (``mm``): the rest recomputes."""
    def f(x, w):
        ctx = functools.partial(create_selective_checkpoint_contexts, [torch.ops.aten.mm.default])
        return checkpoint(_block, x, w, use_reentrant=False, context_fn=ctx).sum(0)
    return f, _leaves((3, 4), (4, 4))


def _save_dropout_policy(ctx, op, *args, **kwargs):
    if op in (torch.ops.aten.native_dropout.default, torch.ops.aten.mm.default):
        return CheckpointPolicy.MUST_SAVE
    return CheckpointPolicy.PREFER_RECOMPUTE


@case("checkpointing", mode="training", tags=_TAGS + ("non_reentrant", "selective", "rng"))
def selective_checkpoint_policy_function_with_dropout():
    def f(x, w):
        ctx = functools.partial(create_selective_checkpoint_contexts, _save_dropout_policy)
        return checkpoint(lambda a, b: F.dropout((a @ b).cos(), 0.3) @ b, x, w,
                          use_reentrant=False, context_fn=ctx)
    return f, _leaves((3, 4), (4, 4))


@case("checkpointing", mode="training", tags=_TAGS + ("non_reentrant", "nested"))
def nested_checkpoints():
    def f(x, w):
        inner = lambda a: checkpoint(torch.sin, a @ w, use_reentrant=False)  # noqa: E731
        return checkpoint(lambda a: inner(a).cos() * 2, x, use_reentrant=False)
    return f, _leaves((2, 3), (3, 3))


@case("checkpointing", mode="training", tags=_TAGS + ("non_reentrant", "rng"))
def non_reentrant_dropout_without_preserved_rng_state():
    """``preserve_rng_state=False``: eager's backward recomputes the dropout with fresh draws
    (a mask other than the forward's) and moves the generator at ``.backward()``."""
    def f(x, w):
        return checkpoint(lambda a, b: F.dropout(a @ b, 0.5).tanh(), x, w, use_reentrant=False,
                          preserve_rng_state=False)
    return f, _leaves((4, 5), (5, 5))


@case("checkpointing", mode="training", tags=_TAGS + ("reentrant", "rng"),
      xfail="refused by name (UnsupportedInputError): eager's reentrant backward redraws the "
            "dropout from wherever the generator is at .backward(), so its gradients do not "
            "follow its own forward mask; a traced graph draws once (NOTE [reentrant checkpoint])")
def reentrant_dropout_without_preserved_rng_state():
    """Eager's reentrant backward, without the forward's random state, draws a new mask."""
    def f(x, w):
        return checkpoint(lambda a, b: F.dropout(a @ b, 0.5).tanh(), x, w, use_reentrant=True,
                          preserve_rng_state=False)
    return f, _leaves((4, 5), (5, 5))

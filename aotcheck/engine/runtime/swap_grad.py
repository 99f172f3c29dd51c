"""swap_grad: replaying a ``set_()`` of an argument that autograd recorded.

# NOTE [set_ recorded by autograd]
``set_()`` has no derivative. Under grad mode, when the argument or the tensor it is set
to requires grad, eager records it anyway: the argument becomes a non-leaf whose grad_fn
is a ``NotImplemented`` node, and a backward that reaches it raises "derivative for set_
is not implemented"::

    def f(x, w):            # x: float32[3], w: float32[3] requiring grad
        x.set_(w * 2)       # eager: x.requires_grad, x.grad_fn NotImplemented
        return w.sin()      # fine; a backward through x (x * 3) raises

Functionalization sees the same node on the argument's wrapper, and the joint's backward
meets it where eager's does (``backward_error``). Ops recorded on the argument afterwards
(``x.mul_(3)``: MulBackward0, then NotImplemented) change its grad_fn but not what is
observable: every backward through it reaches the node and raises. The runtime replays
the swap as it does any other (NOTE [storage swaps] in storage/swaps.py), under no_grad,
then once more under grad mode onto a tensor with the same storage and geometry that
requires grad where the source did: the graph's value of a storage made inside (an output
of the compiled function), or the source argument as it was at the call. The caller's
argument then gets eager's requires_grad, is_leaf and grad_fn, and eager's error where a
backward reaches it.

# NOTE [set_ under no_grad]
Under no_grad autograd records nothing: an argument that required grad keeps its
grad_fn (a non-leaf) or stays a leaf, only its data moves. The swap is replayed under
no_grad as any other; gradients of outputs computed from it after the swap reach it
through the compiled function's input. A swap onto another shape:
NOTE [set_ under no_grad onto another shape].

# NOTE [set_ under no_grad onto another shape]
FSDP's ``with no_grad(): p.set_(full.view(2, 2)); return p * inp`` with p a Parameter of
shape (2,). Eager's set_() gives a leaf a new AccumulateGrad, whose input metadata is the
new shape (``.data =`` keeps the old one while a use holds it, else makes a new one at the
next use): ``p * inp``'s gradient reaches p with shape (2, 2), and ``p.grad`` has it. Uses
before the swap keep the old AccumulateGrad, of the old shape, which accumulates into the
same ``.grad``: a gradient of the old shape is broadcast into it (or raises where it does
not broadcast). A non-leaf keeps its grad_fn, whose input metadata is the old shape:
autograd sums a gradient of the new shape down to it where it broadcasts, and raises
"invalid gradient" where it does not.

- The joint: an argument's functional wrapper mirrors the traced input's autograd
  metadata (an ``Error`` node of the shape at the call), so every gradient reaching it
  would be checked against the old shape. set_() reaches no TorchFunctionMode, so the
  recorder sees the swap at the next call that reads the wrapper of a leaf (or when the
  function returns: ``StorageWatch.regrad_reshaped``): on another storage and of
  another shape, it mirrors onto the wrapper a fresh leaf of the new shape. Uses after
  the swap reach a node of the new shape, as eager's, and the joint's gradient for the
  argument has that shape. Where a call under grad mode used the wrapper before, its
  node at the call (``old_edges``) is a gradient target too (``MutationInfo.old_grad_edge``).
  A non-leaf's wrapper is a copy with a grad_fn of its own, which stays (eager's sum).
- The runtime: the compiled function's input edge is taken when it is applied, with the
  shape the argument has then. Where the caller's argument is a leaf that requires grad
  and a swap moves it onto another shape, the forward graph runs first (under no_grad),
  the swap is replayed on the caller's tensor, and only then is the compiled function
  applied, to the moved argument, with the graph's values (``pre``) instead of running
  the graph again: its edge reaches the new AccumulateGrad with the new shape. For an
  old edge, a stand-in of the old shape (``_OldGradEdge``), made from the argument before
  the swap, is an input too: its gradient reaches the old AccumulateGrad, which
  accumulates as eager's does.
- ``.data =`` onto another shape after a use under grad mode: eager's leaf keeps its old
  AccumulateGrad while a use holds it (set_() would give it a new one). The uses before
  the assignment reach that node either way. A use after it gets the old node while a
  graph still holds it, else a new one
  (NOTE [.data = onto another shape while a use holds the node] in capture/storage/watch.py); the latter is
  replayed as a set_() is (the old edge as above). Dynamo lowers ``.data =`` to set_() under no_grad (and a
  version-counter call of its own), so in Dynamo's graph
  (``data_assign.lowers_data_assignment``) every such swap is taken for a ``.data =``. A
  second swap onto another shape is refused too.

# NOTE [grad writes after a swap]
``x.set_(y); x.mul_(u)`` (x, y requiring no grad, u requiring grad): the swap is not
recorded, the write is: eager's x becomes a non-leaf (MulBackward0) over y's storage, and
y, which shares the new data, still requires no grad. The graph returns x's final value
(``grad_value_output``); the runtime replays the write-back of y and the swap under
no_grad, then copies that value into x under grad mode (the same data again), so that x
requires grad and its gradient reaches u through the compiled function. Where x's history
reaches a recorded set_() (NotImplemented), or the storage's other tensor requires grad,
the swap stays refused. A ``.data =`` (never recorded) followed by writes that autograd
records is replayed the same way, whatever requires grad
(NOTE [.data assignment of an argument that requires grad] in capture/storage/swaps.py).
"""
from __future__ import annotations

import torch

from ...errors import AotcheckError


def recorded_swaps(swaps) -> list[int]:
    """The swapped placeholders whose set_() autograd recorded (their grad_mode: the
    argument's grad_fn changed, which capture allows for a swap only when set_() made it, or,
    for a ``.data =`` that moved data only, when a write before it did:
    NOTE [.data assignment of an argument that requires grad] in capture/storage/swaps.py)."""
    return [m.placeholder for m in swaps if m.grad_mode and m.grad_value_output is None
            and not m.data_only]


def replay_recorded_swaps(primals: list, recorded: list[int]) -> None:
    """The second replay of NOTE [set_ recorded by autograd], after the no_grad one: set_()
    under grad mode onto a leaf that requires grad and holds the argument's new storage and
    geometry, so that autograd records it as eager did. A backward that reaches that node
    raises before it follows its edges, so which leaf it points to is never observed."""
    with torch.enable_grad():
        for p in recorded:
            t = primals[p]
            src = torch.empty(0, dtype=t.dtype, device=t.device).set_(
                t.untyped_storage(), t.storage_offset(), t.shape, t.stride())
            t.set_(src.requires_grad_())


def replay_grad_writes(swaps, primals: list, values: list, slot) -> None:
    """NOTE [grad writes after a swap]: after the swap, the argument's final value (the
    graph's, which carries its gradient) is copied into it under grad mode."""
    with torch.enable_grad():
        for m in swaps:
            if m.grad_value_output is not None:
                primals[m.placeholder].copy_(values[slot[m.grad_value_output]])


class _OldGradEdge(torch.autograd.Function):
    """A stand-in of a leaf's shape at the call, whose gradient goes to the leaf's gradient
    node of then (NOTE [set_ under no_grad onto another shape])."""

    @staticmethod
    def forward(ctx, t):
        # no gradient reaching it (no output holds a use of before the swap) stays none: a
        # materialized zero of the old shape would meet the leaf in its new one
        ctx.set_materialize_grads(False)
        return t.new_empty(()).expand(t.shape)

    @staticmethod
    def backward(ctx, grad):
        return grad


def old_grad_edges(primals: list, olds: tuple, late: tuple, grad_region: bool) -> list:
    """Per leaf in ``olds`` (used under grad mode, then set_() under no_grad onto another
    shape), taken before the runtime replays the swap: a tensor whose gradient reaches the
    leaf's AccumulateGrad of the old shape, as the uses before eager's swap do."""
    moved = {m.placeholder for m in late}
    if not set(olds) <= moved:
        raise AotcheckError("a compiled entry expects a swap onto another shape of a leaf that "
                            "requires grad, which this call does not make; clear the cache "
                            "entry and report this")
    with torch.set_grad_enabled(torch.is_grad_enabled() or grad_region):
        return [_OldGradEdge.apply(primals[p]) for p in olds]

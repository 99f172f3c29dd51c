"""swaps: after the call, where each swapped argument's storage went, or why aotcheck refuses it.

Called by functional_run.py for each argument (or alias-group member) whose storage the
function changed (``set_()``, ``.data =``), with what the watcher saw (watch.py): given
a ``SwapOf`` (the question), ``storage_swap`` answers with a ``SwapVerdict``: where the
storage went, a ``StorageSource`` (NOTE [storage swaps]), and a refusal that waits for the
run's facts (NOTE [swaps in an alias group]), or refuses the swap with a named reason.
``data_assign_swap`` says how ``.data =`` moved it
(NOTE [.data assignment of an argument that requires grad]); ``member_swap`` answers for an
alias-group member (NOTE [member storage swaps]). The runtime replays it (runtime/writeback.py;
runtime/swap_grad.py for a swap that autograd recorded).
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import torch

from ....errors import UnsupportedInputError
from ..facts import MemberFacts, StorageSource
from ..functional import dense_layout, geometry_of, storage_ref
from ..recorder import MetadataRecorder
from ...graph_walk import grad_nodes
from ...signature import whole_storage


class DataAssignSwap(enum.Enum):
    """How ``.data =`` moved a swapped placeholder
    (NOTE [.data assignment of an argument that requires grad])."""
    DATA_ONLY = "data only"     # nothing autograd records happened to it since its first one
    REWRITTEN = "rewritten"     # moved by ``.data =`` only (no set_()), and recorded by
                                # autograd since its first one: its final value is copied
                                # into it under grad mode (NOTE [grad writes after a swap])


@dataclass(frozen=True)
class SwapOf:
    """The question ``storage_swap`` answers: one placeholder whose storage the function
    changed, as the run found it after the call."""
    placeholder: int
    wrapper: torch.Tensor           # its work after the call (a functional wrapper, or a
                                    # plain run's placeholder)
    leaf: bool                      # an argument leaf, not an alias group's base
    grouped: bool = False           # shares storage with another argument: a refusal waits
                                    # (NOTE [swaps in an alias group])
    unrecorded: bool = False        # autograd recorded nothing on it (NOTE [set_ under no_grad])
    regrad: bool = False            # written with grad after a swap autograd did not record
                                    # (NOTE [grad writes after a swap])
    data_assigned: DataAssignSwap | None = None     # moved by ``.data =`` (None: not so)


@dataclass(frozen=True)
class SwapVerdict:
    """``storage_swap``'s answer: where the storage went, and the refusal that waits for the
    run's facts (None: none; a capture that makes the group a synthetic base replaces this
    one, NOTE [swaps in an alias group])."""
    source: StorageSource
    deferred: UnsupportedInputError | None = None


def source_of(ref, start_refs: list) -> StorageSource:
    """Where a swapped tensor's storage ``ref`` came from: a placeholder's storage at the call
    (``start_refs``: each one's), its own included, or else one made inside the function."""
    q = next((q for q, r in enumerate(start_refs) if r == ref), None)
    return StorageSource.made_inside() if q is None else StorageSource.of_placeholder(q)


def data_assign_swap(recorder: MetadataRecorder, p: int, anchor: torch.Tensor, w: torch.Tensor,
                     plain: bool) -> DataAssignSwap | None:
    """How ``.data =`` moved placeholder ``p``, whose storage the function changed
    (NOTE [.data assignment of an argument that requires grad]): ``DATA_ONLY``, given
    ``.data =`` with nothing autograd records on it since its first one; ``REWRITTEN``,
    moved by ``.data =`` only (no set_()) and recorded by autograd since its first one, so
    that it ends requiring grad with a history eager's ``.data =`` kept (its old one, or
    none) under the recorded writes; None, neither."""
    changes = recorder.storage.changes
    if p not in changes.data_sets:
        return None
    same = (anchor.grad_fn, w.requires_grad) == changes.data_set_state[p]
    if same:
        return DataAssignSwap.DATA_ONLY if p in changes.data_set_alias else None
    # (a leaf's gradient node of its new shape is no record:
    # NOTE [set_ under no_grad onto another shape] in runtime/swap_grad.py)
    rewritten = not plain and w.requires_grad and p in changes.data_set_alias and \
        not torch._functionalize_was_storage_changed(w) and not recorder.storage.regraded(p, anchor)
    if rewritten and any(r[:2] == ("placeholder", p) for r in recorder.retained):
        # the runtime gives the argument its final grad_fn by a copy of the graph's value, so
        # eager's retained gradient (at the node of the write after which retain_grad() was
        # called) is not the one the caller's argument would retain
        raise UnsupportedInputError(
            f"the function calls retain_grad() on input placeholder {p} and assigns its .data "
            "(x.data = y) with in-place writes that autograd records after the assignment; "
            "aotcheck does not keep eager's retained gradient for that combination "
            "(NOTE [.data assignment of an argument that requires grad])")
    return DataAssignSwap.REWRITTEN if rewritten else None


def member_swap(i: int, t: torch.Tensor, ref, start_refs, candidates: list,
                works: list) -> MemberFacts:
    """Argument leaf ``i``, a member of an alias group, after ``set_()`` moved it off the
    storage it shares.

    # NOTE [member storage swaps]
    ``a1.set_(v)`` with ``a0, a1 = b[0], b[1]``: the synthetic base keeps the group's
    storage, and ``a1`` now lives elsewhere, so what the function does to ``a0`` afterwards
    no longer reaches it. The runtime writes the group's base back first, then moves the
    caller's ``a1``: onto another argument's storage as it was at the call
    (``storage_source`` q), or onto a storage made inside the function, whose whole final
    value the graph returns (``made_inside``), in ``a1``'s final geometry.

    A member that requires grad after the swap only because the group's storage it left
    was written with grad (``a1.set_(c); b.copy_(u)``) is still an autograd view of the
    group's base in eager: set_() keeps a view's view metadata, so its grad_fn is rebuilt
    on the base (AsStridedBackward0 in its new geometry) though its data is ``c``'s. The
    runtime moves the caller's member under no_grad after writing the base back, so the
    same rebuild happens there. Other members that require grad after a swap are refused.
    """
    source = source_of(ref, start_refs)
    view_of_group = t._base is not None and not reaches_not_implemented(t.grad_fn) and \
        (source.new or not works[source.placeholder].requires_grad)
    if t.requires_grad and not view_of_group:
        raise swap_refusal(f"argument leaf {i}", "which shares storage with another argument, "
                            "onto a storage that requires grad")
    value_output = None
    if source.new:
        value_output = len(candidates)
        # its data only: the member's gradient goes through the group's base, as in eager
        candidates.append(whole_storage(t).detach() if view_of_group else whole_storage(t))
    return MemberFacts(i, *geometry_of(t), source, value_output)


def old_storage_written(old, written: set | None) -> bool:
    """Was the storage an argument had at the call written, after set_() moved the argument
    off it?

    # NOTE [writes before a storage swap]
    ``a.clamp_(-1, 1); a.set_(b)``: eager clamps the memory ``a`` had at the call, then moves
    ``a``; the caller's other views of that memory (an aliased argument, the caller's own
    base) see the clamp. Functionalization moves the wrapper to the new storage, so its
    mutation flags are the new storage's; the write is read on an alias of the old storage
    taken at the call. The graph returns that alias's final value (``value_output``), the
    runtime copies it into the argument before it replays the swap, and, where the argument
    shares storage with another one, the write makes the group a synthetic base (so the
    other argument reads it inside the graph too).
    """
    if old is None:
        return False
    alias, counter = old
    if written is not None:         # a plain run (storage_views.py): counter is its storage
        return counter in written
    torch._sync(alias)
    return torch._functionalize_mutation_counter(alias) != counter


def swap_refusal(p: int | str, why: str) -> UnsupportedInputError:
    where = p if isinstance(p, str) else f"input placeholder {p}"
    return UnsupportedInputError(
        f"the function calls set_() on {where}, {why}; aotcheck replays set_() "
        "of arguments that do not require grad onto another argument's storage, their own, or "
        "a new one")


# NOTE [storage swaps]
# Functionalization swaps a wrapper's functional storage on ``set_()``: afterwards the
# argument shares storage with the tensor it was set to, and data mutations through
# either are mutations of that one storage (the other argument's, if it was one, and
# that argument's write-back carries them). The runtime replays the swap after the
# write-backs: ``arg.set_(storage, offset, shape, stride)`` onto the other argument's
# storage as it was at the call, or ``arg.set_(value)`` for a storage made inside the
# function, whose value the graph returns. A swap that ends on the argument's own
# storage (``x.set_(x.t())``, or an undo ``x.set_(y)`` ... ``x.set_(old)``) is ``p``
# itself: the runtime sets the final geometry on it and, if the storage was written,
# copies the graph's value of the whole storage into it, since the final geometry
# may cover less of it than the writes did.
#
# Autograd and a swap: a set_() that autograd recorded
# (NOTE [set_ recorded by autograd] in swap_grad.py: the argument's grad_fn is the NotImplemented node
# at the end), and one under no_grad of an argument that requires grad onto a tensor of its
# shape (NOTE [set_ under no_grad]), are replayed as eager's. Other swaps of arguments
# that require grad are refused, and so are swaps onto another argument that requires
# grad, unless the one that requires grad was given requires_grad_() only after the
# swap, with no write to the storage afterwards (``a.set_(b); b.requires_grad_()``:
# eager's ``a`` requires no grad; ``a.set_(b); a.requires_grad_()``: a leaf over
# ``b``'s storage): the runtime sets the flag before the call and replays the swap
# under no_grad.
#
# NOTE [swaps in an alias group]
# An argument that shares storage with another one is its own placeholder in the first
# capture; when the function writes the shared storage (``v = a1[:, :1];
# a1.set_(a0); v.copy_(g)``, g requiring grad) the group becomes a synthetic base and
# the swap a member's (NOTE [member storage swaps]), replayed from the group's
# base, whose autograd is eager's. So the refusal waits for the run's facts, and is
# raised only where no synthetic-base capture replaces this one.
#
# NOTE [.data assignment of an argument that requires grad]
# ``a1.fill_(0.5); a1.data = a0``, a1 and a0 requiring grad: ``.data =`` is never
# recorded by autograd, whatever requires grad; a1 keeps its autograd identity (its
# grad_fn FillBackward0, from the write before) and gets a0's memory. Where nothing
# autograd records happened to the argument since its first ``.data =``
# (``DataAssignSwap.DATA_ONLY``), the swap moves data only: the runtime writes back what
# came before it (under grad mode where autograd saw it) and replays the swap under
# no_grad, which keeps the caller's tensor's autograd identity as eager's does.
# ``a1.data = a0; a1.add_(2.0)``: autograd records the write on a1 (AddBackward0 over
# its old history, CloneBackward0 of its leaf), while the memory written is a0's, whose
# grad_fn stays CloneBackward0 (its write-back is one autograd did not see, under
# no_grad). Where the argument was moved by ``.data =`` only (no set_()) and autograd
# recorded something on it since (``DataAssignSwap.REWRITTEN``), the swap is replayed
# as above and then the graph's final value of the argument is copied into it under grad mode
# (NOTE [grad writes after a swap] in swap_grad.py): its gradient reaches the argument's history at
# the call, and the operands of the writes, through the compiled function, as eager's
# does; a0 and a1 share a0's memory after the call, as in eager. On a leaf that
# requires grad that copy raises eager's error (an in-place op autograd records on a
# leaf). A gradient of the new shape that the old grad_fn cannot take raises at
# .backward() (NOTE [a gradient of a swapped argument's new shape] in joint.py).
def storage_swap(swap: SwapOf, start_refs: list, before: list, flags: list,
                 recorder: MetadataRecorder) -> SwapVerdict:
    """Where ``swap``'s placeholder ``p``'s storage went after ``set_()`` (or ``.data =``):
    placeholder q's storage at the call (p's own included), or a storage made inside the
    function; or the swap's refusal. ``start_refs`` and ``before``: per placeholder, its
    storage and its (grad_fn, requires_grad) at the call; ``flags``: per placeholder, whether
    it requires grad with a gradient edge of its own
    (NOTE [views of an argument given requires_grad_] in view_flags.py).
    """
    p, w = swap.placeholder, swap.wrapper
    if not swap.leaf:
        raise swap_refusal(p, "an argument that shares storage with another argument")
    ref = storage_ref(w)
    source = source_of(ref, start_refs)
    # (an argument given requires_grad_() after the swap gets its gradient through the
    # compiled function's input, which has its shape at the call: joint.py refuses a
    # gradient of another shape)
    # set_() under no_grad (NOTE [set_ under no_grad] in swap_grad.py): the argument keeps
    # its autograd identity (requiring grad or not), whatever its source requires; eager's
    # swap changes its data only
    kept = swap.unrecorded and before[p][1]
    if p in recorder.storage.changes.reshaped_twice:
        raise swap_refusal(p, "a leaf that requires grad, under no_grad onto tensors of two "
                            "other shapes in turn (eager's leaf then has a gradient node "
                            "per shape; aotcheck replays one swap onto another shape)")
    # set_() under grad mode with the argument or its source requiring grad: autograd
    # records it (NOTE [set_ recorded by autograd])
    if recorded_by_autograd(w):
        return SwapVerdict(source)
    # NOTE [.data assignment of an argument that requires grad] (above)
    if swap.data_assigned is not None:
        # ``a1.mul_(-1); a1.data = a1[:1]``, back onto its own storage after a write
        # autograd recorded: the runtime copies the storage in under grad mode after the
        # swap (writeback._grad_own), which keeps that history (a copy under no_grad lost
        # it: fuzz seed 3, the sign of the leaf's gradient, silently)
        return SwapVerdict(source)
    # written with grad after a swap that autograd did not record
    # (NOTE [grad writes after a swap] in swap_grad.py), onto a storage whose tensor requires no grad
    if swap.regrad and not source.onto(p) and (source.new or not flags[source.placeholder]):
        return SwapVerdict(source)
    q = source.placeholder          # None: a storage made inside
    if (flags[p] and not kept and not grad_after_swap(recorder, before, p, p, ref)) or (
            source.from_placeholder and q != p and flags[q]
            and not (swap.unrecorded and before[q][1])
            and not grad_after_swap(recorder, before, p, q, ref)):
        refusal = swap_refusal(p, "and the argument (or the tensor it is set to) requires grad")
        if not swap.grouped:
            raise refusal
        return SwapVerdict(source, deferred=refusal)    # NOTE [swaps in an alias group]
    # onto an argument that shares storage with another one (an alias group's root or
    # whole storage placeholder): members are as_strided views of that placeholder at
    # their absolute offsets, so the final geometry is one on the group's storage
    return SwapVerdict(source)


def grad_after_swap(recorder: MetadataRecorder, before: list, p: int, q: int, ref) -> bool:
    """Did placeholder ``q`` (a leaf that required no grad at the call) come to require grad
    by a requires_grad_() call made when placeholder ``p`` already shared its storage, with no
    write to that storage afterwards? (NOTE [storage swaps])"""
    if before[q] != (None, False):
        return False
    for who, events, refs in recorder.grad_calls:
        if who == ("placeholder", q):
            return refs[p] == ref and not any(
                what == "data" and st == ref for what, st in recorder.events[events:])
    return False


def recorded_by_autograd(w: torch.Tensor) -> bool:
    """Does the argument's history (its wrapper ``w``, not a view) reach a set_() that
    autograd recorded (a NotImplemented node)? (NOTE [set_ recorded by autograd])"""
    return w._base is None and reaches_not_implemented(w.grad_fn)


def grad_written_after_swap(w: torch.Tensor, before: tuple) -> bool:
    """Did the argument (its wrapper ``w``, which required no grad at the call: ``before`` is
    its (grad_fn, requires_grad) then) come to require grad through in-place ops that
    autograd recorded, none of them a set_() (NOTE [grad writes after a swap])?"""
    return w.requires_grad and w._base is None and w.grad_fn is not None and \
        before == (None, False) and not reaches_not_implemented(w.grad_fn)


def reaches_not_implemented(fn) -> bool:
    """Does the autograd graph from ``fn`` reach a NotImplemented node (a recorded set_())?"""
    return any(type(f).__name__ == "NotImplemented" for f in grad_nodes([fn]))


def fills_storage(t: torch.Tensor) -> bool:
    """Dense, from offset 0, over its whole storage."""
    return t.storage_offset() == 0 and dense_layout(t.shape, t.stride()) and \
        t.numel() * t.element_size() == t.untyped_storage().nbytes()


def unfilled_own_storage(plain: bool, placeholder: torch.Tensor, work: torch.Tensor,
                         geometry: tuple, nbytes: int, writes=()) -> bool:
    """Does the argument, set_() (or given ``.data =``) back onto its own storage, not fill
    that storage (dense, from offset 0), so that the graph does not hold its other elements?
    A plain run's own copy fills it; an argument that requires grad is not copied, and is
    judged in its ``geometry`` at the call, over ``nbytes`` (``.data =`` moves the plain
    placeholder itself: a Parameter at storage offset 1 given .data of its diagonal). There
    the graph holds the storage's other elements while every write goes through a view of
    the argument (NOTE [.data assignment in the plain trace] in data_assign.py), not while one
    writes the argument in its geometry at the call (``writes``: the recorder's, storage and
    geometry per write): functionalization then holds it as a compact value."""
    if not plain:
        return not fills_storage(placeholder)
    if work is not placeholder:
        return False
    shape, stride, offset = geometry
    if offset == 0 and dense_layout(shape, stride) and \
            math.prod(shape) * placeholder.element_size() == nbytes:
        return False
    at_call = (tuple(shape), tuple(stride), offset)
    return any(ref == storage_ref(placeholder) and (tuple(g[0]), tuple(g[1]), g[2]) == at_call
               for ref, g in writes)

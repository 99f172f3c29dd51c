"""swaps: where ``set_()`` moved an argument's storage, and whether aotcheck replays it.

Called by functional_run.py for each argument (or alias-group member) whose storage the
function swapped; returns where the storage went (NOTE [storage swaps]) or refuses the
swap with a named reason. The runtime replays it (runtime/writeback.py; runtime/swap_grad.py for a swap that
autograd recorded).
"""
from __future__ import annotations

import torch

from ....errors import UnsupportedInputError
from ..facts import MemberFacts, StorageSource
from ..functional import geometry_of, storage_ref
from ..plan import InputPlan
from ..recorder import MetadataRecorder
from ...graph_walk import grad_nodes
from ...signature import whole_storage


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
    value the graph returns (-2), in ``a1``'s final geometry.

    A member that requires grad after the swap only because the group's storage it left
    was written with grad (``a1.set_(c); b.copy_(u)``) is still an autograd view of the
    group's base in eager: set_() keeps a view's view metadata, so its grad_fn is rebuilt
    on the base (AsStridedBackward0 in its new geometry) though its data is ``c``'s. The
    runtime moves the caller's member under no_grad after writing the base back, so the
    same rebuild happens there. Other members that require grad after a swap are refused.
    """
    source = next((q for q, r in enumerate(start_refs) if r == ref), -2)
    view_of_group = t._base is not None and not _reaches_not_implemented(t.grad_fn) and \
        (source == -2 or not works[source].requires_grad)
    if t.requires_grad and not view_of_group:
        raise swap_refusal(f"argument leaf {i}", "which shares storage with another argument, "
                            "onto a storage that requires grad")
    value_output = -1
    if source == -2:
        value_output = len(candidates)
        # its data only: the member's gradient goes through the group's base, as in eager
        candidates.append(whole_storage(t).detach() if view_of_group else whole_storage(t))
    return MemberFacts(i, *geometry_of(t), StorageSource.of(source), value_output)


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


def storage_swap(plan: InputPlan, p: int, w: torch.Tensor, works, start_refs, start_geometry,
                  recorder: MetadataRecorder, before: list, flags: list,
                  deferred: dict | None = None,
                  unrecorded: bool = False, regrad: bool = False,
                  data_only: bool = False) -> int:
        """Where placeholder ``p``'s storage went after ``set_()``: q >= 0 (placeholder q's
        storage at the call, p's own included), or -2 (a storage made inside the function).
        ``flags``: per placeholder, whether it requires grad with a gradient edge of its own
        (NOTE [views of an argument given requires_grad_] in view_flags.py).

        # NOTE [storage swaps]
        Functionalization swaps a wrapper's functional storage on ``set_()``: afterwards the
        argument shares storage with the tensor it was set to, and data mutations through
        either are mutations of that one storage (the other argument's, if it was one, and
        that argument's write-back carries them). The runtime replays the swap after the
        write-backs: ``arg.set_(storage, offset, shape, stride)`` onto the other argument's
        storage as it was at the call, or ``arg.set_(value)`` for a storage made inside the
        function, whose value the graph returns. A swap that ends on the argument's own
        storage (``x.set_(x.t())``, or an undo ``x.set_(y)`` ... ``x.set_(old)``) is ``p``
        itself: the runtime sets the final geometry on it and, if the storage was written,
        copies the graph's value of the whole storage into it, since the final geometry
        may cover less of it than the writes did.

        Autograd and a swap: a set_() that autograd recorded
        (NOTE [set_ recorded by autograd] in swap_grad.py: the argument's grad_fn is the NotImplemented node
        at the end), and one under no_grad of an argument that requires grad onto a tensor of its
        shape (NOTE [set_ under no_grad]), are replayed as eager's. Other swaps of arguments
        that require grad are refused, and so are swaps onto another argument that requires
        grad, unless the one that requires grad was given requires_grad_() only after the
        swap, with no write to the storage afterwards (``a.set_(b); b.requires_grad_()``:
        eager's ``a`` requires no grad; ``a.set_(b); a.requires_grad_()``: a leaf over
        ``b``'s storage): the runtime sets the flag before the call and replays the swap
        under no_grad.

        # NOTE [swaps in an alias group]
        An argument that shares storage with another one is its own placeholder in the first
        capture; when the function writes the shared storage (``v = a1[:, :1];
        a1.set_(a0); v.copy_(g)``, g requiring grad) the group becomes a synthetic base and
        the swap a member's (NOTE [member storage swaps]), replayed from the group's
        base, whose autograd is eager's. So the refusal waits for the run's facts, and is
        raised only where no synthetic-base capture replaces this one.
        """
        if plan.placeholders[p][0] != "leaf":
            raise swap_refusal(p, "an argument that shares storage with another argument")
        ref = storage_ref(w)
        source = next((q for q, r in enumerate(start_refs) if r == ref), -2)
        # (an argument given requires_grad_() after the swap gets its gradient through the
        # compiled function's input, which has its shape at the call: joint.py refuses a
        # gradient of another shape)
        # set_() under no_grad (NOTE [set_ under no_grad] in swap_grad.py): the argument keeps
        # its autograd identity (requiring grad or not), whatever its source requires; eager's
        # swap changes its data only
        kept = unrecorded and before[p][1]
        if p in recorder.reshaped_twice:
            raise swap_refusal(p, "a leaf that requires grad, under no_grad onto tensors of two "
                                "other shapes in turn (eager's leaf then has a gradient node "
                                "per shape; aotcheck replays one swap onto another shape)")
        # set_() under grad mode with the argument or its source requiring grad: autograd
        # records it (NOTE [set_ recorded by autograd])
        if recorded_by_autograd(w):
            return source
        # NOTE [.data assignment of an argument that requires grad]
        # ``a1.fill_(0.5); a1.data = a0``, a1 and a0 requiring grad: ``.data =`` is never
        # recorded by autograd, whatever requires grad; a1 keeps its autograd identity (its
        # grad_fn FillBackward0, from the write before) and gets a0's memory. Where nothing
        # autograd records happened to the argument since its first ``.data =``
        # (``data_only``), the swap moves data only: the runtime writes back what came before
        # it (under grad mode where autograd saw it) and replays the swap under no_grad,
        # which keeps the caller's tensor's autograd identity as eager's does.
        # ``a1.data = a0; a1.add_(2.0)``: autograd records the write on a1 (AddBackward0 over
        # its old history, CloneBackward0 of its leaf), while the memory written is a0's, whose
        # grad_fn stays CloneBackward0 (its write-back is one autograd did not see, under
        # no_grad). Where the argument was moved by ``.data =`` only (no set_()) and autograd
        # recorded something on it since (``data_only`` here also carries that case,
        # data_assign.data_assign_swap's ``rewritten``), the swap is replayed as above and then
        # the graph's final value of the argument is copied into it under grad mode
        # (NOTE [grad writes after a swap] in swap_grad.py): its gradient reaches the argument's history at
        # the call, and the operands of the writes, through the compiled function, as eager's
        # does; a0 and a1 share a0's memory after the call, as in eager. On a leaf that
        # requires grad that copy raises eager's error (an in-place op autograd records on a
        # leaf). A gradient of the new shape that the old grad_fn cannot take raises at
        # .backward() (NOTE [a gradient of a swapped argument's new shape] in joint.py).
        if data_only:
            # ``a1.mul_(-1); a1.data = a1[:1]``, back onto its own storage after a write
            # autograd recorded: the runtime copies the storage in under grad mode after the
            # swap (writeback._grad_own), which keeps that history (a copy under no_grad lost
            # it: fuzz seed 3, the sign of the leaf's gradient, silently)
            return source
        # written with grad after a swap that autograd did not record
        # (NOTE [grad writes after a swap] in swap_grad.py), onto a storage whose tensor requires no grad
        if regrad and source != p and (source == -2 or not flags[source]):
            return source
        if (flags[p] and not kept and not grad_after_swap(recorder, before, p, p, ref)) or (
                source >= 0 and source != p and flags[source]
                and not (unrecorded and before[source][1])
                and not grad_after_swap(recorder, before, p, source, ref)):
            refusal = swap_refusal(p, "and the argument (or the tensor it is set to) requires grad")
            if deferred is None:
                raise refusal
            deferred[p] = refusal       # NOTE [swaps in an alias group]
        # onto an argument that shares storage with another one (an alias group's root or
        # whole storage placeholder): members are as_strided views of that placeholder at
        # their absolute offsets, so the final geometry is one on the group's storage
        return source


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
    return w._base is None and _reaches_not_implemented(w.grad_fn)


def grad_written_after_swap(w: torch.Tensor, before: tuple) -> bool:
    """Did the argument (its wrapper ``w``, which required no grad at the call: ``before`` is
    its (grad_fn, requires_grad) then) come to require grad through in-place ops that
    autograd recorded, none of them a set_() (NOTE [grad writes after a swap])?"""
    return w.requires_grad and w._base is None and w.grad_fn is not None and \
        before == (None, False) and not _reaches_not_implemented(w.grad_fn)


def _reaches_not_implemented(fn) -> bool:
    """Does the autograd graph from ``fn`` reach a NotImplemented node (a recorded set_())?"""
    return any(type(f).__name__ == "NotImplemented" for f in grad_nodes([fn]))

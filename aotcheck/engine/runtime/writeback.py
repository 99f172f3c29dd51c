"""writeback: the caller's tensors after the graph ran, as eager left them.

The forward graph is functional: what the function did to its arguments comes back as graph
values, and these write it into the caller's tensors (NOTE [mutation replay] in artifact.py):
data with ``copy_`` (each write checked first: ``check_write``), storage resizes and swaps
(``apply_mutations``), alias-group members' final geometry (``restore_member_geometry``), and
what a user's backward did to saved arguments (``apply_backward_mutations``).
"""
from __future__ import annotations

import torch

from ...errors import AotcheckError, UnsupportedInputError
from ..signature import storage_extent
from .swap_grad import recorded_swaps, replay_grad_writes, replay_recorded_swaps


def geometry(t: torch.Tensor) -> tuple:
    return tuple(t.shape), tuple(t.stride()), t.storage_offset()


def as_at_call(primals, early) -> list:
    """The placeholders as the graph reads them: an argument whose metadata calls were
    replayed before the call is read through an alias in its geometry at the call."""
    if not early:
        return primals
    primals = list(primals)
    for p, shape, stride, offset in early:
        primals[p] = primals[p].detach().as_strided(shape, stride, offset)
    return primals


def fits(t: torch.Tensor, shape, stride, offset) -> bool:
    last = offset + sum((n - 1) * st for n, st in zip(shape, stride) if n > 0)
    return offset >= 0 and (last + 1) * t.element_size() <= t.untyped_storage().nbytes()


def restore_member_geometry(leaves: list, members, storages_at_call, value) -> None:
    """An aliased argument (a member of a synthetic base) whose final geometry its logged
    metadata calls do not give: set_() onto a view of the same storage (``a0.set_(a1)`` with
    ``a0, a1 = b[0], b[1]``) changes it without a swap of storage, and set_ reaches no
    TorchFunctionMode. It is set to eager's final geometry on the storage it shares, or on
    the storage set_() moved it to (NOTE [member storage swaps] in storage/swaps.py)."""
    for m in members:
        t, source = leaves[m.leaf], m.storage_source
        shape, stride, offset = m.final_shape, m.final_stride, m.final_offset
        if not source.swapped:
            if (tuple(t.shape), tuple(t.stride()), t.storage_offset()) == \
                    (tuple(shape), tuple(stride), offset):
                continue
            storage = t.untyped_storage()
        else:
            storage = storages_at_call[source.placeholder] if source.from_placeholder \
                else value(m.value_output).untyped_storage()
        with torch.no_grad():
            t.set_(storage, offset, shape, stride)


def check_write(t: torch.Tensor, value: torch.Tensor, p: int) -> None:
    """The runtime never copies a value into an argument whose shape and storage it has not
    checked: a shape the graph's value does not have (an argument resized since the compile,
    or a metadata change the replay missed) would broadcast, or fail deep inside torch."""
    if tuple(t.shape) != tuple(value.shape):
        raise AotcheckError(
            f"input placeholder {p} is written back by the compiled function with a value of "
            f"shape {tuple(value.shape)}, but after its metadata calls were replayed it has shape "
            f"{tuple(t.shape)}; was it resized or restrided between the compile and this call?")
    check_storage_fits(t, p)


def check_storage_fits(t: torch.Tensor, p: int) -> None:
    """The runtime never writes through a storage it has not checked: copy_ does not check
    that the storage holds the tensor's elements (a zero-byte storage would be a crash)."""
    if t.numel() == 0:
        return
    if (storage_extent(t)[1] + 1) * t.element_size() > t.untyped_storage().nbytes():
        raise UnsupportedInputError(too_small(p, t))


def too_small(p: int, t: torch.Tensor) -> str:
    return (f"input placeholder {p} is written back by the compiled function, but its storage "
            f"holds {t.untyped_storage().nbytes()} bytes, fewer than its shape needs; was its "
            "storage resized between the compile and this call, or outside "
            "torch.ops.inductor.resize_storage_bytes_?")


def apply_mutations(meta, slot: dict, primals, values, at_call: dict,
                    done: frozenset = frozenset(), storages: list | None = None) -> None:
    """Write the graph's new values into the caller's tensors
    (NOTE [mutation replay] in artifact.py), resize their storages, and replay storage swaps; ``slot`` maps a
    candidate to its forward output, ``at_call`` gives an argument written before set_() moved it its
    geometry at the call; ``done``: placeholders whose mutations were replayed before the
    call (NOTE [set_ under no_grad onto another shape] in swap_grad.py), and ``storages``
    then the placeholders' storages at the call (those swaps moved some since)."""
    grad_on = torch.is_grad_enabled()
    swaps = []
    for m in meta.mutations:
        if m.placeholder in done:
            continue
        if m.storage_source.swapped:
            swaps.append(m)
        _before_swap(m, primals, values, slot, at_call, grad_on)
    if swaps:                        # NOTE [storage swaps] in storage/swaps.py
        storages = storages or [p.untyped_storage() for p in primals]   # as they were at the call
        # NOTE [set_ recorded by autograd] in swap_grad.py
        recorded = recorded_swaps(swaps)
        with torch.no_grad():
            for m in swaps:
                replay_swap(m, primals, storages, values, slot)
        if recorded:
            replay_recorded_swaps(primals, recorded)
        replay_grad_writes(swaps, primals, values, slot)
        with torch.enable_grad():
            for m in swaps:
                if _grad_own(m):
                    copy_whole_storage(m, primals[m.placeholder], values, slot)


def _before_swap(m, primals, values, slot, at_call: dict, grad_on: bool) -> None:
    """A placeholder's storage resize and data write-back, which come before any swap."""
    if m.storage_bytes is not None:     # NOTE [storage resizes] in capture/resize.py
        torch.ops.inductor.resize_storage_bytes_(primals[m.placeholder], m.storage_bytes)
    if m.data and not m.storage_source.onto(m.placeholder):
        target = primals[m.placeholder]
        if m.placeholder in at_call and geometry(target) != at_call[m.placeholder]:
            target = target.as_strided(*at_call[m.placeholder])
        value = values[slot[m.value_output]]
        check_write(target, value, m.placeholder)
        with torch.set_grad_enabled(grad_on and m.grad_mode):
            target.copy_(value)


def replay_swap(m, primals, storages, values, slot) -> None:
    """One storage swap (NOTE [storage swaps] in storage/swaps.py), under no_grad; ``storages``: the
    placeholders' storages at the call."""
    storage = values[slot[m.storage_output]].untyped_storage() \
        if m.storage_source.new else storages[m.storage_source.placeholder]
    target = primals[m.placeholder]
    if m.final_dtype or m.kept_grad_node or m.data_only:
        # ``.data =`` as eager's: it bumps no version, so a view keeps its grad_fn (set_()
        # would make autograd rebuild it on its base in the new geometry), and views of the
        # argument taken before it stay valid
        # (NOTE [views taken before .data =] in capture/outputs.py); it keeps a leaf's gradient node
        # (kept_grad_node: NOTE [.data = onto another shape while a use holds the node] in capture/storage/watch.py)
        _assign_data(target, storage, m)
    else:       # onto another argument's storage as it was at the call, or a new one
        target.set_(storage, m.final_offset, m.final_shape, m.final_stride)
    if m.data and m.storage_source.onto(m.placeholder) and not _grad_own(m):
        copy_whole_storage(m, target, values, slot)


def _grad_own(m) -> bool:
    """``a.mul_(-1); a.data = a[:1]``: back onto its own storage by ``.data =`` after a write
    autograd recorded; the storage's value is copied in under grad mode after the swap, so
    the argument keeps that write's history, as eager's (``.data =`` changes no grad_fn)."""
    return m.data_only and m.grad_mode and m.data and m.storage_source.onto(m.placeholder)


def copy_whole_storage(m, target, values, slot) -> None:
    """A swap onto the argument's own storage, written: the whole of it comes back."""
    whole = values[slot[m.value_output]]
    if whole.numel() * whole.element_size() > target.untyped_storage().nbytes():
        raise UnsupportedInputError(too_small(m.placeholder, target))
    target.as_strided(whole.shape, (1,), 0).copy_(whole)


def reshaped_leaves(swaps, primals) -> tuple:
    """The swaps (under no_grad) that move a leaf requiring grad onto another shape: their
    compiled function takes its inputs after them
    (NOTE [set_ under no_grad onto another shape] in swap_grad.py), or onto another dtype (``.data =``,
    replayed by ``_assign_data``): the leaf's new AccumulateGrad has the new dtype, as eager's made at the
    next use has."""
    return tuple(m for m in swaps if primals[m.placeholder].requires_grad
                 and primals[m.placeholder].is_leaf
                 and (tuple(primals[m.placeholder].shape) != tuple(m.final_shape) or (
                     m.final_dtype and getattr(torch, m.final_dtype) != primals[m.placeholder].dtype)))


def replay_reshaping_swaps(late, primals, values, slot) -> None:
    """The swaps ``reshaped_leaves`` found, replayed under no_grad (with the resize and the
    write-back of the memory the argument had, which come first) before the compiled function
    takes its inputs; ``values``: the forward graph's outputs."""
    storages = [p.untyped_storage() for p in primals]     # as they are at the call
    at_call = {m.placeholder: geometry(primals[m.placeholder]) for m in late}
    with torch.no_grad():
        for m in late:
            _before_swap(m, primals, values, slot, at_call, False)
        for m in late:
            replay_swap(m, primals, storages, values, slot)


# NOTE [.data assignment]
def _assign_data(target: torch.Tensor, storage, m) -> None:
    """``x.data = y`` (``set_data``) keeps ``x``'s identity and autograd metadata and gives it
    ``y``'s storage, geometry and dtype; views of ``x`` taken before keep the old storage.
    Tracing sees it as a storage swap of the argument's wrapper (the recorder notes the
    ``data`` setter, which functionalization does not flag as a swap), replayed as one; a
    swap onto another dtype cannot be a ``set_()`` (which keeps the dtype), so it is
    replayed as eager's: ``.data =`` a tensor of the new dtype over the storage."""
    dtype = getattr(torch, m.final_dtype) if m.final_dtype else target.dtype
    src = torch.empty(0, dtype=dtype, device=target.device).set_(
        storage, m.final_offset, m.final_shape, m.final_stride)
    target.data = src


def apply_backward_mutations(targets, mutations, values) -> None:
    """What the user's backward did to saved arguments (NOTE [backward mutations] in joint.py),
    done to the caller's tensors; called under no_grad."""
    k = 0
    for t, (_, data, shape, stride, offset) in zip(targets, mutations):
        if (tuple(t.shape), t.stride(), t.storage_offset()) != (tuple(shape), tuple(stride), offset):
            t.as_strided_(shape, stride, offset)
        if data:
            check_write(t, values[k], -1)
            t.copy_(values[k])
            k += 1

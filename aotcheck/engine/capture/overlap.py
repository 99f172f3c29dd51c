"""overlap: in-place pointwise writes to a tensor whose elements share memory, as eager runs them.

# NOTE [overlapping writes]
``x.unfold(1, 3, 2).abs_()`` writes a tensor whose windows overlap: eager runs it (its
overlap check only refuses what it can prove, a stride-0 dimension of size > 1), visiting
the elements in TensorIterator's order, each visit reading the memory as the earlier visits
left it: a location seen twice gets the op twice (``add_(1)`` adds 2 there; ``abs_`` is the
same either way). Functionalization refuses any write to a tensor with internal overlap.
So the recorder splits such a write (of a pointwise op) into writes of pieces that do not
overlap themselves: the tensor indexed over its outermost dimensions in eager's order
(strides descending, ties by position, size-1 dimensions skipped), as few as make each
piece free of overlap, each piece written in turn with the matching piece of the other
operands (broadcast to the tensor's shape). Within a piece no location repeats, so each
piece's write is eager's; between pieces the order is eager's iteration order. A write
through a stride-0 dimension raises eager's own error. Writes whose footprint is too large
to list, ops that are not pointwise, and writes that autograd records (a tensor requiring
grad, under grad mode: the pieces' saved values would be overwritten by later pieces) are
left as they were (functionalization refuses them)."""
from __future__ import annotations

import itertools

import torch

from .outputs import _footprint

# in-place ops that write each element from the same position of their operands, whose
# aten op is not tagged pointwise
_ELEMENTWISE = frozenset({"copy_", "fill_", "zero_", "masked_fill_"})
# the writes eager lets through a stride-0 dimension (each location gets one value)
_FILLS = frozenset({"fill_", "zero_", "masked_fill_"})
_DUNDERS = {"__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_",
            "__ifloordiv__": "floor_divide_", "__imod__": "remainder_", "__ipow__": "pow_",
            "__iand__": "bitwise_and_", "__ior__": "bitwise_or_"}


def _pointwise(name: str) -> bool:
    name = _DUNDERS.get(name, name)
    if name in _ELEMENTWISE:
        return True
    packet = getattr(torch.ops.aten, name[:-1], None)     # the functional op carries the tag
    try:
        return any(torch.Tag.pointwise in getattr(packet, o).tags for o in packet.overloads())
    except (AttributeError, RuntimeError, TypeError):
        return False


def _overlaps(shape, stride) -> bool | None:
    """Does a geometry address some location twice? None when it cannot be listed."""
    n = 1
    for sz in shape:
        n *= sz
    if n <= 1:
        return False
    span = sum((sz - 1) * st for sz, st in zip(shape, stride) if sz > 0) + 1
    points = _footprint(shape, stride, 0, span)
    return None if points is None else len(points) < n


def outer_dims(t: torch.Tensor, name: str) -> list[int] | None:
    """The dimensions to index a write over (NOTE [overlapping writes]), or None when the
    write is left as it is."""
    if t.layout != torch.strided or not _pointwise(name):
        return None
    try:
        shape, stride = [int(n) for n in t.shape], [int(s) for s in t.stride()]
    except (TypeError, RuntimeError):
        return None
    if any(sz > 1 and st == 0 for sz, st in zip(shape, stride)) and name not in _FILLS:
        # eager's own check refuses this write, before it writes anything
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation.")
    if not _overlaps(shape, stride):
        return None
    if torch.is_grad_enabled() and t.requires_grad:
        # autograd over the pieces would save values a later piece overwrites; eager's one
        # write saves them once: left as it was (functionalization refuses it)
        return None
    order = sorted((d for d in range(len(shape)) if shape[d] > 1), key=lambda d: (-stride[d], d))
    for k in range(1, len(order) + 1):
        rest = [d for d in range(len(shape)) if d not in order[:k]]
        if _overlaps([shape[d] for d in rest], [stride[d] for d in rest]) is False:
            return order[:k]
    return None


def piecewise(call, func, args: tuple, kwargs: dict, dims: list[int]):
    """Run the in-place ``func`` on ``args[0]`` piece by piece over ``dims`` through ``call``
    (the recorder's own ``__torch_function__``, so each piece is recorded as a write)."""
    target = args[0]
    shape, stride = tuple(target.shape), tuple(target.stride())
    root = target._base if target._base is not None else target
    rest = [d for d in range(len(shape)) if d not in dims]

    def piece_of(v, index):
        if not isinstance(v, torch.Tensor):
            return v
        return v.expand(shape)[index]

    for point in itertools.product(*(range(shape[d]) for d in dims)):
        index = [slice(None)] * len(shape)
        for d, i in zip(dims, point):
            index[d] = i
        index = tuple(index)
        # the written piece is cut from the root directly: functionalization would otherwise
        # write it back through the overlapping view, which it refuses
        written = root.as_strided([shape[d] for d in rest], [stride[d] for d in rest],
                                  target.storage_offset() + sum(i * stride[d]
                                                                for d, i in zip(dims, point)))
        piece_args = (written,) + tuple(piece_of(a, index) for a in args[1:])
        piece_kwargs = {k: piece_of(v, index) for k, v in kwargs.items()}
        call(func, (torch.Tensor,), piece_args, piece_kwargs)
    return target


def untiled_unfold(name: str, target, args: tuple, kwargs: dict) -> bool:
    """Is this call an ``unfold`` whose windows leave elements of its input's dimension
    uncovered (a step larger than the size, or a tail no window reaches)?

    # NOTE [writes through an unfold that leaves gaps]
    Functionalization writes a mutated view back into its base through the view's inverse; an
    unfold's is ``unfold_backward``, which starts from zeros and adds each window in. Where the
    windows do not cover every element of the unfolded dimension (``x.unfold(0, 2, 3)``: a gap
    after each window; ``unfold(0, 2, 2)`` of 9 elements: the last one), a write through the
    unfold view wrote zeros over the elements between the windows, where eager's write leaves
    them untouched: silently wrong values, in PyTorch's own AOTAutograd too. So the recorder
    marks the storage of such an unfold, and a write through a view of that storage is a
    limit of the first way (errors.VIEW_LIMITS): the second way (storage_views.py) writes
    through ``as_strided`` on the storage itself, element by element, as eager does.
    (Overlapping windows cover everything; their writes are split by NOTE [overlapping writes].)"""
    if name != "unfold" or target is None or not isinstance(target, torch.Tensor):
        return False
    positional = list(args[1:4])
    dim, size, step = positional + [kwargs.get(k) for k in ("dimension", "size", "step")[len(positional):]]
    if not all(isinstance(v, int) for v in (dim, size, step)):
        return False
    n = target.shape[dim] if target.dim() else 1
    return step > size or (n >= size and (n - size) % step != 0)


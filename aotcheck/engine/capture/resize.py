"""resize: what ``resize_`` and ``out=`` do to a tensor's geometry while it is traced.

The recorder (``recorder.py``) asks these: the shapes an op gives without ``out=``
(NOTE [out= resizes]), the geometry a ``resize_`` leaves (NOTE [resize_ of an argument]), whether a
view reaches outside its source, and the geometry a logged replay ends in.
"""
from __future__ import annotations

import math
import re

import torch
from torch.utils import _pytree as pytree

from ...errors import UnsupportedInputError
from .functional import dense_layout, geometry_of, storage_ref


def result_shapes(func, args: tuple, kwargs: dict, geometry: dict | None = None) -> list | None:
    """The (shape, strides) of ``func``'s results without ``out=`` (NOTE [out= resizes]), or
    None; ``geometry``: eager's (shape, strides, offset) of tensors whose own may have drifted
    (NOTE [eager geometry])."""
    tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    if not tensors or any(t.layout != torch.strided for t in tensors):
        return None

    def meta(t):
        if not isinstance(t, torch.Tensor):
            return t
        shape, stride, _ = (geometry or {}).get(id(t)) or (t.shape, t.stride(), 0)
        return torch.empty_strided(shape, stride, dtype=t.dtype, device="meta")

    def inner(t):
        if isinstance(t, torch.Tensor) and torch._is_functional_tensor(t):
            return torch._from_functional_tensor(t)
        return t

    from torch.fx.experimental.proxy_tensor import disable_proxy_modes_tracing
    for convert in (meta, inner):
        try:
            with disable_proxy_modes_tracing(), torch.no_grad(), torch._C._ExcludeDispatchKeyGuard(
                    torch._C.DispatchKeySet(torch._C.DispatchKey.Functionalize)):
                a, k = pytree.tree_map(convert, (args, kwargs))
                out = func(*a, **k)
        except Exception:       # no kernel for these tensors: the op resizes as before
            continue
        results = [out] if isinstance(out, torch.Tensor) else list(out) \
            if isinstance(out, (list, tuple)) else None
        if results is None or not all(isinstance(r, torch.Tensor) for r in results):
            return None
        return [(tuple(r.shape), tuple(r.stride())) for r in results]
    return None


# NOTE [out= strides]
def restrides_out(func) -> bool:
    """Eager's TensorIterator kernels (pointwise ops) give an out tensor they resize the layout
    of their result (TensorIteratorBase::set_output_raw_strided: ``resize_output``, then
    ``as_strided_`` to the strides computed from the inputs), so ``torch.sin(x.t(),
    out=torch.empty(0))`` is laid out as ``x.t()``; fake and meta tensors resize it contiguous
    (torch's out wrapper), and so would the trace. For these ops the out tensor is
    restrided as eager does, before the op writes it."""
    packet = getattr(torch.ops.aten, getattr(func, "__name__", ""), None)
    op = getattr(packet, "default", None) if packet is not None else None
    return op is not None and torch.Tag.pointwise in op.tags


# Operands larger than this (elements, all together) keep the layouts ``result_shapes`` gives:
# the eager run of ``out_layouts`` allocates and computes them
EAGER_OUT_MAX_NUMEL = 1 << 18


def _run_on_ones(func, args: tuple, kwargs: dict, geometry: dict | None) -> list:
    """Run ``func`` with its ``out=`` on real CPU tensors of the same dtypes and geometries
    (ones; out tensors as they are before the op; ``geometry``: eager's,
    NOTE [eager geometry]), outside the trace; returns the out tensors after it. Raises what eager's
    kernel raises on those tensors, or ValueError past ``EAGER_OUT_MAX_NUMEL`` elements."""
    import warnings
    from torch.utils._python_dispatch import _disable_current_modes

    def extent(t):
        shape, stride, offset = (geometry or {}).get(id(t)) or geometry_of(t)
        return offset + sum((k - 1) * st for k, st in zip(shape, stride) if k > 0) + 1

    def real(t):
        if not isinstance(t, torch.Tensor):
            return t
        shape, stride, offset = (geometry or {}).get(id(t)) or geometry_of(t)
        return torch.ones(max(extent(t), 1), dtype=t.dtype).as_strided(shape, stride, offset)
    tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    if sum(extent(t) for t in tensors) > EAGER_OUT_MAX_NUMEL:
        raise ValueError("too large")
    with _disable_current_modes(), torch._C._ExcludeDispatchKeyGuard(
            torch._C.DispatchKeySet(torch._C.DispatchKey.Functionalize)), torch.no_grad(), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")     # resize_output's deprecation warning
        a, k = pytree.tree_map(real, (args, kwargs))
        k = {n: (torch.device("cpu") if n == "device" else v) for n, v in k.items()}
        func(*a, **k)
    return pytree.tree_leaves(k["out"])


def out_layouts(func, args: tuple, kwargs: dict, shapes: list,
                geometry: dict | None = None) -> tuple[bool, list]:
    """NOTE [out= strides], for any kernel: (whether to restride, (shape, strides) per out
    tensor) for ``func``'s out tensors resized to ``shapes``' shapes. Not only TensorIterator
    kernels restride what they resize: every structured kernel does, to its meta function's
    strides (``where``, a broadcast ``add`` into a non-empty out tensor; others, ``cholesky``,
    leave it contiguous), and the fake kernels do not tell which. So the op runs with out= on
    real tensors of the same geometries (``_run_on_ones``), up to ``EAGER_OUT_MAX_NUMEL``
    elements with the results; where that fails, the pointwise rule above."""
    try:
        if sum(math.prod(s) for s, _ in shapes) > EAGER_OUT_MAX_NUMEL:
            raise ValueError("too large")
        outs = _run_on_ones(func, args, kwargs, geometry)
        if [tuple(t.shape) for t in outs] == [tuple(s) for s, _ in shapes]:
            return True, [(tuple(t.shape), tuple(t.stride())) for t in outs]
    except Exception:       # noqa: BLE001 - no eager run: the pointwise rule
        pass
    return restrides_out(func), shapes


# The messages of eager's out= dtype checks (TensorIterator's "result type Float can't be cast
# to the desired output type Long", "Found dtype Double but expected Float", "Expected out
# tensor to have dtype float, but got double instead", "Expected out type to be Float but got
# Double"): they depend on dtypes alone, never on values
OUT_DTYPE_ERRORS = re.compile(r"dtype|can't be cast to the desired output type|out type", re.I)


# NOTE [out= dtype checks]
def check_out_dtypes(func, args: tuple, kwargs: dict, geometry: dict | None = None) -> None:
    """``torch.clamp(a, 0, 1, out=torch.empty(0, dtype=torch.float64))`` with a float32 ``a``:
    eager's CPU kernel refuses the out tensor's dtype (RuntimeError), but the meta and fake
    kernels the trace runs do not check it, and functionalization turns the call into the op
    without out= and a copy, which casts. So each out= call also runs as eager runs it, on
    real tensors of its dtypes and geometries (``_run_on_ones``), and where eager's kernel
    refuses a dtype there, the function raises that error at that call, as eager does.
    Errors that may depend on values (a Cholesky factor of ones) are left to the trace, and
    so is a call that autograd refuses first (an operand requiring grad under grad mode:
    "functions with out=... arguments don't support automatic differentiation")."""
    if torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad
                                       for t in pytree.tree_leaves((args, kwargs))):
        return
    try:
        _run_on_ones(func, args, kwargs, geometry)
    except RuntimeError as e:
        if OUT_DTYPE_ERRORS.search(str(e)):
            raise RuntimeError(str(e)) from None
    except Exception:       # noqa: BLE001 - not run here: the trace decides
        pass


def contiguous_layout(shape, stride) -> bool:
    """Are ``stride`` the contiguous strides of ``shape`` (a size-one dimension's stride, which
    addresses no memory, aside)?"""
    from torch._prims_common import make_contiguous_strides_for
    return all(n <= 1 or a == b for n, a, b in zip(shape, stride, make_contiguous_strides_for(shape)))


class EagerOutLayouts(torch.overrides.TorchFunctionMode):
    """NOTE [out= strides] for a run on fake tensors without the recorder (the eager
    geometry run): each out tensor a pointwise op will resize is resized and restrided first."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = kwargs.get("out")
        if isinstance(out, torch.Tensor) and out.layout == torch.strided:
            found = result_shapes(func, args, {k: v for k, v in kwargs.items() if k != "out"})
            if found is not None and len(found) == 1 and tuple(out.shape) != found[0][0]:
                restride, found = out_layouts(func, args, kwargs, found)
                out.resize_(found[0][0])
                if restride and not contiguous_layout(*found[0]):
                    out.as_strided_(*found[0])
        return func(*args, **kwargs)


# NOTE [resize_ of an argument]
def resize_geometry(rec, target, args, kwargs) -> tuple:
    """Eager's ``t.resize_(size)`` keeps ``t``'s storage and offset: when ``size`` needs more
    bytes than the storage has, the storage grows in place (its bytes kept, the new ones
    uninitialised), and ``t`` becomes contiguous from its offset (a resize to the sizes it
    already has changes nothing). A shrink is a view, which functionalization replays as
    one. A growth it does only for a tensor whose storage nothing else holds, and aotcheck
    itself holds the storages it watches (their Python objects), so a functional run grows
    a tensor itself (``resize.grow``): its value becomes ``aten.resize`` of it (a
    clone, grown), set_() onto the tensor. Where another tensor views the storage (eager's
    view sees the grown tensor's writes; the clone's would not) the first way refuses, and
    capture takes the second, which grows the storage itself
    (NOTE [a storage grown by resize_] in storage_views.py); a view of an argument grown inside is refused by
    name.

    The clone holds ``t``'s own elements only. That is eager's grown tensor when ``t`` is dense
    and ends where its storage ends (``randn(0)``, ``randn(2)``, ``x[1:]`` of a 1-d ``x``): it
    then holds ``t``'s elements, in memory order, and new ones. Otherwise eager's grown
    tensor also reads the storage's other elements, which the graph does not hold: refused.
    The runtime replays the user's resize_ on the caller's tensor
    (NOTE [mutation replay] in runtime/artifact.py), which grows its storage as eager's does, and then writes
    the argument's new value back.

    Returns (eager's geometry after the call, whether it grows the storage), or (None,
    False) when the call will raise as eager's does (a tensor that requires grad: "cannot
    resize variables that require grad")."""
    if target is None or target.requires_grad or target.layout != torch.strided:
        return None, False
    size = _requested_size(args, kwargs)
    if size is None:
        return None, False
    geometry = rec.geometry.get(id(target)) or rec.start_geometry.get(id(target)) \
        or geometry_of(target)
    shape, stride, offset = geometry
    if size == tuple(shape):
        return (tuple(shape), tuple(stride), offset), False
    new_stride, n = [], 1
    for sz in reversed(size):
        new_stride.insert(0, n)
        n *= max(sz, 1)
    numel = math.prod(size)
    kind, index = rec.watched.get(id(target), (None, None))
    if kind == "placeholder":
        grows = _placeholder_grows(rec, target, index, geometry, numel)
    else:
        grows = _intermediate_grows(rec, target, kind, index, numel)
    from .outputs import holds
    if kind is not None and not grows and not holds((shape, stride, offset),
                                                     (size, tuple(new_stride), offset)):
        # ``b[:2]`` of a 4-element ``b``, resized to 4: eager's tensor now addresses storage
        # elements the argument did not. Functionalization replays the resize as a view of
        # the argument (its own elements), and writes through it scatter into those: wrong
        raise UnsupportedInputError(
            f"the function resizes an argument (input {kind} {index}) with resize_() onto "
            "storage elements it did not address (a slice or strided view, resized over its "
            "storage's other elements); aotcheck cannot replay that resize (functionalization's "
            "view of the argument holds the argument's own elements only). Resize a tensor "
            "that owns its storage, or take the view you need with as_strided")
    return (size, tuple(new_stride), offset), grows


def _requested_size(args: tuple, kwargs: dict) -> tuple | None:
    """The sizes ``resize_`` is called with, as ints; None where they are not plain ints."""
    size = args[1] if len(args) == 2 and isinstance(args[1], (list, tuple, torch.Size)) else \
        args[1:] if len(args) > 1 else kwargs.get("size", ())
    try:
        return tuple(int(n) for n in size)
    except (TypeError, ValueError):
        return None


def _placeholder_grows(rec, target, index: int, geometry: tuple, numel: int) -> bool:
    """Does a resize_ to ``numel`` elements grow placeholder ``index``'s storage (as eager's
    storage size says)? A growth is recorded, or refused where eager's grown tensor would read
    storage elements the graph does not hold."""
    shape, stride, offset = geometry
    es = target.element_size()
    have = rec.storage_nbytes.get(index, target.untyped_storage().nbytes())
    grows = (offset + numel) * es > have
    if grows:
        dense = 0 in shape or dense_layout(shape, stride)     # an empty tensor is dense
        if not (dense and (offset + math.prod(shape)) * es == have):
            raise UnsupportedInputError(
                f"the function grows input placeholder {index} with resize_() beyond its "
                f"storage ({have} bytes), and the argument is not a dense tensor ending where "
                "its storage ends (a slice, a strided view, or a view into a larger storage); "
                "eager's grown tensor then reads the storage's other elements, which the "
                "functional graph does not hold. Pass a contiguous tensor that owns its storage")
        rec.grown.add(index)
        rec.storage_nbytes[index] = (offset + numel) * es
    return grows


def _intermediate_grows(rec, target, kind: str | None, index, numel: int) -> bool:
    """Does a resize_ to ``numel`` elements grow the storage of an intermediate (or of an
    aliased argument, whose functional storage is eager's)? Refused where that storage is an
    argument's."""
    grows = (target.storage_offset() + numel) * target.element_size() > \
        target.untyped_storage().nbytes()
    if grows and kind is None and any(storage_ref(target) == storage_ref(t)
                                      for t in rec._watched_tensors):
        # eager grows the caller's storage, which every view of it then sits on: the
        # runtime replays resize_ on an argument itself only (NOTE [mutation replay]),
        # and the graph's value of the argument is its own elements, not the storage
        raise UnsupportedInputError(
            "the function grows the storage of an argument with resize_() on a view of "
            "it taken inside the function; eager grows the caller's storage, and aotcheck "
            "replays resize_ on the argument tensor itself only. Resize the argument you "
            "were given, or clone the view first")
    if grows and kind == "leaf":
        raise UnsupportedInputError(
            f"the function grows argument leaf {index} with resize_() beyond its storage, "
            "and the argument is traced as a view of its storage (it shares storage with "
            "another argument, or is written outside its own elements); functionalization "
            "cannot grow a view (a PyTorch limit). Pass the arguments without aliasing")
    return grows


def reaches_outside(view: tuple, source: tuple) -> bool:
    """Does ``view`` (shape, stride, offset) address memory that ``source`` does not, or does
    ``source`` overlap itself (as_strided's backward then divides)?"""
    from .outputs import _footprint, holds
    inside = _footprint(*source, 0)
    n = 1
    for sz in source[0]:
        n *= sz
    return not holds(source, view) or (inside is not None and len(inside) < n)


def replayed_geometry(start: tuple, log: list, p: int) -> tuple | None:
    """The geometry placeholder ``p``'s in-place metadata calls in ``log`` (a recorder's
    ``log``) give, from ``start`` (on a meta tensor), or None when they cannot be replayed there."""
    shape, stride, offset = start
    n = offset + sum((sz - 1) * st for sz, st in zip(shape, stride) if sz > 0) + 1
    try:
        t = torch.empty(max(n, 0), device="meta").as_strided(shape, stride, offset)
        for kind, index, method, args, kwargs, _ in log:
            if (kind, index) == ("placeholder", p):
                getattr(t, method)(*args, **dict(kwargs))
    except (RuntimeError, TypeError, ValueError, IndexError):
        return None
    return geometry_of(t)


def grow(t: torch.Tensor, size: tuple, watched: dict, old_storage: dict) -> None:
    """Grow functional tensor ``t`` to ``size`` as eager's resize_ does
    (NOTE [resize_ of an argument] in resize.py): its value becomes ``aten.resize`` of it, set_() onto
    it."""
    kind, p = watched.get(id(t), (None, None))
    if kind == "placeholder":
        old_storage.pop(p, None)        # aotcheck's own alias (NOTE [writes before a storage swap])
    storage = t.untyped_storage()
    # the tensor itself and the storage's Python object; any more is another tensor on it
    shared = torch._C._storage_Use_Count(storage._cdata) > 2 or \
        torch._C._functionalization.get_view_meta_sequence(t)
    del storage
    if shared:
        # the second way grows the storage itself
        # (NOTE [a storage grown by resize_] in storage_views.py): capture takes it on this refusal
        # (errors.VIEW_LIMITS)
        raise UnsupportedInputError(
            "the function grows a tensor with resize_() beyond its storage while another tensor "
            "views that storage (or it is itself a view); functionalization cannot grow a "
            "storage that views share (a PyTorch limit)")
    t.set_(torch.ops.aten.resize.default(t, list(size)))


def resized_storage_bytes(before: int, after: int | None, p: int) -> int:
    """The size in bytes of placeholder ``p``'s storage after the call if the function resized
    it (``torch.ops.inductor.resize_storage_bytes_``, FSDP's pattern), else None.

    # NOTE [storage resizes]
    Functionalization does not put a resize in the graph (it resizes the fake storage and
    moves on), so the recorder sees the user's call and the runtime replays it on the
    argument before writing the argument's new value back (a write into a zero-byte storage
    would corrupt memory). As in PyTorch's AOTAutograd, a resize must start or end at zero
    bytes: from zero it is an allocation whose contents the function then writes, to zero it
    frees the storage (and nothing is written back).
    """
    if after is None or (after == before and after != 0):
        return None
    if before != 0 and after != 0:
        raise UnsupportedInputError(
            f"the function resizes the storage of input placeholder {p} from {before} to {after} "
            "bytes; aotcheck (like PyTorch's AOTAutograd) replays storage resizes of arguments "
            "that start or end at zero bytes only")
    return after

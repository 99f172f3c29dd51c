"""subclass.wrapper_set: ``set_()`` of a wrapper subclass onto a plain tensor, in the subclass trace.

# NOTE [subclass set_ onto a plain tensor]
``a.set_(v)`` with ``a`` a ``TwoTensor`` and ``v`` a plain tensor: eager's
``TwoTensor.__torch_dispatch__`` sets each inner tensor onto ``v``, then
``return_and_correct_aliasing`` gives the wrapper ``v``'s storage and geometry, with the
wrapper's own metadata kernel under ``no_dispatch``. In the subclass trace (desugar.py,
``_compile``) ``v`` is a FakeTensor, whose real storage is on the meta device, while the
wrapper's is on ``v``'s reported device: that last step raises ("Attempted to set the storage
of a tensor on device "cpu" to a storage on different device "meta""), a limit of tracing
with fake tensors, not the function's error. The inner ``set_()`` calls have run (and are in
the graph) by then; this mode gives the wrapper ``v``'s geometry on a storage of its own on
its device, never read: the trace reads the wrapper's geometry (the outer-level facts) and the
inner tensors' storage (what aliases what), not the wrapper's storage.

Before (traced): ``t.set_(v)`` raises. After: the graph holds ``set_(t.a, v)`` and
``set_(t.b, v)``, and ``t`` has ``v``'s size, stride and storage offset, as in eager.
"""
from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils._mode_utils import no_dispatch
from torch.utils._python_dispatch import TorchDispatchMode, is_traceable_wrapper_subclass

from .base import plain_part

_META_STORAGE = 'to a storage on different device "meta"'


class WrapperSetOntoPlain(TorchDispatchMode):
    """Completes a wrapper subclass's ``set_()`` onto a plain fake tensor whose storage the
    wrapper cannot take under fake tensors (NOTE [subclass set_ onto a plain tensor])."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is not torch.ops.aten.set_.source_Tensor or len(args) != 2 \
                or not is_traceable_wrapper_subclass(args[0]) \
                or not isinstance(args[1], FakeTensor) or args[1].device.type == "meta":
            return func(*args, **kwargs)
        wrapper, source = args
        try:
            return func(*args, **kwargs)
        except RuntimeError as e:
            if _META_STORAGE not in str(e):
                raise
        _set_geometry(wrapper, _fresh_storage(wrapper, source), source.shape, source.stride(),
                      source.storage_offset())
        return wrapper


def move_outer(t: torch.Tensor, size, stride, offset) -> None:
    """``t.as_strided_(size, stride, offset)`` on an outer argument after the call. A wrapper
    whose inner tensors set_() moved onto a plain tensor's storage (the inner graph did,
    NOTE [subclass set_ onto a plain tensor]) has a storage of its own too small for the new
    geometry, where eager's wrapper took the plain tensor's storage: it takes its first
    inner tensor's storage (that plain tensor's) with the geometry, its metadata only (its
    inner tensors have theirs already)."""
    if is_traceable_wrapper_subclass(t) and not _holds(t.untyped_storage(), size, stride, offset,
                                                       t.element_size()):
        _set_geometry(t, plain_part(t).untyped_storage(), size, stride, offset)
    else:
        t.as_strided_(size, stride, offset)


def _holds(storage, size, stride, offset, itemsize: int) -> bool:
    if any(n == 0 for n in size):
        return True
    last = offset + sum((n - 1) * st for n, st in zip(size, stride))
    return (last + 1) * itemsize <= storage.nbytes()


def _fresh_storage(wrapper: torch.Tensor, source: torch.Tensor):
    """A storage on the wrapper's device that holds ``source``'s geometry (its own, if it does)."""
    storage, nbytes = wrapper.untyped_storage(), source.untyped_storage().nbytes()
    with no_dispatch():
        return storage if storage.nbytes() >= nbytes else torch.UntypedStorage(nbytes, device=wrapper.device)


def _set_geometry(wrapper: torch.Tensor, storage, size, stride, offset) -> None:
    """``wrapper``'s metadata set to this geometry on ``storage``, with the metadata kernel
    only (as ``return_and_correct_aliasing`` does for a wrapper)."""
    with no_dispatch():
        meta_in_tls = torch._C._meta_in_tls_dispatch_include()
        torch._C._set_meta_in_tls_dispatch_include(True)
        try:
            torch.ops.aten.set_.source_Storage_storage_offset(wrapper, storage, offset, size, stride)
        finally:
            torch._C._set_meta_in_tls_dispatch_include(meta_in_tls)

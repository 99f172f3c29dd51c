"""autocast_cache: eager's cast cache for leaves inside an autocast region, in the trace.

# NOTE [the autocast cache]
Inside an autocast region eager casts a float32 leaf that requires grad (and is no view) to
the region's lower precision once, and every later op of the region that casts it gets that
same tensor (autocast's ``cached_cast``, while the region's ``cache_enabled`` is on, as it
is by default; the cache is cleared when the outermost region exits). So the gradients of
all those ops meet at one autograd node and add up in the lower precision before the cast's
backward turns them to float32: ``a @ a.mT`` and ``a @ v`` under bfloat16 give ``a`` a
gradient summed in bfloat16. make_fx switches the cache off while it traces, and the trace's
stand-ins for the caller's leaves are functional wrappers, not leaves, so the trace cast the
leaf once per op, summed in float32, and the gradient came out a rounding apart from eager's
(fuzz seed 1, key variation autocast=cpu:bfloat16). The recorder therefore casts such a
tensor itself, once, before an op that autocast would run in the lower precision (found by
running the op on the fake values with every floating input in float32: a lower-precision
result), and hands the op the cast, which autocast leaves alone: one ``_to_copy`` node, as
eager's. The same holds for a region the function enters itself while the caller is in
none: it inherits the ambient ``torch.is_autocast_cache_enabled()`` (on by default), which
the trace reads before make_fx switches it off (a function entering ``torch.autocast("cpu")``
gave a leaf used twice a float32-summed gradient, a rounding apart from eager's). Whether
the cache is on is part of both keys (``autocast_cache`` in cache/census.py).
Not modelled: eager's cache outlives the call (a cast the caller made before the call, or
makes after it in the same region, is the same tensor as the function's), and a region
entered inside the function with ``cache_enabled=False`` while the ambient setting is on.
"""
from __future__ import annotations

import torch
from torch.utils import _pytree as pytree

from .storage.watch import mirrored_leaf


class AutocastCache:
    """The casts made so far in one run of the function (by the tensor cast)."""

    def __init__(self, caller_cache: bool):
        self.caller_cache = caller_cache    # the caller's region has its cache on
        self.casts: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def apply(self, func, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """``args`` and ``kwargs`` with each cacheable leaf replaced by its one cast, where
        autocast would cast it for ``func``."""
        if not torch._C._is_any_autocast_enabled():
            self.casts.clear()          # the region exited (eager clears its cache)
            return args, kwargs
        if not (self.caller_cache or torch.is_autocast_cache_enabled()):
            return args, kwargs
        flat, spec = pytree.tree_flatten((args, kwargs))
        found = [k for k, t in enumerate(flat) if _cacheable(t)]
        if not found or any(isinstance(t, torch.Tensor) and
                            torch._C._functorch.is_functorch_wrapped_tensor(t) for t in flat):
            return args, kwargs
        device = flat[found[0]].device.type
        if not torch.is_autocast_enabled(device):
            return args, kwargs
        low = torch.get_autocast_dtype(device)
        if not _lowers(func, flat, spec, low):
            return args, kwargs
        for k in found:
            t = flat[k]
            kept = self.casts.get(id(t))
            if kept is None or kept[0] is not t:
                kept = self.casts[id(t)] = (t, t.to(low))
            flat[k] = kept[1]
        return pytree.tree_unflatten(flat, spec)


def _cacheable(t) -> bool:
    """Would eager's autocast cache this tensor's cast: float32, requires grad, a leaf (in the
    trace: a leaf, or the functional wrapper of one), no view?"""
    return isinstance(t, torch.Tensor) and t.dtype == torch.float32 and t.requires_grad \
        and t.layout == torch.strided and not t._is_view() and (t.is_leaf or mirrored_leaf(t))


def _lowers(func, flat: list, spec, low) -> bool:
    """Does autocast run ``func`` in the lower precision ``low``: its result, on the fake
    values with every floating input in float32, is of dtype ``low``?"""
    from torch.fx.experimental.proxy_tensor import disable_proxy_modes_tracing

    def inner(t):
        if not isinstance(t, torch.Tensor):
            return t
        if torch._is_functional_tensor(t):
            t = torch._from_functional_tensor(t)
        t = t.detach()
        return t.float() if t.is_floating_point() else t
    try:
        with disable_proxy_modes_tracing(), torch.no_grad(), torch._C._ExcludeDispatchKeyGuard(
                torch._C.DispatchKeySet(torch._C.DispatchKey.Functionalize)):
            a, k = pytree.tree_unflatten([inner(t) for t in flat], spec)
            out = func(*a, **k)
    except Exception:  # noqa: BLE001 - an op that cannot run so: left to autocast as before
        return False
    return any(isinstance(o, torch.Tensor) and o.dtype == low for o in pytree.tree_leaves(out))

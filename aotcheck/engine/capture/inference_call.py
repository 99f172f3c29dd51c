"""inference_call: the trace of a call under ``inference_mode``, with inference mode's rules.

The trace of such a call runs under no_grad (``trace_grad_mode``), whose rules for what
requires grad differ from inference mode's (``CallRules`` holds what the trace emulates of
the call's state); the recorder (recorder.py) runs each op through
``call_in_inference_mode`` (NOTE [views of inference tensors]) and collects, with
``transform_results``, the tensors eager makes ordinary inside it
(NOTE [ordinary outputs of an inference call] in outputs.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils import _pytree as pytree

from .autocast_cache import AutocastCache
from .functional import unwrap_functorch

_AUTODIFF_LEVELS = (torch._C._functorch.TransformType.Grad, torch._C._functorch.TransformType.Jvp)


@dataclass(frozen=True)
class CallRules:
    """The call's state that the trace emulates, read before make_fx runs (it switches the
    autocast cache off, and the trace's grad mode stands for inference mode): whether the
    call is under inference_mode (NOTE [views of inference tensors]) and whether eager's
    autocast regions cache casts (NOTE [the autocast cache]): the caller's region's setting,
    or, outside any, the one a region the function enters inherits. None: not emulated."""
    inference: bool = False
    autocast_cache: bool | None = None

    @staticmethod
    def at_call(sig) -> "CallRules":
        return CallRules(sig.inference_mode, torch.is_autocast_cache_enabled())

    def autocast(self) -> AutocastCache | None:
        """A fresh cast cache for one run, or None outside autocast."""
        return AutocastCache(self.autocast_cache) if self.autocast_cache is not None else None


def _wrapped(t: torch.Tensor) -> bool:
    return torch._C._functorch.is_functorch_wrapped_tensor(t)


def call_in_inference_mode(func, args: tuple, kwargs: dict, target, recorder):
    """``func(*args, **kwargs)`` as inside inference mode: autograd does not run there, not
    even in an enable_grad region (an in-place op there on a view the function made raises
    under no_grad's rules, never under inference mode's), so the op runs under no_grad; its
    results get inference mode's flags (``_as_in_inference_mode``). ``recorder.made_in_call``:
    the tensors eager makes as inference tensors (NOTE [inference tensors made in the call]);
    a view of one that ``.data =`` made ordinary raises as eager's does
    (NOTE [inference state moved by .data =])."""
    with torch.no_grad():
        out = func(*args, **kwargs)
    if target is not None and id(target) in recorder.storage.changes.counterless and any(
            isinstance(t, torch.Tensor) and t._is_view() and t is not target
            for t in pytree.tree_leaves(out)):
        raise RuntimeError(NO_VERSION_COUNTER)
    return _as_in_inference_mode(out, target, args, kwargs, recorder.made_in_call)


def transform_results(out, inputs=()) -> list:
    """NOTE [ordinary outputs of an inference call] (outputs.py): under an inference-mode call,
    the tensor at the bottom of each wrapper an op makes inside a grad or jvp level is an
    ordinary tensor in eager (functorch runs those levels with inference mode off); the
    transform returns that very tensor once it unwraps it. A wrapper of one of the op's
    ``inputs`` (``requires_grad_()`` on the primal that ``vjp`` wraps, an in-place op) is no
    new tensor: the one below it keeps its own kind (``vjp(torch.sin, p)`` leaves ``p`` an
    inference tensor)."""
    from torch._functorch.pyfunctorch import retrieve_all_functorch_interpreters
    if not any(i.key() in _AUTODIFF_LEVELS for i in retrieve_all_functorch_interpreters()):
        return []
    given = [unwrap_functorch(t) for t in pytree.tree_leaves(inputs) if isinstance(t, torch.Tensor)]
    bottoms = [unwrap_functorch(t) for t in pytree.tree_leaves(out)
               if isinstance(t, torch.Tensor) and _wrapped(t)]
    return [b for b in bottoms if not any(b is g for g in given)]


# NOTE [inference state moved by .data =] (storage/watch.py): the error eager raises there
NO_VERSION_COUNTER = "Inference tensors do not track version counter."


def is_data_read(func) -> bool:
    """Is ``func`` the ``.data`` getter (a detached alias of its tensor, of the same kind)?"""
    return getattr(func, "__self__", None) is torch._C.TensorBase.data and \
        getattr(func, "__name__", "") == "__get__"


def _as_in_inference_mode(out, target, args, kwargs, made: set):
    """An op's results as eager's autograd gives them inside ``inference_mode``.

    # NOTE [views of inference tensors]
    The trace of a call under ``inference_mode`` runs under no_grad (trace_grad_mode), which
    differs from inference mode in what requires grad. Inside inference mode autograd does
    not run at all, not even in an ``enable_grad`` region: no op's result requires grad,
    except a view of an ordinary tensor (an argument, or a view of one), which reads its
    flag through its base. A view of a tensor made in the call, an inference tensor
    (NOTE [inference tensors made in the call]), does not: ``p = nn.Parameter(...); v = p.view(2)``
    gives ``v.requires_grad`` False, so ``v.retain_grad()`` raises; under no_grad the view
    would require grad. So a result that requires grad is replaced by its detach() (an alias
    to functionalization, as the view was), unless it is a view of an ordinary tensor or a
    leaf (a view made under no_grad is a leaf too: it counts as a view). A leaf made inside
    (``requires_grad=True``, a Parameter) keeps its flag, as in eager. While a torch.func
    transform is active the caller skips this: its grad and jvp levels run autograd with
    inference mode off (``_disable_inference_mode``)."""
    inputs = pytree.tree_leaves((args, kwargs))

    def one(t):
        if not isinstance(t, torch.Tensor) or not t.requires_grad or _wrapped(t) \
                or any(t is a for a in inputs):
            return t
        if t._is_view():        # (a view made under no_grad is a leaf that requires grad)
            return t if target is not None and id(target) not in made else t.detach()
        return t if t.is_leaf else t.detach()
    if isinstance(out, torch.Tensor):
        return one(out)
    if not isinstance(out, (tuple, list)):
        return out
    new = [one(t) for t in out]
    if all(a is b for a, b in zip(new, out)):
        return out
    return type(out)(new) if type(out) in (tuple, list) else type(out)(tuple(new))  # structseq

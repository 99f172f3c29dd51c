"""custom_ops: the Python kernel eager runs for a ``torch.library`` custom op that mutates.

# NOTE [mutating custom ops]
A custom op whose schema writes an argument (``Tensor(a!)``, as ``torch.library.custom_op``
writes it from ``mutates_args``) is opaque to functionalization: aotcheck's trace uses the
C++ functionalization pass, whose fallback refuses any non-ATen op with alias annotations
("Found a custom (non-ATen) operator whose output has alias annotations"). Stock torch's
answer, ``auto_functionalized`` (torch/_higher_order_ops/auto_functionalize.py), keeps the op
as an opaque node that runs on clones of the mutated arguments, and needs the Python
``FunctionalTensorMode``; the opaque node could not be stored in aotcheck's cache either
(stored graphs hold aten and prims ops only, cache/serialize.py).

Eager runs the op's kernel: for a ``custom_op``, a Python function (the one registered for
the tensors' device type, else the default one). So where autograd records nothing of the
call (grad mode off, or no tensor argument requires grad), the trace runs that kernel, as
the dispatcher would below autograd, and its aten ops are functionalized and recorded like
the function's own: the writes to the arguments (or to views of them, or a ``set_()``) are
eager's, and the graph is aten only. So does a call that returns no tensor, wherever it is
made: autograd then records nothing eager can see (``_returns_tensors``). Where autograd
would record a call that returns tensors, eager runs the op's registered backward, which a
traced kernel would replace with the kernel's own derivative: that call keeps the refusal. Ops that are not ``custom_op``s (a kernel the
dispatcher holds, out of reach from Python) keep it too.

Inside a ``torch.func`` transform eager's dispatcher runs the kernel below the transform's
levels: on tensors the transform does not wrap (a buffer the transformed function closes
over) the kernel runs with functorch's interpreter stack cleared, as there. A call on a
transform's wrapper keeps the refusal.
"""
from __future__ import annotations

import contextlib

import torch
from torch.utils import _pytree as pytree

_OWN_NAMESPACES = frozenset({"aten", "prims", "prim", "inductor", "aotcheck"})
_TOUCHED: list[set] = []       # one set per open ``recording()`` block


@contextlib.contextmanager
def recording():
    """The names (``ns::name``) of the ``custom_op``s a trace inside the block called, kernel
    traced through or not (NOTE [custom ops an entry was traced with] in cache/registrations.py)."""
    touched: set = set()
    _TOUCHED.append(touched)
    try:
        yield touched
    finally:
        _TOUCHED.remove(touched)


def note_call(func) -> None:
    """Record ``func`` in the open ``recording()`` blocks when it is a ``custom_op``."""
    if not _TOUCHED:
        return
    if isinstance(func, torch._ops.OpOverloadPacket):
        func = getattr(func, "default", None)
    if isinstance(func, torch._ops.OpOverload) and func.namespace not in _OWN_NAMESPACES:
        from torch._library.custom_ops import OPDEFS
        name = f"{func.namespace}::{func._opname}"
        if name in OPDEFS:
            for touched in _TOUCHED:
                touched.add(name)


def mutating_kernel(func, args: tuple, kwargs: dict):
    """The Python kernel eager would run for ``func(*args, **kwargs)``, when ``func`` is a
    mutating ``custom_op`` the trace runs through (NOTE [mutating custom ops]); else None."""
    if isinstance(func, torch._ops.OpOverloadPacket):
        func = getattr(func, "default", None)
    if not isinstance(func, torch._ops.OpOverload) or func.namespace in _OWN_NAMESPACES \
            or not func._schema.is_mutable:
        return None
    from torch._library.custom_ops import OPDEFS
    opdef = OPDEFS.get(f"{func.namespace}::{func._opname}")
    if opdef is None:
        return None
    tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors) and _returns_tensors(func):
        return None
    if any(torch._C._functorch.is_functorch_wrapped_tensor(t) for t in tensors):
        return None
    device = tensors[0].device.type if tensors else None
    kernel = opdef._backend_fns.get(device) or opdef._backend_fns.get(None)
    if kernel is None:
        return None

    def run():
        from torch._functorch.pyfunctorch import temporarily_clear_interpreter_stack
        below = temporarily_clear_interpreter_stack() \
            if torch._C._functorch.maybe_current_level() is not None else contextlib.nullcontext()
        with below, torch._C._AutoDispatchBelowAutograd():
            return kernel(*args, **kwargs)
    return run


def _returns_tensors(func: torch._ops.OpOverload) -> bool:
    """Does the op return a tensor (or a list of them)? A ``custom_op`` called where autograd
    records it runs as an ``autograd.Function`` (torch/_library/autograd.py) whose forward
    redispatches below autograd and marks nothing dirty: when it returns no tensor, autograd
    records nothing eager can see (the written arguments keep their grad_fn, as under
    no_grad), so the traced kernel, run below autograd, is eager's call."""
    return any(isinstance(r.type, (torch.TensorType, torch.OptionalType, torch.ListType))
               and "Tensor" in str(r.type) for r in func._schema.returns)

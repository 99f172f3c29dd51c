"""guard: when a function's state walk (fingerprint.py) can be skipped.

# NOTE [skipping the state walk]
The fingerprint walk runs on every call of a compiled function
(NOTE [python state] in aotcheck/compiled.py) and was about a third of a call's cost. For a plain Python
function whose walk reaches only values whose fingerprint is fixed by their identity
(scalars, strings, torch dtypes and devices, tuples of these, ops, builtins, library
modules and classes, plain tensors by their metadata, and user functions built of the
same), the walk's result is a function of a few slots only:

- each function's ``__code__``, ``__defaults__``, ``__kwdefaults__`` (None only),
  ``__module__`` and ``__qualname__``;
- each closure cell's contents;
- each global name its code names: present (and which object) or absent, then whether
  the builtins have it; and which builtins the globals hold;
- each reached tensor's type, dtype, shape, strides, layout, device and requires_grad.

:func:`state_guard` records those slots (holding the objects, so no id is reused) and
:meth:`StateGuard.holds` checks them by identity: when every one holds, the walk would
give the data it gave, and the caller reuses it. Anything else a walk can reach (a list,
a dict, an ``nn.Module``, an object's ``__dict__``, a user module or class, a bound
method, a ``functools.partial``, a value the walk cannot fingerprint) can change in
place without any slot above changing: :func:`state_guard` returns None for such a
function, and every call walks. An equal-valued but new object in a slot fails the
identity check: the call walks again (and finds equal data), never the reverse.
"""
from __future__ import annotations

import types

import torch

from .fingerprint import _global_names, is_library

_MISSING = object()     # a global name that is not bound
_EMPTY = object()       # a closure cell that is empty
_MAX_CHECKS = 512       # a larger reach is cheaper to walk than to guard
_ATOMS = frozenset({type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device,
                    torch.layout, torch.memory_format, torch.Size})
_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)
_BUILTINS = (types.BuiltinFunctionType, types.BuiltinMethodType, types.WrapperDescriptorType,
             types.MethodDescriptorType, types.MethodWrapperType, types.ClassMethodDescriptorType,
             types.GetSetDescriptorType, types.MemberDescriptorType)


class _TooMany(Exception):
    pass


def tensor_meta(t: torch.Tensor) -> tuple:
    """What the walk reads of a tensor (NOTE [tensors in the fingerprint])."""
    strided = t.layout == torch.strided
    return (type(t), t.dtype, t.shape, t.stride() if strided else None, t.layout, t.device,
            t.requires_grad)


class StateGuard:
    """The slots a function's walk read (NOTE [skipping the state walk]); :meth:`holds` when none
    changed."""

    __slots__ = ("functions", "cells", "items", "builtins", "classes", "modules", "tensors")

    def __init__(self):
        self.functions: list = []   # (function, code, defaults, module, qualname)
        self.cells: list = []       # (cell, contents or _EMPTY)
        self.items: list = []       # (globals dict, name, value or _MISSING)
        self.builtins: list = []    # (builtins dict, name, present)
        self.classes: list = []     # (class, module, qualname)
        self.modules: list = []     # (module, name)
        self.tensors: list = []     # (tensor, tensor_meta)

    def holds(self) -> bool:
        for f, code, defaults, module, qualname in self.functions:
            if (f.__code__ is not code or f.__defaults__ is not defaults or f.__kwdefaults__ is not None
                    or f.__module__ is not module or f.__qualname__ is not qualname):
                return False
        for cell, value in self.cells:
            try:
                if cell.cell_contents is not value:
                    return False
            except ValueError:
                if value is not _EMPTY:
                    return False
        for d, name, value in self.items:
            if d.get(name, _MISSING) is not value:
                return False
        for d, name, present in self.builtins:
            if (name in d) is not present:
                return False
        for c, module, qualname in self.classes:
            if c.__module__ is not module or c.__qualname__ is not qualname:
                return False
        for m, name in self.modules:
            if m.__name__ is not name:
                return False
        for t, meta in self.tensors:
            if tensor_meta(t) != meta:
                return False
        return True


def state_guard(fn) -> StateGuard | None:
    """The guard of ``fn``'s walk as it reads now, or None when the walk reaches anything
    that can change without a guarded slot changing (then every call walks)."""
    if type(fn) is not types.FunctionType:
        return None
    builder = _Builder()
    try:
        return builder.guard if builder.function(fn) else None
    except _TooMany:
        return None


class _Builder:
    def __init__(self):
        self.guard = StateGuard()
        self.seen: set[int] = set()
        self.count = 0

    def _tick(self) -> None:
        self.count += 1
        if self.count > _MAX_CHECKS:
            raise _TooMany

    def value(self, v) -> bool:
        self._tick()
        t = type(v)
        if t in _ATOMS:
            return True
        if id(v) in self.seen:
            return True
        self.seen.add(id(v))
        g = self.guard
        if isinstance(v, type):
            # the walk gives a library class as ["class", module, qualname]; a user class by its body
            if not (is_library(v.__module__, None) or v.__module__ == "builtins"):
                return False
            g.classes.append((v, v.__module__, v.__qualname__))
            return True
        if isinstance(v, torch.Tensor):
            if t not in _PLAIN_TENSORS:
                return False
            g.tensors.append((v, tensor_meta(v)))
            return True
        if t is tuple or t is frozenset:
            return all(self.value(x) for x in v)
        if t is types.FunctionType:
            return self.function(v)
        if isinstance(v, _BUILTINS):
            owner = getattr(v, "__self__", None)
            return owner is None or isinstance(owner, (types.ModuleType, type))
        if isinstance(v, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
            return True
        if t is types.ModuleType:
            if not is_library(v.__name__, getattr(v, "__file__", None)):
                return False      # a user module: the walk reads its attributes
            g.modules.append((v, v.__name__))
            return True
        return False

    def function(self, f: types.FunctionType) -> bool:
        self._tick()
        self.seen.add(id(f))
        if f.__kwdefaults__ is not None:
            return False          # a dict: it can change in place
        g = self.guard
        code = f.__code__
        g.functions.append((f, code, f.__defaults__, f.__module__, f.__qualname__))
        if f.__defaults__ is not None and not self.value(f.__defaults__):
            return False
        for cell in f.__closure__ or ():
            try:
                contents = cell.cell_contents
            except ValueError:
                g.cells.append((cell, _EMPTY))
                continue
            g.cells.append((cell, contents))
            if not self.value(contents):
                return False
        if is_library(f.__module__, code.co_filename):
            return True           # the walk reads no globals of a library function
        glb = f.__globals__
        b = glb.get("__builtins__", _MISSING)
        g.items.append((glb, "__builtins__", b))
        builtins = b if isinstance(b, dict) else getattr(b, "__dict__", {})
        if not isinstance(builtins, dict):
            return False
        for name in sorted(_global_names(code)):
            self._tick()
            v = glb.get(name, _MISSING)
            g.items.append((glb, name, v))
            if v is _MISSING:
                g.builtins.append((builtins, name, name in builtins))
            elif not self.value(v):
                return False
        return True

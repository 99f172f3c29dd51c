"""fingerprint: the Python state a function reads, as data, without tracing it.

``fingerprint(fn)`` walks what determines the graph that tracing ``fn`` would give,
other than its tensor arguments:

- the function's code: bytecode, constants, names, argument layout (nested code
  objects too); not line numbers or file names, so moving code keeps its key;
- its defaults and keyword defaults, its closure cells' values, and the globals its
  code names (each value fingerprinted as below);
- recursively the Python functions it reaches (user functions by code; functions of
  torch and of the standard library by qualified name, their code being covered by
  the torch version and the Python version);
- ``nn.Module`` values: class, ``training``, every non-tensor attribute
  (hyperparameters, hooks), parameter and buffer *metadata*, submodules;
- plain objects by class and ``__dict__``; user modules (``import mycfg``) by the
  attributes the code names.

# NOTE [tensors in the fingerprint]
A tensor reached this way (a closure, a global, a module parameter) is fingerprinted
by its metadata (type, dtype, shape, strides, device, requires_grad), not its values:
the API passes every such tensor to the graph as an extra argument
(NOTE [lifted tensors] in aotcheck/lift.py), so values never reach a graph, while Python code can
branch on metadata (``if w.shape[0] > 2``). This is also what keeps a
``functional_call`` wrapper's key stable while an optimizer updates the model.

A value with no stable fingerprint (an object without ``__dict__`` of a type this
module does not know, a generator, a file) raises :class:`Unfingerprintable` naming
the path to it (``f.closure[cfg].handle``) and why; the persistent key then falls back
to the traced key (``cache explain`` shows the reason), and the in-memory reuse in
``AotFunction`` uses that object's identity instead.
"""
from __future__ import annotations

import enum
import functools
import hashlib
import json
import os
import sysconfig
import types

import torch

_LIBRARY_ROOTS = tuple(sorted({os.path.realpath(p) + os.sep for p in
                               (sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"],
                                os.path.dirname(os.path.dirname(torch.__file__)) + os.sep + "torch")
                               if p}))
_LIBRARY_PACKAGES = frozenset({"torch", "builtins", "math", "operator", "functools", "itertools",
                               "collections", "typing", "numbers", "abc", "contextlib", "_operator",
                               "_functools", "numpy"})
_SCALARS = (type(None), bool, int, float, complex, str, bytes)
_TORCH_ATOMS = (torch.dtype, torch.device, torch.layout, torch.memory_format, torch.Size)
_MAX_ITEMS = 200_000
_SKIP_CLASS_ATTRS = frozenset({"__dict__", "__weakref__", "__module__", "__doc__", "__qualname__",
                               "__annotations__", "__slotnames__", "__parameters__", "__orig_bases__",
                               "__static_attributes__", "__firstlineno__", "_is_protocol"})
_SKIP_MODULE_ATTRS = frozenset({"_parameters", "_buffers", "_modules"})


class Unfingerprintable(Exception):
    """A value the function reads that has no stable fingerprint."""

    def __init__(self, path: str, why: str):
        super().__init__(f"{path}: {why}")
        self.path, self.why = path, why


def fingerprint_data(fn, *, identity_fallback: bool = False):
    """The fingerprint of ``fn`` as JSON-able data. Raises Unfingerprintable, unless
    ``identity_fallback`` (in-memory reuse only), which uses such a value's ``id``."""
    return fingerprint_walk(fn, identity_fallback=identity_fallback)[0]


def fingerprint_walk(fn, *, identity_fallback: bool = False) -> tuple:
    """``(fingerprint data, tensors)``: the data as :func:`fingerprint_data`, and every tensor
    the walk reached (a closure's, a global's, a module's parameters and buffers), once each,
    in walk order (NOTE [lifted tensors] in aotcheck/lift.py)."""
    walker = _Walker(identity_fallback)
    data = walker.value(fn, _name_of(fn))
    return data, tuple(walker.tensors)


def reachable_objects(fn) -> list:
    """Every object the fingerprint walk of ``fn`` reaches (containers included), in walk
    order (NOTE [traced values left in Python state] in aotcheck/lift.py)."""
    walker = _Walker(True)
    walker.value(fn, _name_of(fn))
    return walker.keep


def fingerprint(fn, *, identity_fallback: bool = False) -> tuple[str, str]:
    """``(text, sha256)`` of the fingerprint; the text is canonical JSON."""
    return fingerprint_of(fingerprint_data(fn, identity_fallback=identity_fallback))


def fingerprint_of(data) -> tuple[str, str]:
    """``(text, sha256)`` of fingerprint data from :func:`fingerprint_data`."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return text, hashlib.sha256(text.encode()).hexdigest()


def _name_of(fn) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def is_library(module: str | None, filename: str | None = None) -> bool:
    if module and module.split(".")[0] in _LIBRARY_PACKAGES:
        return True
    if filename and not filename.startswith("<"):
        return _library_file(filename)
    return False


@functools.lru_cache(maxsize=4096)
def _library_file(filename: str) -> bool:
    # realpath stats every component: ~30 us, paid on every call of a compiled function (the
    # in-memory fingerprint walks the function each call); a file's place does not change
    return os.path.realpath(filename).startswith(_LIBRARY_ROOTS)


class _Walker:
    def __init__(self, identity_fallback: bool):
        self.identity_fallback = identity_fallback
        self.seen: dict[int, int] = {}      # id -> index, for cycles and shared values
        self.keep: list = []                # keeps walked objects alive (ids stay unique)
        self.items = 0
        self.tensors: list = []             # the tensors reached, in walk order

    # ------------------------------------------------------------ values

    def value(self, v, path: str, names: frozenset = frozenset()):
        self.items += 1
        if self.items > _MAX_ITEMS:
            raise Unfingerprintable(path, f"more than {_MAX_ITEMS} values reachable")
        t = type(v)
        if t in _SCALARS:
            if t is float or t is complex:
                return [t.__name__, repr(v)]
            if t is bytes:
                return ["bytes", v.hex()]
            return v if t is not int or abs(v) < 2**53 else ["int", str(v)]
        if isinstance(v, _TORCH_ATOMS):
            return [type(v).__name__, repr(v)]
        if isinstance(v, enum.Enum):
            return ["enum", self.klass(type(v), path), v.name]
        if isinstance(v, type):
            # klass() registers the class in ``seen`` itself; registering it here first made
            # every user class a bare "ref" (its methods, e.g. a custom autograd.Function's
            # backward, were never fingerprinted)
            return self.klass(v, path)
        if id(v) in self.seen:
            return ["ref", self.seen[id(v)]]
        self.seen[id(v)] = len(self.seen)
        self.keep.append(v)
        if isinstance(v, torch.Tensor):          # NOTE [tensors in the fingerprint]
            self.tensors.append(v)
            return ["tensor", type(v).__name__, str(v.dtype), list(v.shape),
                    list(v.stride()) if v.layout == torch.strided else None, str(v.device),
                    v.requires_grad]
        if t in (tuple, list):
            return [t.__name__, [self.value(x, f"{path}[{i}]", names) for i, x in enumerate(v)]]
        if t in (set, frozenset):
            return [t.__name__, sorted((self.value(x, f"{path}{{}}", names) for x in v), key=_sort_key)]
        if isinstance(v, dict) and t.__module__ in ("builtins", "collections"):
            return [t.__name__, [[self.value(k, f"{path} key", names), self.value(x, f"{path}[{k!r}]", names)]
                                 for k, x in v.items()]]
        if isinstance(v, types.FunctionType):
            return self.function(v, path)
        if isinstance(v, types.MethodType):
            return ["method", self.value(v.__self__, f"{path}.__self__", names),
                    self.value(v.__func__, f"{path}.__func__", names)]
        if isinstance(v, functools.partial):
            return ["partial", self.value(v.func, f"{path}.func"), self.value(v.args, f"{path}.args"),
                    self.value(v.keywords, f"{path}.keywords")]
        if isinstance(v, (types.BuiltinFunctionType, types.BuiltinMethodType, types.WrapperDescriptorType,
                          types.MethodDescriptorType, types.MethodWrapperType, types.ClassMethodDescriptorType,
                          types.GetSetDescriptorType, types.MemberDescriptorType)):
            owner = getattr(v, "__self__", None)
            head = ["builtin", getattr(v, "__module__", None) or "", getattr(v, "__qualname__", repr(v))]
            if owner is not None and not isinstance(owner, (types.ModuleType, type)):
                head.append(self.value(owner, f"{path}.__self__", names))
            return head
        if isinstance(v, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
            return ["op", str(v)]
        if isinstance(v, type):
            return self.klass(v, path)
        if isinstance(v, types.ModuleType):
            return self.module(v, path, names)
        if isinstance(v, (staticmethod, classmethod)):
            return [t.__name__, self.value(v.__func__, path)]
        if isinstance(v, property):
            return ["property", self.value(v.fget, f"{path}.fget"), self.value(v.fset, f"{path}.fset")]
        if isinstance(v, torch.fx.GraphModule):
            return ["GraphModule", v.code, v.training,
                    [[n, self.value(m, f"{path}.{n}")] for n, m in v.named_children()],
                    [[n, self.value(p, f"{path}.{n}")] for n, p in v.named_parameters(recurse=False)],
                    [[n, self.value(b, f"{path}.{n}")] for n, b in v.named_buffers(recurse=False)]]
        if isinstance(v, torch.nn.Module):
            return self.nn_module(v, path)
        return self.instance(v, path, names)

    def instance(self, v, path: str, names: frozenset):
        t = type(v)
        state = getattr(v, "__dict__", None)
        slots = [s for c in t.__mro__ for s in getattr(c, "__slots__", ()) if isinstance(s, str)]
        if isinstance(state, dict) and not t.__module__.startswith("torch._C"):
            attrs = {k: x for k, x in state.items()}
            for s in slots:
                if s not in attrs and s != "__dict__" and hasattr(v, s):
                    attrs[s] = getattr(v, s)
            return ["object", self.klass(t, path),
                    [[k, self.value(x, f"{path}.{k}")] for k, x in sorted(attrs.items())]]
        if slots and state is None:
            return ["object", self.klass(t, path),
                    [[s, self.value(getattr(v, s), f"{path}.{s}")] for s in slots
                     if s not in ("__weakref__", "__dict__") and hasattr(v, s)]]
        return self.unknown(v, path, f"an object of type {t.__module__}.{t.__qualname__} has no stable "
                                     "fingerprint (no __dict__ or __slots__ to read its state from)")

    def unknown(self, v, path: str, why: str):
        if self.identity_fallback:
            return ["identity", id(v), type(v).__qualname__]
        raise Unfingerprintable(path, why)

    # ------------------------------------------------------------ code and functions

    def function(self, f: types.FunctionType, path: str):
        code = f.__code__
        cells = self.cells(f, path)
        defaults = [self.value(f.__defaults__, f"{path}.__defaults__"),
                    self.value(f.__kwdefaults__, f"{path}.__kwdefaults__")]
        if is_library(f.__module__, code.co_filename):
            # a library's code and globals come with its version, but not which of its functions
            # this is (OpInfo's op and inplace_variant are two lambdas of one module, one
            # qualname) nor the values a closure of it holds: the code digest and the cells say
            return ["libfn", f.__module__, f.__qualname__, _code_digest(code), *defaults, cells]
        names = _global_names(code)
        glb = f.__globals__
        builtins = glb.get("__builtins__", {})
        builtins = builtins if isinstance(builtins, dict) else getattr(builtins, "__dict__", {})
        reads = []
        for n in sorted(names):
            if n in glb:
                reads.append([n, self.value(glb[n], f"{path}.global[{n}]", names)])
            elif n in builtins:
                reads.append([n, "builtin"])
        return ["fn", f.__module__, f.__qualname__, _code_digest(code), *defaults, cells, reads]

    def cells(self, f: types.FunctionType, path: str) -> list:
        names = _global_names(f.__code__)
        cells = []
        for n, c in zip(f.__code__.co_freevars, f.__closure__ or ()):
            try:
                cv = c.cell_contents
            except ValueError:
                cells.append([n, "empty"])
                continue
            cells.append([n, self.value(cv, f"{path}.closure[{n}]", names)])
        return cells

    def klass(self, c: type, path: str):
        if is_library(c.__module__, None) or c.__module__ == "builtins":
            return ["class", c.__module__, c.__qualname__]
        if id(c) in self.seen:
            return ["ref", self.seen[id(c)]]
        self.seen[id(c)] = len(self.seen)
        body = []
        for k, x in sorted(vars(c).items()):
            if k in _SKIP_CLASS_ATTRS or (k.startswith("__") and k.endswith("__") and
                                          not isinstance(x, (types.FunctionType, staticmethod,
                                                             classmethod, property))):
                continue
            body.append([k, self.value(x, f"{c.__qualname__}.{k}")])
        bases = [self.klass(b, path) for b in c.__bases__]
        return ["class", c.__module__, c.__qualname__, bases, body]

    def module(self, m: types.ModuleType, path: str, names: frozenset):
        name = m.__name__
        if is_library(name, getattr(m, "__file__", None)):
            return ["pymodule", name]
        return ["pymodule", name, [[n, self.value(getattr(m, n), f"{name}.{n}", names)]
                                   for n in sorted(names) if hasattr(m, n) and not n.startswith("__")]]

    def nn_module(self, m: torch.nn.Module, path: str):
        attrs = [[k, self.value(x, f"{path}.{k}")] for k, x in sorted(vars(m).items())
                 if k not in _SKIP_MODULE_ATTRS]
        return ["nn.Module", self.klass(type(m), path), attrs,
                [[n, self.value(p, f"{path}.{n}")] for n, p in m._parameters.items()],
                [[n, self.value(b, f"{path}.{n}")] for n, b in m._buffers.items()],
                [[n, self.value(s, f"{path}.{n}")] for n, s in m._modules.items()]]


def _sort_key(x) -> str:
    return json.dumps(x, sort_keys=True)


@functools.lru_cache(maxsize=4096)
def _code_digest(code: types.CodeType) -> str:
    """sha256 over what a code object does: bytecode, constants (nested code too), names and
    argument layout; not its file name or line numbers."""
    h = hashlib.sha256()
    for part in (code.co_code, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
                 code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags,
                 getattr(code, "co_exceptiontable", b"")):
        h.update(repr(part).encode() + b"\0")
    for c in code.co_consts:
        h.update(_const_text(c).encode() + b"\0")
    return h.hexdigest()


def _const_text(c) -> str:
    if isinstance(c, types.CodeType):
        return _code_digest(c)
    if isinstance(c, (frozenset, set)):         # iteration order varies with hash seeds
        return f"{type(c).__name__}:" + ",".join(sorted(_const_text(x) for x in c))
    if isinstance(c, tuple):
        return "tuple:(" + ",".join(_const_text(x) for x in c) + ")"
    return f"{type(c).__name__}:{c!r}"


@functools.lru_cache(maxsize=4096)
def _global_names(code: types.CodeType) -> frozenset:
    """Every name the code (and its nested code) names: a superset of the globals it reads
    and of the attributes it reads off a user module."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _global_names(c)
    return frozenset(names)

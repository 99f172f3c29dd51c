"""program: a user-program file, loaded as an importable module and checked.

The format (a plain Python file; only ``fn`` and ``inputs`` are required)::

    import torch
    from torch.utils.checkpoint import checkpoint

    SCALE = [2.0]

    @torch._dynamo.allow_in_graph
    def _opaque(x):                     # a helper that reads a module global
        return x * SCALE[0]

    def fn(x):                          # the function compiled
        return checkpoint(_opaque, x, use_reentrant=False)

    def inputs():                       # a fresh tuple of arguments per call
        return (torch.randn(4, requires_grad=True),)

    VARY = {"SCALE": ([2.0], [3.0])}    # name -> (value under A, value under B, ...)

Optional names: ``VARY`` (without it, the derived inputs: the storage relations of two
arguments of one shape and dtype, and the ambient settings), ``setup(name, value)`` (applies a
VARY entry that is no global of the file: registering a custom op, say), ``BACKEND`` (a
``torch.compile`` backend name, or a function returning a backend; default ``"aot_eager"``),
``compile(fn)`` (the entry point, when it is not ``torch.compile``: ``standalone_compile``,
``aot_compile``), ``BACKWARD`` (default: backward runs when an output requires grad),
``CONFIG`` (config patches applied on both sides, ``{"torch._functorch.config.x": v}``),
``UPSTREAM`` (the upstream report, ``"pytorch/pytorch#144344"``).

A VARY name is read as (``setters.py`` applies it): a global of the file; a dotted attribute
(``torch._inductor.config.fallback_random``); ``ambient:NAME`` (``setters.AMBIENT``);
``storage:I,J`` (a relation of arguments I and J from ``setters.RELATIONS``); or, when it is
none of these, a name handed to the file's ``setup``.

The file is imported by its stem with its folder on ``sys.path`` (never as ``__main__``):
torch keys a global callable by its import path, and one in ``__main__`` is not cacheable, so
a program run as a script would hide the very gaps the differential looks for.
"""
from __future__ import annotations

import enum
import importlib
import inspect
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ..errors import AotcheckError


class ProgramError(AotcheckError):
    """A user-program file that cannot be run: the message names the file and what to fix."""


class Kind(enum.Enum):
    """What an input of compilation is, by how its value is put in place."""
    GLOBAL = "global"            # a module global of the program (state reached from fn)
    ATTRIBUTE = "attribute"      # a dotted attribute of an importable module
    CONFIG = "config"            # a field of torch's functorch, inductor or dynamo config
    AMBIENT = "ambient"          # an ambient torch setting (setters.AMBIENT)
    STORAGE = "storage"          # a storage relation of two arguments (setters.RELATIONS)
    SETUP = "setup"              # anything the program's setup() applies (registrations)


CONFIG_MODULES = ("torch._functorch.config", "torch._inductor.config", "torch._dynamo.config")


@dataclass(frozen=True)
class Input:
    """One input of compilation and the values it takes; ``values[0]`` is condition A."""
    name: str
    kind: Kind
    values: tuple[str, ...]          # repr of each value, for reports

    def __post_init__(self):
        if len(self.values) < 2:
            raise ValueError(f"input {self.name} needs at least two values, got {self.values}")


@dataclass(frozen=True)
class Program:
    """A loaded program: its path, module name, and the facts read from it."""
    path: str
    module_name: str
    upstream: str
    backend: str                     # the backend's name (or the function that builds it)
    backward: bool | None            # None: backward when an output requires grad

    def module(self) -> ModuleType:
        return sys.modules[self.module_name]


def kind_of(module: ModuleType, name: str) -> Kind:
    if name.startswith("ambient:"):
        return Kind.AMBIENT
    if name.startswith("storage:"):
        return Kind.STORAGE
    if any(name.startswith(m + ".") for m in CONFIG_MODULES):
        return Kind.CONFIG
    if "." in name:
        return Kind.ATTRIBUTE
    if name in vars(module):
        return Kind.GLOBAL
    return Kind.SETUP


def load(path) -> Program:
    """Import the file at ``path`` by its stem (its folder first on ``sys.path``) and check it."""
    p = Path(path).resolve()
    if not p.is_file() or p.suffix != ".py":
        raise ProgramError(f"{path}: no such Python file (a program is a .py file defining fn and inputs)")
    name = p.stem
    if not name.isidentifier():
        raise ProgramError(f"{path}: the file name must be a Python identifier (it is imported as a "
                           f"module, so that torch can key its helpers by import path); rename it")
    module = _import(p, name)
    _check(module, p)
    backend = getattr(module, "BACKEND", "aot_eager")
    return Program(str(p), name, str(getattr(module, "UPSTREAM", "")),
                   backend if isinstance(backend, str) else getattr(backend, "__name__", "backend()"),
                   getattr(module, "BACKWARD", None))


def _import(p: Path, name: str) -> ModuleType:
    old = sys.modules.get(name)
    if old is not None:
        if Path(getattr(old, "__file__", "") or "").resolve() == p:
            return old
        raise ProgramError(f"{p}: a module named {name!r} is already imported (from "
                           f"{getattr(old, '__file__', 'a built-in')}); rename the program file")
    folder = str(p.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        return importlib.import_module(name)
    except SyntaxError as e:
        raise ProgramError(f"{p}:{e.lineno}: syntax error: {e.msg}") from e
    except Exception as e:  # noqa: BLE001 - the program's own error, named
        sys.modules.pop(name, None)
        raise ProgramError(f"{p}: importing it raised {type(e).__name__}: {e}") from e


def _check(module: ModuleType, p: Path) -> None:
    for required in ("fn", "inputs"):
        if not callable(getattr(module, required, None)):
            raise ProgramError(f"{p}: defines no function {required!r} (a program defines fn(...), the "
                               f"function compiled, and inputs(), which returns its arguments)")
    if inspect.signature(module.inputs).parameters:
        raise ProgramError(f"{p}: inputs() must take no arguments (vary them with VARY, e.g. "
                           f"'storage:0,1' or a global that inputs() reads)")
    vary = getattr(module, "VARY", None)
    if vary is None:
        return
    if not isinstance(vary, dict) or not vary:
        raise ProgramError(f"{p}: VARY must be a non-empty dict of name -> (value under A, value under B, ...)")
    for name, values in vary.items():
        if not isinstance(name, str):
            raise ProgramError(f"{p}: VARY key {name!r} is not a string")
        if not isinstance(values, (tuple, list)) or len(values) < 2:
            raise ProgramError(f"{p}: VARY[{name!r}] must be a tuple of at least two values (A, B, ...), "
                               f"got {values!r}")
        if kind_of(module, name) is Kind.SETUP and not callable(getattr(module, "setup", None)):
            raise ProgramError(f"{p}: VARY[{name!r}] names no global of the file, no dotted attribute, "
                               f"no 'ambient:' or 'storage:' input, and the file defines no setup(name, value) "
                               f"to apply it")


def arguments(module: ModuleType) -> tuple:
    """A fresh tuple of the program's arguments (``inputs()``), checked."""
    args = module.inputs()
    if not isinstance(args, (tuple, list)):
        raise ProgramError(f"{module.__file__}: inputs() must return a tuple of arguments, got "
                           f"{type(args).__name__}")
    return tuple(args)


def declared_inputs(module: ModuleType) -> list[Input]:
    """The program's VARY entries as inputs of compilation."""
    return [Input(name, kind_of(module, name), tuple(_text(v) for v in values))
            for name, values in getattr(module, "VARY", {}).items()]


def _text(value) -> str:
    """A value for reports: a function by its qualified name; addresses left out."""
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '?')}.{value.__qualname__}"
    text = re.sub(r"<function (\S+) at 0x[0-9a-f]+>", r"\1", repr(value))
    return text if len(text) <= 120 else text[:117] + "..."

"""A user's op implementations (a kernels directory or module), registered over aten for a run.

In the spirit of BackendBench's directory backend: one Python function per aten op, named after
it. ``load_kernels(PATH)`` reads ``PATH``, which is a directory (every ``*.py`` under it), a
``.py`` file, or a dotted module name. In each module, a public function is a kernel when its
name is an aten op:

    def mm(a, b): ...                  aten.mm.default     (the name, or name_kernel_impl)
    def add_Tensor(a, b, alpha=1): ... aten.add.Tensor     (name_overload)
    def mm_backward(ctx, grad): ...    optional: the autograd formula of mm, with
    def mm_setup_context(ctx, inputs, output): ...   the signatures of torch.library.register_autograd

``KernelSet.active()`` registers every kernel at the CPU dispatch key of its aten op (through a
``torch.library.Library("aten", "IMPL")`` that it destroys on exit, which puts aten's own kernel
back), plus the user's autograd formula at the Autograd key when there is one. Without one,
autograd records eager's derivative formula, whose own aten calls then run the user's kernels
too while the set is active.

Before: a directory with ``mm.py`` defining ``mm`` and ``mm_backward``. After::

    >>> ks = load_kernels("kernels/")                                   # doctest: +SKIP
    >>> [(k.op, k.has_backward) for k in ks.kernels]                     # doctest: +SKIP
    [('mm.default', True)]
    >>> with ks.active():                                                # doctest: +SKIP
    ...     torch.mm(a, b)        # runs kernels/mm.py:mm, and its backward runs mm_backward
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import sys
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import UnsupportedInputError

_SUFFIXES = ("_backward", "_setup_context")


class KernelsError(UnsupportedInputError):
    """``--kernels`` pointed at nothing loadable, or at a function no aten op is named after."""


@dataclass
class Kernel:
    op: str                           # "mm.default", "add.Tensor"
    fn: Callable
    source: str                       # "kernels/mm.py:mm"
    backward: Callable | None = None
    setup_context: Callable | None = None

    @property
    def base(self) -> str:
        return self.op.split(".")[0]

    @property
    def schema_name(self) -> str:
        """What torch.library takes: ``mm`` for the default overload, else ``add.Tensor``."""
        return self.op.removesuffix(".default")

    @property
    def has_backward(self) -> bool:
        return self.backward is not None


@dataclass
class KernelSet:
    path: str
    kernels: list[Kernel]
    calls: Counter = field(default_factory=Counter)   # op -> times the user's kernel ran

    @property
    def base_names(self) -> set[str]:
        return {k.base for k in self.kernels}

    @contextlib.contextmanager
    def active(self):
        """The kernels replace aten's CPU kernels inside the block (and only there)."""
        import torch
        lib = torch.library.Library("aten", "IMPL")
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*[Oo]verrid.*")
                for k in self.kernels:
                    lib.impl(k.schema_name, self._counting(k), "CPU")
                    if k.backward is not None:
                        torch.library.register_autograd(f"aten::{k.schema_name}", k.backward,
                                                        setup_context=k.setup_context, lib=lib)
            yield self
        finally:
            lib._destroy()

    def _counting(self, k: Kernel):
        def run(*args, **kwargs):
            self.calls[k.op] += 1
            return k.fn(*args, **kwargs)
        return run


def load_kernels(path: str) -> KernelSet:
    """Every kernel in ``path`` (see the module docstring); KernelsError when there is none."""
    modules = _modules(path)
    kernels: dict[str, Kernel] = {}
    for mod, where in modules:
        funcs = {n: f for n, f in vars(mod).items()
                 if inspect.isfunction(f) and not n.startswith("_") and f.__module__ == mod.__name__}
        for name, f in funcs.items():
            if name.endswith(_SUFFIXES):
                continue
            op = _aten_op(name.removesuffix("_kernel_impl"))
            if op is None:
                continue
            if op in kernels:
                raise KernelsError(f"--kernels {path}: aten.{op} is implemented twice, in "
                                   f"{kernels[op].source} and {where}:{name}")
            kernels[op] = Kernel(op, f, f"{where}:{name}", funcs.get(name + "_backward"),
                                 funcs.get(name + "_setup_context"))
            if kernels[op].setup_context is not None and kernels[op].backward is None:
                raise KernelsError(f"--kernels {path}: {where}:{name}_setup_context without {name}_backward")
    if not kernels:
        raise KernelsError(f"--kernels {path}: no function named after an aten op (e.g. def mm(a, b) "
                           "or def add_Tensor(a, b, alpha=1)) in " + ", ".join(w for _, w in modules))
    return KernelSet(path, list(kernels.values()))


def _aten_op(name: str) -> str | None:
    """``mm`` -> ``mm.default``, ``add_Tensor`` -> ``add.Tensor``, anything else -> None."""
    import torch
    packet = getattr(torch.ops.aten, name, None)
    if packet is not None and "default" in packet.overloads():
        return f"{name}.default"
    base, _, overload = name.rpartition("_")
    if base:
        packet = getattr(torch.ops.aten, base, None)
        if packet is not None and overload in packet.overloads():
            return f"{base}.{overload}"
    return None


def _modules(path: str) -> list[tuple[object, str]]:
    p = Path(path)
    if p.is_dir():
        files = sorted(f for f in p.rglob("*.py") if not f.name.startswith("_"))
        if not files:
            raise KernelsError(f"--kernels {path}: the directory has no .py files")
        return [(_load_file(f), str(f)) for f in files]
    if p.suffix == ".py":
        if not p.is_file():
            raise KernelsError(f"--kernels {path}: no such file")
        return [(_load_file(p), str(p))]
    try:
        return [(importlib.import_module(path), path)]
    except ImportError as e:
        raise KernelsError(f"--kernels {path}: not a directory, a .py file or an importable module "
                           f"({type(e).__name__}: {e})") from None


def _load_file(f: Path):
    name = "aotcheck_kernels_" + "_".join(f.resolve().with_suffix("").parts[-3:]).replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, f)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001 - the user's file: say which and why
        raise KernelsError(f"--kernels: importing {f} raised {type(e).__name__}: {e}") from None
    return mod

"""setters: how one value of an input of compilation is put in place, and taken back.

``applied(module, name, value)`` is a context manager for one VARY entry (``program.Kind``):

    GLOBAL     setattr on the program module (a list or dict global is replaced whole)
    ATTRIBUTE  setattr on the longest importable prefix of the dotted name
    CONFIG     ``config.patch({field: value})`` on torch's config module
    AMBIENT    one of ``AMBIENT``: an ambient torch setting, through its own setter
    SETUP      the program's ``setup(name, value)`` (no undo: a registration lives as long as
               its process, which is why programs run each side in a process of its own)
    STORAGE    not a setter: ``related(args, relation)`` rebuilds the arguments

The storage lattice of two arguments I and J of one shape and dtype (``RELATIONS``)::

    disjoint          separate storages
    same              one tensor passed twice
    view_of_base      J is a view of I covering the same memory (a view and its base)
    shared_disjoint   one storage, no element in common (false sharing)
    overlap           one storage, J starts k elements after I (partial overlap)
    overlap_reversed  one storage, I starts k elements after J
    offset            separate storages, each view one element into its own
"""
from __future__ import annotations

import contextlib
import importlib
from typing import Callable

import torch

from .program import Kind, ProgramError, kind_of

# ---------------------------------------------------------------- ambient settings

# name -> (getter, setter, values A..): global torch settings that are not "on" and not config
AMBIENT: dict[str, tuple[Callable, Callable, tuple]] = {
    "autocast_dtype.cpu": (lambda: torch.get_autocast_dtype("cpu"),
                           lambda v: torch.set_autocast_dtype("cpu", v), (torch.bfloat16, torch.float16)),
    "autocast_dtype.cuda": (lambda: torch.get_autocast_dtype("cuda"),
                            lambda v: torch.set_autocast_dtype("cuda", v), (torch.float16, torch.bfloat16)),
    "autocast_cache_enabled": (torch.is_autocast_cache_enabled, torch.set_autocast_cache_enabled,
                               (True, False)),
    "default_dtype": (torch.get_default_dtype, torch.set_default_dtype, (torch.float32, torch.float64)),
    "deterministic_algorithms": (torch.are_deterministic_algorithms_enabled,
                                 torch.use_deterministic_algorithms, (False, True)),
    "float32_matmul_precision": (torch.get_float32_matmul_precision, torch.set_float32_matmul_precision,
                                 ("highest", "medium")),
    "mkldnn_enabled": (lambda: torch.backends.mkldnn.enabled,
                       lambda v: setattr(torch.backends.mkldnn, "enabled", v), (True, False)),
    "num_threads": (torch.get_num_threads, torch.set_num_threads, (2, 1)),
}


@contextlib.contextmanager
def applied(module, name: str, value):
    """``name`` set to ``value`` for the block (see the module docstring)."""
    kind = kind_of(module, name)
    if kind is Kind.STORAGE:
        yield                     # applied to the arguments by related()
        return
    undo = _set(module, kind, name, value)
    try:
        yield
    finally:
        undo()


def _set(module, kind: Kind, name: str, value) -> Callable[[], None]:
    if kind is Kind.GLOBAL:
        return _setattr(module, name, value)
    if kind is Kind.CONFIG:
        return _patch_config(name, value)
    if kind is Kind.ATTRIBUTE:
        owner, attr = _resolve(name)
        return _setattr(owner, attr, value)
    if kind is Kind.AMBIENT:
        return _set_ambient(name.split(":", 1)[1], value)
    module.setup(name, value)
    return lambda: None


def _setattr(owner, attr: str, value) -> Callable[[], None]:
    old = getattr(owner, attr)
    setattr(owner, attr, value)
    return lambda: setattr(owner, attr, old)


def config_module(name: str):
    """``torch._inductor.config.cpp.simdlen`` -> (the config module, ``"cpp.simdlen"``)."""
    for m in ("torch._functorch.config", "torch._inductor.config", "torch._dynamo.config"):
        if name.startswith(m + "."):
            return importlib.import_module(m), name[len(m) + 1:]
    raise ProgramError(f"{name}: not a field of torch's functorch, inductor or dynamo config")


def _patch_config(name: str, value) -> Callable[[], None]:
    module, field = config_module(name)
    if field not in module._config:
        raise ProgramError(f"{name}: this torch has no such config field")
    patch = module.patch({field: value})
    patch.__enter__()
    return lambda: patch.__exit__(None, None, None)


def _resolve(name: str):
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:-1]:
            owner = getattr(owner, attr)
        return owner, parts[-1]
    raise ProgramError(f"{name}: no importable module in this dotted name")


def _set_ambient(name: str, value) -> Callable[[], None]:
    if name not in AMBIENT:
        raise ProgramError(f"ambient:{name}: unknown ambient setting; known: {', '.join(AMBIENT)}")
    get, set_, _ = AMBIENT[name]
    old = get()
    set_(value)
    return lambda: set_(old)


# ---------------------------------------------------------------- storage relations

RELATIONS = ("disjoint", "same", "view_of_base", "shared_disjoint", "overlap", "overlap_reversed", "offset")


def relation_pair(name: str) -> tuple[int, int]:
    """``"storage:0,1"`` -> (0, 1)."""
    try:
        i, j = (int(x) for x in name.split(":", 1)[1].split(","))
    except ValueError as e:
        raise ProgramError(f"{name}: a storage input is named storage:I,J (two argument indices)") from e
    return i, j


def pairs(args: tuple) -> list[tuple[int, int]]:
    """Pairs of tensor arguments of one shape and dtype (the ones a relation can join)."""
    ts = [(k, a) for k, a in enumerate(args) if isinstance(a, torch.Tensor) and a.numel() > 0]
    return [(i, j) for n, (i, a) in enumerate(ts) for j, b in ts[n + 1:]
            if a.shape == b.shape and a.dtype == b.dtype and a.device == b.device]


def related(args: tuple, i: int, j: int, relation: str) -> tuple:
    """``args`` with arguments I and J rebuilt in ``relation`` (values from the originals; I wins
    where they share memory). Both require grad only when both did: they are then views of a
    non-leaf base, so that in-place writes to them stay legal."""
    if relation not in RELATIONS:
        raise ProgramError(f"storage relation {relation!r}: known relations are {', '.join(RELATIONS)}")
    a, b = args[i], args[j]
    if (i, j) not in pairs(args) and (j, i) not in pairs(args):
        raise ProgramError(f"storage:{i},{j}: arguments {i} and {j} are not two tensors of one shape and dtype")
    x, y = _build(a.detach(), b.detach(), relation)
    if a.requires_grad and b.requires_grad:
        x, y = _with_grad(x, y, relation)
    out = list(args)
    out[i], out[j] = x, y
    return tuple(out)


def _build(a: torch.Tensor, b: torch.Tensor, relation: str):
    shape, n = a.shape, a.numel()
    k = max(1, n // 2)
    if relation == "disjoint":
        return a.clone(), b.clone()
    if relation == "same":
        t = a.clone()
        return t, t
    if relation == "view_of_base":
        t = a.clone()
        return t, t.view(shape)
    size = {"shared_disjoint": 2 * n, "overlap": n + k, "overlap_reversed": n + k, "offset": n + 1}[relation]
    if relation == "offset":
        s1, s2 = a.new_empty(size), b.new_empty(size)
        s1[1:].copy_(a.reshape(-1))
        s2[1:].copy_(b.reshape(-1))
        return s1[1:].view(shape), s2[1:].view(shape)
    flat = a.new_empty(size)
    at, bt = {"shared_disjoint": (0, n), "overlap": (0, k), "overlap_reversed": (k, 0)}[relation]
    flat[bt:bt + n].copy_(b.reshape(-1))
    flat[at:at + n].copy_(a.reshape(-1))
    return flat[at:at + n].view(shape), flat[bt:bt + n].view(shape)


def _with_grad(x: torch.Tensor, y: torch.Tensor, relation: str):
    """The same relation over a non-leaf base that requires grad (its leaf is discarded)."""
    if relation in ("disjoint", "offset"):
        return (x.detach().requires_grad_() * 1 if relation == "disjoint" else _regrad_view(x),
                y.detach().requires_grad_() * 1 if relation == "disjoint" else _regrad_view(y))
    base = x._base if x._base is not None else x
    root = base.detach().requires_grad_() * 1
    return _same_view(root, x, base), _same_view(root, y, base)


def _regrad_view(v: torch.Tensor) -> torch.Tensor:
    base = v._base
    return _same_view(base.detach().requires_grad_() * 1, v, base)


def _same_view(root: torch.Tensor, v: torch.Tensor, base: torch.Tensor) -> torch.Tensor:
    if v is base:
        return root
    return root.as_strided(v.shape, v.stride(), v.storage_offset())


# ---------------------------------------------------------------- a program's inputs


def inputs_of(module) -> list[tuple[object, tuple]]:
    """The program's inputs of compilation with their values (``program.Input``, values): its
    VARY entries; without VARY, the derived ones: the storage relations of its first pair of
    arguments of one shape and dtype (``RELATIONS``, disjoint first) and every ambient setting
    (``AMBIENT``, torch's default first)."""
    from .program import Input, _text, arguments, declared_inputs
    vary = getattr(module, "VARY", None)
    if vary:
        return [(i, tuple(vary[i.name])) for i in declared_inputs(module)]
    out = []
    found = pairs(arguments(module))
    if found:
        i, j = found[0]
        out.append((Input(f"storage:{i},{j}", Kind.STORAGE, RELATIONS), RELATIONS))
    for name, (get, _, values) in AMBIENT.items():
        values = (get(),) + tuple(v for v in values if v != get())
        out.append((Input(f"ambient:{name}", Kind.AMBIENT, tuple(_text(v) for v in values)), values))
    return out


def value_of(module, name: str, index: int):
    """The value ``index`` of the input ``name`` (as ``inputs_of`` lists them)."""
    for inp, values in inputs_of(module):
        if inp.name == name:
            return values[index]
    raise ProgramError(f"{module.__file__}: no input named {name!r}")

"""subclass.base: a tensor subclass as plain data and plain tensors, the vocabulary every
module of :mod:`aotcheck.subclass` shares.

``flatten`` turns a traceable wrapper subclass into its plain inner tensors and a plain-data
description (type, ctx, inner attribute names, outer size and stride); ``unflatten`` rebuilds
it. ``storage_key`` names the memory an outer tensor reaches (through its first inner tensor),
and ``save_primals`` copies plain tensors keeping their aliasing. Before and after::

    flatten(TwoTensor(a, b), "x", flat)
        -> {"type": "torch.testing._internal.two_tensor:TwoTensor", "ctx": None,
            "attrs": ["a", "b"], "size": [3], "stride": [1], "inner": [None, None]}
           flat == [a, b]
"""
from __future__ import annotations

import importlib

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from ..engine.capture.functional import storage_ref
from ..errors import UnsupportedInputError

_PLAIN = (torch.Tensor, torch.nn.Parameter)


def has_subclass(args: tuple, kwargs: dict) -> bool:
    """Whether any argument leaf is a traceable wrapper subclass."""
    return any(isinstance(t, torch.Tensor) and type(t) not in _PLAIN and is_traceable_wrapper_subclass(t)
               for t in pytree.tree_leaves((args, kwargs)))


# ---- plain-data encoding of ctx and classes ----

def _enc(v, where: str):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, torch.dtype):
        return {"dtype": str(v).replace("torch.", "")}
    if isinstance(v, (tuple, list)):
        return {"tuple" if isinstance(v, tuple) else "list": [_enc(x, where) for x in v]}
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return {"dict": {k: _enc(x, where) for k, x in v.items()}}
    raise UnsupportedInputError(
        f"{where}: its __tensor_flatten__ ctx holds a {type(v).__name__}; aotcheck supports "
        "subclass ctx made of None, bool, int, float, str, torch.dtype, tuples, lists and "
        "str-keyed dicts")


def _dec(v):
    if not isinstance(v, dict):
        return v
    (tag, x), = v.items()
    if tag == "dtype":
        return getattr(torch, x)
    if tag == "tuple":
        return tuple(_dec(e) for e in x)
    if tag == "list":
        return [_dec(e) for e in x]
    return {k: _dec(e) for k, e in x.items()}


def _class_name(cls: type, where: str) -> str:
    name = f"{cls.__module__}:{cls.__qualname__}"
    if _load_class(name) is not cls:
        raise UnsupportedInputError(
            f"{where}: tensor subclass {cls.__qualname__} is not importable as {name}; "
            "aotcheck supports subclasses defined at module level")
    return name


def _load_class(name: str):
    mod, _, qual = name.partition(":")
    try:
        obj = importlib.import_module(mod)
        for part in qual.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    return obj


# ---- flatten / unflatten ----

def flatten(t, where: str, flat: list):
    """Append t's plain inner tensors (recursively) to ``flat``; return its plain-data desc
    (None for a plain tensor)."""
    if type(t) in _PLAIN or isinstance(t, FakeTensor):     # FakeTensor: while tracing
        flat.append(t)
        return None
    if not is_traceable_wrapper_subclass(t):
        raise UnsupportedInputError(
            f"{where} is a tensor subclass ({type(t).__name__}) without __tensor_flatten__ and "
            "__tensor_unflatten__; aotcheck supports plain torch.Tensor, nn.Parameter and "
            "traceable wrapper subclasses")
    attrs, ctx = t.__tensor_flatten__()
    inner = [flatten(getattr(t, a), f"{where}.{a}", flat) for a in attrs]
    return {"type": _class_name(type(t), where), "ctx": _enc(ctx, where), "attrs": list(attrs),
            "size": list(t.shape), "stride": list(t.stride()), "inner": inner}


def unflatten(desc, it):
    """Rebuild one value from its desc, taking its inner tensors from iterator ``it``."""
    if desc is None:
        return next(it)
    inner = {a: unflatten(d, it) for a, d in zip(desc["attrs"], desc["inner"])}
    cls = _load_class(desc["type"])
    return cls.__tensor_unflatten__(inner, _dec(desc["ctx"]), tuple(desc["size"]), tuple(desc["stride"]))


def inner_count(desc) -> int:
    return 1 if desc is None else sum(inner_count(d) for d in desc["inner"])


def split_leaves(leaves: list, spec, where: str):
    """(descs, flat): per leaf a desc (None: plain tensor, "value": non-tensor) and the flat
    list of plain leaves."""
    descs, flat = [], []
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, torch.Tensor):
            descs.append(flatten(leaf, f"{where} leaf {i}", flat))
        else:
            descs.append("value")
            flat.append(leaf)
    return descs, flat




def plain_part(t: torch.Tensor) -> torch.Tensor:
    """A plain tensor over ``t``'s storage: ``t`` itself, or (recursively) a wrapper subclass's
    first inner tensor (a ``TwoTensor``'s inner tensors are viewed and written in step, so one
    stands for both)."""
    while is_traceable_wrapper_subclass(t):
        t = getattr(t, t.__tensor_flatten__()[0][0])
    return t


def storage_key(t):
    return storage_ref(plain_part(t))


def save_primals(tensors: list) -> list:
    """Copies of the primals as they are before the forward, sharing storage where they do."""
    copies: dict = {}
    out = []
    with torch.no_grad():
        for t in tensors:
            key = storage_ref(t)
            if key not in copies:
                copies[key] = t.untyped_storage().clone()
            c = torch.empty(0, dtype=t.dtype, device=t.device)
            c = c.set_(copies[key], t.storage_offset(), t.shape, t.stride())
            if t.is_conj():
                c = c.conj()
            if t.is_neg():
                c = c._neg_view()
            out.append(c)
    return out



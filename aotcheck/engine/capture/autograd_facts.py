"""autograd_facts: what a functional run leaves in autograd that the facts must carry.

Read after the function ran: the tensors that became leaves requiring grad inside it
(NOTE [new grad leaves]), and a digest of each custom ``autograd.Function`` backward the
candidates reach (NOTE [custom Function backward in the key]).
"""
from __future__ import annotations

import hashlib
import types

import torch

from .facts import NewLeaf
from .functional import geometry_of, storage_ref
from ..graph_walk import grad_nodes
from ..signature import Signature


def new_leaf_facts(tensors: list, user: list, sig: Signature, geometry: dict,
                   members: dict | None = None) -> tuple:
    """Per tensor that became a leaf requiring grad inside the function:
    a :class:`~.facts.NewLeaf`.

    # NOTE [new grad leaves]
    ``v = x.view(-1); v.requires_grad_()`` (x an argument that does not require grad), or
    ``h = x * 2; h.requires_grad_()``, or ``torch.zeros(3, requires_grad=True)``: eager makes
    a leaf that requires grad inside the function; what is computed from it requires grad,
    and backward accumulates its ``.grad``. The compiled graph computes every value itself,
    so the runtime makes each such leaf before the graph runs (kind ``"view"``: an
    ``as_strided`` view of argument ``source`` taken under no_grad, as eager's is a view of
    it; kind ``"fresh"``: an empty tensor, filled from its graph value when it is returned)
    and passes them to the compiled autograd.Function as extra inputs that the forward graph
    does not read: the joint graph differentiates with respect to them too, so outputs get
    eager's requires_grad and the leaves get eager's ``.grad``.

    An argument that is a member of an alias group (a view of the synthetic base inside the
    graph) given requires_grad_() is kind ``"argument"``, source its leaf index: the caller's
    own tensor is that leaf, so the runtime sets its flag and passes it (the flag of an
    argument that is its own placeholder is set as NOTE [requires_grad_ on an argument] says).
    """
    members = members or {}
    storages = {}
    for i, t in enumerate(user):
        if isinstance(t, torch.Tensor):
            storages.setdefault(storage_ref(t), i)
    out = []
    for t in tensors:
        shape, stride, offset = geometry.get(id(t), geometry_of(t))
        src = storages.get(storage_ref(t), -1)
        kind = "view" if src >= 0 else "fresh"
        if id(t) in members:
            kind, src = "argument", members[id(t)]
            shape, stride, offset = geometry_of(t)
        out.append(NewLeaf(kind, src, tuple(shape), tuple(stride), offset,
                           str(t.dtype).replace("torch.", "")))
    return tuple(out)


def custom_function_digests(tensors: list) -> tuple[str, ...]:
    """One digest per custom ``autograd.Function`` whose backward node the candidates'
    autograd graphs reach, in a fixed order.

    # NOTE [custom Function backward in the key]
    The captured graph is the forward only; a custom Function's backward shows up in the
    joint graph, which the cache key does not see. Two Functions with the same forward and
    different backwards would share a key, and a hit would run the wrong backward. So the
    raw facts (a key component) carry, per reached Function, its qualified name and a digest
    of its backward's code (bytecode, constants, names, nested code) and of its closure's
    plain values. A helper the backward calls, or a global it reads, is not in the digest.
    """
    from torch.autograd.function import BackwardCFunction
    found: dict[str, str] = {}
    for fn in grad_nodes(t.grad_fn for t in tensors if isinstance(t, torch.Tensor)):
        if isinstance(fn, BackwardCFunction):
            cls = getattr(fn, "_forward_cls", type(fn))
            name = f"{cls.__module__}.{cls.__qualname__}"
            found.setdefault(name, _function_digest(cls.backward))
    return tuple(f"{n}:{d}" for n, d in sorted(found.items()))


def _function_digest(fn) -> str:
    h = hashlib.sha256()
    fn = getattr(fn, "__wrapped__", fn)          # once_differentiable wraps the backward
    code = getattr(fn, "__code__", None)

    def add(c):
        h.update(c.co_code)
        h.update(repr(c.co_names).encode())
        for k in c.co_consts:
            add(k) if isinstance(k, types.CodeType) else h.update(repr(k).encode())
    if code is None:
        h.update(repr(fn).encode())
        return h.hexdigest()[:16]
    add(code)
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        h.update((repr(v) if isinstance(v, (bool, int, float, str, type(None))) else
                  type(v).__qualname__).encode())
    return h.hexdigest()[:16]

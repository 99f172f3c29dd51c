"""Input signatures: every fact about the inputs that can change the compiled result.

A compiled artifact is reused only for calls whose signature is equal. The
signature covers the argument tree, and for each leaf:

- a tensor: shape, stride, storage offset, dtype, device, requires_grad,
  is_leaf, whether the caller retains its grad, and which other arguments it shares
  storage with (or *is*);
- a Python scalar, None or str: its type and exact value;
- a ``torch.Generator``: the object itself (its repr holds its address; the compiled
  graph draws from that very object, and keeps it alive, so no other takes its address).

plus grad mode and inference mode. Two arguments that view one storage form an
*alias group*; for those the signature also records the group's root tensor
(the common ``._base``), because mutations through one member must be replayed
on it.

Example::

    >>> x = torch.randn(4, 3)
    >>> sig = signature(*flatten_inputs((x, x[1:], 2.0), {}))
    >>> [l.storage for l in sig.leaves[:2]], sig.leaves[1].offset
    ([0, 0], 3)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import _pytree as pytree

from ..errors import UnsupportedInputError
from . import serial

SCHEMA_VERSION = 1
_SCALARS = (bool, int, float, str, type(None))


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int
    dtype: str
    device: str
    requires_grad: bool
    is_leaf: bool
    storage: int          # alias-group number, by first appearance
    storage_numel: int    # storage size in elements of this dtype
    same_as: int | None   # index of an earlier leaf that is this very tensor
    retains_grad: bool = False  # the caller called retain_grad() on it
                                # (NOTE [an argument the caller retains] in capture/autograd_facts.py)


@dataclass(frozen=True)
class ValueSpec:
    kind: str             # "int" | "float" | "bool" | "str" | "none"
    value: str            # repr(value): exact, and '-0.0' differs from '0.0'


@dataclass(frozen=True)
class GroupSpec:
    """An alias group: several distinct tensor arguments over one storage."""
    storage: int
    members: tuple[int, ...]            # leaf indices (distinct tensors only)
    root_member: int                    # the member whose root (._base or itself) is the base:
                                        # the first that requires grad, else the first
    common_root: bool                   # every member that requires grad has that root
    root_shape: tuple[int, ...]
    root_stride: tuple[int, ...]
    root_offset: int
    root_requires_grad: bool
    root_is_leaf: bool
    root_whole: bool = False            # no member's root reaches every member (detached rows
                                        # of one tensor): the base is the whole storage, flat
    bases: tuple[int | None, ...] = ()  # per member: the member that is its ``._base``, or None
                                        # (NOTE [views of an argument given requires_grad_])


@dataclass(frozen=True)
class Signature:
    tree: str
    leaves: tuple[TensorSpec | ValueSpec, ...]
    groups: tuple[GroupSpec, ...]
    grad_enabled: bool
    inference_mode: bool
    schema: int = SCHEMA_VERSION

    def tensor_indices(self) -> list[int]:
        return [i for i, l in enumerate(self.leaves) if isinstance(l, TensorSpec)]

    def to_json(self) -> str:
        return serial.dumps(self)

    @staticmethod
    def from_json(text: str) -> "Signature":
        try:
            return serial.loads(Signature, text, schema=SCHEMA_VERSION)
        except serial.SerialError as e:
            raise ValueError(f"signature: {e}") from None


def flatten_inputs(args: tuple, kwargs: dict) -> tuple[list, Any]:
    """Flatten (args, kwargs) into leaves and a tree spec, rejecting unsupported leaves."""
    if not kwargs and all(type(a) is torch.Tensor for a in args):
        for i, a in enumerate(args):          # fast path: a flat tuple of plain tensors
            _check_leaf(a, f"argument {i}")
        return list(args), len(args)
    leaves, spec = pytree.tree_flatten((args, kwargs))
    for i, leaf in enumerate(leaves):
        _check_leaf(leaf, f"argument leaf {i}")
    return leaves, spec


def unflatten_inputs(leaves: list, spec) -> tuple[tuple, dict]:
    if isinstance(spec, int):
        return tuple(leaves), {}
    return pytree.tree_unflatten(leaves, spec)


def _check_leaf(leaf, where: str) -> None:
    if isinstance(leaf, torch.Tensor):
        if type(leaf) not in (torch.Tensor, torch.nn.Parameter):
            raise UnsupportedInputError(
                f"{where} is a tensor subclass ({type(leaf).__name__}) without __tensor_flatten__ "
                "and __tensor_unflatten__; aotcheck supports plain torch.Tensor, nn.Parameter and "
                "traceable wrapper subclasses")
        if leaf.layout != torch.strided:
            raise UnsupportedInputError(
                f"{where} has layout {leaf.layout}; aotcheck supports strided (dense) tensors only")
        if leaf.is_conj() or leaf.is_neg():
            raise UnsupportedInputError(f"{where} has a lazy conj/neg bit; call .resolve_conj() first")
        return
    if isinstance(leaf, _SCALARS) or isinstance(leaf, torch._C.Generator):
        return
    raise UnsupportedInputError(
        f"{where} has type {type(leaf).__name__}; aotcheck supports tensors, int, float, bool, "
        "str, None and torch.Generator, nested in tuples, lists and dicts")


def storage_key(t: torch.Tensor) -> int:
    st = t.untyped_storage()
    return st._cdata if st.nbytes() else -id(t)    # empty storages never alias


def call_key(leaves: list, spec) -> tuple:
    """A cheap hashable key that is equal exactly when :func:`signature` would be equal. The
    ambient torch settings are not in it: the caller adds them (``aotcheck.cache.ambient``)."""
    parts: list = [spec if isinstance(spec, int) else str(spec),
                   torch.is_grad_enabled(), torch.is_inference_mode_enabled()]
    storages: dict[int, int] = {}
    objects: dict[int, int] = {}
    shared = False
    for i, t in enumerate(leaves):
        if isinstance(t, torch.Tensor):
            same = objects.setdefault(id(t), i)
            sk = storage_key(t)
            group = storages.get(sk)
            if group is None:
                group = storages[sk] = len(storages)
            elif same == i:
                shared = True     # a distinct tensor over a storage seen before
            # the storage's size too (TensorSpec.storage_numel): a resize_ grows a storage or
            # not by it (NOTE [resize_ of an argument] in resize.py)
            parts.append((t.shape, t.stride(), t.storage_offset(), t.dtype, t.device,
                          t.requires_grad, t.is_leaf, group, same, t.untyped_storage().nbytes(),
                          t.retains_grad))
        else:
            parts.append((type(t).__name__, repr(t)))
    if shared:
        parts.append(tuple(_group_specs(leaves)))
    return tuple(parts)


_grad_enabled, _inference_mode = torch.is_grad_enabled, torch.is_inference_mode_enabled
_Tensor, _strided = torch.Tensor, torch.strided


def fast_call_key(args: tuple):
    """The key of a call whose arguments are plain strided tensors over distinct storages,
    or None (then the general :func:`call_key` applies). Equal keys mean equal signatures."""
    parts = [_grad_enabled(), _inference_mode()]
    storages = set()
    for a in args:
        if type(a) is not _Tensor or a.layout is not _strided or a.is_conj() or a.is_neg():
            return None
        storage = a.untyped_storage()
        st = storage._cdata
        if st in storages:
            return None
        storages.add(st)
        # is_leaf and retains_grad only where it requires grad (any other tensor is a leaf
        # that retains nothing): two reads fewer per tensor of the common inference call
        parts.append((a.shape, a.stride(), a.storage_offset(), a.dtype, a.device, storage.nbytes(),
                      a.requires_grad and (a.is_leaf, a.retains_grad)))
    return tuple(parts)


def _roots(leaves: list) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    seen_ids: set[int] = set()
    order: dict[int, int] = {}
    for i, t in enumerate(leaves):
        if isinstance(t, torch.Tensor):
            g = order.setdefault(storage_key(t), len(order))
            if id(t) in seen_ids:
                continue
            seen_ids.add(id(t))
            groups.setdefault(g, []).append(i)
    return {g: m for g, m in groups.items() if len(m) > 1}


def root_of(t: torch.Tensor) -> torch.Tensor:
    """The tensor a view's storage belongs to: its ``._base``, unless ``set_()`` moved the view
    onto another storage since (``a1 = b[1]; a1.set_(v[2:])`` keeps ``a1._base is b``: a
    stale base, whose storage ``a1`` no longer shares), then the tensor itself."""
    b = t._base
    return b if b is not None and storage_key(b) == storage_key(t) else t


def storage_extent(t: torch.Tensor) -> tuple[int, int]:
    """The storage elements ``t`` reaches: [first, last] (last < first when it has none)."""
    last = t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride()) if n > 0)
    return t.storage_offset(), last


def _root_member(leaves: list, members: list[int]) -> int:
    """The member whose root serves as the group's base: the first that requires grad (they
    must share that root), else the first whose root reaches every member's elements (a
    member set_() onto part of another one's storage is not inside its stale base)."""
    grad = [i for i in members if leaves[i].requires_grad]
    if grad:
        return grad[0]
    lo = min(storage_extent(leaves[i])[0] for i in members)
    hi = max(storage_extent(leaves[i])[1] for i in members)
    for i in members:
        first, last = storage_extent(root_of(leaves[i]))
        if first <= lo and last >= hi:
            return i
    return -1 - members[0]


def whole_storage(t: torch.Tensor) -> torch.Tensor:
    """All of ``t``'s storage as one flat tensor (a view: writes to it reach ``t``, and under
    functionalization it reads the storage's final value)."""
    return t.as_strided((t.untyped_storage().nbytes() // t.element_size(),), (1,), 0)


def _group_specs(leaves: list) -> list[GroupSpec]:
    out = []
    for g, members in _roots(leaves).items():
        root_member = _root_member(leaves, members)
        whole = root_member < 0
        if whole:   # members that need no grad, none inside another's root: the storage is the base
            root_member = -1 - root_member
            r = whole_storage(leaves[root_member])
        else:
            r = root_of(leaves[root_member])
        common = all(root_of(leaves[i]) is r for i in members if leaves[i].requires_grad)
        bases = tuple(next((k for k in members if leaves[i]._base is leaves[k]), None)
                      for i in members)
        out.append(GroupSpec(g, tuple(members), root_member, common, tuple(r.shape), tuple(r.stride()),
                             r.storage_offset(), r.requires_grad, r.is_leaf, whole, bases))
    return out


def signature(leaves: list, spec) -> Signature:
    """The full, JSON-serialisable signature of a call (see module docstring)."""
    out = []
    storages: dict[int, int] = {}
    objects: dict[int, int] = {}
    for i, t in enumerate(leaves):
        if isinstance(t, torch.Tensor):
            same = objects.setdefault(id(t), i)
            group = storages.setdefault(storage_key(t), len(storages))
            out.append(TensorSpec(
                shape=tuple(t.shape), stride=tuple(t.stride()), offset=t.storage_offset(),
                dtype=str(t.dtype).replace("torch.", ""), device=str(t.device),
                requires_grad=t.requires_grad, is_leaf=t.is_leaf, storage=group,
                storage_numel=t.untyped_storage().nbytes() // t.element_size(),
                same_as=None if same == i else same, retains_grad=t.retains_grad))
        else:
            kind = "none" if t is None else type(t).__name__
            out.append(ValueSpec(kind, repr(t)))
    tree = f"flat{spec}" if isinstance(spec, int) else str(spec)
    return Signature(tree, tuple(out), tuple(_group_specs(leaves)),
                     torch.is_grad_enabled(), torch.is_inference_mode_enabled())

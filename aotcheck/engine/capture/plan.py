"""plan: how the graph's placeholders map to the user's argument leaves.

Most arguments are their own placeholder. Arguments that share one storage and are
mutated become members of a *synthetic base* (see
NOTE [synthetic bases] in trace.py): the graph takes the group's root tensor and rebuilds each member
inside the graph with ``as_strided``.

Example: ``f(a, a[1:])`` where ``a[1:]`` is mutated, planned with a synthetic base::

    placeholders = (("root", 0),)
    sources      = (LeafSource(LeafKind.MEMBER, 0, (4,), (1,), 0),
                    LeafSource(LeafKind.MEMBER, 0, (3,), (1,), 1))
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

import torch

from ...errors import UnsupportedInputError
from .. import serial
from ..signature import GroupSpec, Signature, TensorSpec, root_of, whole_storage


class LeafKind(enum.StrEnum):
    """How one argument leaf is rebuilt inside the graph."""
    PLACEHOLDER = "placeholder"     # it is placeholder ``index``
    SAME = "same"                   # the very tensor of leaf ``index``
    MEMBER = "member"               # a view of root placeholder ``index`` in this geometry, of
                                    # its detached alias when the member does not require grad
                                    # but the root does
    VALUE = "value"                 # a non-tensor


@dataclass(frozen=True)
class LeafSource:
    """How one argument leaf is rebuilt inside the graph (``kind``)."""
    kind: LeafKind
    index: int | None = None
    shape: tuple[int, ...] = ()     # member only
    stride: tuple[int, ...] = ()
    offset: int = 0
    detached: bool = False


@dataclass(frozen=True)
class InputPlan:
    """How graph placeholders map to the user's argument leaves.

    ``placeholders[p]`` is ``("leaf", i)`` (argument leaf i), ``("root", i)`` (the root
    tensor of leaf i's alias group) or ``("storage", i)`` (leaf i's whole storage, flat: a
    group whose members lie in no one member's root, or one argument written outside its
    own elements, NOTE [writes outside an argument]). ``sources[i]`` says how leaf i is
    rebuilt inside the graph (:class:`LeafSource`).
    """
    placeholders: tuple[tuple, ...]
    sources: tuple[LeafSource, ...]

    @staticmethod
    def from_data(data: dict) -> "InputPlan":
        """From its ``asdict`` JSON form (the cache entry)."""
        return serial.from_data(InputPlan, data)


def plan_inputs(sig: Signature, synthetic: frozenset[int] = frozenset()) -> InputPlan:
    groups = {g.storage: g for g in sig.groups}
    placeholders: list[tuple] = []
    sources: list[LeafSource] = []
    root_slot: dict[int, int] = {}
    for i, spec in enumerate(sig.leaves):
        if not isinstance(spec, TensorSpec):
            sources.append(LeafSource(LeafKind.VALUE))
        elif spec.same_as is not None:
            sources.append(LeafSource(LeafKind.SAME, spec.same_as))
        elif spec.storage in synthetic and spec.storage not in groups:
            # NOTE [writes outside an argument]: an argument alone on its storage, written
            # through a view reaching outside it: the graph takes the whole storage
            sources.append(LeafSource(LeafKind.MEMBER, len(placeholders), spec.shape, spec.stride,
                                      spec.offset))
            placeholders.append(("storage", i))
        elif spec.storage in synthetic:
            g = groups[spec.storage]
            _check_synthetic(g, spec, i)
            if g.storage not in root_slot:
                root_slot[g.storage] = len(placeholders)
                placeholders.append(("storage" if g.root_whole else "root", g.root_member))
            detached = g.root_requires_grad and not spec.requires_grad
            sources.append(LeafSource(LeafKind.MEMBER, root_slot[g.storage], spec.shape, spec.stride,
                                      spec.offset, detached))
        else:
            sources.append(LeafSource(LeafKind.PLACEHOLDER, len(placeholders)))
            placeholders.append(("leaf", i))
    return InputPlan(tuple(placeholders), tuple(sources))


def _check_synthetic(g: GroupSpec, spec: TensorSpec, i: int) -> None:
    if spec.requires_grad and not g.common_root:
        raise UnsupportedInputError(
            f"argument leaf {i} shares storage with another argument, one of them is mutated, and "
            "the ones that require grad are not views of one common base; aotcheck supports "
            "mutated aliased arguments whose grad-requiring members view one base (or one tensor "
            "passed twice); members that do not require grad may be detached aliases")


def placeholder_tensors(plan: InputPlan, leaves: list) -> list[torch.Tensor]:
    """The real tensors to pass for each placeholder, for this call's leaves."""
    out = []
    for kind, ref in plan.placeholders:
        t = leaves[ref]
        if kind == "storage" and t.requires_grad and root_of(t).requires_grad:
            # the whole storage as a view of the argument's root, not of the argument: as_strided
            # on the argument would send no gradient outside it (NOTE [as_strided clips])
            t = root_of(t)
        out.append(root_of(t) if kind == "root" else whole_storage(t) if kind == "storage" else t)
    return out


def groups_needing_synthetic_base(sig: Signature, plan: InputPlan, input_facts) -> frozenset[int]:
    """The alias groups (storage numbers) that a capture with ``plan`` saw mutated."""
    storage_of = {}
    for p, (kind, ref) in enumerate(plan.placeholders):
        if kind == "leaf":
            storage_of[p] = sig.leaves[ref].storage
    grouped = {g.storage for g in sig.groups}
    out = set()
    for f in input_facts:
        s = storage_of.get(f.placeholder)
        if s in grouped and (f.data_mutated or f.metadata_mutated):
            out.add(s)
        elif s is not None and f.writes_outside:
            out.add(s)
    return frozenset(out)


# NOTE [writes outside an argument]
# ``a.as_strided(...)`` may reach storage elements the argument ``a`` does not (``b[::2]``,
# then an as_strided onto ``b[1]``), and a write through it changes them in eager. A graph
# over ``a`` alone cannot hold them: functionalization scatters into a compact copy of ``a``
# (the write lands on the wrong element, or is lost); and a view reaching outside it, read
# after the argument is written, is replayed on the compact new value (out of bounds, or the
# wrong elements). When a capture sees such a write, or such a view of a written argument, the
# argument is planned like a synthetic base of one: the placeholder is its whole storage
# (flat), the argument a member cut from it with ``as_strided``, and the runtime writes the
# whole storage back. Where the argument requires grad, the storage is taken as a view of
# its root base, so its elements outside the argument keep their gradient path, as in eager.

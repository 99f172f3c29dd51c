"""subclass.groups: arguments of a tensor-subclass call that share one storage and are written
(NOTE [subclass alias groups]): which of them are views of one root, and which inputs of the
outer autograd Function (:class:`aotcheck.subclass.outer.Outer`) take a gradient."""
from __future__ import annotations

from torch._prims_common import is_non_overlapping_and_dense_or_false as is_non_overlapping_and_dense

from ..engine.capture.functional import geometry_of
from ..engine.signature import root_of, storage_extent
from ..errors import UnsupportedInputError
from .base import plain_part, storage_key

# NOTE [subclass alias groups]
# Arguments that share one storage (``f(b, b.t())``) are one tensor to eager: a write through
# one is seen by the other, in values and in autograd history. The joint rebuilds each
# argument that requires grad as a leaf of its own (a clone when it is no leaf), which loses
# that, so when the trace saw such a group written, its members that require grad must be
# views of one root (their common ``._base``): the root is the input of :class:`Outer` that
# takes the group's gradient (one more input when it is no argument), and the joint makes it
# a grad leaf over the primals' storage and gives the function views of its clone (laid out
# as the root: a dense root) instead of the members; a member that does not require grad
# views the clone detached. The saved primals keep their aliasing (``save_primals``). Only
# members whose memory overlaps form a group: disjoint ones see nothing of each other's writes,
# and a view whose shape is changed in place (``t_``) before its base is written loses that
# change when autograd regenerates it on the joint's fake tensors (a PyTorch limit: the joint
# is then traced on real ones, NOTE [subclass joint on real tensors] in replay.py).

# NOTE [subclass alias groups written with grad]
# Members that require no grad see each other's history too: ``f(a, b0.t(), b0)`` with ``a``
# a TwoTensor that requires grad and ``a2.mul_(a)`` inside: eager's write rebases the base
# ``b0``, so every view of it requires grad from then on, and a use of another member after
# the write (``a3.sum()``, or ``retain_grad()`` on a view of it) carries the gradient to
# ``a``. Traced as separate tensors, the other members required no grad (a missing gradient,
# silently; a TraceError for ``retain_grad()``: fuzz seed 1). Where the first trace saw a
# member of such a group written in grad mode (``rebased``), the members are views of their
# common root in the forward trace (over the inputs' memory: the writes stay the graph's)
# and in the joint (no grad leaf, no extra input of Outer: the group takes no gradient;
# ``grad`` False; ``input``: the member that is the root, which the traces give the root
# itself). Members with different roots (a ``detach()`` of the base) share no
# history in eager either: no group.

def grad_slots(requires: list, groups: list) -> list:
    """The inputs of :class:`Outer` (outer tensors, then the groups' extra roots) that take a
    gradient, in order."""
    members = {i for grp in groups for i in grp["members"]}
    slots = {i for i, r in enumerate(requires) if r and i not in members}
    slots |= {grp["input"] for grp in groups if grp["grad"]}
    return sorted(slots)


def alias_groups(outer: list, requires: list, written: list, rebased=()) -> tuple[list, list]:
    """(groups, extra roots) for this call (NOTE [subclass alias groups]; with ``rebased``,
    the arguments the trace saw written in grad mode:
    NOTE [subclass alias groups written with grad])."""
    if not written:
        return [], []
    by_storage: dict = {}
    for i, t in enumerate(outer):
        if not any(t is o for o in outer[:i]):
            by_storage.setdefault(storage_key(t), []).append(i)
    # members that reach disjoint memory do not see each other's writes: only overlapping ones
    # form a group (fewer views in the joint: a view whose shape is changed in place before its
    # base is written loses that change when autograd regenerates it on fake tensors)
    parts = []
    for members in by_storage.values():
        spans = sorted((storage_extent(plain_part(outer[i])), i) for i in members)
        for (first, last), i in spans:
            if parts and parts[-1][0] is members and first <= parts[-1][1] and last >= first:
                parts[-1][2].append(i)
                parts[-1][1] = max(parts[-1][1], last)
            else:
                parts.append([members, last, [i]])
    groups, extra = [], []
    for members in (sorted(p[2]) for p in parts):
        if len(members) < 2 or not any(i in written for i in members):
            continue
        if not any(requires[i] for i in members):
            group = _written_with_grad(outer, members, rebased)
            if group is not None:
                groups.append(group)
            continue
        roots = {id(root_of(outer[i])): root_of(outer[i]) for i in members if requires[i]}
        root = next(iter(roots.values()))
        if len(roots) > 1 or not is_non_overlapping_and_dense(plain_part(root)) \
                or any(not requires[i] and outer[i].requires_grad for i in members):
            raise UnsupportedInputError(
                "arguments of a call with a tensor-subclass argument share one storage, one of "
                "them is written, and the ones that require grad are not views of one dense "
                "base; aotcheck supports such arguments when they are")
        at = next((i for i in members if outer[i] is root), None)
        if at is None:
            at = len(outer) + len(extra)
            extra.append(root)
        groups.append({"members": members, "input": at, "root": list(geometry_of(root)),
                       "geoms": {str(i): list(geometry_of(outer[i])) for i in members},
                       "grad": True})
    return groups, extra


def _written_with_grad(outer: list, members: list, rebased) -> dict | None:
    """The group of ``members`` (none requires grad) where one was written in grad mode, of
    those that share its root (NOTE [subclass alias groups written with grad]), or None."""
    hit = [i for i in members if i in rebased]
    if not hit:
        return None
    root = root_of(outer[hit[0]])
    kin = [i for i in members if root_of(outer[i]) is root]
    if len(kin) < 2:
        return None
    at = next((i for i in kin if outer[i] is root), None)     # the root member, if any
    return {"members": kin, "input": at, "root": list(geometry_of(root)),
            "geoms": {str(i): list(geometry_of(outer[i])) for i in kin}, "grad": False}


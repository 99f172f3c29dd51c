"""data_assign: ``x.data = y`` as the recorder sees it, and what the run reads of it.

Mixed into recorder.py's ``MetadataRecorder`` (``DataAssignWatch``: the ``data`` setter reaches
the TorchFunctionMode, set_() does not), and read by functional_run.py: whether a swap moved
data only (NOTE [.data assignment of an argument that requires grad] in swaps.py), and the
refusal that sends a run failing after a viewed tensor's assignment to the second way
(NOTE [.data assignment of a viewed tensor]). ``aten.shallow_copy_data_``, the op that is ``.data =``
(NOTE [shallow_copy_data_]), is taken as the assignment in every run.
"""
from __future__ import annotations

import math

import torch
from torch.overrides import TorchFunctionMode

from ....errors import UnsupportedInputError
from ..functional import dense_layout, storage_ref
from ..inference_call import note_data_moved
from ..storage_views import follow_data_assignment

_DATA_ATTR = torch._C.TensorBase.data


def sets_data(name: str, func) -> bool:
    """Is the call the ``data`` setter (``x.data = y``), as a TorchFunctionMode sees it?"""
    return name == "__set__" and getattr(func, "__self__", None) is _DATA_ATTR


def data_assignment_op(func, args: tuple, kwargs: dict) -> tuple | None:
    """``(x, y)`` where ``func`` is ``aten.shallow_copy_data_(x, y)``, else None.

    # NOTE [shallow_copy_data_]
    torch 2.14 added ``aten.shallow_copy_data_(x, y)``, whose eager run is ``x.data = y``
    (the same autograd identity, version and storage afterwards), and its Dynamo lowers
    ``x.data = y`` to it (``torch.compile(f, backend="aotcheck")`` hands aotcheck that op).
    As an op it reaches what the ``data`` setter does not: functionalization, which refuses
    it ("cannot mutate tensors with frozen storage"), and on fake tensors FakeTensorMode's
    dispatch cache, which on a hit returns the tensor without the new data (a second trace
    in one process read the old shape). So every run takes it as the assignment it is: the
    recorder (``DataAssignWatch.assign_data``) and the eager-geometry run (``DataAssignmentOps``)."""
    if getattr(func, "__name__", "").split(".")[0] != "shallow_copy_data_" or \
            not isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return None
    return tuple(args) + tuple(kwargs[n] for n in ("self", "source")[len(args):])


class DataAssignmentOps(TorchFunctionMode):
    """NOTE [shallow_copy_data_] for a run without the recorder: the op as ``x.data = y``."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        assigned = data_assignment_op(func, args, kwargs or {})
        if assigned is None:
            return func(*args, **(kwargs or {}))
        x, source = assigned
        x.data = source
        return x


class DataAssignWatch:
    """The recorder's part that follows ``.data =``; ``_init_data_assign`` sets up its state."""

    def _init_data_assign(self) -> None:
        # NOTE [.data assignment]: the placeholders given ``x.data = y``, in order; per
        # placeholder its autograd state (grad_fn, requires_grad) at its first one, and a view
        # of it taken before that one (its old memory, with its autograd history)
        self.data_sets: list[int] = []
        self.data_set_state: dict[int, tuple] = {}
        self.data_set_alias: dict[int, torch.Tensor] = {}
        # NOTE [.data assignment of a viewed tensor]: per such assignment, the events so far
        # and the storages it touched
        self.viewed_data_sets: list[tuple] = []
        # NOTE [inference state moved by .data =] (inference_call.py): per assigned tensor
        # whether it was made an inference tensor; those an assignment made ordinary, and
        # those whose kind an assignment changed
        self.born_inference: dict[int, bool] = {}
        self.counterless: set[int] = set()
        self.moved_kind: set[int] = set()
        # alias-group members (argument leaves) that require grad given ``.data =`` in a
        # synthetic-base trace (refuse_member_data_sets)
        self.member_data_sets: set[int] = set()

    def note_data_set(self, target: torch.Tensor, args: tuple) -> None:
        """``target.data = args[1]``, before it happens."""
        note_data_moved(self, target, args[1] if len(args) > 1 else None)
        if self.watched.get(id(target), ("",))[0] == "leaf" and target.requires_grad:
            self.member_data_sets.add(self.watched[id(target)][1])  # refuse_member_data_sets
        if self.watched.get(id(target), ("",))[0] == "placeholder":
            p = self.watched[id(target)][1]
            self.data_sets.append(p)
            anchor = target._base if target._base is not None else target
            self.data_set_state.setdefault(p, (anchor.grad_fn, target.requires_grad))
            if p not in self.data_set_alias and target.layout == torch.strided:
                # a view keeps the old storage
                # (NOTE [.data assignment of an argument that requires grad] in swaps.py)
                with torch.enable_grad():
                    self.data_set_alias[p] = target.view_as(target)
        if id(target) in self.has_views and len(args) > 1 and isinstance(args[1], torch.Tensor) \
                and target.layout == torch.strided and args[1].layout == torch.strided:
            self.viewed_data_sets.append((len(self.events),
                                          {storage_ref(target), storage_ref(args[1])}))
        # NOTE [.data assignment in the plain trace] in storage_views.py
        follow_data_assignment(target, args, id(target) in self.watched)

    def assign_data(self, types, assigned: tuple) -> torch.Tensor:
        """``aten.shallow_copy_data_(x, y)`` recorded as the ``x.data = y`` it is
        (NOTE [shallow_copy_data_]): the recorder's own call of the setter; returns ``x``."""
        self.__torch_function__(_DATA_ATTR.__set__, types, assigned)
        return assigned[0]

    # NOTE [.data assignment of a viewed tensor]
    def viewed_data_set_written(self) -> bool:
        """``v = a.diagonal(); a.data = v; a.zero_(); v[1:].exp()``: eager's views of ``a``
        keep their own geometry over the memory; functionalization regenerates a view after
        a write by replaying the ops that made it on its base's value, which ``.data =``
        replaced by one of another shape (an IndexError, or a view of the wrong elements).
        Was a tensor that views were taken of given ``.data =``, and the memory it had or
        got then written? A functional run that fails after that takes the second way
        (NOTE [plain trace, then functionalize] in storage_views.py), which runs as eager."""
        return any(what == "data" and st in refs
                   for start, refs in self.viewed_data_sets
                   for what, st in self.events[start:])


def data_assign_swap(recorder, p: int, anchor: torch.Tensor, w: torch.Tensor,
                     plain: bool) -> tuple[bool, bool]:
    """(data_only, rewritten) for placeholder ``p``, whose storage the function changed
    (NOTE [.data assignment of an argument that requires grad] in swaps.py): ``data_only``,
    given ``.data =`` with nothing autograd records on it since its first one; ``rewritten``,
    moved by ``.data =`` only (no set_()) and recorded by autograd since its first one, so
    that it ends requiring grad with a history eager's ``.data =`` kept (its old one, or
    none) under the recorded writes."""
    if p not in recorder.data_sets:
        return False, False
    same = (anchor.grad_fn, w.requires_grad) == recorder.data_set_state[p]
    if same:
        return p in recorder.data_set_alias, False
    # (a leaf's gradient node of its new shape is no record:
    # NOTE [set_ under no_grad onto another shape] in runtime/swap_grad.py)
    rewritten = not plain and w.requires_grad and p in recorder.data_set_alias and \
        not torch._functionalize_was_storage_changed(w) and not recorder.regraded(p, anchor)
    if rewritten and any(r[:2] == ("placeholder", p) for r in recorder.retained):
        # the runtime gives the argument its final grad_fn by a copy of the graph's value, so
        # eager's retained gradient (at the node of the write after which retain_grad() was
        # called) is not the one the caller's argument would retain
        raise UnsupportedInputError(
            f"the function calls retain_grad() on input placeholder {p} and assigns its .data "
            "(x.data = y) with in-place writes that autograd records after the assignment; "
            "aotcheck does not keep eager's retained gradient for that combination "
            "(NOTE [.data assignment of an argument that requires grad])")
    return False, rewritten


def refuse_member_data_sets(recorder, sig) -> None:
    """A member of an alias group whose storage is written (a view of the synthetic base in
    the trace), that requires grad and is a view in the caller too, given ``.data =``: eager's
    autograd rebuilds such a view's grad_fn on its base with as_strided, in the geometry
    ``.data =`` gave it, once the storage is written; functionalization replays the ops that
    made it, in its old place (``a0, a1 = b[0], b[1]; a1.data = a0; a1.add_(1.0)``: a1's
    gradient went to row 1, eager's goes to row 0). Refused by name. A member that is its
    group's root in the caller (no view: ``a1.data = a1.permute(...)`` beside ``a1[1:]``) has
    no grad_fn rebuilt, and is replayed."""
    for g in sig.groups:
        for k, i in enumerate(g.members):
            spec = sig.leaves[i]
            root = (spec.shape, spec.stride, spec.offset) == \
                (g.root_shape, g.root_stride, g.root_offset) and not (g.bases and g.bases[k] >= 0)
            if i in recorder.member_data_sets and not root:
                raise UnsupportedInputError(
                    f"argument leaf {i} shares storage with another argument, is a view that "
                    "requires grad and is given .data = while that storage is written; "
                    "aotcheck's synthetic-base trace rebuilds its gradient in the place it had "
                    "before the assignment (functionalization replays the ops that made the "
                    "view), where eager's autograd rebuilds it in the new one, so aotcheck "
                    "refuses it")


def refuse_viewed_data_set(e: Exception, recorder) -> None:
    """A functional run that failed after NOTE [.data assignment of a viewed tensor]: the
    refusal that makes capture take the second way (errors.VIEW_LIMITS)."""
    if recorder.viewed_data_set_written():
        raise UnsupportedInputError(
            "the function assigns .data of a tensor that views were taken of, and then "
            "writes that memory; functionalization cannot replay that view (a PyTorch "
            "limit: it replays the view's ops on the tensor's new value) "
            f"({type(e).__name__}: {str(e).splitlines()[0][:120]})") from None


def fills_storage(t: torch.Tensor) -> bool:
    """Dense, from offset 0, over its whole storage."""
    return t.storage_offset() == 0 and dense_layout(t.shape, t.stride()) and \
        t.numel() * t.element_size() == t.untyped_storage().nbytes()


def unfilled_own_storage(plain: bool, placeholder: torch.Tensor, work: torch.Tensor,
                         geometry: tuple, nbytes: int, writes=()) -> bool:
    """Does the argument, set_() (or given ``.data =``) back onto its own storage, not fill
    that storage (dense, from offset 0), so that the graph does not hold its other elements?
    A plain run's own copy fills it; an argument that requires grad is not copied, and is
    judged in its ``geometry`` at the call, over ``nbytes`` (``.data =`` moves the plain
    placeholder itself: a Parameter at storage offset 1 given .data of its diagonal). There
    the graph holds the storage's other elements while every write goes through a view of
    the argument (NOTE [.data assignment in the plain trace] in storage_views.py), not while one
    writes the argument in its geometry at the call (``writes``: the recorder's, storage and
    geometry per write): functionalization then holds it as a compact value."""
    if not plain:
        return not fills_storage(placeholder)
    if work is not placeholder:
        return False
    shape, stride, offset = geometry
    if offset == 0 and dense_layout(shape, stride) and \
            math.prod(shape) * placeholder.element_size() == nbytes:
        return False
    at_call = (tuple(shape), tuple(stride), offset)
    return any(ref == storage_ref(placeholder) and (tuple(g[0]), tuple(g[1]), g[2]) == at_call
               for ref, g in writes)

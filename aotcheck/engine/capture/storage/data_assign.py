"""data_assign: which calls are ``x.data = y``, and what each way of tracing does with one.

``x.data = y`` reaches a TorchFunctionMode as the ``data`` setter (``sets_data``), or as
``aten.shallow_copy_data_`` (``data_assignment_op``; NOTE [shallow_copy_data_]), and Dynamo's
graph of one holds a ``set_()`` under no_grad (``lowers_data_assignment``). The recorder's
watcher (watch.py) records each; the plain trace puts the tensor on its new value's node
(``follow_data_assignment``; NOTE [.data assignment in the plain trace]). Two refusals are
read from what the watcher saw: a member of an alias group given ``.data =``
(``refuse_member_data_sets``), and a functional run that failed after a viewed tensor's
assignment (NOTE [.data assignment of a viewed tensor]), which sends capture the second way.
"""
from __future__ import annotations

import inspect

import torch
from torch.overrides import TorchFunctionMode

from ....errors import UnsupportedInputError

_DATA_ATTR = torch._C.TensorBase.data
DATA_SETTER = _DATA_ATTR.__set__     # ``x.data = y``, as a TorchFunctionMode sees it


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
    recorder (``MetadataRecorder.__torch_function__``) and the eager-geometry run
    (``DataAssignmentOps``)."""
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


def lowers_data_assignment(fn) -> bool:
    """Is ``fn`` Dynamo's graph (a GraphModule's forward) of a function that assigned
    ``.data``? Dynamo lowers ``x.data = y`` to ``set_()`` under no_grad followed by a call of
    its own that lowers the version counter: the graph's swaps may then be ``.data =``, whose
    AccumulateGrad eager keeps
    (NOTE [set_ under no_grad onto another shape] in runtime/swap_grad.py)."""
    fn = inspect.unwrap(fn)                 # aotcheck's lifting wraps it (lift.py)
    graph = getattr(getattr(fn, "__self__", fn), "graph", None)
    return isinstance(graph, torch.fx.Graph) and any(
        n.op == "call_function" and getattr(n.target, "__name__", "") == "_lower_version_count_by_1"
        for n in graph.nodes)


# NOTE [.data assignment in the plain trace]
def follow_data_assignment(target: torch.Tensor, args: tuple, argument: bool) -> None:
    """``b.data = c`` is no aten op: make_fx records nothing, and its tracer keeps ``b`` on the
    node of its old value, so the plain graph computed ``b * 2`` from the memory ``b`` had,
    and returned it for ``b`` (every ``.data =`` the second way traced was lost: the values
    of ``b.data = c; return b * 2``, an argument given ``.data =``, a Parameter made inside
    swapping data with an intermediate, fuzz seed 3). After the assignment ``b`` is ``c``'s
    data, in ``c``'s geometry: ``b`` is put on ``c``'s node, whose tag holds that storage
    and geometry, so later ops and the outputs read what eager's do. Autograd identity is
    not the graph's business (the run's facts carry it). Called before the setter runs;
    the functional way's wrappers carry no proxy of their own, and are left alone.
    An ``argument`` given data of another dtype is refused by name on this way: its replay
    kept the old dtype (silently; the first way replays it)."""
    from torch.fx.experimental.proxy_tensor import get_proxy_mode, get_proxy_slot, set_proxy_slot
    value = args[1] if len(args) > 1 else None
    mode = get_proxy_mode()
    if mode is None or not isinstance(value, torch.Tensor) or torch._is_functional_tensor(target):
        return
    if argument and value.dtype != target.dtype:
        raise UnsupportedInputError(
            f"the function assigns .data of dtype {value.dtype} to an argument of dtype "
            f"{target.dtype} in a program that the plain way traces (another limit sent it "
            "there); aotcheck replays a change of an argument's dtype by .data = on the "
            "functional way only")
    slot = get_proxy_slot(value, mode.tracer, None)
    if slot is not None:
        set_proxy_slot(target, mode.tracer, slot)


# NOTE [.data assignment of a viewed tensor]
def viewed_data_set_written(changes, events: list) -> bool:
    """``v = a.diagonal(); a.data = v; a.zero_(); v[1:].exp()``: eager's views of ``a``
    keep their own geometry over the memory; functionalization regenerates a view after
    a write by replaying the ops that made it on its base's value, which ``.data =``
    replaced by one of another shape (an IndexError, or a view of the wrong elements).
    Was a tensor that views were taken of given ``.data =`` (``changes``: the watcher's
    record), and the memory it had or got then written (``events``: the recorder's)? A
    functional run that fails after that takes the second way
    (NOTE [plain trace, then functionalize] in storage_views.py), which runs as eager."""
    return any(what == "data" and st in refs
               for start, refs in changes.viewed_data_sets
               for what, st in events[start:])


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
                (g.root_shape, g.root_stride, g.root_offset) and not (g.bases and g.bases[k] is not None)
            if i in recorder.storage.changes.member_data_sets and not root:
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
    if viewed_data_set_written(recorder.storage.changes, recorder.events):
        raise UnsupportedInputError(
            "the function assigns .data of a tensor that views were taken of, and then "
            "writes that memory; functionalization cannot replay that view (a PyTorch "
            "limit: it replays the view's ops on the tensor's new value) "
            f"({type(e).__name__}: {str(e).splitlines()[0][:120]})") from None

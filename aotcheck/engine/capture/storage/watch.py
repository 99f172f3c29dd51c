"""watch: the recorder's watcher of storage changes, while the function runs.

``StorageWatch`` is what the recorder (recorder.py) calls where a tensor's storage changes,
or may have changed since its last call:

- ``x.data = y`` (the ``data`` setter, or the op
  ``aten.shallow_copy_data_``: NOTE [shallow_copy_data_] in data_assign.py): ``data_set``
  before the setter runs, ``took_geometry`` after it;
- ``set_()``, whose Python method reaches no TorchFunctionMode: while a recorder is entered
  it is a method that tells the innermost one (``watch_set_calls``; NOTE [set_ in the recorder]);
- a call that reads the wrapper of a leaf argument that requires grad: ``regrad_reshaped``
  before it (a swap onto another shape since the last call, as eager's leaf gets a new
  AccumulateGrad: NOTE [set_ under no_grad onto another shape] in runtime/swap_grad.py), and
  ``note_grad_use`` after it.

What it saw is one record, ``StorageChanges`` (``recorder.storage.changes``), which the
run reads after the call (functional_run.py, swaps.py). The watcher reads the recorder's
own bookkeeping (``watched``, ``events``, ``has_views``, ``geometry``, ``kept_alive``),
passed in as ``recorder``; it writes its record, the geometry a ``set_()`` gives a tensor
(NOTE [eager geometry]) and, inside an inference-mode call, which tensors are inference
tensors (NOTE [inference state moved by .data =]).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field

import torch
from torch.autograd.graph import get_gradient_edge
from torch.utils import _pytree as pytree
from torch.utils.weak import WeakIdKeyDictionary

from ..functional import geometry_of, storage_ref
from ...signature import whole_storage
from .data_assign import follow_data_assignment


def mirrored_leaf(t: torch.Tensor) -> bool:
    """Is ``t`` the functional wrapper of a leaf that requires grad, whose autograd metadata
    was mirrored onto it (its grad_fn an ``Error`` node with no edges)?"""
    fn = t.grad_fn
    return t.requires_grad and fn is not None and type(fn).__name__ == "Error" and \
        not fn.next_functions and hasattr(fn, "_input_metadata")


@dataclass
class StorageChanges:
    """What the watcher saw of storage changes in one run, in the order the run meets them.
    It fills while the function runs and holds tensors and gradient edges: run state, not
    metadata (the facts that leave capture are facts.py's frozen records)."""
    # NOTE [.data assignment] in runtime/writeback.py: the placeholders given ``x.data = y``,
    # in order; per placeholder its autograd state (grad_fn, requires_grad) at its first one,
    # and a view of it taken before that one (its old memory, with its autograd history)
    data_sets: list[int] = field(default_factory=list)
    data_set_state: dict[int, tuple] = field(default_factory=dict)
    data_set_alias: dict[int, torch.Tensor] = field(default_factory=dict)
    # NOTE [.data assignment of a viewed tensor] (data_assign.py): per such assignment, the
    # recorder's events so far and the storages it touched
    viewed_data_sets: list[tuple] = field(default_factory=list)
    # NOTE [inference state moved by .data =]: per assigned tensor whether it was made an
    # inference tensor; those an assignment made ordinary, and those whose kind it changed
    born_inference: dict[int, bool] = field(default_factory=dict)
    counterless: set[int] = field(default_factory=set)
    moved_kind: set[int] = field(default_factory=set)
    # alias-group members (argument leaves) that require grad given ``.data =`` in a
    # synthetic-base trace (data_assign.refuse_member_data_sets)
    member_data_sets: set[int] = field(default_factory=set)
    # NOTE [set_ under no_grad onto another shape] in runtime/swap_grad.py: the wrappers of
    # leaf arguments that require grad (by id: placeholder, storage and gradient edge at the
    # call), those used under grad mode before a swap onto another shape, and those whose
    # wrapper got a gradient node of its new shape
    grad_wrappers: dict[int, tuple] = field(default_factory=dict)
    grad_used: set[int] = field(default_factory=set)
    reshaped: set[int] = field(default_factory=set)
    old_edges: dict = field(default_factory=dict)   # placeholder -> its GradientEdge at the
                                                    # call, where used before the swap
    reshaped_twice: set[int] = field(default_factory=set)   # onto two other shapes: refused
    data_lowered: bool = False      # Dynamo's graph of a ``.data =`` (lowers_data_assignment)
    # NOTE [.data = onto another shape while a use holds the node]: per tensor made by a call
    # autograd recorded, the placeholders whose gradient node at the call its graph reaches
    # (weakly: a tensor the function dropped holds nothing), and the placeholders whose
    # ``.data =`` kept that node
    node_holders: WeakIdKeyDictionary = field(default_factory=WeakIdKeyDictionary)
    kept_grad_nodes: set[int] = field(default_factory=set)


class StorageWatch:
    """The recorder's watcher of ``.data =``, ``set_()`` and swaps onto another shape; what
    it saw is ``self.changes``, one record."""

    def __init__(self):
        self.changes = StorageChanges()
        self.arguments: tuple = ()      # the run's works (NOTE [set_ onto a storage object])
        self.bare: dict = {}            # id of a storage object made inside -> (it, the tensor standing for it)

    def watch_arguments(self, watched: dict, tensors, data_lowered: bool) -> None:
        """The run's works (``watched``: the recorder's, by id), before the call: the leaves
        that require grad are followed for swaps onto another shape; ``data_lowered``: the
        function is Dynamo's graph of a ``.data =`` (data_assign.lowers_data_assignment)."""
        self.changes.grad_wrappers = {
            id(t): (watched[id(t)][1], storage_ref(t), get_gradient_edge(t))
            for t in tensors if id(t) in watched and mirrored_leaf(t) and watched[id(t)][0] == "placeholder"}
        self.changes.data_lowered = data_lowered
        self.arguments = tuple(t for t in tensors if isinstance(t, torch.Tensor))

    # ------------------------------------------------------------------ .data =

    def data_set(self, recorder, target: torch.Tensor, args: tuple) -> None:
        """``target.data = args[1]``, before it happens."""
        changes, watched = self.changes, recorder.watched
        _move_inference_state(recorder, changes, target, args[1] if len(args) > 1 else None)
        if watched.get(id(target), ("",))[0] == "leaf" and target.requires_grad:
            changes.member_data_sets.add(watched[id(target)][1])    # refuse_member_data_sets
        if watched.get(id(target), ("",))[0] == "placeholder":
            p = watched[id(target)][1]
            changes.data_sets.append(p)
            anchor = target._base if target._base is not None else target
            changes.data_set_state.setdefault(p, (anchor.grad_fn, target.requires_grad))
            if p not in changes.data_set_alias and target.layout == torch.strided:
                # a view keeps the old storage
                # (NOTE [.data assignment of an argument that requires grad] in swaps.py)
                with torch.enable_grad():
                    changes.data_set_alias[p] = target.view_as(target)
        if id(target) in recorder.has_views and len(args) > 1 and isinstance(args[1], torch.Tensor) \
                and target.layout == torch.strided and args[1].layout == torch.strided:
            changes.viewed_data_sets.append((len(recorder.events),
                                             {storage_ref(target), storage_ref(args[1])}))
        # NOTE [.data assignment in the plain trace] in data_assign.py
        follow_data_assignment(target, args, id(target) in watched)

    # ------------------------------------------------------------------ set_() and .data =

    def took_geometry(self, recorder, target: torch.Tensor, args: tuple) -> None:
        """``target`` was just given ``args[1]``'s memory and geometry (``set_(src)``,
        ``target.data = src``: NOTE [.data assignment] in runtime/writeback.py), or a
        storage's at explicit ones, or none (``set_()``): its eager geometry is now that one
        (NOTE [set_ in the recorder]; a leaf made inside is rebuilt in it)."""
        if not isinstance(target, torch.Tensor) or target.layout != torch.strided:
            return
        src = args[1] if len(args) > 1 else None
        if isinstance(src, torch.Tensor) and src.layout == torch.strided:
            recorder.geometry[id(target)] = recorder.geometry.get(id(src)) or \
                recorder.start_geometry.get(id(src)) or geometry_of(src)
        else:
            recorder.geometry[id(target)] = geometry_of(target)
        recorder.kept_alive.append(target)

    # ------------------------------------------------------------------ swaps onto another shape

    def regraded(self, p: int, t: torch.Tensor) -> bool:
        """Is placeholder ``p``'s grad_fn (its wrapper ``t``'s) the gradient node of its new
        shape that ``regrad_reshaped`` gave it, which autograd did not record?"""
        return p in self.changes.reshaped and mirrored_leaf(t)

    def note_grad_use(self, args, kwargs, out) -> None:
        """A call that autograd recorded on the wrapper of a leaf argument before any swap
        moved it onto another shape (NOTE [set_ under no_grad onto another shape]). Attribute
        setters are not looked at: autograd sets some while it holds a tensor's lock."""
        changes = self.changes
        if not changes.grad_wrappers:
            return
        used = [changes.grad_wrappers[id(t)][0] for t in pytree.tree_leaves((args, kwargs))
                if isinstance(t, torch.Tensor) and id(t) in changes.grad_wrappers]
        self._note_holders(args, kwargs, out, {i for i in used if i not in changes.reshaped})
        if not used or not any(isinstance(o, torch.Tensor) and o.grad_fn is not None
                               for o in pytree.tree_leaves(out)):
            return
        changes.grad_used.update(i for i in used if i not in changes.reshaped)

    def _note_holders(self, args, kwargs, out, held: set) -> None:
        """The outputs of a call autograd recorded hold the gradient nodes at the call that
        its inputs reach (NOTE [.data = onto another shape while a use holds the node]).
        Under no_grad a call records nothing (an in-place one keeps its tensor's mark), and
        an output's grad_fn is not read there: reading it regenerates a view's, which may
        assert after a write in inference mode."""
        if not torch.is_grad_enabled() or torch.is_inference_mode_enabled():
            return
        holders = self.changes.node_holders
        if holders:
            for t in pytree.tree_leaves((args, kwargs)):
                if isinstance(t, torch.Tensor) and t in holders:
                    held = held | holders[t]
        if not held:
            return
        for o in pytree.tree_leaves(out):
            if isinstance(o, torch.Tensor) and o.grad_fn is not None:
                holders[o] = holders.get(o, frozenset()) | held

    def regrad_reshaped(self, recorder, args) -> None:
        """Before a call that reads the wrapper of a leaf argument (and once more on all of
        them when the function returns): if set_() (or ``.data =``) under no_grad moved it
        onto another storage of another shape since (set_() reaches no TorchFunctionMode, so
        it is seen here, at the next call), it gets a gradient node of the new shape, as
        eager's leaf gets a new AccumulateGrad
        (NOTE [set_ under no_grad onto another shape] in runtime/swap_grad.py). Used under
        grad mode before, its gradient node at the call
        is kept as a gradient target too (set_() left the uses before it there); after
        ``.data =``, while a use still holds that node, the wrapper keeps it
        (NOTE [.data = onto another shape while a use holds the node]). Refused (swaps.py):
        a second swap onto another shape."""
        changes = self.changes
        if not changes.grad_wrappers:
            return
        for t in pytree.tree_leaves(args):
            if not isinstance(t, torch.Tensor) or id(t) not in changes.grad_wrappers:
                continue
            index, start, edge = changes.grad_wrappers[id(t)]
            fn = t.grad_fn
            if not mirrored_leaf(t) or \
                    (tuple(fn._input_metadata[0].shape), fn._input_metadata[0].dtype) == \
                    (tuple(t.shape), t.dtype) or \
                    (storage_ref(t) == start and index not in changes.reshaped):
                continue
            if index in changes.reshaped:
                # a second swap onto another shape: refused (swaps.py); the wrapper gets a
                # node of its shape so that the trace runs on
                changes.reshaped_twice.add(index)
                torch._mirror_autograd_meta_to(t.detach().requires_grad_(), t)
                continue
            if index in changes.grad_used:
                if index in changes.data_sets or changes.data_lowered:
                    if self._old_node_held(recorder, index):
                        # see NOTE [.data = onto another shape while a use holds the node]
                        changes.kept_grad_nodes.add(index)
                        continue
                changes.old_edges[index] = edge
            changes.kept_grad_nodes.discard(index)
            torch._mirror_autograd_meta_to(t.detach().requires_grad_(), t)
            changes.reshaped.add(index)

    def _old_node_held(self, recorder, index: int) -> bool:
        """Does a tensor the function still holds reach placeholder ``index``'s gradient node
        at the call?

        # NOTE [.data = onto another shape while a use holds the node]
        ``y = p * 2; p.data = inp + 1; return p * inp, y`` with p a leaf Parameter of shape
        (2,) and inp (2, 2): eager's ``.data =`` keeps the leaf's AccumulateGrad (it drops it
        only for another dtype or device), which autograd holds weakly. While a graph holds
        it (``y``'s, here), each later use gets that node, whose input metadata is the old
        shape: autograd sums the (2, 2) gradient down to (2,), and AccumulateGrad broadcasts
        it into ``.grad`` in the leaf's new shape. Once nothing holds it (``del y`` before
        the use, or a use whose result was dropped), the next use makes a new node of the new
        shape, as after a set_()
        (NOTE [set_ under no_grad onto another shape] in runtime/swap_grad.py).

        The trace runs the function's Python, so what it holds is what eager's function
        holds. The watcher notes, weakly, every tensor made by a call autograd recorded
        whose inputs reach the node (a use of the argument, or a tensor that holds it), and
        asks, at each call that reads the argument after such an assignment, whether one is
        still alive: if so the wrapper keeps its node of the call (``kept_grad_nodes``), and
        the joint's gradient for the argument has its shape at the call; at the return, the
        outputs are what can hold it. The runtime then applies the compiled function to the
        argument as it is at the call and replays the assignment as ``.data =`` after, which
        keeps the node the compiled function's edge made, as eager's does. A graph held only
        through a node object (``g = y.grad_fn; del y``) is not seen.
        """
        tensors = [t for t, held in self.changes.node_holders.items() if index in held]
        own = self._own_references(recorder, tensors)
        for t in tensors:
            # getrefcount's argument, ``tensors`` and ``t`` are not the function's
            if sys.getrefcount(t) - 3 > own.get(id(t), 0):
                return True
        return False

    def _own_references(self, recorder, tensors: list) -> dict:
        """Per tensor (by id), how many references the recorder's own state (its
        bookkeeping and this watcher's record) holds to it."""
        wanted = {id(t) for t in tensors}
        counts: dict[int, int] = {}
        seen: set[int] = set()
        stack = [v for v in [*vars(recorder).values(), *vars(self.changes).values()]
                 if isinstance(v, (list, tuple, dict, set))]
        while stack:
            c = stack.pop()
            if id(c) in seen:
                continue
            seen.add(id(c))
            items = list(c.keys()) + list(c.values()) if isinstance(c, dict) else list(c)
            for x in items:
                if id(x) in wanted:
                    counts[id(x)] = counts.get(id(x), 0) + 1
                elif isinstance(x, (list, tuple, dict, set)):
                    stack.append(x)
        return counts


# NOTE [inference state moved by .data =]
# An inference tensor has no version counter; ``x.data = y`` gives ``x`` the key set of ``y``
# (whether it is an inference tensor) but keeps ``x``'s own version counter. So, inside an
# inference-mode call, an inference tensor the function made (``p = nn.Parameter(...)``, an
# op's result) given ``.data =`` of an ordinary tensor (a torch.func grad level's result, or
# the ``.data`` of one) is no longer an inference tensor and has no counter: making a view of
# it reads the counter, and eager raises "Inference tensors do not track version counter."
# there (``TensorImpl.h``, ``current_version``); the trace raises the same at the same op
# (inference_call.call_in_inference_mode). The other way, an ordinary tensor given an
# inference tensor's ``.data`` becomes one. The recorder's ``made_in_call`` (which tensors
# eager's key set calls inference tensors) follows each assignment, and ``counterless``
# holds the tensors made as inference tensors that an assignment made ordinary. A returned
# one is marked (``moved_kind``, an output fact), and the runtime hands back the same mix as
# eager's (regenerate.as_moved_kind): a shell of the kind the tensor was made as (an ordinary
# one keeps a version counter, an inference one none), given the output's value by
# ``.data =`` inside inference mode.

def _move_inference_state(recorder, changes: StorageChanges, target: torch.Tensor, src) -> None:
    """``target.data = src`` inside an inference-mode call: ``target`` takes ``src``'s kind and
    keeps its own version counter (NOTE [inference state moved by .data =])."""
    if not recorder.inference_call or not isinstance(src, torch.Tensor) or id(target) in recorder.watched:
        return          # an argument's assignment is replayed on the caller's tensor, as eager's
    made, born = recorder.made_in_call, changes.born_inference
    born.setdefault(id(target), id(target) in made)     # its counter stays the one it was made with
    recorder.kept_alive.append(target)
    if id(src) in made or src.is_inference():
        made.add(id(target))
        recorder.ordinary.discard(id(target))
    else:
        made.discard(id(target))
        if id(src) in recorder.ordinary:
            recorder.ordinary.add(id(target))
    for ids, mixed in ((changes.counterless, born[id(target)] and id(target) not in made),
                       (changes.moved_kind, born[id(target)] != (id(target) in made))):
        (ids.add if mixed else ids.discard)(id(target))


# NOTE [set_ in the recorder]
# ``v0 = a.t(); a.unsqueeze_(1); a.set_(v0); torch.sin(a, out=torch.empty(0))`` (fuzz seed 1):
# eager's ``a`` is [2] again after the set_(), so sin's out tensor is resized to [2]. The
# recorder saw the unsqueeze_ (a [2, 1] geometry for ``a``) but not the set_(), whose Python
# method reaches no TorchFunctionMode: it resized the out tensor to [2, 1] (wrongly), and sin
# then wrote a [2] value into it (functionalization: "expected src to have a size equal to the
# slice of self"). While a recorder is entered, ``Tensor.set_`` is therefore a Python method
# that runs the original and then tells the innermost recorder's watcher; the aten op called
# directly (``torch.ops.aten.set_.source_Tensor``, as a desugared subclass graph calls it)
# reaches the recorder's ``__torch_function__``, which tells it likewise, as does
# ``x.data = y``. After ``t.set_(src)`` (or ``t.data = src``) ``t`` has ``src``'s eager
# geometry (NOTE [eager geometry]); after a set_() onto a storage (explicit size, stride and
# offset) or onto nothing, the geometry the call gave (``StorageWatch.took_geometry``).

_ACTIVE: list = []              # the recorders entered, innermost last
_OWN = torch.Tensor.__dict__.get("set_")     # Tensor's own set_, if it has one (not TensorBase's)


# NOTE [set_ onto a storage object]
# ``x.set_(torch.UntypedStorage(16))`` or ``x.set_(y.untyped_storage(), 0, (2,), (1,))``: a
# storage object as set_()'s source reaches neither functionalization nor the tracer (they
# refused it: "argument of type: <class 'torch.storage.UntypedStorage'>"), so the recorder
# hands set_() a tensor over that storage instead, which means the same to it (set_(storage)
# is the whole storage, flat, from offset 0, in the target's dtype): for an argument's or a
# tensor's storage, that tensor's whole storage; for a storage object the function made (its
# bytes uninitialized, as eager's), a new empty tensor of as many elements, the same one each
# time that storage object is used again. A storage of another dtype's tensor is left as it was.
# With a geometry (``set_(storage, offset, size, stride)``), whose tensor overload
# functionalization answers by reading the source's storage object again, the source is that
# tensor cut to the geometry by ``as_strided`` (the same storage, offset, size and stride).

def _storage_as_tensor(recorder, target: torch.Tensor, args: tuple, kwargs: dict) -> tuple:
    names = ("source", "storage_offset", "size", "stride")
    given = dict(zip(names, args), **kwargs)
    source = given.get("source")
    if isinstance(source, torch.TypedStorage):
        source = source.untyped()
    if not isinstance(source, torch.UntypedStorage) or not _traced(target):
        return args, kwargs             # a tensor, or nothing, or a real tensor's set_(): as it is
    source = _tensor_over(recorder, target, source)
    if source is None:
        return args, kwargs
    if "storage_offset" in given:       # as_strided's offset counts from the storage's start
        source = source.as_strided(given["size"], given["stride"], given["storage_offset"])
    return (source,), {}


def _traced(t: torch.Tensor) -> bool:
    """A tensor of the trace (functional, fake in the second way, or real under a tracer), not
    a real one that the runtime's own set_() moves while a recorder is entered."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.fx.experimental.proxy_tensor import get_proxy_mode
    return isinstance(t, FakeTensor) or torch._is_functional_tensor(t) or get_proxy_mode() is not None


def _tensor_over(recorder, target: torch.Tensor, storage) -> torch.Tensor | None:
    """A tensor over all of ``storage``, flat, in ``target``'s dtype (None: another dtype's)."""
    watch = recorder.storage
    ref = torch.multiprocessing.reductions.StorageWeakRef(storage)
    # (the works' storages are read only here: reading a functional tensor's storage is no
    # bystander's act, and a run that sets no storage object must not)
    known = recorder.owners.get(ref) or next((t for t in watch.arguments if storage_ref(t) == ref), None)
    if known is not None:
        return None if known.dtype != target.dtype else whole_storage(known)
    if id(storage) not in watch.bare:
        watch.bare[id(storage)] = (storage, torch.empty(storage.nbytes() // target.element_size(),
                                                        dtype=target.dtype, device=target.device))
    return watch.bare[id(storage)][1]


def _traced_set_(self, *args, **kwargs):
    if _ACTIVE:
        args, kwargs = _storage_as_tensor(_ACTIVE[-1], self, args, kwargs)
    out = torch._C.TensorBase.set_(self, *args, **kwargs) if _OWN is None \
        else _OWN(self, *args, **kwargs)
    if _ACTIVE:
        recorder = _ACTIVE[-1]
        recorder.storage.took_geometry(recorder, self, (self, *args))
    return out


def watch_set_calls(recorder) -> None:
    """``recorder`` is entered: ``Tensor.set_`` tells it (NOTE [set_ in the recorder])."""
    if not _ACTIVE:
        torch.Tensor.set_ = _traced_set_
    _ACTIVE.append(recorder)


def unwatch_set_calls(recorder) -> None:
    """``recorder`` has exited (its innermost entry); the last one out restores ``set_``."""
    for i in range(len(_ACTIVE) - 1, -1, -1):
        if _ACTIVE[i] is recorder:
            del _ACTIVE[i]
            break
    if not _ACTIVE:
        if _OWN is None:
            del torch.Tensor.set_
        else:
            torch.Tensor.set_ = _OWN

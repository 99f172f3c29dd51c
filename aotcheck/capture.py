"""capture: trace a function on fake tensors into a functional aten graph, plus raw facts.

The function runs once under functionalization on fake tensors; ``make_fx``
records the aten ops. The result is a :class:`Captured`: an FX graph with no
in-place ops, and the raw facts that the *analyze* stage turns into metadata.

Before (the user's function)::

    def f(x):            # x: float32[2, 3], a non-leaf that requires grad
        x.mul_(2)
        return x.view(-1)

After (the captured graph)::

    %x = placeholder
    %clone = aten.clone.default(%x)
    %mul = aten.mul.Tensor(%clone, 2)
    %view = aten.view.default(%mul, [-1])
    return (%mul, %view)        # candidates: x's new value, output 0

with the facts "input 0: data mutated, autograd saw it; output 0 shares
storage with input 0". Every candidate value that a later stage might need is
a graph output; the forward graph keeps only the ones the runtime uses.

# NOTE [synthetic bases]
Functionalization treats each input as its own storage. When two arguments
view one storage and either is mutated, the graph takes the group's root
tensor instead, and rebuilds each argument inside the graph with
``as_strided``; mutations through one argument are then seen by the other.
The first capture learns whether a group is mutated; only then is the group
captured again this way.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.fx as fx
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils import _pytree as pytree
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from .errors import DataDependentError, TraceError, UnsupportedInputError
from .signature import GroupSpec, Signature, TensorSpec, unflatten_inputs

# ---------------------------------------------------------------- input plan


@dataclass(frozen=True)
class InputPlan:
    """How graph placeholders map to the user's argument leaves.

    ``placeholders[p]`` is ``("leaf", i)`` (argument leaf i) or ``("root", g)``
    (the root tensor of alias group g). ``sources[i]`` says how leaf i is
    rebuilt inside the graph: ``("placeholder", p)``, ``("same", j)`` (the very
    tensor of leaf j), ``("member", p, shape, stride, offset, detached)`` (a view
    of root placeholder p, of its detached alias when the member does not require
    grad but the root does), or ``("value",)`` for non-tensors.
    """
    placeholders: tuple[tuple, ...]
    sources: tuple[tuple, ...]


def plan_inputs(sig: Signature, synthetic: frozenset[int] = frozenset()) -> InputPlan:
    groups = {g.storage: g for g in sig.groups}
    placeholders: list[tuple] = []
    sources: list[tuple] = []
    root_slot: dict[int, int] = {}
    for i, spec in enumerate(sig.leaves):
        if not isinstance(spec, TensorSpec):
            sources.append(("value",))
        elif spec.same_as >= 0:
            sources.append(("same", spec.same_as))
        elif spec.storage in synthetic:
            g = groups[spec.storage]
            _check_synthetic(g, spec, i)
            if g.storage not in root_slot:
                root_slot[g.storage] = len(placeholders)
                placeholders.append(("root", g.root_member))
            detached = g.root_requires_grad and not spec.requires_grad
            sources.append(("member", root_slot[g.storage], spec.shape, spec.stride, spec.offset,
                            detached))
        else:
            sources.append(("placeholder", len(placeholders)))
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
        out.append(t._base if (kind == "root" and t._base is not None) else t)
    return out


# ---------------------------------------------------------------- raw facts


@dataclass(frozen=True)
class InputFacts:
    """What running the function did to one placeholder's tensor (or a member's metadata)."""
    placeholder: int
    data_mutated: bool
    metadata_mutated: bool
    autograd_saw_mutation: bool     # grad_fn or requires_grad changed: replay it with grad on
    requires_grad_after: bool
    final_shape: tuple[int, ...]
    final_stride: tuple[int, ...]
    final_offset: int
    value_output: int               # graph-output index of the new value, or -1


@dataclass(frozen=True)
class MemberFacts:
    """A view-member of an alias group whose own metadata changed (e.g. ``a.t_()``)."""
    leaf: int
    final_shape: tuple[int, ...]
    final_stride: tuple[int, ...]
    final_offset: int


@dataclass(frozen=True)
class OutputFacts:
    """One leaf of the returned pytree."""
    is_tensor: bool
    value: str = ""                 # repr of a non-tensor leaf
    is_input: int = -1              # leaf index of the argument it *is*
    same_output: int = -1           # earlier output it *is* (``return y, y``)
    input_storage: int = -1         # leaf index of an argument whose storage it shares
    output_storage: int = -1        # earlier output it shares storage with (not a view of it)
    base_output: int = -1           # it is a view whose root is this output
    base_intermediate: int = -1     # it is a view whose root is intermediate k
    graph_output: int = -1          # graph-output index of its value (for an input_storage
                                    # alias: of the value its gradient flows through, if any)
    shape: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    offset: int = 0
    dtype: str = ""
    requires_grad: bool = False
    is_leaf: bool = True
    multi_output_view: bool = False  # a view made by unbind/split (in-place on it is an error)
    grad_dead_end: bool = False       # requires grad, but its gradient reaches no input


@dataclass(frozen=True)
class RawFacts:
    inputs: tuple[InputFacts, ...]
    members: tuple[MemberFacts, ...]
    outputs: tuple[OutputFacts, ...]
    out_tree: str
    intermediate_outputs: tuple[int, ...]     # graph-output index of each intermediate base
    candidates: tuple[tuple, ...]   # per graph output: (shape, dtype, requires_grad, stride, offset)
    new_leaf_outputs: tuple[int, ...]         # outputs that are fresh leaves requiring grad
    metadata_ops: tuple = ()                  # (kind, index, method, args, kwargs, grad_enabled)
    view_replay_hazard: bool = False          # see _MetadataRecorder.view_replay_hazard


@dataclass
class Captured:
    """A captured function: the functional graph, the input plan and the raw facts."""
    graph: fx.GraphModule
    plan: InputPlan
    facts: RawFacts
    out_spec: object = field(repr=False, default=None)
    geometry: object = field(repr=False, default=None)   # eager geometry per output (joint reuses it)
    nonleaf_views: bool = False     # non-leaf argument copies are views of fresh storage (_nonleaf_copy)


# ---------------------------------------------------------------- tracing


def _to_fun(t: torch.Tensor) -> torch.Tensor:
    ft = torch._to_functional_tensor(t)
    torch._mirror_autograd_meta_to(t, ft)
    return ft


def _from_fun(t: torch.Tensor) -> torch.Tensor:
    torch._sync(t)
    return torch._from_functional_tensor(t)


def _storage(t: torch.Tensor):
    return StorageWeakRef(t.untyped_storage())


class _TraceGuard(TorchDispatchMode):
    """Watches every op while tracing:

    - rejects reads of tensor values (``.item()``, ``bool(t)``) and ops whose output shape
      depends on values (``nonzero``), which would otherwise slip in as symbolic sizes;
    - tags each node that ran with grad mode off, so no_grad regions reach the cache key.
    """

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            raise DataDependentError(
                "the function reads a tensor value while being traced (.item(), bool(tensor), "
                ".tolist() or Python control flow on a tensor); aotcheck compiles static graphs. "
                "Use torch.where, or pass the value as a Python scalar argument")
        out = func(*args, **(kwargs or {}))
        for t in pytree.tree_leaves(out):
            if isinstance(t, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in t.shape):
                raise DataDependentError(
                    f"op {func} has an output shape that depends on tensor values; aotcheck "
                    "compiles static shapes only")
        if not torch.is_grad_enabled():
            from torch.fx.experimental.proxy_tensor import get_proxy_mode, get_proxy_slot
            mode = get_proxy_mode()
            if mode is not None:
                for t in pytree.tree_leaves(out):
                    if isinstance(t, torch.Tensor):
                        slot = get_proxy_slot(t, mode.tracer, None)
                        if slot is not None:
                            slot.proxy.node.meta["no_grad"] = True
        return out


# In-place ops that change a tensor's size, stride or offset (not its data).
METADATA_METHODS = frozenset({"t_", "transpose_", "swapdims_", "swapaxes_", "unsqueeze_",
                              "squeeze_", "as_strided_", "resize_"})


def _plain(v):
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, (list, tuple, torch.Size)):
        return [_plain(x) for x in v]
    raise UnsupportedInputError(
        f"an in-place metadata op on an argument got {type(v).__name__} {v!r}; aotcheck replays "
        "such ops with int, float, bool and sequence arguments only")


_INPLACE_DUNDERS = frozenset({"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
                              "__ifloordiv__", "__imod__", "__ipow__", "__iand__", "__ior__"})


class _MetadataRecorder(TorchFunctionMode):
    """Records in-place metadata calls (``t_``, ``transpose_``, ...) on arguments, as the
    user wrote them, so the runtime can replay exactly those calls (see NOTE [mutation
    replay] in runtime.py): eager's strides and grad_fns then come out as eager's."""

    def __init__(self, watched: dict[int, tuple]):
        super().__init__()
        self.watched, self.log = watched, []
        self.events: list[tuple[str, object]] = []    # ("meta" | "data", storage), in order
        # NOTE [eager geometry]: a functional wrapper's size/stride/offset can drift from
        # eager's when functionalization re-syncs a view after its base is mutated (the base's
        # new value is contiguous). The geometry a tensor had when the function created it (or
        # last changed its metadata in place) is eager's; it is kept here, by tensor.
        self.geometry: dict[int, tuple] = {}
        self._alive: list[torch.Tensor] = []            # keeps ids unique while tracing
        self.inplace_metadata = False                   # t_, unsqueeze_, ... on any tensor
        self.hazard_events: list[tuple] = []            # ("meta" | "data", storage, hazardous)
        self.has_views: set[int] = set()                # tensors that views were taken of
        self.owners: dict = {}                          # storage -> first non-view tensor on it

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        target = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if name in METADATA_METHODS and target is not None:
            # A view's own squeeze_/unsqueeze_ keeps its elements in order: a replay without
            # it gives the gradient right or fails loudly. Reorderings do not; nor does any
            # change to a tensor whose views autograd will replay from it.
            self.hazard_events.append(("meta", _storage(target), id(target) in self.has_views or (
                target._is_view() and name not in ("squeeze_", "unsqueeze_"))))
        if name in METADATA_METHODS and target is not None and id(target) in self.watched:
            kind, index = self.watched[id(target)]
            self.log.append((kind, index, name, _plain(list(args[1:])),
                             _plain(sorted(kwargs.items())), torch.is_grad_enabled()))
            self.events.append(("meta", _storage(target)))
        elif target is not None and (name in _INPLACE_DUNDERS or (
                name.endswith("_") and not name.startswith("_") and name not in METADATA_METHODS)):
            self.events.append(("data", _storage(target)))
        out = func(*args, **kwargs)
        if target is not None and (name in _INPLACE_DUNDERS or (
                name.endswith("_") and not name.startswith("_") and name not in METADATA_METHODS)):
            # only a mutation that autograd records can go wrong through view replay
            if target.requires_grad:
                self.hazard_events.append(("data", _storage(target), False))
        if name in METADATA_METHODS and target is not None:
            self.geometry[id(target)] = _meta(target)
            self.inplace_metadata = True
        for t in pytree.tree_leaves(out):
            if isinstance(t, torch.Tensor) and t._is_view() and name not in METADATA_METHODS \
                    and target is not None and t is not target:
                self.has_views.add(id(target))
            if isinstance(t, torch.Tensor) and not t._is_view() and t.layout == torch.strided:
                self.owners.setdefault(_storage(t), t)
            if isinstance(t, torch.Tensor) and id(t) not in self.geometry and t.layout == torch.strided:
                self.geometry[id(t)] = _meta(t)
                self._alive.append(t)
        return out

    def view_replay_hazard(self) -> bool:
        """Is some storage's metadata changed in place where autograd tracks views of it, and
        the storage mutated afterwards? Under functionalization autograd rebuilds a view's
        grad_fn by replaying the ops that made it, on its base as the base is now; it misses
        in-place metadata changes of the view, and sees those of the base. Eager uses the
        view's own geometry. The gradient is then silently wrong (or fails), as in PyTorch's
        own AOTAutograd (docs/findings.md, row 21)."""
        armed = set()
        for what, st, hazardous in self.hazard_events:
            if what == "meta" and hazardous:
                armed.add(st)
            elif what == "data" and st in armed:
                return True
        return False

    def data_after_meta(self) -> bool:
        """Was some storage mutated after an argument over it changed metadata in place?"""
        changed = set()
        for what, st in self.events:
            if what == "meta":
                changed.add(st)
            elif st in changed:
                return True
        return False


class FunctionalRun:
    """Runs the user's function on functional wrappers of the placeholders.

    Shared by capture (which returns every candidate value) and the joint
    trace (which returns the needed values plus gradients).
    """

    def __init__(self, fn, plan: InputPlan, sig: Signature, leaves: list, in_spec, geometry=None,
                 nonleaf_views: bool = False):
        self.fn, self.plan, self.sig, self.leaves, self.in_spec = fn, plan, sig, leaves, in_spec
        self.eager_geometry = geometry      # per output leaf: (geometry, base geometry) or None
        self.nonleaf_views = nonleaf_views

    def run(self, placeholders: list[torch.Tensor]):
        """Returns (candidates, facts, out_spec, placeholder wrappers). Call with functionalization on."""
        plan, sig = self.plan, self.sig
        wrappers = [_to_fun(p) for p in placeholders]
        works = []
        for p, w in zip(placeholders, wrappers):
            # A non-leaf that requires grad may be mutated in place; the wrapper is a leaf.
            works.append(_nonleaf_copy(p, w, self.nonleaf_views)
                         if (p.requires_grad and not p.is_leaf) else w)
        user: list = []
        for i, src in enumerate(plan.sources):
            if src[0] == "value":
                user.append(self.leaves[i])
            elif src[0] == "same":
                user.append(user[src[1]])
            elif src[0] == "placeholder":
                user.append(works[src[1]])
            else:
                _, p, shape, stride, offset, detached = src
                view = works[p].as_strided(shape, stride, offset)
                user.append(view.detach() if detached else view)
        # Autograd regenerates a view's grad_fn when its version changes, so "did autograd see
        # the mutation" is read on the tensor that owns the storage (a non-leaf copy may be a
        # view of fresh storage; see _nonleaf_copy).
        anchors = [w._base if w._base is not None else w for w in works]
        before = [(a.grad_fn, a.requires_grad) for a in anchors]
        member_meta = {i: _meta(user[i]) for i, s in enumerate(plan.sources) if s[0] == "member"}
        args, kwargs = unflatten_inputs(list(user), self.in_spec)
        watched = {id(works[p]): ("placeholder", p) for p in range(len(works))}
        watched.update({id(user[i]): ("leaf", i) for i in member_meta})
        recorder = _MetadataRecorder(watched)
        self.recorder = recorder             # read by capture() if the trace fails
        try:
            with recorder:
                result = self.fn(*args, **kwargs)
        except (RuntimeError, ValueError, IndexError) as e:
            if any(kind == "leaf" for kind, *_ in recorder.log):
                raise UnsupportedInputError(
                    "an argument that shares storage with another argument has its metadata "
                    "changed in place (t_, transpose_, ...) and the shared storage is mutated "
                    "afterwards; aotcheck's synthetic-base replay does not give eager's gradients "
                    "for that combination, so it refuses it. Pass the arguments without aliasing "
                    f"({type(e).__name__}: {str(e).splitlines()[0][:120]})") from None
            if recorder.log and "view" in str(e):
                raise UnsupportedInputError(
                    "the function changes an argument's metadata in place (t_, transpose_, ...) "
                    "and then mutates a view of it taken before; functionalization cannot "
                    "replay that view (a PyTorch limit). Take the view after the metadata "
                    f"change. ({type(e).__name__}: {str(e).splitlines()[0][:120]})") from None
            raise
        out_leaves, out_spec = pytree.tree_flatten(result, is_leaf=lambda x: isinstance(x, torch.Size))
        for w in works:
            torch._sync(w)
        candidates: list[torch.Tensor] = []
        inputs = []
        for p, w in enumerate(works):
            data = torch._functionalize_has_data_mutation(w)
            meta = torch._functionalize_has_metadata_mutation(w)
            if torch._functionalize_was_storage_changed(w):
                raise UnsupportedInputError(
                    f"the function calls set_() (or swaps the storage) of input placeholder {p}; "
                    "aotcheck supports data and metadata mutations of inputs, not storage swaps")
            if not (data or meta) and anchors[p].requires_grad != before[p][1]:
                raise UnsupportedInputError(
                    f"the function changes requires_grad of input placeholder {p} "
                    "(requires_grad_() on an argument); set requires_grad before the call")
            value_output = -1
            if data:
                value_output = len(candidates)
                candidates.append(w)
            inputs.append(InputFacts(
                p, data, meta, (anchors[p].grad_fn, anchors[p].requires_grad) != before[p],
                w.requires_grad,
                *_meta(w), value_output))
        member_ops = {idx for kind, idx, *_ in recorder.log if kind == "leaf"}
        if member_ops and recorder.data_after_meta():
            raise UnsupportedInputError(
                f"argument leaf {min(member_ops)} shares storage with another argument, its "
                "metadata is changed in place (t_, transpose_, ...) and the shared storage is "
                "mutated afterwards; aotcheck's synthetic-base replay does not give eager's gradients for "
                "that combination, so it refuses it. Pass the arguments without aliasing")
        members = []
        for i, m in member_meta.items():
            if _meta(user[i]) != m:
                members.append(MemberFacts(i, *_meta(user[i])))
        self.geometry, self.base_geometry = recorder.geometry, {}
        self.saw_inplace_metadata = recorder.inplace_metadata
        self._work_ids = {id(w) for w in works}
        outputs, intermediates, new_leaves = self._outputs(out_leaves, user, candidates)
        cands = tuple((tuple(c.shape), str(c.dtype).replace("torch.", ""), c.requires_grad,
                       *self.base_geometry.get(id(c), recorder.geometry.get(id(c), _meta(c)))[1:])
                      for c in candidates)
        facts = RawFacts(tuple(inputs), tuple(members), tuple(outputs), str(out_spec),
                         tuple(intermediates), cands, tuple(new_leaves),
                         tuple(_freeze(op) for op in recorder.log), recorder.view_replay_hazard())
        return candidates, facts, out_spec, wrappers

    def _outputs(self, out_leaves, user, candidates):
        tensor_user = {id(t): i for i, t in enumerate(user) if isinstance(t, torch.Tensor)}
        input_storages: dict = {}
        for i, t in enumerate(user):
            if isinstance(t, torch.Tensor):
                input_storages.setdefault(_storage(t), []).append(i)
        out_storage, out_ids = {}, {}
        roots: dict[int, int] = {}
        intermediates: list[int] = []
        new_leaves: list[int] = []
        # Outputs that own their storage and carry autograd history go first, so that other
        # outputs over the same storage (a detach() of it, returned earlier) are rebuilt from
        # it rather than it from them: a detached alias cannot give it back its grad_fn.
        order = sorted(range(len(out_leaves)), key=lambda k: not (
            isinstance(out_leaves[k], torch.Tensor) and out_leaves[k].requires_grad
            and out_leaves[k]._base is None))
        outputs = [None] * len(out_leaves)
        owners = self.recorder.owners          # storage -> the tensor that first held it
        for k in order:
            o = out_leaves[k]
            if isinstance(o, torch.Size):
                outputs[k] = (OutputFacts(False, value=f"torch.Size({list(o)!r})"))
                continue
            if not isinstance(o, torch.Tensor):
                if not isinstance(o, (bool, int, float, str, type(None))):
                    raise UnsupportedInputError(
                        f"output leaf {k} has type {type(o).__name__}; aotcheck supports returning "
                        "tensors, torch.Size, int, float, bool, str and None, nested in tuples, "
                        "lists and dicts")
                outputs[k] = (OutputFacts(False, value=repr(o)))
                continue
            if o.layout != torch.strided:
                raise UnsupportedInputError(
                    f"output leaf {k} has layout {o.layout}; aotcheck returns strided (dense) "
                    "tensors only")
            eg = self.eager_geometry[k] if self.eager_geometry and k < len(self.eager_geometry) else None
            shape, stride, offset = eg[0] if eg else self.geometry.get(id(o), _meta(o))
            if eg and eg[1] is not None and o._base is not None:
                self.base_geometry[id(o._base)] = eg[1]
            common = dict(shape=shape, stride=stride, offset=offset,
                          dtype=str(o.dtype).replace("torch.", ""), requires_grad=o.requires_grad,
                          is_leaf=o.is_leaf,
                          multi_output_view=o._is_view() and torch._functionalize_is_multi_output_view(o),
                          grad_dead_end=o._is_view() and _grad_dead_end(o))
            st = _storage(o)
            if id(o) in out_ids:
                outputs[k] = (OutputFacts(True, same_output=out_ids[id(o)], **common))
            elif id(o) in tensor_user:
                outputs[k] = (OutputFacts(True, is_input=tensor_user[id(o)], **common))
            elif st in input_storages:
                grad_value = -1
                if o.requires_grad and not (o._base is not None and id(o._base) in self._work_ids):
                    # It shares an argument's storage but is no autograd view of it: a detached
                    # alias mutated in place with a value that requires grad (eager: its grad_fn
                    # is that op's). Its gradient comes from its own graph value.
                    grad_value = len(candidates)
                    candidates.append(o)
                source = self._alias_source(input_storages[st], (shape, stride, offset),
                                            o.dtype, o.requires_grad)
                outputs[k] = (OutputFacts(True, input_storage=source,
                                           graph_output=grad_value, **common))
            elif id(o) in roots:
                # the base of earlier view outputs, returned itself: it is the fresh one
                outputs[k] = (OutputFacts(True, graph_output=intermediates[roots[id(o)]], **common))
            elif o._base is not None or owners.get(st, o) is not o:
                # a view of an intermediate, or a detach() of one (no autograd view, but the
                # same storage): rebuilt from the tensor that owns the storage. A detached one
                # that an in-place op gave a grad_fn gets its gradient from its own value.
                root = o._base if o._base is not None else owners[st]
                grad_value = -1
                if o._base is None and o.requires_grad:
                    grad_value = len(candidates)
                    candidates.append(o)
                if id(root) in out_ids:
                    outputs[k] = (OutputFacts(True, base_output=out_ids[id(root)],
                                              graph_output=grad_value, **common))
                else:
                    if id(root) not in roots:
                        roots[id(root)] = len(intermediates)
                        intermediates.append(len(candidates))
                        candidates.append(root)
                    outputs[k] = (OutputFacts(True, base_intermediate=roots[id(root)],
                                              graph_output=grad_value, **common))
            elif st in out_storage:
                outputs[k] = (OutputFacts(True, output_storage=out_storage[st], **common))
            else:
                if o.requires_grad and o.is_leaf:
                    new_leaves.append(k)
                outputs[k] = (OutputFacts(True, graph_output=len(candidates), **common))
                candidates.append(o)
            out_storage.setdefault(st, k)
            out_ids.setdefault(id(o), k)
        # a view output whose root is a *later* output: point it at that output instead
        for k, f in enumerate(outputs):
            if f.base_intermediate >= 0:
                root_idx = intermediates[f.base_intermediate]
                root = candidates[root_idx]
                if id(root) in out_ids:
                    outputs[k] = _replace(f, base_intermediate=-1, base_output=out_ids[id(root)])
        return outputs, intermediates, new_leaves


    def _alias_source(self, candidates: list[int], geometry: tuple, dtype, requires_grad) -> int:
        """Which of the arguments over one storage an output aliasing it is rebuilt from: one
        whose memory holds all of the output's (preferring one with the output's requires_grad),
        else the first. The runtime rebuilds it with ``as_strided`` on that argument, so, as in
        eager, an as_strided view that reaches outside it gets no gradient there."""
        if len(candidates) == 1:
            return candidates[0]
        specs = [self.sig.leaves[i] for i in candidates]
        if any(getattr(torch, sp.dtype) != dtype for sp in specs):
            return candidates[0]
        out = _footprint(*geometry, specs[0].storage_numel)
        holding = [i for i, sp in zip(candidates, specs)
                   if out is not None and out <= (_footprint(sp.shape, sp.stride, sp.offset,
                                                             sp.storage_numel) or set())]
        holding.sort(key=lambda i: self.sig.leaves[i].requires_grad != requires_grad)
        return holding[0] if holding else candidates[0]


_FOOTPRINT_LIMIT = 1 << 16


def _footprint(shape, stride, offset, storage_numel) -> frozenset | None:
    """The storage elements a geometry addresses, or None when there are too many to list."""
    n = 1
    for sz in shape:
        n *= sz
    if n > _FOOTPRINT_LIMIT or storage_numel > (1 << 24):
        return None
    if n == 0:
        return frozenset()
    points = {offset}          # plain Python: this runs inside the fake, functional trace
    for size, st in zip(shape, stride):
        points = {x + k * st for x in points for k in range(size)}
    return frozenset(points)


def eager_geometry(fn, leaves: list, in_spec, sig: Signature):
    """Run ``fn`` as eager would, on fake copies of the arguments (no functionalization),
    and return per output leaf ``(geometry, base geometry)``, or None if that run fails.

    # NOTE [eager geometry]
    A functional wrapper's size/stride/offset can drift from eager's: when functionalization
    replaces a mutated tensor's value, the new value is laid out by the functional op (e.g.
    contiguous where eager's argument was a strided slice), and views taken afterwards, or
    views re-synced from it, inherit that layout. Aliased outputs are rebuilt with
    as_strided on real tensors, so their geometry must be eager's; it is read here.
    """
    from torch._subclasses.fake_tensor import FakeTensorMode
    mode = FakeTensorMode()
    try:
        fakes = [mode.from_tensor(t) if isinstance(t, torch.Tensor) else t for t in leaves]
        args, kwargs = unflatten_inputs(fakes, in_spec)
        with _trace_grad_mode(sig), mode:
            out = fn(*args, **kwargs)
    except Exception:  # noqa: BLE001 - fall back to the functional wrappers' geometry
        return None
    result = []
    for o in pytree.tree_leaves(out, is_leaf=lambda x: isinstance(x, torch.Size)):
        if isinstance(o, torch.Tensor) and o.layout == torch.strided:
            base = o._base
            result.append((_meta(o), _meta(base) if base is not None else None))
        else:
            result.append(None)
    return result


def _freeze(v):
    return tuple(_freeze(x) for x in v) if isinstance(v, (list, tuple)) else v


def _dense(t: torch.Tensor) -> bool:
    """Non-overlapping and dense: its elements fill a block of memory without gaps."""
    dims = sorted((st, sz) for sz, st in zip(t.shape, t.stride()) if sz != 1)
    expected = 1
    for st, sz in dims:
        if st != expected:
            return False
        expected *= sz
    return True


def _nonleaf_copy(p: torch.Tensor, w: torch.Tensor, as_view: bool) -> torch.Tensor:
    """A non-leaf copy of wrapper ``w`` with exactly ``p``'s storage geometry (size of the
    storage, offset, strides), so that offsets recorded for aliases of it are the real ones.

    # NOTE [non-leaf copies]
    A strided window must keep its geometry: reshape/contiguous decide view-or-copy from
    strides, so a compact copy would turn eager's copies into views (silently wrong).

    Under functionalization autograd cannot rebuild a view's grad_fn with as_strided, as eager
    does; it replays the view ops that made the view, on its base as the base is *now*. That
    goes wrong when in-place metadata changes (t_, unsqueeze_, ...) sit on the chain, in one of
    two ways, so there are two kinds of copy:

    - ``as_view=False`` (first choice): a plain tensor to autograd (a clone, or a detached
      window into fresh storage). Fails when the argument's metadata changes in place after a
      view of it was taken and that view's grad_fn is rebuilt ("narrow, then transpose_").
    - ``as_view=True``: an autograd view of fresh storage. Fails when the argument's own
      metadata changes and then its grad_fn is rebuilt ("unsqueeze_, then clamp_").

    Both fail loudly while the joint graph is traced ("invalid gradient"); the pipeline then
    traces again with the other kind (pipeline.run_stages). Gradients are the same either way.
    """
    numel = p.untyped_storage().nbytes() // p.element_size()
    if as_view:
        view = w.new_empty((numel,)).as_strided(p.shape, p.stride(), p.storage_offset())
    elif p.storage_offset() == 0 and _dense(p) and numel == p.numel():
        return w.clone()     # clone() keeps a dense tensor's strides: p's geometry exactly
    else:
        view = w.new_empty((numel,)).as_strided(p.shape, p.stride(), p.storage_offset()).detach()
    view.copy_(w)
    return view


def _grad_dead_end(o: torch.Tensor) -> bool:
    """Does eager's autograd chain for this view end nowhere? A view taken under no_grad of a
    base that requires grad has no grad_fn; later views of it get a grad_fn whose next edge
    is empty, so their gradient reaches no input."""
    fn, steps = o.grad_fn, 0
    while fn is not None and steps < 256:
        nxt = [f for f, _ in fn.next_functions]
        if nxt and all(f is None for f in nxt):
            return True
        live = [f for f in nxt if f is not None]
        if len(live) != 1 or type(live[0]).__name__ == "AccumulateGrad":
            return False
        fn, steps = live[0], steps + 1
    return False


def _replace(f, **kw):
    from dataclasses import replace
    return replace(f, **kw)


def _meta(t: torch.Tensor) -> tuple:
    return tuple(t.shape), tuple(t.stride()), t.storage_offset()


def trace_functional(body, example_placeholders: list[torch.Tensor]) -> fx.GraphModule:
    """make_fx on fake copies of the placeholders, with functionalization around ``body``."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def traced(*args):
        torch._enable_functionalization(reapply_views=True)
        try:
            with _TraceGuard():
                return body(*args)
        finally:
            torch._disable_functionalization()

    import logging
    fake_log = logging.getLogger("torch._subclasses.fake_tensor")
    level = fake_log.level
    fake_log.setLevel(logging.CRITICAL)      # the user's own errors are re-raised below
    try:
        return _guard_trace(lambda: make_fx(traced, tracing_mode="fake")(*example_placeholders))
    finally:
        fake_log.setLevel(level)


def _guard_trace(thunk):
    from torch._subclasses.fake_tensor import (DataDependentOutputException,
                                               DynamicOutputShapeException,
                                               UnsupportedOperatorException)
    try:
        return thunk()
    except (DataDependentError, UnsupportedInputError, TraceError):
        raise
    except DataDependentOutputException as e:
        raise DataDependentError(
            f"the function reads a tensor value while being traced ({e.func if hasattr(e, 'func') else e}); "
            "Python control flow on tensor values, .item() and .tolist() cannot be compiled. Use "
            "torch.where or pass the value as a Python scalar argument") from None
    except DynamicOutputShapeException as e:
        raise DataDependentError(
            f"op {e.func} has an output shape that depends on tensor values; aotcheck compiles "
            "static shapes only") from None
    except UnsupportedOperatorException as e:
        raise TraceError(f"op {e.func} cannot run on fake tensors, so it cannot be traced") from None
    except Exception as e:  # the user's function raised while being traced
        msg = str(e).split("\n")[0]
        if "mutation on a view chain" in msg and "as_strided" in msg:
            raise UnsupportedInputError(
                "the function mutates, in place, an as_strided() view taken of another view; "
                "functionalization cannot express that (a PyTorch limit). Take as_strided of "
                "the base tensor instead") from None
        if "convert all Tensors to FakeTensors" in msg:
            op = msg.split("Found in ")[-1].split("(")[0] if "Found in " in msg else "an op"
            raise UnsupportedInputError(
                f"the function uses a tensor that is not one of its arguments (a closure, a global "
                f"or a module parameter, in {op}); aotcheck compiles functions of their arguments: "
                "pass the tensor in (for module parameters, torch.func.functional_call)") from None
        if "data-dependent" in msg or "data dependent" in msg or "data is not allocated yet" in msg:
            raise DataDependentError(
                f"the function depends on tensor values while being traced: {msg}; use torch.where "
                "or pass the value as a Python scalar argument") from None
        raise TraceError(f"the function raised while being traced: {type(e).__name__}: {msg}") from e


def capture(fn, leaves: list, in_spec, sig: Signature,
            synthetic: frozenset[int] = frozenset(), nonleaf_views: bool = False) -> Captured:
    """Trace ``fn`` for this signature. Re-captures with synthetic bases when needed."""
    plan = plan_inputs(sig, synthetic)
    geometry = eager_geometry(fn, leaves, in_spec, sig)
    run = FunctionalRun(fn, plan, sig, leaves, in_spec, geometry, nonleaf_views)
    box: dict = {}

    def body(*placeholders):
        candidates, facts, out_spec, _ = run.run(list(placeholders))
        box["facts"], box["out_spec"] = facts, out_spec
        return [_from_fun(c) for c in candidates]

    placeholders = placeholder_tensors(plan, leaves)
    try:
        with _trace_grad_mode(sig):
            gm = trace_functional(body, placeholders)
    except TraceError as first:
        # see NOTE [non-leaf copies]: a view's grad_fn rebuilt by replaying its creation ops
        # can fail in the forward too (permute of an argument squeeze_d to 0-dim); trace once
        # more with the other kind of copy. If eager ran the function (on fake tensors) and
        # in-place metadata changes were seen, what failed is that replay: a named limit.
        recorder = getattr(run, "recorder", None)
        if recorder is None or not recorder.inplace_metadata:
            raise
        retried = not nonleaf_views and any(t.requires_grad and not t.is_leaf for t in placeholders)
        if retried:
            try:
                return capture(fn, leaves, in_spec, sig, synthetic, nonleaf_views=True)
            except TraceError:
                pass
        # eager_geometry() ran the function on fake tensors without functionalization (it
        # cannot when a non-leaf argument is mutated: its fakes are leaves); when neither that
        # run nor the other kind of copy contradicts it, the failure is the replay limit
        if geometry is None and not retried:
            raise
        raise view_replay_refusal(first) from None
    gm.graph.eliminate_dead_code()
    gm.recompile()
    captured = Captured(gm, plan, box["facts"], box["out_spec"], geometry=geometry,
                        nonleaf_views=nonleaf_views)
    needs = _groups_needing_synthetic_base(sig, captured) - synthetic
    if needs:
        return capture(fn, leaves, in_spec, sig, synthetic | needs, nonleaf_views)
    return captured


def view_replay_refusal(e: Exception) -> UnsupportedInputError:
    """The named refusal for NOTE [non-leaf copies]'s limit, when no kind of copy helps."""
    return UnsupportedInputError(
        "the function changes a tensor's metadata in place (t_, transpose_, unsqueeze_, ...) "
        "and autograd must later rebuild the grad_fn of a view on that chain (after a mutation); "
        "autograd cannot rebuild that view's grad_fn under functionalization: it replays the ops "
        "that made the view, which misses in-place metadata changes (a PyTorch limit; functorch's "
        "aot_function fails the same way). Use the out-of-place op (x = x.unsqueeze(1)) instead. "
        f"({e})")


def _groups_needing_synthetic_base(sig: Signature, captured: Captured) -> frozenset[int]:
    storage_of = {}
    for p, (kind, ref) in enumerate(captured.plan.placeholders):
        if kind == "leaf":
            storage_of[p] = sig.leaves[ref].storage
    grouped = {g.storage for g in sig.groups}
    out = set()
    for f in captured.facts.inputs:
        s = storage_of.get(f.placeholder)
        if s in grouped and (f.data_mutated or f.metadata_mutated):
            out.add(s)
    return frozenset(out)


class _trace_grad_mode:
    """Trace in the caller's grad mode; inference mode is traced as no_grad."""

    def __init__(self, sig: Signature):
        self.ctx = torch.no_grad() if (sig.inference_mode or not sig.grad_enabled) else torch.enable_grad()

    def __enter__(self):
        self._im = torch.inference_mode(False)
        self._im.__enter__()
        self.ctx.__enter__()

    def __exit__(self, *exc):
        self.ctx.__exit__(*exc)
        self._im.__exit__(*exc)

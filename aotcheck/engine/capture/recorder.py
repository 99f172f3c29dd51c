"""recorder: watches the user's Python-level tensor calls while the function is traced.

A ``TorchFunctionMode`` that sees the user's calls (``x.t_()``, not aten ops). It records:

- in-place metadata calls on arguments, for the runtime to replay (NOTE [mutation replay]);
- each tensor's geometry when created or last changed in place (NOTE [eager geometry]), and
  the order of metadata changes and mutations per storage, for the view-replay hazard;
- which tensor first owned each storage (for detached aliases of intermediates)."""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch.autograd.graph import get_gradient_edge
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree

from ...errors import UnsupportedInputError
from .custom_ops import mutating_kernel, note_call
from .functional import geometry_of, storage_ref, unwrap_functorch
from .inference_call import CallRules, call_in_inference_mode, is_data_read, transform_results
from .overlap import outer_dims, piecewise, untiled_unfold
from .resize import (check_out_dtypes, contiguous_layout, out_layouts, reaches_outside,
                     resize_geometry, result_shapes)
from .storage.data_assign import DATA_SETTER, data_assignment_op, sets_data
from .storage.watch import StorageWatch, unwatch_set_calls, watch_set_calls


REQUIRES_GRAD_ATTR = torch._C.TensorBase.requires_grad
# In-place ops that change a tensor's size, stride or offset (not its data).
METADATA_METHODS = frozenset({"t_", "transpose_", "swapdims_", "swapaxes_", "unsqueeze_",
                              "squeeze_", "as_strided_", "resize_"})


def plain_args(v):
    """A metadata call's arguments as plain data (ints, floats, bools, strs, None, sequences)."""
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, (list, tuple, torch.Size)):
        return [plain_args(x) for x in v]
    raise UnsupportedInputError(
        f"an in-place metadata op on an argument got {type(v).__name__} {v!r}; aotcheck replays "
        "such ops with int, float, bool and sequence arguments only")


_INPLACE_DUNDERS = frozenset({"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
                              "__ifloordiv__", "__imod__", "__ipow__", "__iand__", "__ior__"})


def call_name(func) -> str:
    """The method name of a call a ``TorchFunctionMode`` sees: an aten op called directly
    (``torch.ops.aten.t_.default(x)``, as the subclass path's desugared graph calls them) is
    named by its overload packet (``t_``, not ``t_.default``)."""
    if isinstance(func, torch._ops.OpOverload):
        return func._overloadpacket.__name__
    return getattr(func, "__name__", "")


# NOTE [view strides on fake tensors]
# Eager's ``view`` refuses sizes that its strides cannot give without a copy (ATen's
# computeStride). A fake tensor's ``view`` (torch 2.13) can accept them: a [2, 1, 4] tensor
# with strides [1, 8, 2] (a size-one dimension between two that are not adjacent in memory)
# views as [8] with stride [1], where eager (and the meta device) raises. The trace would then
# run a function that eager refuses, so each ``view`` is checked against eager's rule, on the
# geometry eager's tensor has, and refused with eager's message.

_VIEW_ERROR = ("view size is not compatible with input tensor's size and stride (at least one "
               "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")


def view_sizes(shape, args) -> list | None:
    """The sizes ``Tensor.view(*args)`` asks for, with a -1 resolved (None: a dtype view, or
    sizes that are not plain ints)."""
    sizes = list(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)) \
        else list(args)
    if not sizes and args:
        return None
    if not all(type(s) is int for s in sizes):
        return None
    numel = math.prod(shape)
    if sizes.count(-1) == 1:
        rest = math.prod(s for s in sizes if s != -1)
        if rest == 0 or numel % rest:
            return None
        sizes[sizes.index(-1)] = numel // rest
    return sizes if math.prod(sizes) == numel else None


def viewable(shape, stride, sizes) -> bool:
    """Whether eager's ``view`` gives ``sizes`` from a tensor of ``shape`` and ``stride``
    without a copy: ATen's computeStride, which walks the tensor's dimensions from the last,
    in chunks of dimensions that are contiguous with one another (a size-one dimension joins
    any chunk), and requires the new sizes to split along those chunks."""
    shape, stride = list(shape), list(stride)
    if not shape or math.prod(shape) == 0:
        return True
    view_d = len(sizes) - 1
    base = stride[-1]
    tensor_numel = view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and stride[d - 1] != tensor_numel * base):
            while view_d >= 0 and (view_numel < tensor_numel or sizes[view_d] == 1):
                view_numel *= sizes[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return False
            if d > 0:
                base = stride[d - 1]
                tensor_numel = view_numel = 1
    return view_d == -1


def is_mutating_name(name: str) -> bool:
    """Does a method of this name change its tensor's data in place?"""
    return name in _INPLACE_DUNDERS or (name.endswith("_") and not name.startswith("_")
                                        and name not in METADATA_METHODS and name != "requires_grad_")


class _Call(NamedTuple):
    """One call the recorder sees, on ``target`` (its first argument, where a tensor)."""

    func: object
    name: str
    target: torch.Tensor | None
    args: tuple
    kwargs: dict

    @property
    def sets_flag(self) -> bool:
        """Is it a requires_grad setter (``requires_grad_()`` or ``.requires_grad =``)?"""
        return self.target is not None and (self.name == "requires_grad_" or (
            self.name == "__set__" and getattr(self.func, "__self__", None) is REQUIRES_GRAD_ATTR))


class MetadataRecorder(TorchFunctionMode):
    """Records in-place metadata calls (``t_``, ``transpose_``, ...) on arguments, as the
    user wrote them, so the runtime can replay exactly those calls (see
    NOTE [mutation replay] in runtime/artifact.py): eager's strides and grad_fns then come out as eager's.
    Storage changes (``.data =``, ``set_()``) it hands to its watcher, ``self.storage``
    (NOTE [storage changes, in data-flow order] in storage/__init__.py)."""

    def __init__(self, watched: dict[int, tuple], rules: CallRules = CallRules()):
        super().__init__()
        self.watched, self.log = watched, []
        self.events: list[tuple[str, object]] = []    # ("meta" | "data", storage), in order
        # NOTE [eager geometry]: a functional wrapper's size/stride/offset can drift from
        # eager's when functionalization re-syncs a view after its base is mutated (the base's
        # new value is contiguous). The geometry a tensor had when the function created it (or
        # last changed its metadata in place) is eager's; it is kept here, by tensor.
        self.geometry: dict[int, tuple] = {}
        self.kept_alive: list[torch.Tensor] = []        # keeps ids unique while tracing
        self.inner_hooks: list[torch.Tensor] = []       # tensors made inside given a hook
        self.inplace_metadata = False                   # t_, unsqueeze_, ... on any tensor
        self.hazard_events: list[tuple] = []            # ("meta" | "data", storage, hazardous)
        self.has_views: set[int] = set()                # tensors that views were taken of
        self.untiled: set = set()       # storages an unfold with gaps views (NOTE [writes through an unfold that leaves gaps])
        self.owners: dict = {}                          # storage -> first non-view tensor on it
        self.resizes: dict[int, int] = {}               # placeholder -> bytes after its last
                                                        # inductor.resize_storage_bytes_
        # NOTE [new grad leaves] in autograd_facts.py: tensors that became leaves requiring
        # grad inside the function (requires_grad_(), .requires_grad = True, or a factory
        # call with requires_grad=True), in order; the placeholders' wrappers are not among
        # them (an alias group's members are: kind "argument")
        self.new_leaves: list[torch.Tensor] = []
        # NOTE [as_strided clips]: per view (by id), its autograd version when made, and the
        # geometries of the tensors that an as_strided on its chain reached outside of
        self.view_version: dict[int, int] = {}
        self.clips: dict[int, tuple] = {}
        self.writes: list[tuple] = []                   # (storage, geometry) per data write
        self.reaches: list[tuple] = []                  # (storage, geometry) per as_strided view
        self.grad_calls: list[tuple] = []               # (watched kind and index, events so
                                                        # far, storage per placeholder)
        # NOTE [views of an argument given requires_grad_] (view_flags.py): per base
        # work (by id) the leaves its views' works view; per view work its placeholder, and
        # per view placeholder its own flag
        self._views_of: dict[int, list[torch.Tensor]] = {}
        self._view_of_work: dict[int, int] = {}
        self.own_flags: dict[int, bool] = {}
        self.flags_set: set[int] = set()                # placeholders a requires_grad setter set
        # NOTE [resize_ of an argument]: each placeholder's storage size in eager (set by the
        # run), the placeholders whose storage a resize_ grew, and how a functional run grows
        # a tensor (None: the call runs as it is, as on a plain run's fake tensors)
        self.storage_nbytes: dict[int, int] = {}
        self.grown: set[int] = set()
        self.grow = None
        # NOTE [inference tensors made in the call]
        # the tensors (by id) that eager, called inside inference_mode, makes as inference tensors:
        # every tensor an op makes, except a view (or detach) of a tensor that is not one (a view of
        # an argument is an ordinary tensor that only remembers it was made in inference mode). The
        # trace runs outside inference mode, so its tensors do not say it themselves.
        self.made_in_call: set[int] = set()
        self.inference_call = rules.inference   # the call is under inference_mode
                                                # (NOTE [views of inference tensors])
        self.autocast = rules.autocast()        # NOTE [the autocast cache], or None
        # NOTE [ordinary outputs of an inference call] in outputs.py: tensors eager makes
        # with inference mode off although the call is under it
        self.ordinary: set[int] = set()
        # NOTE [imperative autograd on arguments and outputs]: retain_grad() calls (watched
        # kind and index, or the tensor for any other), and hooks registered on arguments:
        # (watched kind and index, hook, its handle's dict, handle id, written before)
        self.retained: list[tuple] = []         # (kind, index, in-place calls on it before)
        self.inplace_calls: dict[tuple, list[str]] = {}     # watched -> "data"/"meta", in order
        self.retained_tensors: dict[int, torch.Tensor] = {}
        self.retained_edges: dict[tuple, object] = {}   # watched -> GradientEdge
        self.argument_hooks: list[tuple] = []
        self.storage = StorageWatch()                   # .data =, set_(): storage/watch.py

    def __enter__(self):
        # NOTE [parameters made inside]
        # ``nn.Parameter(y)`` calls ``Tensor._make_subclass``, which detaches ``y`` with every
        # mode off: on a functional wrapper the Parameter's inner value is a fake tensor no
        # tracer saw, traced as a constant (a FakeTensor left in the graph). Under the
        # recorder a Parameter is made the traced way: a detached alias of ``y`` given
        # requires_grad_() (NOTE [new grad leaves] in autograd_facts.py) and the Parameter
        # class, eager's leaf on ``y``'s storage. Re-entered (a mutating custom op's kernel),
        # only the outermost entry patches and restores (else the patch outlived the call).
        self._depth = getattr(self, "_depth", 0) + 1
        if self._depth == 1:
            self._parameter_new = _patch_parameter_new()
        watch_set_calls(self)           # NOTE [set_ in the recorder]
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            unwatch_set_calls(self)
            self._depth -= 1
            if self._depth == 0:
                torch.nn.Parameter.__new__ = self._parameter_new

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = call_name(func)
        if (assigned := data_assignment_op(func, args, kwargs)) is not None:
            self.__torch_function__(DATA_SETTER, types, assigned)     # NOTE [shallow_copy_data_]
            return assigned[0]
        if kwargs.get("out") is not None and name not in METADATA_METHODS:
            self._resize_outs(func, args, kwargs)
        target = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if target is not None and _wrapped(target):
            return self._inside_transform(func, name, target, args, kwargs)
        call = _Call(func, name, target, args, kwargs)
        self._note_autograd_calls(call)
        if name == "register_hook" and target is not None and len(args) == 2 and not kwargs:
            handle = self._register_hook(target, args[1])
            if handle is not None:
                return handle
        if name != "__set__":           # NOTE [set_ under no_grad onto another shape]
            self.storage.regrad_reshaped(self, (args, kwargs))
        note_call(func)
        kernel = mutating_kernel(func, args, kwargs)
        if kernel is not None:
            with self:          # the kernel's own calls are recorded (NOTE [mutating custom ops])
                return kernel()
        if target is not None and is_mutating_name(name) and name != "__setitem__":
            dims = outer_dims(target, name)     # NOTE [overlapping writes] in overlap.py
            if dims is not None:
                return piecewise(self.__torch_function__, func, args, kwargs, dims)
        self._note_changes(call)
        flag_before = target.requires_grad if call.sets_flag else None
        if name == "view" and target is not None and target.layout == torch.strided and not kwargs:
            self._check_view(target, args)
        out, resized = self._run(call)
        if name != "__set__":
            self.storage.note_grad_use(args, kwargs, out)
        self._note_flag(call, flag_before, out)
        self._note_geometry(call, out, resized)
        self._note_results(call, out)
        return out

    def _note_autograd_calls(self, call: _Call) -> None:
        """``retain_grad()`` calls, and the order of in-place calls on each argument that
        autograd records (NOTE [imperative autograd on arguments and outputs])."""
        name, target = call.name, call.target
        if name == "retain_grad" and target is not None:
            if id(target) in self.watched:
                key = self.watched[id(target)]
                self.retained.append((*key, len(self.inplace_calls.get(key, ()))))
            else:
                self.retained_tensors[id(target)] = target
                self.kept_alive.append(target)
        if target is not None and id(target) in self.watched and (
                name in METADATA_METHODS or is_mutating_name(name)) and torch.is_grad_enabled() \
                and not torch.is_inference_mode_enabled():
            # NOTE [where an argument's retained gradient sits] in autograd_facts.py: where
            # its hook stays behind (calls autograd does not record move nothing), the node
            # it stays on (a gradient target of the joint)
            key = self.watched[id(target)]
            if name in METADATA_METHODS and key not in self.retained_edges and \
                    any(r[:2] == key for r in self.retained) and target.requires_grad:
                self.retained_edges[key] = get_gradient_edge(target)
            self.inplace_calls.setdefault(key, []).append(
                "meta" if name in METADATA_METHODS else "data")

    def _register_hook(self, target: torch.Tensor, hook):
        """``target.register_hook(hook)``: the recorded handle for an argument or a leaf made
        inside; None (the call runs as it is) for any other tensor."""
        if id(target) in self.watched and target.requires_grad:
            return self._argument_hook(target, hook)
        made = next((j for j, n in enumerate(self.new_leaves) if n is target), None)
        if made is not None and target.is_leaf:     # NOTE [hooks on leaves made inside]
            return self._argument_hook(target, hook, ("new", made))
        self.inner_hooks.append(target)     # NOTE [hooks on returned tensors] (autograd_facts)
        return None

    def _note_changes(self, call: _Call) -> None:
        """Before the call runs: the metadata change or write it makes, in the per-storage
        event orders, the replay log and the write list; a ``.data`` set; a storage resize."""
        func, name, target, args, kwargs = call
        if name in METADATA_METHODS and target is not None:
            # A view's own squeeze_/unsqueeze_ keeps its elements in order: a replay without
            # it gives the gradient right or fails loudly. Reorderings do not; nor does any
            # change to a tensor whose views autograd will replay from it.
            self.hazard_events.append(("meta", storage_ref(target), id(target) in self.has_views or (
                target._is_view() and name not in ("squeeze_", "unsqueeze_"))))
        if name in METADATA_METHODS and target is not None and id(target) in self.watched:
            kind, index = self.watched[id(target)]
            self.log.append((kind, index, name, plain_args(list(args[1:])),
                             plain_args(sorted(kwargs.items())),
                             # did autograd record it? (a view that required no grad then is
                             # replayed under no_grad, even after its base got a grad_fn)
                             torch.is_grad_enabled() and target.requires_grad))
            self.events.append(("meta", storage_ref(target)))
        elif target is not None and is_mutating_name(name):
            self.events.append(("data", storage_ref(target)))
            if target._is_view() and storage_ref(target) in self.untiled:
                raise UnsupportedInputError(        # NOTE [writes through an unfold that leaves gaps]
                    "a write through a view of a storage an unfold with gaps views: "
                    "functionalization cannot write back through an unfold that leaves gaps")
        if target is not None and is_mutating_name(name) and target.layout == torch.strided:
            # NOTE [writes outside an argument] in plan.py
            self.writes.append((storage_ref(target),
                                self.geometry.get(id(target)) or geometry_of(target)))
        if target is not None and sets_data(name, func):
            self.storage.data_set(self, target, args)       # NOTE [.data assignment]
        if name == "resize_storage_bytes_" and target is not None:
            self._record_resize(target, args[1] if len(args) > 1 else kwargs.get("new_size"))

    def _check_view(self, target: torch.Tensor, args: tuple) -> None:
        """Refuse a ``view`` that eager refuses (NOTE [view strides on fake tensors])."""
        shape, stride, _ = self.geometry.get(id(target)) or geometry_of(target)
        sizes = view_sizes(shape, args[1:])
        if sizes is not None and not viewable(shape, stride, sizes):
            raise RuntimeError(_VIEW_ERROR)

    def _run(self, call: _Call) -> tuple:
        """Run the call as eager would: (its result, a resize_'s geometry or None)."""
        func, name, target, args, kwargs = call
        resized, grow = resize_geometry(self, target, args, kwargs) if name == "resize_" \
            else (None, False)
        if grow and self.grow is not None:
            self.grow(target, resized[0])
            out = target
        elif resized is not None and resized[0] == tuple(target.shape) and not kwargs:
            # eager's resize_ to the sizes a tensor has changes nothing; functionalization
            # (of either way's trace) would make the tensor contiguous
            out = target
        elif self.inference_call and torch._C._functorch.peek_interpreter_stack() is None:
            # NOTE [views of inference tensors] in inference_call.py
            out = call_in_inference_mode(func, args, kwargs, target, self)
        elif self.autocast is not None:         # NOTE [the autocast cache]
            cast_args, cast_kwargs = self.autocast.apply(func, args, kwargs)
            out = func(*cast_args, **cast_kwargs)
        else:
            out = func(*args, **kwargs)
        return out, resized

    def _note_flag(self, call: _Call, flag_before, out) -> None:
        """After a requires_grad setter (or a factory given ``requires_grad=True``): the flags
        it set, its replay on an aliased argument, and the grad leaves it made."""
        target, args, kwargs = call.target, call.args, call.kwargs
        if not call.sets_flag:
            if kwargs.get("requires_grad"):
                for t in pytree.tree_leaves(out):
                    self._note_leaf(t)
            return
        if self.watched.get(id(target), ("",))[0] == "placeholder":
            self.flags_set.add(self.watched[id(target)][1])
        self._derive_flags(target, args, kwargs)
        if self.watched.get(id(target), ("",))[0] == "leaf" and target.requires_grad != flag_before:
            # NOTE [requires_grad_ on an aliased argument] (view_flags.py): a member of an
            # alias group is a view of the group's base in the trace, not the caller's tensor,
            # so its flag is replayed on the caller's tensor with its metadata calls, in order
            self.log.append(("leaf", self.watched[id(target)][1], "requires_grad_",
                             [bool(target.requires_grad)], [], False))
        # only the requires_grad setter: autograd sets other attributes (_backward_hooks,
        # when a view's grad_fn is regenerated) while it holds the tensor's autograd lock,
        # and reading .is_leaf then would deadlock the process
        self._note_leaf(target)
        if id(target) in self.watched and target.requires_grad:
            # when an argument came to require grad: which storage each argument had
            # then, and how many storage events came before (NOTE [storage swaps])
            self.grad_calls.append((self.watched[id(target)], len(self.events),
                                    [storage_ref(t) for t in self._watched_tensors]))

    def _note_geometry(self, call: _Call, out, resized) -> None:
        """After the call: a recorded write's hazard, and the eager geometry of a tensor
        whose metadata the call changed (or of a ``detach()``'s result)."""
        func, name, target, args, _ = call
        if target is None:
            return
        if is_mutating_name(name):
            # only a mutation that autograd records can go wrong through view replay
            if target.requires_grad:
                self.hazard_events.append(("data", storage_ref(target), False))
        if name == "set_" or sets_data(name, func):
            # NOTE [.data assignment] in runtime/writeback.py, NOTE [set_ in the recorder]: the
            # tensor now has its source's eager geometry (a leaf made inside is rebuilt in it)
            self.storage.took_geometry(self, target, args)
        if name in METADATA_METHODS:
            # eager's resize_ keeps the offset; a grown functional value starts at 0
            self.geometry[id(target)] = resized or geometry_of(target)
            self.inplace_metadata = True
        if name == "detach" and isinstance(out, torch.Tensor):
            eager = self.geometry.get(id(target), self.start_geometry.get(id(target)))
            if eager is not None:
                self.geometry[id(out)] = eager        # eager's, not a drifted wrapper's
                self.kept_alive.append(out)

    def _note_results(self, call: _Call, out) -> None:
        """Each tensor the call returned: a view taken, the storage's owner, whether eager
        makes it in the call (NOTE [inference tensors made in the call]), its geometry."""
        func, name, target, args, kwargs = call
        self._note_transform_results(out, (args, kwargs))
        for t in pytree.tree_leaves(out):
            if isinstance(t, torch.Tensor) and _wrapped(t):
                continue                # a transform's own (NOTE [calls inside a torch.func transform])
            if isinstance(t, torch.Tensor) and t._is_view() and name not in METADATA_METHODS \
                    and target is not None and t is not target:
                self.has_views.add(id(target))
                self._note_view(name, target, t)
                if untiled_unfold(name, target, args, kwargs) and torch._is_functional_tensor(t):
                    self.untiled.add(storage_ref(t))
            if isinstance(t, torch.Tensor) and not t._is_view() and t.layout == torch.strided:
                self.owners.setdefault(storage_ref(t), t)
            if isinstance(t, torch.Tensor) and not any(t is a for a in pytree.tree_leaves((args, kwargs))):
                viewed = t._is_view() or name in ("detach", "alias") or is_data_read(func)
                if self.inference_call and (func is torch.autograd.grad or (
                        viewed and target is not None and id(target) in self.ordinary)):
                    self.ordinary.add(id(t))
                    self.kept_alive.append(t)
                elif not viewed or (target is not None and id(target) in self.made_in_call):
                    self.made_in_call.add(id(t))
                    self.kept_alive.append(t)
            if isinstance(t, torch.Tensor) and id(t) not in self.geometry and t.layout == torch.strided:
                # an argument an in-place data op returned: its geometry at the call is eager's
                # (the wrapper's may have drifted with the write)
                self.geometry[id(t)] = self.start_geometry.get(id(t)) or geometry_of(t)
                self.kept_alive.append(t)

    # NOTE [calls inside a torch.func transform]
    def _inside_transform(self, func, name, target, args, kwargs):
        """Inside ``torch.func.grad`` / ``jvp`` / ``vjp`` / ``vmap`` the function's tensors are
        functorch's wrappers (NOTE [functorch wrappers] in functional.py): the transform's
        own levels, which it unwraps before it returns. Its leaves (``requires_grad_()`` on
        its inputs), views and geometry are the transform's, never the caller's, so none of
        them is recorded as the function's; only a write is, against the storage at the bottom
        that it reaches (a write to an argument, or to a tensor the function made outside
        the transform, is the function's too). Metadata calls on wrappers are the
        transform's: an argument itself is never a wrapper."""
        bottom = unwrap_functorch(target) if target is not None else None
        if bottom is not None and is_mutating_name(name) and bottom.layout == torch.strided:
            self.events.append(("data", storage_ref(bottom)))
            self.writes.append((storage_ref(bottom), geometry_of(bottom)))
            if bottom.requires_grad:
                self.hazard_events.append(("data", storage_ref(bottom), False))
        out = func(*args, **kwargs)
        self._note_transform_results(out, (args, kwargs))
        return out

    def _note_transform_results(self, out, inputs=()) -> None:
        """NOTE [ordinary outputs of an inference call] in outputs.py (``transform_results``)."""
        if self.inference_call:
            for bottom in transform_results(out, inputs):
                self.ordinary.add(id(bottom))
                self.kept_alive.append(bottom)

    # NOTE [out= resizes]
    def _resize_outs(self, func, args: tuple, kwargs: dict) -> None:
        """Eager's ``out=`` variants resize an out tensor whose shape is not the result's
        (``at::native::resize_output``: a ``resize_`` of the argument, with a deprecation
        warning when it had elements), then write it. Functionalization resizes its
        functional value inside the op, where neither this recorder nor the runtime sees it:
        the caller's tensor would keep its old shape, or a view of an aliased argument would
        not take the new one. So the resize is made a call of its own, here, before the op:
        ``out.resize_(shape)`` through this recorder, which logs it for the runtime to replay
        on the caller's tensor and grows a storage as NOTE [resize_ of an argument] says; the
        op then finds its out tensor of the right shape and writes it as eager does. The
        result's shapes come from the op without ``out=`` on meta copies of the arguments, or,
        for an op without a meta kernel, on the traced values (outside the graph); where
        neither runs, the op resizes its out tensor itself, as before."""
        outs = kwargs["out"]
        outs = [outs] if isinstance(outs, torch.Tensor) else list(outs) \
            if isinstance(outs, (list, tuple)) else []
        if not outs or not all(isinstance(t, torch.Tensor) and t.layout == torch.strided
                               for t in outs):
            return
        check_out_dtypes(func, args, kwargs, self.geometry)     # NOTE [out= dtype checks]
        shapes = result_shapes(func, args, {k: v for k, v in kwargs.items() if k != "out"},
                               self.geometry)
        if shapes is None or len(shapes) != len(outs):
            return
        restride, shapes = out_layouts(func, args, kwargs, shapes, self.geometry)  # NOTE [out= strides]
        for t, (shape, stride) in zip(outs, shapes):
            if tuple(t.shape) != shape:
                self.__torch_function__(torch.Tensor.resize_, (torch.Tensor,), (t, shape), {})
                if restride and not contiguous_layout(shape, stride):
                    self.__torch_function__(torch.Tensor.as_strided_, (torch.Tensor,),
                                            (t, shape, stride), {})

    def watch_argument_views(self, views: dict[int, list[int]], bases: dict, works: list,
                             own: dict) -> None:
        """``views``: per base placeholder, the placeholders whose caller's tensor is a view
        of the base's; ``bases``: per such view placeholder, the leaf its work views in the
        trace; ``own``: each one's own flag at the call
        (NOTE [views of an argument given requires_grad_] in view_flags.py)."""
        for p, qs in views.items():
            self._views_of[id(works[p])] = [bases[q] for q in qs]
            for q in qs:
                self._view_of_work[id(works[q])] = q
                self.own_flags[q] = own[q]

    def _derive_flags(self, target: torch.Tensor, args: tuple, kwargs: dict) -> None:
        """After a requires_grad setter on ``target``: an argument view's own flag, or the
        flag its base's work gives the leaves the views read theirs through."""
        q = self._view_of_work.get(id(target))
        if q is not None:
            flag = args[1] if len(args) > 1 else kwargs.get("requires_grad", True)
            self.own_flags[q] = bool(flag)
        for leaf in self._views_of.get(id(target), ()):
            leaf.requires_grad_(target.requires_grad)

    # NOTE [as_strided clips]
    def _note_view(self, name: str, target: torch.Tensor, t: torch.Tensor) -> None:
        """Eager's ``AsStridedBackward0`` reads the gradient back with the geometry of the tensor
        ``as_strided`` was called on: where the view reaches outside that tensor's memory
        (``a[3].as_strided(...)`` onto row 2), those elements get no gradient. The runtime
        rebuilds an aliased output with ``as_strided`` on its base (NOTE [alias regeneration]),
        which would send them one; so each view made by such an as_strided (or a view of
        one) carries the geometries it was cut from (``clips``), and the runtime cuts through
        them in turn. A view whose storage was written after it was made (its version moved)
        gets its grad_fn regenerated by eager as one as_strided of its root base: no clips,
        and the whole root gets gradient (``view_version``)."""
        if id(t) in self.view_version or t.layout != torch.strided or target.layout != torch.strided:
            return
        try:
            self.view_version[id(t)] = t._version
            target_version = target._version
        except RuntimeError:        # an inference tensor has no version counter
            return
        self.kept_alive.append(t)
        if storage_ref(t) != storage_ref(target):
            return
        made = self.view_version.get(id(target))
        clips = self.clips.get(id(target), ()) if made is None or made == target_version else ()
        if name == "as_strided":
            # NOTE [writes outside an argument] in plan.py: reads count too, once it is written
            self.reaches.append((storage_ref(t), geometry_of(t)))
        if name == "as_strided" and torch.is_grad_enabled() and target.requires_grad:
            source = self.geometry.get(id(target)) or geometry_of(target)
            if reaches_outside(geometry_of(t), source):
                clips = clips + (source,)
                # once its storage is written, eager regenerates this view's grad_fn as one
                # as_strided of the root; autograd over functional tensors replays the chain,
                # this as_strided's clip included: the first way's view-replay hazard
                self.hazard_events.append(("meta", storage_ref(t), True))
        if clips:
            self.clips[id(t)] = clips

    def clips_of(self, t: torch.Tensor) -> tuple[tuple, bool]:
        """(clips, regenerated) for an output view ``t`` (NOTE [as_strided clips])."""
        made = self.view_version.get(id(t))
        try:
            regenerated = made is not None and t._version != made
        except RuntimeError:
            return (), False
        return (() if regenerated else self.clips.get(id(t), ())), regenerated

    def _argument_hook(self, target: torch.Tensor, hook, key: tuple | None = None):
        """``register_hook`` on an argument (or on a grad leaf made inside, ``key`` ("new", j)):
        recorded for the runtime, which registers it on the caller's tensor
        (NOTE [imperative autograd on arguments and outputs]), not on the trace's (the joint would apply it
        twice); its real handle's ``remove()`` unrecords it."""
        from collections import OrderedDict
        from torch.utils.hooks import RemovableHandle
        hooks: OrderedDict = OrderedDict()      # weakly referenced by the handle
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        ref = storage_ref(target)
        written = any(kind == "data" and r == ref for kind, r in self.events)
        self.argument_hooks.append((key or self.watched[id(target)], hook, hooks, handle.id, written))
        return handle

    def _record_resize(self, target: torch.Tensor, size) -> None:
        """NOTE [storage resizes] in resize.py: a resize of an argument is replayed."""
        kind, index = self.watched.get(id(target), (None, None))
        if kind == "placeholder":
            self.resizes[index] = int(size)
        elif any(storage_ref(target) == storage_ref(t) for t in self._watched_tensors):
            raise UnsupportedInputError(
                "the function resizes the storage of a view of an argument (or of an aliased "
                "argument) with resize_storage_bytes_; aotcheck replays resizes of the argument "
                "tensor itself only. Resize the argument you were given")

    def watch_tensors(self, tensors, data_lowered: bool = False) -> None:
        """The run's works; ``data_lowered``: data_assign.lowers_data_assignment's answer."""
        self._watched_tensors = list(tensors)
        self.storage.watch_arguments(self.watched, tensors, data_lowered)

    _watched_tensors: list = []
    start_geometry: dict = {}       # id -> the argument's geometry at the call (set by the run)

    def _note_leaf(self, t) -> None:
        if isinstance(t, torch.Tensor) and not _wrapped(t) and t.requires_grad and t.is_leaf \
                and self.watched.get(id(t), ("",))[0] != "placeholder" \
                and all(t is not n for n in self.new_leaves):
            self.new_leaves.append(t)
            self.kept_alive.append(t)
            # its geometry when it became a leaf (a wrapper's own can drift later:
            # NOTE [eager geometry]); one recorded before of another shape is stale: set_(), which
            # reaches no TorchFunctionMode, changed it (``v.set_(a[1:])``)
            known = self.geometry.get(id(t))
            if known is None or tuple(known[0]) != tuple(t.shape):
                self.geometry[id(t)] = geometry_of(t)

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

    def data_aftergeometry_of(self) -> bool:
        """Was some storage mutated after an argument over it changed metadata in place?"""
        changed = set()
        for what, st in self.events:
            if what == "meta":
                changed.add(st)
            elif st in changed:
                return True
        return False


def _wrapped(t: torch.Tensor) -> bool:
    """Is ``t`` a torch.func transform's wrapper (NOTE [functorch wrappers] in functional.py)?"""
    return torch._C._functorch.is_functorch_wrapped_tensor(t)


def _patch_parameter_new():
    """Make ``nn.Parameter`` traceable (NOTE [parameters made inside]); returns the original
    ``__new__`` for the caller to restore."""
    original = torch.nn.Parameter.__dict__["__new__"]

    def traced_new(cls, data=None, requires_grad=True):
        if data is None or type(data) not in (torch.Tensor, torch.nn.Parameter):
            return original(cls, data, requires_grad)     # its own path (detach, flag)
        t = data.detach()
        t.requires_grad_(requires_grad)
        t.__class__ = cls
        return t
    torch.nn.Parameter.__new__ = traced_new
    return original

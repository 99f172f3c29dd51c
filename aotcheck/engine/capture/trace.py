"""capture.trace: trace a function on fake tensors into a functional aten graph, plus raw facts.

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

The stage's modules, in the order it uses them, are listed in README.md, "Layout".
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.fx as fx
from torch.utils import _pytree as pytree

from ... import flags
from ...errors import TraceError, UnsupportedInputError, VIEW_LIMITS
from .facts import RawFacts
from .functional import (compiling, eager_view_strides, from_fun, geometry_of,
                         quiet_fake_tensor_log, stand_in, trace_functional, trace_grad_mode)
from .storage.data_assign import DataAssignmentOps, refuse_member_data_sets
from .functional_run import FunctionalRun, PlainRun
from .mode import TraceMode, Way
from .nondiff import refuse_nondiff_arguments
from .resize import EagerOutLayouts
from .view_flags import check_member_flags
from ..rng.layout import DrawLikeEager
from ..rng.seeding import GlobalGeneratorGuard, watch_generators
from .plan import InputPlan, groups_needing_synthetic_base, placeholder_tensors, plan_inputs
from ..signature import Signature, unflatten_inputs


@dataclass
class Captured:
    """A captured function: the functional graph, the input plan and the raw facts."""
    graph: fx.GraphModule
    plan: InputPlan
    facts: RawFacts
    out_spec: object = field(repr=False, default=None)
    geometry: object = field(repr=False, default=None)   # EagerGeometry or None (joint reuses it)
    mode: TraceMode = TraceMode()   # which way it was traced, and why (mode.py)
    hook_fns: tuple = field(repr=False, default=())   # per facts.hooks, the hook
                                    # (NOTE [imperative autograd on arguments and outputs]); not data: a
                                    # cache hit collects them again (argument_hooks)

    @property
    def plain(self) -> bool:        # traced on plain fake tensors, then functionalized
        return self.mode.plain

    @property
    def nonleaf_views(self) -> bool:
        return self.mode.nonleaf_views

    @property
    def argument_views(self) -> bool:
        return self.mode.argument_views


@dataclass(frozen=True)
class EagerGeometry:
    """Geometries (shape, stride, offset) read from a run of the function as eager runs it."""
    outputs: tuple      # per output leaf: (geometry, base geometry or None, argument leaves
                        # sharing its storage), or None (not a strided tensor)
    arguments: tuple    # per argument leaf: its geometry after the call, or None


def eager_geometry(fn, leaves: list, in_spec, sig: Signature) -> EagerGeometry | None:
    """Run ``fn`` as eager would, on fake copies of the arguments (no functionalization),
    and return per output leaf ``(geometry, base geometry)`` and per argument leaf its
    geometry after the call, or None if that run fails.

    # NOTE [eager geometry]
    A functional wrapper's size/stride/offset can drift from eager's: when functionalization
    replaces a mutated tensor's value, the new value is laid out by the functional op (e.g.
    contiguous where eager's argument was a strided slice), and views taken afterwards, or
    views re-synced from it, inherit that layout. Aliased outputs are rebuilt with
    as_strided on real tensors, so their geometry must be eager's; it is read here. So is
    each argument's final geometry: ``a.clamp_(0); b.set_(a)`` (``a`` a strided slice) gives
    ``b`` eager's strides of ``a``, where functionalization's ``b`` takes the contiguous ones
    of ``a``'s new value, and set_() reaches no TorchFunctionMode the recorder could watch.
    """
    from torch._subclasses.fake_tensor import FakeTensorMode
    mode = FakeTensorMode()
    try:
        fakes = [mode.from_tensor(stand_in(t)) if isinstance(t, torch.Tensor) else t for t in leaves]
        args, kwargs = unflatten_inputs(fakes, in_spec)
        with quiet_fake_tensor_log(), eager_view_strides(), trace_grad_mode(sig), compiling(), \
                GlobalGeneratorGuard(check=False), DrawLikeEager(), mode, EagerOutLayouts(), \
                DataAssignmentOps():
            out = fn(*args, **kwargs)
    except Exception:  # noqa: BLE001 - fall back to the functional wrappers' geometry
        return None
    from .functional import storage_ref
    arg_storages: dict = {}
    for i, t in enumerate(fakes):
        if isinstance(t, torch.Tensor) and t.layout == torch.strided:
            arg_storages.setdefault(storage_ref(t), []).append(i)
    result = []
    for o in pytree.tree_leaves(out, is_leaf=lambda x: isinstance(x, torch.Size)):
        if isinstance(o, torch.Tensor) and o.layout == torch.strided:
            base = o._base
            # the argument leaves whose storage eager's output shares (an op like
            # unsafe_split returns pieces of its input that functionalization copies)
            result.append((geometry_of(o), geometry_of(base) if base is not None else None,
                           tuple(arg_storages.get(storage_ref(o), ()))))
        else:
            result.append(None)
    return EagerGeometry(tuple(result), tuple(
        geometry_of(t) if isinstance(t, torch.Tensor) and t.layout == torch.strided else None
        for t in fakes))


def argument_hooks(fn, leaves: list, in_spec, sig: Signature, expected: tuple) -> tuple:
    """The hooks ``fn`` registers on its arguments
    (NOTE [imperative autograd on arguments and outputs], runtime/imperative.py), from a run of it on fake
    copies of the arguments, as eager runs it: a cache hit has the graphs but not these Python callables.
    ``expected`` is the entry's ``meta.hooks``; a run that registers others raises ValueError (the entry
    is then compiled again)."""
    from collections import OrderedDict
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.overrides import TorchFunctionMode
    from torch.utils.hooks import RemovableHandle

    class Hooks(TorchFunctionMode):
        def __init__(self, watched):
            super().__init__()
            self.watched, self.found = watched, []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if getattr(func, "__name__", "") == "register_hook" and args and len(args) == 2 \
                    and not kwargs and isinstance(args[0], torch.Tensor) and (
                        id(args[0]) in self.watched or (args[0].is_leaf and args[0].requires_grad)):
                live: OrderedDict = OrderedDict()
                handle = RemovableHandle(live)
                live[handle.id] = args[1]
                # a grad leaf made inside: NOTE [hooks on leaves made inside] (autograd_facts.py)
                self.found.append((self.watched.get(id(args[0])), args[1], live, handle.id))
                return handle
            return func(*args, **kwargs)

    mode = FakeTensorMode()
    fakes = [mode.from_tensor(stand_in(t)) if isinstance(t, torch.Tensor) else t for t in leaves]
    watched: dict[int, int] = {}
    for i, t in enumerate(fakes):       # a tensor passed twice is one fake: its first place,
        if isinstance(t, torch.Tensor):  # as the trace's recorder numbers it
            watched.setdefault(id(t), i)
    args, kwargs = unflatten_inputs(fakes, in_spec)
    recorder = Hooks(watched)
    try:
        with quiet_fake_tensor_log(), trace_grad_mode(sig), compiling(), \
                GlobalGeneratorGuard(check=False), DrawLikeEager(), mode, recorder:
            fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the entry is compiled again
        raise ValueError(f"the run that collects argument hooks failed: {e}") from None
    found = [(i, hook) for i, hook, live, hid in recorder.found if hid in live]
    if tuple(i for i, _ in found) != tuple(h.leaf for h in expected):
        raise ValueError("the function registered other argument hooks than the entry records")
    return tuple(hook for _, hook in found)


def capture(fn, leaves: list, in_spec, sig: Signature, mode: TraceMode = TraceMode()) -> Captured:
    """Trace ``fn`` for this signature, starting ``mode``'s way. Re-captures with synthetic
    bases when needed, and the second way (storage_views.py) where functionalization meets
    one of its limits; ``Captured.mode`` says which way, and why."""
    with watch_generators(fn, leaves):
        return _capture_either(fn, leaves, in_spec, sig, mode)


def plain_way(mode: TraceMode, why: str) -> TraceMode:
    """The second way (NOTE [plain trace, then functionalize]), for the reason ``why``."""
    return mode.then(why, way=Way.PLAIN, nonleaf_views=False, argument_views=False)


def _capture_either(fn, leaves: list, in_spec, sig: Signature, mode: TraceMode) -> Captured:
    if mode.plain:
        return _capture_plain(fn, leaves, in_spec, sig, mode)
    if flags.get(flags.TRACE_PLAIN):
        return _capture_plain(fn, leaves, in_spec, sig,
                              plain_way(mode, "the trace_plain flag asks for the plain way"))
    try:
        captured = _capture(fn, leaves, in_spec, sig, mode)
    except (UnsupportedInputError, TraceError) as e:
        if not is_view_limit(e):
            raise
        return _capture_plain(fn, leaves, in_spec, sig, plain_way(
            mode, f"functionalization met one of its limits (\"{_limit_met(e)}\")"))
    if captured.facts.view_replay_hazard:
        # autograd over functional tensors would replay a view across an in-place metadata
        # change: silently wrong gradients (NOTE [plain trace, then functionalize])
        return _capture_plain(fn, leaves, in_spec, sig, plain_way(
            mode, "an in-place metadata change on a tensor with views, then a mutation of its "
            "storage: autograd over functional tensors would replay a view across it"))
    return captured


def _with_synthetic(mode: TraceMode, needs: frozenset[int]) -> TraceMode:
    storages = ", ".join(map(str, sorted(needs)))
    return mode.then(f"arguments sharing storage {storages} are mutated: traced through a "
                     "synthetic base", synthetic=tuple(sorted(set(mode.synthetic) | needs)))


def _with_argument_views(mode: TraceMode) -> TraceMode:
    return mode.then("the function sets requires_grad on an argument that another argument "
                     "views: argument views are traced as views", argument_views=True)


PLAIN_WAY_TRACE_ERRORS = (
    "Found a custom (non-ATen) operator whose output has alias annotations: aten::",
    "cannot mutate tensors with frozen storage",
    "you can only change requires_grad flags of leaf variables",
    # a value that requires grad written into a slice of a bool or integer tensor: eager's
    # copy_ records no autograd for a non-differentiable dtype; functionalization's
    # slice_scatter of the two does, and autograd refuses the dtype (fuzz seed 1)
    "Autograd not support dtype",
    # an argument mutated in place inside inference_mode: functionalization swaps in a value
    # made in inference mode, an inference tensor, which a later detach() cannot share a
    # version counter with; eager mutates the ordinary tensor in place (fuzz seed 19)
    "Cannot set version_counter for inference tensor",
)


def is_view_limit(e: Exception) -> bool:
    """Is ``e`` a refusal for a limit of functionalization that the second way lifts?"""
    if isinstance(e, TraceError):
        # an in-place aten op without a functionalization kernel (polygamma_): the second
        # way runs it as its out-of-place twin (storage_views._call); set_() of a view, which
        # functionalization answers by freezing the storage (a later write fails), and
        # requires_grad_() on an argument, which the first way's non-leaf copies refuse; a
        # grad-requiring value written into a bool tensor: the second way traces the function
        # on plain copies, as eager runs it
        return any(p in str(e) for p in PLAIN_WAY_TRACE_ERRORS)
    return isinstance(e, UnsupportedInputError) and any(p in str(e) for p in VIEW_LIMITS)


def _limit_met(e: Exception) -> str:
    """The phrase of ``is_view_limit``'s lists that ``e`` matched (fixed text, no values)."""
    return next(p for p in PLAIN_WAY_TRACE_ERRORS + VIEW_LIMITS if p in str(e))


def _capture_plain(fn, leaves: list, in_spec, sig: Signature, mode: TraceMode) -> Captured:
    from .storage_views import StorageTagger, functionalize_plain, trace_plain
    synthetic = frozenset(mode.synthetic)
    plan = plan_inputs(sig, synthetic)
    geometry = eager_geometry(fn, leaves, in_spec, sig)
    placeholders = placeholder_tensors(plan, leaves)
    run = FunctionalRun(fn, plan, sig, leaves, in_spec, geometry, mode, PlainRun(
        StorageTagger(), nonleaf=tuple(t.requires_grad and not t.is_leaf for t in placeholders)))
    box: dict = {}

    def body(*placeholders):
        candidates, facts, out_spec, _ = run.run(list(placeholders))
        box["facts"], box["out_spec"] = facts, out_spec
        return list(candidates)

    with trace_grad_mode(sig):
        plain_gm = trace_plain(body, placeholders, run.tagger)
        gm = functionalize_plain(plain_gm, placeholders)
    return _finish(_capture_plain, gm, run, box, geometry, (fn, leaves, in_spec, sig), mode)


def _capture(fn, leaves: list, in_spec, sig: Signature, mode: TraceMode) -> Captured:
    synthetic = frozenset(mode.synthetic)
    plan = plan_inputs(sig, synthetic)
    geometry = eager_geometry(fn, leaves, in_spec, sig)
    run = FunctionalRun(fn, plan, sig, leaves, in_spec, geometry, mode)
    box: dict = {}

    def body(*placeholders):
        candidates, facts, out_spec, _ = run.run(list(placeholders))
        box["facts"], box["out_spec"] = facts, out_spec
        return [from_fun(c) for c in candidates]

    placeholders = placeholder_tensors(plan, leaves)
    try:
        with trace_grad_mode(sig):
            gm = trace_functional(body, placeholders)
    except TraceError as first:
        # see NOTE [non-leaf copies]: a view's grad_fn rebuilt by replaying its creation ops
        # can fail in the forward too (permute of an argument squeeze_d to 0-dim); trace once
        # more with the other kind of copy. If eager ran the function (on fake tensors) and
        # in-place metadata changes were seen, what failed is that replay: a named limit.
        recorder = getattr(run, "recorder", None)
        if recorder is None or not recorder.inplace_metadata:
            raise
        retried = not mode.nonleaf_views and any(t.requires_grad and not t.is_leaf for t in placeholders)
        if retried:
            try:
                return _capture(fn, leaves, in_spec, sig, mode.then(
                    NONLEAF_RETRY.format(where="the forward trace"), nonleaf_views=True))
            except TraceError:
                pass
        # in-place metadata changes were seen, so the failure is (or may be) the replay limit:
        # the named refusal sends capture() the second way, which runs the function on plain
        # copies as eager does; where eager itself fails, that run fails with eager's error
        # (eager_geometry() could not tell: on fake tensors autograd replays views too)
        raise view_replay_refusal(first) from None
    return _finish(_capture, gm, run, box, geometry, (fn, leaves, in_spec, sig), mode)


def _finish(way, gm, run, box: dict, geometry, call: tuple, mode: TraceMode) -> Captured:
    """The end both ways share: the ``Captured``, or a capture again by ``way`` (the same
    way) with synthetic bases, or with argument views, when this trace shows it needs them."""
    gm.graph.eliminate_dead_code()
    gm.recompile()
    captured = Captured(gm, run.plan, box["facts"], box["out_spec"], geometry=geometry,
                        mode=mode, hook_fns=tuple(run.hook_fns))
    refuse_nondiff_arguments(captured.facts.inputs, run.plan, call[1])     # nondiff.py
    sig = call[3]
    needs = groups_needing_synthetic_base(sig, run.plan, captured.facts.inputs) - \
        frozenset(mode.synthetic)
    if needs:
        return way(*call, _with_synthetic(mode, needs))
    if run.flips_viewed_base and not mode.argument_views:
        # NOTE [views of an argument given requires_grad_] in view_flags.py
        return way(*call, _with_argument_views(mode))
    if not sig.inference_mode:      # no gradient is computed inside inference mode
        check_member_flags(gm.graph, captured.facts, run.plan)
    refuse_member_data_sets(run.recorder, sig)
    return captured


NONLEAF_RETRY = ("autograd's view replay failed in {where}: non-leaf arguments are copied as "
                 "views of fresh storage (NOTE [non-leaf copies])")


def joint_retry_modes(mode: TraceMode, primals: list) -> list[TraceMode]:
    """The ways to capture again, in order, after autograd's view replay failed in the joint
    trace of a capture taken ``mode``'s way: the other kind of non-leaf copy (when non-leaf
    arguments require grad and it was not tried), then the plain way. Each starts afresh."""
    out = []
    if not mode.nonleaf_views and any(t.requires_grad and not t.is_leaf for t in primals):
        out.append(TraceMode().then(NONLEAF_RETRY.format(where="the joint trace"),
                                    nonleaf_views=True))
    why = "that gave no joint graph either" if out else \
        "autograd's view replay failed in the joint trace"
    out.append(plain_way(out[-1] if out else TraceMode(), f"{why}: the plain way"))
    return out


def view_replay_refusal(e: Exception) -> UnsupportedInputError:
    """The named refusal for NOTE [non-leaf copies]'s limit, when no kind of copy helps."""
    return UnsupportedInputError(
        "the function changes a tensor's metadata in place (t_, transpose_, unsqueeze_, ...) "
        "and autograd must later rebuild the grad_fn of a view on that chain (after a mutation); "
        "autograd cannot rebuild that view's grad_fn under functionalization: it replays the ops "
        "that made the view, which misses in-place metadata changes (a PyTorch limit; functorch's "
        "aot_function fails the same way). Use the out-of-place op (x = x.unsqueeze(1)) instead. "
        f"({e})")

"""subclass.outer: one call with tensor-subclass arguments, with eager's outer-level autograd
(NOTE [subclass autograd] in ``__init__.py``): the forward graph (compiled once per key), the
outer-level facts applied to the call's outputs, and :class:`Outer`, whose backward runs the
outer-level joint graph on the primals as they were before the forward."""
from __future__ import annotations

import contextlib
import json

import torch
from torch.utils import _pytree as pytree

from ..engine.capture.functional import storage_ref
from ..cache.ambient import call_state
from ..engine.signature import call_key, root_of
from ..errors import TraceError
from .autograd import flag_before_call, grad_region_of_no_grad_call, needs_history
from .base import flatten, inner_count, save_primals, unflatten
from .desugar import JointSpec, Prepared, forward_graph, inference_args, joint_graph, prepare, traced_requires
from .facts import apply_facts, stale_views
from .groups import alias_groups, grad_slots
from .imperative import argument_hooks, retained_arguments
from .replay import dirty_values, write_back
from .wrapper_set import move_outer


def call(owner, state, memo: dict, args: tuple, kwargs: dict):
    """Run ``owner.call_fn(*args, **kwargs)`` (a :class:`~aotcheck.compiled.CompiledFunction`'s)
    with subclass arguments, with eager's outer-level autograd (NOTE [subclass autograd]).
    ``state``: the digest of the Python state the function reads at this call
    (NOTE [python state]); ``memo``: the caller's compiled plain graphs of earlier calls, by key (filled
    here)."""
    prepared = prepare(args, kwargs)
    tensors, outer, requires = prepared.tensors, prepared.outer, prepared.requires
    traced = traced_requires(outer, requires)
    inference = inference_args(outer)
    # which arguments are views of one base (not only of one storage) decides the alias
    # groups the forward is traced with (NOTE [subclass alias groups written with grad])
    roots = [root_of(t) for t in outer]
    kin = tuple(next(j for j, r in enumerate(roots) if r is roots[i]) for i in range(len(roots)))
    flags = tuple(t.requires_grad for t in outer)      # the caller's (inference mode: not traced)
    base_key = (state, prepared.tree.meta, call_state(), call_key(tensors, len(tensors)), tuple(traced),
                inference, kin, flags)

    def cached(what: tuple, build):
        """``memo``'s entry for this call's key and ``what`` (built once)."""
        key = base_key + what
        e = memo.get(key)
        if e is None:
            e = memo[key] = build()
        return e

    compiled, box = cached(("forward",), lambda: _forward(owner, prepared, traced, inference, flags))
    argument_hooks(box["hooks"], outer, written=False)  # NOTE [subclass imperative autograd]
    retained_arguments(box["retained_before"], outer)
    if grad_region_of_no_grad_call(box):         # NOTE [subclass enable_grad regions of a no_grad call]
        requires = [t.requires_grad and ("leaf" if t.is_leaf else "nonleaf") for t in outer]
        at_forward = forward_state()
        with torch.enable_grad():
            return _with_autograd(owner, box, compiled, prepared, requires, cached, at_forward)
    requires = flag_before_call(box["facts"], outer, requires)
    if not any(requires) and not needs_history(box):
        return _finish(box, _unflatten_outs(box, list(compiled(*tensors))), outer)
    return _with_autograd(owner, box, compiled, prepared, requires, cached, forward_state())


def _with_autograd(owner, box, compiled, prepared: Prepared, requires, cached, at_forward):
    """The call through ``Outer``, with eager's outer-level autograd; ``requires``: per outer
    tensor, whether it takes a gradient at this call; ``cached``: the call's memo of compiled
    graphs; ``at_forward``: the state the forward ran in, which the joint is traced in
    (NOTE [subclass joint in the forward's state])."""
    tree, tensors, outer = prepared.tree, prepared.tensors, prepared.outer
    groups, extra = alias_groups(outer, requires, box["facts"].written, box["facts"].rebased)
    extra += [] if any(requires) else [torch.zeros((), requires_grad=True)]   # needs_history

    def joint(tangent_descs, ins, dirty):
        # NOTE [subclass joint in the forward's state]
        with restored(at_forward):
            compiled, jbox = cached(("joint", json.dumps([tangent_descs, dirty, groups])),
                                    lambda: joint_graph(owner, tree, ins, requires, JointSpec(
                                        tangent_descs, len(tensors), dirty, groups,
                                        box["facts"].replayed(), box["views"])))

        def run(*ts):
            with restored(at_forward):
                return compiled(*ts)
        return run, jbox

    res = {}
    if reshaped_leaves(box, outer, requires):
        # NOTE [subclass .data assignment onto another shape]: the graph runs first and the
        # arguments move, so that Outer's edges reach the leaves' gradient nodes of their new shape
        res["pre"] = run_graph(compiled, box, tensors)
    slots = grad_slots(requires, groups)
    outs = Outer.apply(compiled, box, joint, tree.descs, tensors, (len(outer), slots), res,
                        *outer, *extra)
    n = len(outs) - len(res["dirty"])
    early = stale_views(box["facts"], outer)
    write_back(box["facts"], outer, res["dirty"], outs[n:])     # NOTE [subclass non-leaf writes]
    return _finish(box, list(outs[:n]), outer, moved=False, early=early)


def _forward(owner, prepared: Prepared, traced, inference, flags):
    """The forward graph; traced again with members of alias groups as views where the first
    trace saw one written in grad mode, or raised and the call has such members
    (NOTE [subclass alias groups written with grad])."""
    tree, tensors, outer = prepared.tree, prepared.tensors, prepared.outer
    try:
        compiled, box = forward_graph(owner, tree, tensors, traced, inference, caller_flags=flags)
        facts = box["facts"]
        groups = alias_groups(outer, traced, facts.written, facts.rebased)[0]
    except TraceError:
        every = range(len(outer))
        groups = alias_groups(outer, traced, every, every)[0] if torch.is_grad_enabled() else []
        if not any(not g["grad"] for g in groups):
            raise
    groups = [g for g in groups if not g["grad"]]
    if not groups:
        return compiled, box
    return forward_graph(owner, tree, tensors, traced, inference, groups, flags)


def _finish(box: dict, outs: list, outer: list, moved: bool = True, early: dict | None = None):
    """The call's result: the outer outputs with the trace's outer-level facts applied, and the
    non-tensor values, in the returned tree; the arguments the function retained the grad of
    retain it, and the hooks registered on arguments after writing them are registered
    (NOTE [subclass imperative autograd])."""
    retained_arguments(box.get("retained", ()), outer)
    argument_hooks(box["hooks"], outer, written=True)
    m = box["meta"]
    it = iter(apply_facts(box["facts"], outs, outer, moved, early))
    it_v = iter(box["values"])
    vals = [next(it_v) if d == "value" else next(it) for d in m["descs"]]
    return pytree.tree_unflatten(vals, box["spec"])


def _unflatten_outs(box: dict, flat_out: list) -> list:
    it = iter(flat_out)
    return [unflatten(d, iter([next(it) for _ in range(inner_count(d))]))
            for d in box["meta"]["descs"] if d != "value"]


def _versions(ts):
    return [t._version for t in ts]


def _unview(flat: list) -> list:
    """A view among the compiled graph's outputs (``matmul`` of a vector ends in a ``squeeze``)
    returned by :class:`Outer` is a view made by a custom Function, which autograd forbids
    writing in place, where eager's output may be written: each one that shares its storage
    with no other output becomes a plain tensor over the same memory."""
    distinct = list({id(t): t for t in flat if isinstance(t, torch.Tensor)}.values())
    keys = [storage_ref(t) for t in distinct]
    made = {}
    for t, key in zip(distinct, keys):
        if t._is_view() and keys.count(key) == 1:
            with torch.no_grad():
                made[id(t)] = torch.empty(0, dtype=t.dtype, device=t.device).set_(
                    t.untyped_storage(), t.storage_offset(), t.shape, t.stride())
    return [made.get(id(t), t) for t in flat]

def run_graph(compiled, box: dict, tensors: list) -> tuple:
    """The forward graph on this call's plain tensors: (the primals as they were before it, the
    generator state it started from or None, its flat outputs, whether it wrote or moved an
    argument)."""
    before = _versions(tensors)
    saved = save_primals(tensors)     # the primals before any mutation
    # NOTE [subclass random draws] (desugar.py), in the backward: it recomputes the forward inside the joint
    # graph, so it starts the joint from the generator state the forward started from (its
    # draws then equal the forward's) and puts the generator back afterwards: eager's
    # backward draws nothing.
    rng = torch.get_rng_state() if compiled.fn.random else None
    dets = [t.detach() for t in tensors]
    flat_out = _unview(list(compiled(*dets)))
    after = _versions(tensors)
    # the graph ran on detached aliases: a write reaches the argument through the shared
    # storage, but a set_() (or ``.data =``: NOTE [subclass .data assignment]) onto another
    # storage moves only the alias; move the argument too (its outer shape follows with the
    # facts' "moved")
    data_assigned = _flat_positions(box, box.get("data_assigned", ()))
    swapped = False
    moved: set[int] = set()
    with torch.no_grad():
        for i, (t, d) in enumerate(zip(tensors, dets)):
            if id(t) in moved:
                continue    # passed twice and moved through one place: another place's alias,
                            # unmoved, moved it back (silently: fuzz seed 5)
            if storage_ref(d) != storage_ref(t) or (i in data_assigned and _geometry(d) != _geometry(t)):
                moved.add(id(t))
                swapped = True
                if i in data_assigned:
                    t.data = d
                else:
                    t.set_(d)
    written = after != before or swapped
    if not written:
        saved = [t.detach() for t in tensors]          # no mutation: no copies needed
    return saved, rng, flat_out, written


def _geometry(t) -> tuple:
    return t.dtype, tuple(t.shape), t.stride(), t.storage_offset()


def _flat_positions(box: dict, positions) -> set:
    """The places among the flat plain tensors of the outer tensors at ``positions`` (plain
    ones: one place each)."""
    places, k = set(), 0
    for j, d in enumerate(d for d in box["in_descs"] if d != "value"):
        if j in positions:
            places.add(k)
        k += inner_count(d)
    return places


def reshaped_leaves(box: dict, outer: list, requires: list) -> list:
    """The leaf arguments that take a gradient and that ``.data =`` gives another shape
    (NOTE [subclass .data assignment onto another shape])."""
    moved = {m.arg: m.geometry for m in box["facts"].moved}
    return [j for j in box.get("data_assigned", ()) if requires[j] == "leaf" and j in moved
            and tuple(moved[j][0]) != tuple(outer[j].shape) and j not in box["data_held"]]


class Outer(torch.autograd.Function):
    """Autograd at the outer level: forward runs the compiled forward graph; backward runs the
    compiled outer-level joint on the primals as they were before the forward."""

    @staticmethod
    def forward(ctx, compiled, box, joint, descs, tensors, slots, res, *inputs):
        n_outer, ctx.slots = slots
        outer = inputs[:n_outer]
        saved, ctx.rng, flat_out, ctx.written = res.pop("pre", None) or run_graph(compiled, box, tensors)
        facts = box["facts"]
        # NOTE [subclass non-leaf writes]
        # an argument written in grad mode (in data or in
        # shape; one that required grad and was no leaf, or one that did not and was given a
        # value that does) gets a copy of its new value as one more output; the caller gives
        # it its new shape and copies the value back in grad mode, which rebases the
        # argument's history as eager's in-place op does (a copy_ works for views too, where
        # mark_dirty with several outputs does not). The joint takes that value as one more
        # output, with every grad-requiring non-leaf argument a clone of its grad leaf there.
        # The trace tells which arguments autograd rebased (writes under no_grad are not).
        dirty = facts.rebased
        replayed = facts.replayed()
        for m in facts.moved:
            if m.arg not in dirty and m.arg not in replayed:
                move_outer(outer[m.arg], *m.geometry)
        res["dirty"] = dirty
        outs = _unflatten_outs(box, flat_out)
        ctx.saved_primals, ctx.joint, ctx.dirty = saved, joint, dirty
        ctx.n_inputs = len(inputs)
        ctx.mark_non_differentiable(*[o for o, df in zip(outs, box["diff"]) if not df])
        ctx.set_materialize_grads(False)   # outputs replaced by the outer facts get no grad
        return tuple(outs) + dirty_values(facts, outer, dirty)

    @staticmethod
    def backward(ctx, *grads):
        if not ctx.slots:           # no input takes a gradient (needs_history)
            return (None,) * (7 + ctx.n_inputs)
        tdescs, tflat = [], []
        for g in grads:
            # NOTE [subclass tangent layout]
            # autograd hands in a gradient laid out as the
            # caller's backward made it (a write-back into a view of another tensor gives
            # another layout than into a tensor of its own): it keys and feeds the joint
            # contiguous, whose values are the same; the caller's values changing its layout
            # missed the cached joint (a lost hit, keyvar fuzz 19), and a leaf's .grad takes
            # the leaf's own layout in AccumulateGrad either way
            g = None if g is None else g.contiguous()
            tdescs.append("none" if g is None else flatten(g, "gradient of an output", tflat))
        # NOTE [subclass primals of a second backward]
        # the joint replays the function's
        # writes of its arguments on its inputs, and a backward that runs again (retain_graph)
        # must read the primals as they were before the forward: a forward that wrote or moved
        # an argument gives the joint copies of them (a second backward read the first one's
        # writes: silently wrong gradients), any other detached aliases (the joint's ``.data =``
        # of an argument moves its own input, not the saved primal:
        # NOTE [subclass .data assignment])
        primals = save_primals(ctx.saved_primals) if ctx.written else \
            [t.detach() for t in ctx.saved_primals]
        ins = primals + tflat
        compiled, box = ctx.joint(tdescs, ins, ctx.dirty)
        if ctx.rng is None:
            got = iter(compiled(*ins))
        else:
            with torch.random.fork_rng(devices=[]):
                torch.set_rng_state(ctx.rng)
                got = iter(compiled(*ins))
        out = [None] * ctx.n_inputs
        for i, d in zip(ctx.slots, box["descs"]):
            out[i] = None if d == "none" else unflatten(d, got)
        return (None, None, None, None, None, None, None, *out)


# NOTE [subclass joint in the forward's state]: the outer-level joint is traced, and run, at
# the first backward, after the call's autocast, default dtype and deterministic settings may
# be gone; eager's backward replays what its forward recorded under them. So the joint (its
# trace, its cache key and its call) runs under the torch state the forward call saw. Without
# it a call under autocast got the gradients of the fp32 forward (silently wrong), and a joint
# cached without autocast was served to a call under it (a stale hit).

def forward_state() -> tuple:
    """The global torch settings a trace depends on, as the forward call saw them."""
    autocast = tuple((d, torch.is_autocast_enabled(d), torch.get_autocast_dtype(d))
                     for d in ("cpu", "cuda") if d == "cpu" or torch.cuda.is_available())
    return (autocast, torch.get_default_dtype(), torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled())


@contextlib.contextmanager
def restored(state: tuple):
    """Run under ``state`` (from :func:`forward_state`), then put back the current settings."""
    autocast, dtype, deterministic, warn_only = state
    before = forward_state()
    torch.set_default_dtype(dtype)
    torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
    try:
        with contextlib.ExitStack() as stack:
            for device, enabled, adtype in autocast:
                stack.enter_context(torch.autocast(device, dtype=adtype, enabled=enabled))
            yield
    finally:
        torch.set_default_dtype(before[1])
        torch.use_deterministic_algorithms(before[2], warn_only=before[3])


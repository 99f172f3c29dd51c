"""joint: trace the forward and backward together into one functional graph.

The user's function runs again on functional wrappers, and
``torch.autograd.grad`` of the differentiable forward outputs (weighted by
tangent placeholders) with respect to the placeholders that require grad is
traced into the same graph. no_grad regions and detaches are honoured because
autograd itself runs during the trace.

Before (``f(x, w) = (x * w).sum()``, both requiring grad), the joint::

    %x, %w, %tangents_1 = placeholder ...
    %mul = aten.mul.Tensor(%x, %w)
    %sum = aten.sum.default(%mul)
    %expand = aten.expand.default(%tangents_1, [3])
    %mul_1 = aten.mul.Tensor(%expand, %w)
    %mul_2 = aten.mul.Tensor(%expand, %x)
    return (%sum, %mul_2, %mul_1)        # forward outputs, then gradients

The partitioner then cuts it into a forward and a backward graph.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch
import torch.fx as fx

from .analyze import OutputKind, ViewMutationMeta
from .capture.facts import RetainKind
from .capture.trace import Captured
from .capture.functional import (backward_phase, from_fun, geometry_of, storage_ref, to_fun,
                                  trace_functional, trace_grad_mode, without_autocast)
from .capture.functional_run import FunctionalRun, PlainRun
from .capture.nondiff import refuse_nondiff_gradient
from .capture.view_flags import argument_views
from .graph_walk import grad_nodes
from .rng.seeding import watch_generators
from ..errors import TraceError, UnsupportedInputError
from .signature import Signature


# NOTE [backward mutations]
# A custom Function's backward may mutate a tensor it saved, in data (``y.mul_(3)``) or in
# metadata (``y.transpose_(0, 1)``); when that tensor is an argument, eager changes the
# caller's argument when ``.backward()`` runs. The joint graph runs the backward on the
# argument's functional wrapper, so the change is seen there: a data mutation moves the
# wrapper's mutation counter (its new value becomes an extra backward-graph output, after
# the gradients), a metadata change moves its geometry. The runtime's backward then applies
# both to the caller's tensor under no_grad: first the final geometry (``as_strided_``;
# autograd's engine runs the backward outside any TorchFunctionMode, so the calls themselves
# are not seen), then the new value (``copy_``, which is laid out in the final geometry).


class ViewReplayError(TraceError):
    """Autograd rebuilt a view's grad_fn by replaying the ops that made it, which misses an
    in-place metadata change (see NOTE [non-leaf copies] in capture/functional_run.py)."""


@dataclass
class Joint:
    graph: fx.GraphModule
    num_primals: int
    fw_candidates: tuple[int, ...]    # graph candidate index of each forward output
    diff_outputs: tuple[int, ...]     # forward-output positions that get a tangent
    grad_inputs: tuple[int, ...]      # placeholders that get a gradient (joint outputs after fw)
    backward_mutations: tuple = ()    # (placeholder, data, shape, stride, offset) per placeholder
                                      # the user's backward mutates (NOTE [backward mutations])
    grad_reach: tuple = ()            # per grad input: the diff-output positions (into diff_outputs)
                                      # whose autograd graph reaches it (NOTE [per-output reach])
    backward_error: str = ""          # eager's "derivative ... not implemented" (or
                                      # NOTE [a gradient of a swapped argument's new shape]), for .backward()


# NOTE [graph freed inside the function]
# ``torch.autograd.grad(F, x)`` inside the function, without retain_graph, frees the saved
# values of F's graph; eager's ``.backward()`` through an output on that graph then raises
# "Trying to backward through the graph a second time". The joint's own autograd.grad meets
# the same error at compile time; like a missing derivative, it is kept and raised by the
# compiled backward (a RuntimeError, as eager's), and the forward runs as eager's does.
FREED_GRAPH = "Trying to backward through the graph a second time"

# NOTE [a saved tensor modified in place]
# ``y = w.sin(); F.embedding(i, w, max_norm=1.0)`` renorms ``w`` in place after sin saved it:
# eager's forward returns, and only its backward raises "one of the variables needed for
# gradient computation has been modified by an inplace operation". The joint's autograd.grad
# meets that error at compile time; raising it there (as aotcheck did) failed a caller who
# never calls backward (inference with a model in train mode, a forward-only metric) where
# eager does not. Like a missing derivative it is kept and raised by the compiled backward (a
# RuntimeError), and the forward runs as eager's does. (After in-place metadata calls a shape
# error of the joint's backward is the view replay limit instead: ``_replay_limit``.)
MODIFIED_IN_PLACE = "one of the variables needed for gradient computation has been modified by an inplace operation"


def _missing_derivative(e: Exception) -> str:
    """Eager's message when autograd meets a derivative that is not implemented, or a graph
    the function freed (NOTE [graph freed inside the function]), else ''."""
    msg = str(e).split("\n")[0]
    if isinstance(e, NotImplementedError) and "derivative for" in msg:
        return msg
    if isinstance(e, RuntimeError) and msg.startswith(FREED_GRAPH):
        return str(e)
    if isinstance(e, RuntimeError) and msg.startswith(MODIFIED_IN_PLACE):
        # NOTE [a saved tensor modified in place]; an argument leaf is the output of the trace's
        # own node, which eager's message does not name
        return re.sub(r", which is output \d+ of torch::autograd::Error,", "", msg.split(" Hint:")[0])
    refuse_nondiff_gradient(e)      # NOTE [outputs of a non-differentiable dtype that require grad]
    # set_() recorded by autograd (NOTE [set_ recorded by autograd] in swap_grad.py): eager's
    # NotImplemented node raises a RuntimeError
    return msg if msg.startswith("derivative for") and msg.endswith("is not implemented") else ""


def _swap_shape_error(e: Exception, run, captured: Captured, primals: list) -> str:
    """Eager's message where a gradient of an argument's new shape reaches its gradient node
    of the old one, else ''.

    # NOTE [a gradient of a swapped argument's new shape]
    ``a1.data = a0; a1.add_(1)`` with a0 of shape (2,) and a1 a non-leaf of shape (3,): a1
    keeps its grad_fn, whose input metadata is (3,), so eager's backward through a1 raises
    'Function AddBackward0 returned an invalid gradient at index 0 - got [2] but expected
    shape compatible with [3]' (a shape that sums down to the old one is summed instead). The
    joint's backward meets the same node and error: it is eager's, raised by the compiled
    backward at ``.backward()`` as eager's is, not at the call. After in-place metadata calls
    the error may be the view replay limit instead (``_replay_limit``), and stays one."""
    msg = str(e).split("\n")[0]
    if not isinstance(e, RuntimeError) or run.saw_inplace_metadata or \
            "invalid gradient at index" not in msg:
        return ""
    return msg if any(f.storage_source.swapped and
                      tuple(f.final_shape) != tuple(primals[f.placeholder].shape)
                      for f in captured.facts.inputs) else ""


def backward_error_type(err: str) -> type:
    """The exception a compiled backward raises for ``backward_error`` ``err``: eager's."""
    return RuntimeError if err.startswith((FREED_GRAPH, MODIFIED_IN_PLACE)) or \
        "invalid gradient at index" in err else NotImplementedError


def _replay_limit(run, e: RuntimeError):
    """Re-raise an error of the joint's backward: a shape error inside backward after in-place
    metadata changes is the replay limit ("invalid gradient", or a broadcast mismatch in a
    replayed view's backward)."""
    if run.saw_inplace_metadata:
        raise ViewReplayError(str(e).split("\n")[0]) from None
    raise e


def forward_candidates(meta: ViewMutationMeta) -> tuple[int, ...]:
    """The graph candidates the runtime needs, in a fixed order: new input values,
    fresh outputs, intermediate bases."""
    order: list[int] = []
    for m in meta.mutations:
        if m.data:                                  # a new value
            order.append(m.value_output)
        if m.storage_source.new:                    # a new storage (set_)
            order.append(m.storage_output)
        if m.grad_value_output is not None:                # written with grad after a swap
            order.append(m.grad_value_output)
    for o in meta.outputs:
        if o.kind == OutputKind.FRESH or o.graph_output is not None:
            order.append(o.graph_output)
    # a member's new storage
    order.extend(m.value_output for m in meta.member_metadata if m.storage_source.new)
    order.extend(meta.intermediate_bases)
    seen: set[int] = set()
    return tuple(c for c in order if not (c in seen or seen.add(c)))


@dataclass(frozen=True)
class RetainedTarget:
    """A retained tensor whose own part of the gradient the joint computes."""
    kind: RetainKind
    index: int                      # the output, or the argument leaf
    position: int | None            # its tangent's position in ``diff`` (None: it gets none)
    placeholder: int | None         # an argument's graph placeholder (None: an output)


def retained_outputs(meta: ViewMutationMeta, fw, diff) -> tuple[RetainedTarget, ...]:
    """A ``RetainedTarget`` per retained tensor whose own part of the gradient the joint computes: a returned tensor that the function
    called retain_grad() on and that gets a tangent, and a non-leaf argument retained at its
    final node that the function changes in place.

    # NOTE [retained outputs]
    Eager's ``y.retain_grad(); z = y * 3; return z, y`` gives ``y.grad`` the whole gradient
    that reaches y: the caller's (through the returned y) and the function's own uses of it
    (through z). The runtime calls retain_grad() on the output the caller gets
    (NOTE [imperative autograd on arguments and outputs], runtime/imperative.py), so autograd adds the
    caller's part; the rest is traced into the joint: y is one more gradient target, whose
    captured gradient is the total, and the joint returns the total less y's own tangent
    (after the input gradients, before the values the user's backward wrote). The runtime's
    backward adds it to the output's ``.grad``, where a live output reaches y (its reach is
    kept after the inputs' in ``grad_reach``).

    An argument the function changes in place and retains at its final node
    (NOTE [where an argument's retained gradient sits] in capture/autograd_facts.py) is the same: the
    caller's tensor gets a new gradient node from the write-back or the replayed metadata
    call, and its retain_grad() hook there sees the caller's part only; the target is the
    argument as the function left it (the run's work for its placeholder), less the tangent
    of its written-back value where that is a forward output. The runtime adds the part
    only where the call gave the caller's tensor a new node (else its hook, on the node at
    the call, gets the whole gradient through the compiled function's input)."""
    out = []
    for r in meta.retained:
        if r.kind is RetainKind.OUTPUT:
            o = meta.outputs[r.index]
            if o.kind != OutputKind.FRESH or o.graph_output is None or o.graph_output not in fw:
                continue
            pos = fw.index(o.graph_output)
            if pos in diff:
                out.append(RetainedTarget(r.kind, r.index, diff.index(pos), None))
            continue
        p, info = r.placeholder, meta.inputs[r.index]
        if r.kind not in (RetainKind.ARGUMENT, RetainKind.ARGUMENT_BETWEEN) or p is None or \
                info.is_leaf or not info.requires_grad or not (info.data_mutated or info.metadata_mutated):
            continue
        value = next((m.value_output for m in meta.mutations if m.placeholder == p and m.data
                      and not m.storage_source.swapped), None)
        pos = fw.index(value) if value is not None and value in fw else None
        out.append(RetainedTarget(r.kind, r.index, diff.index(pos) if pos in diff else None, p))
    return tuple(out)


@dataclass(frozen=True)
class _JointCall:
    """What both ways of tracing the joint read: the function, its capture and metadata, its
    signature and argument leaves, and the placeholders' example values."""

    fn: object
    captured: Captured
    meta: ViewMutationMeta
    sig: Signature
    leaves: list
    in_spec: object
    primals: list


@dataclass(frozen=True)
class _GradTargets:
    """Which forward values the joint returns, which of them get a tangent, and which inputs
    get a gradient (``Joint``'s fields of the same names)."""

    fw: tuple[int, ...]
    diff: tuple[int, ...]
    grad_inputs: tuple[int, ...]


def trace_joint(fn, captured: Captured, meta: ViewMutationMeta, sig: Signature,
                leaves: list, in_spec, primals: list[torch.Tensor]) -> Joint:
    call = _JointCall(fn, captured, meta, sig, leaves, in_spec, primals)
    with watch_generators(fn, leaves):      # rng/seeding.py: generators it seeds before drawing
        targets = _grad_targets(call)
        if captured.plain:
            return _trace_joint_plain(call, targets)
        return _trace_joint(call, targets)


def _grad_targets(call: _JointCall) -> _GradTargets:
    """The forward candidates, those that get a tangent, and the inputs that get a gradient."""
    fw = forward_candidates(call.meta)
    return _GradTargets(fw, _diff_outputs(call.meta, fw), _grad_inputs(call))


def _diff_outputs(meta: ViewMutationMeta, fw: tuple) -> tuple[int, ...]:
    """The positions in ``fw`` of the forward values that get a tangent."""
    # a new input value written back under no_grad carries no gradient (eager leaves None)
    replayed_without_grad = {m.value_output for m in meta.mutations if m.data and not m.grad_mode}
    # an intermediate base that only detached outputs alias carries no gradient (else its
    # inputs would get zeros where eager leaves None)
    other_uses = {m.value_output for m in meta.mutations if m.data} | \
        {o.graph_output for o in meta.outputs if o.graph_output is not None}
    grad_bases = {meta.intermediate_bases[o.source] for o in meta.outputs
                  if o.kind == OutputKind.ALIAS_OF_INTERMEDIATE and o.requires_grad and o.graph_output is None}
    gradless = set(meta.intermediate_bases) - grad_bases - other_uses
    # a bool or integer value can require grad in eager (a grad value copied into a slice of a
    # bool tensor: CopySlices), but no gradient flows through it: it gets no tangent
    return tuple(k for k, c in enumerate(fw)
                 if meta.candidates[c].requires_grad and _differentiable(meta.candidates[c].dtype)
                 and c not in replayed_without_grad and c not in gradless)


def _grad_inputs(call: _JointCall) -> tuple[int, ...]:
    """The compiled function's inputs that get a gradient: placeholders, then the leaves made
    inside, then the gradient nodes at the call of leaves set_() onto another shape."""
    captured, meta, primals = call.captured, call.meta, call.primals
    # an argument whose requires_grad_() the function called gets a gradient too (the runtime
    # sets the caller's flag before the compiled function runs)
    set_rg = {captured.plan.sources[i.index].index for i in meta.inputs
              if i.requires_grad_set and i.requires_grad_after}
    # and one whose requires_grad_(False) it called gets none: eager's AccumulateGrad skips a
    # leaf that no longer requires grad, even where outputs were computed from it before
    unset_rg = {captured.plan.sources[i.index].index for i in meta.inputs
                if i.requires_grad_set and not i.requires_grad_after}
    # and an argument view that reads its flag through its base without its own gets none:
    # eager's has no gradient edge (NOTE [views of an argument given requires_grad_])
    edgeless = {p for p in argument_views(call.sig, captured.plan)[1]
                if not captured.facts.inputs[p].requires_grad_after} if captured.argument_views \
        else set()
    grad_inputs = tuple(p for p, t in enumerate(primals)
                        if (t.requires_grad or p in set_rg) and p not in unset_rg | edgeless)
    # leaves made inside the function come after the placeholders (NOTE [new grad leaves])
    grad_inputs += tuple(len(primals) + j for j in range(len(meta.new_leaves)))
    # then, per leaf used under grad mode and then set_() under no_grad onto another shape, its
    # gradient node at the call
    # (NOTE [set_ under no_grad onto another shape] in runtime/swap_grad.py): the compiled function's inputs
    # after the two that follow the leaves made inside
    grad_inputs += tuple(len(primals) + len(meta.new_leaves) + 2 + k
                         for k in range(sum(m.old_grad_edge for m in meta.mutations)))
    return grad_inputs


def _trace_joint(call: _JointCall, targets: _GradTargets) -> Joint:
    """The joint the first way: the function on functional wrappers, autograd on them."""
    captured, meta, sig, primals = call.captured, call.meta, call.sig, call.primals
    fw, diff, grad_inputs = targets.fw, targets.diff, targets.grad_inputs
    run = FunctionalRun(call.fn, captured.plan, sig, call.leaves, call.in_spec, captured.geometry,
                        captured.mode)
    n = len(primals)
    box: dict = {}

    def body(*flat):
        prim, tangents = list(flat[:n]), flat[n:]
        outs, grad_targets = _forward_again(run, prim, captured, targets, reach)
        kept = _retained_targets(outs, diff, retained, reach, run)   # NOTE [retained outputs]
        callers = _callers_parts(retained, kept, run.works, tangents)
        # NOTE [forward values before the backward]
        # a custom Function's backward may write a
        # tensor the forward returned or wrote back (a saved intermediate, an argument kept on
        # ctx); the forward's values are read here, before it runs, as eager's caller sees
        # them when the forward returns (the backward's writes are the later bw_values)
        fw_values = [from_fun(o) for o in outs]
        before = _before_backward(run.works, outs)
        tangents = [to_fun(t) for t in tangents]
        try:
            with backward_phase():
                grads = _gradients([outs[k] for k in diff], grad_targets + kept, tangents)
        except RuntimeError as e:       # NotImplementedError included
            error = _missing_derivative(e) or _swap_shape_error(e, run, captured, primals)
            if error:
                box["backward_error"] = error
                grads = [None] * (len(grad_targets) + len(kept))
            else:
                _replay_limit(run, e)
        grads, own = _retained_parts(grads, len(grad_targets), retained, callers)
        if not box.get("backward_error"):     # eager's backward raises: every edge stays
            _no_reach_without_gradient(reach, grads)
        _check_swapped_grads(captured, grad_inputs, grads, primals, run)
        found[:], bw_values = _backward_mutations(run.works, outs, before, captured)
        return fw_values + [None if g is None else from_fun(g) for g in grads] + \
            [None if g is None else from_fun(g) for g in own] + [from_fun(v) for v in bw_values]

    found: list[tuple] = []
    reach: list[tuple] = []
    retained = retained_outputs(meta, fw, diff)
    tangents = _tangents(meta, fw, diff, primals)
    try:
        with trace_grad_mode(sig):
            gm = trace_functional(body, list(primals) + tangents)
    except TraceError as e:
        # capture ran this very function; if the joint's forward fails after in-place metadata
        # changes, what differs is autograd replaying a view (NOTE [non-leaf copies])
        recorder = getattr(run, "recorder", None)
        if isinstance(e, ViewReplayError) or recorder is None or not recorder.inplace_metadata \
                or "traced differently" in str(e) or "modified by an inplace operation" in str(e):
            raise
        raise ViewReplayError(str(e)) from None
    return Joint(gm, n, fw, diff, grad_inputs, tuple(found), tuple(reach),
                 box.get("backward_error", ""))


@dataclass(frozen=True)
class _BeforeBackward:
    """What the joint's backward may change, read before it runs (NOTE [backward mutations]):
    per work its mutation counter, geometry and whether its metadata was mutated; the fresh
    forward outputs, and per one its mutation counter and geometry."""

    works: list
    fresh: list[int]
    outputs: dict


def _before_backward(works: list, outs: list) -> _BeforeBackward:
    """The works' and fresh forward outputs' state before the joint's backward runs."""
    before = [(torch._functionalize_mutation_counter(w), geometry_of(w),
               torch._functionalize_has_metadata_mutation(w)) for w in works]
    fresh = _fresh_forward_outputs(outs, works)
    before_out = {k: (torch._functionalize_mutation_counter(outs[k]), geometry_of(outs[k]))
                  for k in fresh}
    return _BeforeBackward(before, fresh, before_out)


def _backward_mutations(works: list, outs: list, before: _BeforeBackward,
                        captured: Captured) -> tuple[list, list]:
    """The joint's backward's writes and metadata changes: a (placeholder, data, shape,
    stride, offset) per work or fresh output (placeholder ``-k - 1``) it changed, and the new
    values of those it wrote, in that order (NOTE [backward mutations])."""
    found, bw_values = [], []
    for p, w in enumerate(works):
        torch._sync(w)
        data = torch._functionalize_mutation_counter(w) != before.works[p][0]
        geometry = geometry_of(w)
        if data and not before.works[p][2] and not torch._functionalize_has_metadata_mutation(w):
            # no metadata call on it, in the forward or the backward: its geometry is
            # eager's at the end of the forward. The wrapper's own drifts to its new
            # value's compact layout when the backward writes it (NOTE [eager geometry]
            # in capture/trace.py): a strided argument would be restrided by the
            # runtime's as_strided_, and its values written contiguously
            f = captured.facts.inputs[p]
            geometry = (f.final_shape, f.final_stride, f.final_offset)
        if data or geometry != before.works[p][1]:
            found.append((p, data, *geometry))
            if data:
                bw_values.append(w)
    for k in before.fresh:     # NOTE [backward mutations of returned values]
        o = outs[k]
        torch._sync(o)
        data = torch._functionalize_mutation_counter(o) != before.outputs[k][0]
        geometry = geometry_of(o)
        if data or geometry != before.outputs[k][1]:
            found.append((-k - 1, data, *geometry))
            if data:
                bw_values.append(o)
    return found, bw_values


def _fresh_forward_outputs(outs: list, works: list) -> list[int]:
    """The forward outputs (positions) on a storage of their own: not an argument's, not an
    earlier output's.

    # NOTE [backward mutations of returned values]
    A custom Function's backward may write a tensor it saved that the function also returned
    (``offsets`` made inside, saved, returned, then ``offsets.add_(grad)`` in the backward):
    eager's caller sees the write after ``.backward()``. An output on an argument's storage is
    covered by the argument's backward mutation (NOTE [backward mutations]); one on a storage
    of its own is found the same way (its wrapper's mutation counter and geometry, before
    and after the backward) and recorded with placeholder ``-k - 1`` for forward output
    ``k``: the runtime's backward applies it to the tensor that forward output was returned
    as (``apply_backward_mutations``)."""
    seen = {storage_ref(w) for w in works if isinstance(w, torch.Tensor)}
    fresh = []
    for k, o in enumerate(outs):
        if not isinstance(o, torch.Tensor) or not torch._is_functional_tensor(o) \
                or o.layout != torch.strided:
            continue
        ref = storage_ref(o)
        if ref not in seen:
            seen.add(ref)
            fresh.append(k)
    return fresh


def _forward_again(run, prim: list, captured: Captured, targets: _GradTargets, reach: list):
    """Run the function once more inside the joint (either way), checking that it traces as the
    capture did; returns the forward outputs and the gradient targets (the argument wrappers,
    then the leaves made inside), and refills ``reach`` (NOTE [per-output reach])."""
    candidates, facts, _, wrappers = run.run(prim)
    if facts != captured.facts:
        raise TraceError("the function traced differently the second time (is it "
                         "deterministic in Python? does it read global state?)")
    outs = [candidates[c] for c in targets.fw]
    n, n_new = len(prim), len(captured.facts.new_leaves)
    olds = [f.placeholder for f in facts.inputs if f.old_grad_edge]
    grad_targets = [wrappers[p] if p < n else run.new_leaf_tensors[p - n] if p < n + n_new
                    else run.recorder.storage.changes.old_edges[olds[p - n - n_new - 2]] for p in targets.grad_inputs]
    reach.clear()
    reach.extend(_reach(outs, targets.diff, grad_targets))
    return outs, grad_targets


def _retained_targets(outs: list, diff: tuple, retained: tuple, reach: list, run) -> list:
    """The retained tensors as gradient targets (None for an argument left without grad),
    their reach after the inputs' (NOTE [retained outputs]); an argument whose hook stays
    between its writes and its metadata calls, the node the recorder took there."""
    edges = getattr(getattr(run, "recorder", None), "retained_edges", {})
    for p in (r.placeholder for r in retained if r.kind is RetainKind.ARGUMENT_BETWEEN):
        if ("placeholder", p) not in edges:
            raise UnsupportedInputError(
                f"input placeholder {p} is retained between its in-place writes and its "
                "metadata calls, and this trace did not see the node its hook stays on; "
                "supported: retain_grad() before only metadata calls, or before only writes")
    kept = [outs[diff[r.position]] if r.placeholder is None else
            edges.get(("placeholder", r.placeholder)) if r.kind is RetainKind.ARGUMENT_BETWEEN
            else run.works[r.placeholder] for r in retained]
    kept = [t if (isinstance(t, torch.Tensor) and t.requires_grad) or
            (t is not None and not isinstance(t, torch.Tensor)) else None for t in kept]
    if kept:
        found = iter(_reach(outs, diff, [t for t in kept if t is not None]))
        reach.extend(next(found) if t is not None else () for t in kept)
    return kept


def _gradients(outputs: list, inputs: list, tangents: list) -> list:
    """``torch.autograd.grad`` where an input may be None (no gradient: None)."""
    present = [t for t in inputs if t is not None]
    with without_autocast():        # NOTE [autocast in the backward] in capture/functional.py
        got = iter(torch.autograd.grad(outputs, present, tangents, allow_unused=True))
    return [next(got) if t is not None else None for t in inputs]


def _no_reach_without_gradient(reach: list, grads: list) -> None:
    """An input whose gradient the joint finds None is reached by no output
    (NOTE [unread placeholders], runtime/artifact.py)."""
    for j, g in enumerate(grads):
        if g is None and j < len(reach):
            reach[j] = ()


def _callers_parts(retained: tuple, kept: list, works: list, tangents: list) -> list:
    """Per retained tensor, the part of its gradient that the caller's uses give: its own
    tangent, or for an argument retained between its writes and its metadata calls, that
    tangent (of its written-back value) carried back through the metadata calls to the node
    the hook stays on (NOTE [retained outputs]); None where no tangent reaches it."""
    parts = []
    for r, t in zip(retained, kept):
        if r.position is None or t is None:
            parts.append(None)
        elif r.kind is RetainKind.ARGUMENT_BETWEEN:
            with without_autocast():
                (g,) = torch.autograd.grad([works[r.placeholder]], [t], [tangents[r.position]],
                                           retain_graph=True, allow_unused=True)
            parts.append(g)
        else:
            parts.append(tangents[r.position])
    return parts


def _retained_parts(grads, n: int, retained: tuple, callers: list) -> tuple[list, list]:
    """The input gradients, and per retained output the part of its gradient that the
    function's own uses of it give (its total less the caller's part)."""
    grads = list(grads)
    own = [None if g is None else g - c if c is not None else g
           for g, c in zip(grads[n:], callers)]
    return grads[:n], own


def _tangents(meta: ViewMutationMeta, fw, diff, primals) -> list[torch.Tensor]:
    tangents = []
    # a function with no tensor arguments (its leaves made inside) traces on the default device
    device = primals[0].device if primals else torch.get_default_device()
    for k in diff:
        shape, dtype = meta.candidates[fw[k]].shape, getattr(torch, meta.candidates[fw[k]].dtype)
        tangents.append(torch.empty(shape, dtype=dtype, device=device))
    return tangents


def _trace_joint_plain(call: _JointCall, targets: _GradTargets) -> Joint:
    """The joint the second way (NOTE [plain trace, then functionalize] in storage_views.py):
    eager autograd on plain copies, then the whole joint functionalized. Same outputs as the
    first way: forward values, gradients, then the values the user's backward wrote."""
    from .capture.storage_views import StorageTagger, functionalize_plain, trace_plain
    captured, meta, sig, primals = call.captured, call.meta, call.sig, call.primals
    fw, diff, grad_inputs = targets.fw, targets.diff, targets.grad_inputs
    run = FunctionalRun(call.fn, captured.plan, sig, call.leaves, call.in_spec, captured.geometry,
                        captured.mode, PlainRun(StorageTagger(), nonleaf=tuple(
                            t.requires_grad and not t.is_leaf for t in primals)))
    n = len(primals)
    box: dict = {}
    found: list[tuple] = []
    reach: list[tuple] = []

    def body(*flat):
        prim, tangents = list(flat[:n]), list(flat[n:])
        outs, grad_targets = _forward_again(run, prim, captured, targets, reach)
        kept = _retained_targets(outs, diff, retained, reach, run)   # NOTE [retained outputs]
        callers = _callers_parts(retained, kept, run.works, tangents)
        works = run.works
        before = [geometry_of(w) for w in works]
        written_from = len(run.tagger.writes)
        try:
            with backward_phase():
                grads = _gradients([outs[k] for k in diff], grad_targets + kept, tangents)
        except RuntimeError as e:       # NotImplementedError included
            error = _missing_derivative(e) or _swap_shape_error(e, run, captured, primals)
            if not error:
                raise
            box["backward_error"] = error
            grads = [None] * (len(grad_targets) + len(kept))
        grads, own = _retained_parts(grads, len(grad_targets), retained, callers)
        if not box.get("backward_error"):     # eager's backward raises: every edge stays
            _no_reach_without_gradient(reach, grads)
        _check_swapped_grads(captured, grad_inputs, grads, primals, run)
        written = set(run.tagger.writes[written_from:])
        bw_values = []
        found.clear()
        for p, w in enumerate(works):
            data = run.tagger.sid(w) in written
            geometry = geometry_of(w)
            if data or geometry != before[p]:
                found.append((p, data, *geometry))
                if data:
                    bw_values.append(w)
        return list(outs) + list(grads) + list(own) + bw_values

    retained = retained_outputs(meta, fw, diff)
    examples = list(primals) + _tangents(meta, fw, diff, primals)
    with trace_grad_mode(sig):
        plain_gm = trace_plain(body, examples, run.tagger)
        gm = functionalize_plain(plain_gm, examples)
    return Joint(gm, n, fw, diff, grad_inputs, tuple(found), tuple(reach),
                 box.get("backward_error", ""))


def _check_swapped_grads(captured: Captured, grad_inputs: tuple, grads, primals: list,
                         run) -> None:
    """An argument set_() onto another storage and then given requires_grad_()
    (NOTE [storage swaps] in storage/swaps.py) gets its gradient through the compiled function's
    input, which has the argument's shape at the call; a gradient of its new shape cannot
    pass there. A leaf that required grad at the call and was set_() under no_grad onto
    another shape gets it through an input taken after the swap
    (NOTE [set_ under no_grad onto another shape] in runtime/swap_grad.py)."""
    recorder = getattr(run, "recorder", None)
    reshaped = recorder.storage.changes.reshaped if recorder is not None else set()
    swapped = {f.placeholder for f in captured.facts.inputs if f.storage_source.swapped} - \
        {p for p in reshaped if primals[p].requires_grad}
    for p, g in zip(grad_inputs, grads):
        if p in swapped and p < len(primals) and g is not None and \
                tuple(g.shape) != tuple(primals[p].shape):     # the caller's, at the call
            raise UnsupportedInputError(
                f"the function calls set_() on input placeholder {p}, which changes its shape, "
                "then requires_grad_() on it, and an output's gradient reaches it; aotcheck "
                "passes that gradient through the compiled function's input, which keeps the "
                "argument's shape at the call")


def _reach(outs: list, diff: tuple, targets: list) -> list[tuple]:
    """Per grad input, the positions in ``diff`` whose output's autograd graph reaches it.

    # NOTE [per-output reach]
    The compiled function is one autograd node for all its outputs. Were autograd to
    materialize zero gradients for the outputs that the user's backward does not reach, an
    argument that only those outputs depend on (a mutated argument's new value, say) would
    get a zero ``.grad`` where eager leaves None. So the runtime turns materialization off;
    in its backward an input gets None when no output whose gradient arrived reaches it in
    the autograd graph traced here (eager's rule), and the unreached outputs' tangents are
    zeros for the graph. An input found by no walk keeps the graph's value (conservative)."""
    from torch.autograd.graph import GradientEdge, get_gradient_edge
    everything = [tuple(range(len(diff)))] * len(targets)

    def node(t):
        try:
            return t.node if isinstance(t, GradientEdge) else get_gradient_edge(t).node
        except (RuntimeError, AttributeError):  # torch's view_as walk on an inference-mode leaf
            return None                          # (a Parameter made under inference_mode): none
    nodes = [node(t) for t in targets]
    # nodes kept alive: ids stay unique; a target with no node keeps the graph's value
    target = {id(n): j for j, n in enumerate(nodes) if n is not None}
    per_input: list[set] = [set() for _ in targets]
    for pos, k in enumerate(diff):
        for fn in grad_nodes([outs[k].grad_fn]):
            if id(fn) in target:
                per_input[target[id(fn)]].add(pos)
    return [tuple(sorted(r)) if r else everything[j] for j, r in enumerate(per_input)]


def _differentiable(dtype: str) -> bool:
    """Can a gradient flow through a value of this dtype (a name such as "float32")?"""
    t = getattr(torch, dtype, None)
    return isinstance(t, torch.dtype) and (t.is_floating_point or t.is_complex)

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

from dataclasses import dataclass

import torch
import torch.fx as fx

from .analyze import ALIAS_OF_INTERMEDIATE, FRESH, ViewMutationMeta
from .capture import Captured
from .functional import from_fun, to_fun, trace_functional, trace_grad_mode
from .functional_run import FunctionalRun
from ..errors import TraceError
from .signature import Signature


class ViewReplayError(TraceError):
    """Autograd rebuilt a view's grad_fn by replaying the ops that made it, which misses an
    in-place metadata change (see NOTE [non-leaf copies] in functional_run.py)."""


@dataclass
class Joint:
    graph: fx.GraphModule
    num_primals: int
    fw_candidates: tuple[int, ...]    # graph candidate index of each forward output
    diff_outputs: tuple[int, ...]     # forward-output positions that get a tangent
    grad_inputs: tuple[int, ...]      # placeholders that get a gradient (joint outputs after fw)
    backward_error: str = ""          # eager's "derivative ... not implemented", for .backward()


def _missing_derivative(e: Exception) -> str:
    """Eager's message when autograd meets a derivative that is not implemented, else ''."""
    msg = str(e).split("\n")[0]
    return msg if isinstance(e, NotImplementedError) and "derivative for" in msg else ""


def forward_candidates(meta: ViewMutationMeta) -> tuple[int, ...]:
    """The graph candidates the runtime needs, in a fixed order: new input values,
    fresh outputs, intermediate bases."""
    order: list[int] = []
    for m in meta.mutations:
        if m.data:
            order.append(m.value_output)
    for o in meta.outputs:
        if o.kind == FRESH or o.graph_output >= 0:
            order.append(o.graph_output)
    order.extend(meta.intermediate_bases)
    seen: set[int] = set()
    return tuple(c for c in order if not (c in seen or seen.add(c)))


def trace_joint(fn, captured: Captured, meta: ViewMutationMeta, sig: Signature,
                leaves: list, in_spec, primals: list[torch.Tensor]) -> Joint:
    fw = forward_candidates(meta)
    # a new input value written back under no_grad carries no gradient (eager leaves None)
    replayed_without_grad = {m.value_output for m in meta.mutations if m.data and not m.grad_mode}
    # an intermediate base that only detached outputs alias carries no gradient (else its
    # inputs would get zeros where eager leaves None)
    other_uses = {m.value_output for m in meta.mutations if m.data} | \
        {o.graph_output for o in meta.outputs if o.graph_output >= 0}
    grad_bases = {meta.intermediate_bases[o.source] for o in meta.outputs
                  if o.kind == ALIAS_OF_INTERMEDIATE and o.requires_grad and o.graph_output < 0}
    gradless = set(meta.intermediate_bases) - grad_bases - other_uses
    diff = tuple(k for k, c in enumerate(fw)
                 if meta.candidates[c][2] and c not in replayed_without_grad and c not in gradless)
    grad_inputs = tuple(p for p, t in enumerate(primals) if t.requires_grad)
    if captured.plain:
        return _trace_joint_plain(fn, captured, meta, sig, leaves, in_spec, primals,
                                  fw, diff, grad_inputs)
    run = FunctionalRun(fn, captured.plan, sig, leaves, in_spec, captured.geometry,
                        captured.nonleaf_views)
    n = len(primals)
    box: dict = {}

    def body(*flat):
        prim, tangents = list(flat[:n]), flat[n:]
        candidates, facts, _, wrappers = run.run(prim)
        if facts != captured.facts:
            raise TraceError("the function traced differently the second time (is it "
                             "deterministic in Python? does it read global state?)")
        outs = [candidates[c] for c in fw]
        try:
            grads = torch.autograd.grad(
                [outs[k] for k in diff], [wrappers[p] for p in grad_inputs],
                [to_fun(t) for t in tangents], allow_unused=True)
        except NotImplementedError as e:
            if not _missing_derivative(e):
                raise
            box["backward_error"] = _missing_derivative(e)
            grads = [None] * len(grad_inputs)
        except RuntimeError as e:
            # a shape error inside backward after in-place metadata changes is the replay
            # limit ("invalid gradient", or a broadcast mismatch in a replayed view's backward);
            # a saved tensor modified in place is eager's own error, kept as it is
            if run.saw_inplace_metadata and "modified by an inplace operation" not in str(e):
                raise ViewReplayError(str(e).split("\n")[0]) from None
            raise
        return [from_fun(o) for o in outs] + [None if g is None else from_fun(g) for g in grads]

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
    return Joint(gm, n, fw, diff, grad_inputs, box.get("backward_error", ""))


def _tangents(meta: ViewMutationMeta, fw, diff, primals) -> list[torch.Tensor]:
    tangents = []
    for k in diff:
        shape, dtype = meta.candidates[fw[k]][0], getattr(torch, meta.candidates[fw[k]][1])
        tangents.append(torch.empty(shape, dtype=dtype, device=primals[0].device))
    return tangents


def _trace_joint_plain(fn, captured: Captured, meta: ViewMutationMeta, sig: Signature, leaves: list,
                       in_spec, primals: list[torch.Tensor], fw, diff, grad_inputs) -> Joint:
    """The joint the second way (NOTE [plain trace, then functionalize] in storage_views.py):
    eager autograd on plain fake tensors, then the whole joint functionalized."""
    from .storage_views import StorageTagger, functionalize_plain, trace_plain
    run = FunctionalRun(fn, captured.plan, sig, leaves, in_spec, captured.geometry,
                        tagger=StorageTagger(),
                        nonleaf=tuple(t.requires_grad and not t.is_leaf for t in primals))
    n = len(primals)
    box: dict = {}

    def body(*flat):
        prim, tangents = list(flat[:n]), flat[n:]
        candidates, facts, _, wrappers = run.run(prim)
        if facts != captured.facts:
            raise TraceError("the function traced differently the second time (is it "
                             "deterministic in Python? does it read global state?)")
        outs = [candidates[c] for c in fw]
        try:
            grads = torch.autograd.grad([outs[k] for k in diff], [wrappers[p] for p in grad_inputs],
                                        list(tangents), allow_unused=True)
        except NotImplementedError as e:
            if not _missing_derivative(e):
                raise
            box["backward_error"] = _missing_derivative(e)
            grads = [None] * len(grad_inputs)
        return list(outs) + list(grads)

    examples = list(primals) + _tangents(meta, fw, diff, primals)
    with trace_grad_mode(sig):
        plain_gm = trace_plain(body, examples, run.tagger)
        gm = functionalize_plain(plain_gm, examples)
    return Joint(gm, n, fw, diff, grad_inputs, box.get("backward_error", ""))

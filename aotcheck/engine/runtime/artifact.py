"""runtime: run compiled graphs with eager semantics.

A :class:`CompiledArtifact` holds one signature's forward graph, the lazily
built backward graph and the metadata. Calling it:

1. gathers the placeholder tensors (argument leaves, or alias-group roots);
2. runs the forward graph, inside an ``autograd.Function`` in training mode,
   or under no_grad in inference mode;
3. applies input mutations to the caller's tensors (see NOTE [mutation replay]);
4. builds each output: graph values as they are, and aliases regenerated as
   real views (see NOTE [alias regeneration] in regenerate.py).

# NOTE [mutation replay]
The graph is functional: a mutated argument's new value is a graph output.
Afterwards the runtime writes it back: first it replays the very metadata calls
the function made on its arguments (``t_``, ``transpose_``, ``unsqueeze_``, ...,
recorded during capture, each in the grad mode it ran in), so strides and
grad_fns come out exactly as eager's; then data with ``copy_``, with grad mode
on only if autograd saw the original mutation (otherwise under no_grad, which is
what makes mutations under no_grad or through ``.detach()`` legal on leaves that
require grad).

# NOTE [the backward built at first use]
The backward graph is turned into code at the first backward, not before. An
artifact loaded from the cache may have no backward at all; it then asks its
``backward_source`` (a re-trace of the joint) and reports it through
``on_backward`` so the cache can complete the entry.
"""
from __future__ import annotations

import ast
import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.fx as fx
from torch.utils import _pytree as pytree

from ..analyze import OutputKind, ViewMutationMeta
from ..capture.facts import RetainKind
from ..capture.functional import outside_saved_tensors_hooks
from ..capture.plan import InputPlan, placeholder_tensors
from ..capture.values import is_guarded
from .regenerate import (addressing, alias, as_inference_tensors, as_moved_kind, as_ordinary_tensors,
                         detached_alias, restride, view_in_custom_function)
from .codegen import to_callable
from .function import grad_mode_as_eager, make_function
from .imperative import imperative_autograd, retain_at_call, retain_between, skip_unreached
from .writeback import (apply_mutations, as_at_call, fits, geometry,
                        replay_reshaping_swaps, reshaped_leaves, restore_member_geometry)
from .swap_grad import old_grad_edges
from ..decide import CompileMode, Decision
from ..joint import retained_outputs
from ...errors import AotcheckError


@dataclass(frozen=True)
class ArtifactParts:
    """What one signature's compiled artifact is built from: the stages' results
    (``pipeline.build_artifact``) or a cache entry's (``cache.entry``). Graphs and tensors, so
    no JSON round-trip: the cache stores each part in its own form."""

    plan: InputPlan
    meta: ViewMutationMeta
    decision: Decision
    forward: fx.Graph
    num_fw_outputs: int
    fw_candidates: tuple[int, ...]          # the candidate values the forward graph returns
    diff_outputs: tuple[int, ...] = ()
    grad_inputs: tuple[int, ...] = ()
    backward: fx.Graph | None = None        # None: built at the first backward (NOTE [the backward built at first use])
    out_spec: Any = None                    # the pytree spec of the function's result
    constants: dict = field(default_factory=dict)   # get_attr target -> tensor, for both graphs
    backward_mutations: tuple = ()          # NOTE [backward mutations], joint.py
    grad_reach: tuple = ()                  # NOTE [per-output reach], joint.py
    hook_fns: tuple = ()                    # per meta.hooks
                                            # (NOTE [imperative autograd on arguments and outputs]); an
                                            # entry's come from a run on fakes (capture.trace.argument_hooks)


_NO_CONTEXT = contextlib.nullcontext()
# the output kinds a graph value, an argument or a constant gives directly (``_direct_output``)
_OF_ARGUMENTS_OR_GRAPH = frozenset({OutputKind.FRESH, OutputKind.IS_INPUT, OutputKind.CONSTANT, OutputKind.ALIAS_OF_INPUT})


class CompiledArtifact:
    def __init__(self, parts: ArtifactParts):
        self._init_graphs(parts)
        self._unread = _unread_placeholders(parts) if self.training else frozenset()
        # NOTE [set_ under no_grad onto another shape] (swap_grad.py): leaves whose gradient
        # node of before their swap the compiled function takes too
        self._olds = tuple(m.placeholder for m in self.meta.mutations if m.old_grad_edge)
        self._function = make_function(self) if self.training else None
        # Decided once per artifact rather than on every call:
        # - whether the inference graph must run under no_grad (only if something requires grad);
        # - which fresh outputs the graph lays out differently from eager (fake-tensor strides);
        # - whether every output is a fresh graph value (then no per-output dispatch is needed).
        self._needs_no_grad = True
        self._grad_region_only = False
        self._restride = self._restrided_outputs()
        self._init_argument_calls()
        self._init_output_kinds()
        self._init_hooks(parts)
        self._fresh_slots = self._all_fresh_slots()
        self._unflatten = _fast_unflatten(parts.out_spec)
        # NOTE [value specialization] (values.py): a guard that fails raises before the graph
        # returns; the API retries the call when nothing was changed before the graph ran
        self.guarded = is_guarded(self.forward_graph)
        self.retryable = self.guarded and not self._early_meta and not self._rg_on

    def _init_graphs(self, parts: ArtifactParts) -> None:
        """The parts as the call reads them: the graphs, the plan and where each forward value
        sits."""
        plan, meta, decision, forward = parts.plan, parts.meta, parts.decision, parts.forward
        num_fw_outputs, fw_candidates = parts.num_fw_outputs, parts.fw_candidates
        diff_outputs, out_spec = parts.diff_outputs, parts.out_spec
        self.parts = parts
        self.plan, self.meta, self.decision = plan, meta, decision
        self.backward_mutations = tuple(parts.backward_mutations)   # NOTE [backward mutations], joint.py
        self.grad_reach = tuple(tuple(r) for r in parts.grad_reach)  # NOTE [per-output reach], joint.py
        self.constants = dict(parts.constants or {})
        self.forward_graph = forward
        self.forward = to_callable(forward, "forward", self.constants)
        self.num_fw_outputs = num_fw_outputs
        self.fw_candidates = fw_candidates
        self.diff_outputs = diff_outputs
        self.grad_inputs = parts.grad_inputs
        self.backward_graph = parts.backward
        # set by the cache where it loads an entry (NOTE [lazy backward])
        self.backward_source: Callable[[], fx.Graph] | None = None
        self.on_backward: Callable[[fx.Graph], None] | None = None
        self._backward = None
        self.out_spec = out_spec
        self.training = decision.mode == CompileMode.TRAINING
        self._simple_plan = all(k == "leaf" for k, _ in plan.placeholders) and \
            all(s.kind in ("placeholder", "value") for s in plan.sources)
        self._leaf_of_placeholder = [ref for _, ref in plan.placeholders]
        self._slot = {c: k for k, c in enumerate(fw_candidates)}
        self._constants = {o.index: _constant(o.value) for o in meta.outputs if o.kind == OutputKind.CONSTANT}
        nondiff = tuple(k for k in range(num_fw_outputs) if k not in set(diff_outputs))
        self._nondiff = nondiff
        self.retained_diff = retained_outputs(meta, fw_candidates, diff_outputs) if self.training \
            else ()

    def _restrided_outputs(self) -> dict:
        """The fresh outputs (index -> True) that the forward graph lays out otherwise than
        eager (fake-tensor strides)."""
        out_node = next(n for n in self.forward_graph.nodes if n.op == "output")
        graph_vals = [a.meta.get("val") if isinstance(a, fx.Node) else None for a in out_node.args[0]]
        restrided = {}
        for o in self.meta.outputs:
            if o.kind == OutputKind.FRESH:
                val = graph_vals[self._slot[o.graph_output]]
                if not isinstance(val, torch.Tensor) or (val.stride() != o.stride and val.numel() > 1):
                    restrided[o.index] = True
        return restrided

    def _init_argument_calls(self) -> None:
        """The requires_grad flags, metadata calls and retained arguments that the call handles
        on the caller's tensors before or between its write-backs."""
        plan, meta = self.plan, self.meta
        # NOTE [requires_grad_ on an argument] (capture/functional_run.py): flags set before the call
        # (to True) and after it (to False)
        self._rg_on = [i.index for i in meta.inputs if i.requires_grad_set and i.requires_grad_after]
        self._rg_off = [i.index for i in meta.inputs if i.requires_grad_set and not i.requires_grad_after]
        # an argument whose metadata the function changes (t_, squeeze_, ...) before it calls
        # requires_grad_() on it: eager's leaf is the argument in its new geometry, so the
        # gradient the graph computes for it has that geometry. Autograd checks a gradient
        # against its leaf's geometry when the leaf first joins a graph (the compiled
        # function's call), so these calls are replayed on the caller's tensor before it; the
        # graph still reads the argument in its geometry at the call, through an alias.
        rg_on_placeholders = {_placeholder_of(plan, i) for i in self._rg_on}
        self._early_meta = frozenset(
            p for p in rg_on_placeholders if p is not None and plan.placeholders[p][0] == "leaf"
            and any(op.kind == "placeholder" and op.index == p for op in meta.metadata_ops))
        # NOTE [where an argument's retained gradient sits] (capture/autograd_facts.py):
        # placeholders retained between their writes and their metadata calls, with their
        # final geometry (their write-back goes there while they keep their geometry at the call)
        self._between = {m.placeholder: (tuple(m.final_shape), tuple(m.final_stride), m.final_offset)
                         for m in meta.mutations if any(
                             r.kind is RetainKind.ARGUMENT_BETWEEN and r.placeholder == m.placeholder
                             for r in meta.retained)}

    def _init_output_kinds(self) -> None:
        """The outputs and mutations that need a step of their own after the graph runs."""
        meta = self.meta
        self._inference_outputs = [o.index for o in meta.outputs if o.inference]
        self._at_call_outputs = [o for o in meta.outputs if o.kind == OutputKind.ALIAS_OF_INPUT and o.at_call]
        self._ordinary_outputs = [o.index for o in meta.outputs if o.ordinary]
        self._moved_kind = [o for o in meta.outputs if o.moved_kind]
        self._inference_shared = frozenset(o.index for o in meta.outputs
                                           if o.inference and o.kind == OutputKind.ALIAS_OF_INPUT)
        self._written_then_moved = [m.placeholder for m in meta.mutations
                                    if m.data and m.storage_source.swapped
                                    and not m.storage_source.onto(m.placeholder)]
        # a member set_() onto an argument's storage (NOTE [member storage swaps])
        self._member_swaps = any(m.storage_source.from_placeholder for m in meta.member_metadata)
        # NOTE [set_ under no_grad onto another shape] in swap_grad.py: swaps that may move a
        # leaf that requires grad onto another shape (decided per call, on the caller's tensors)
        self._reshaping = tuple(m for m in meta.mutations if m.storage_source.swapped and not
                                m.grad_mode and m.grad_value_output is None and not m.kept_grad_node) \
            if self.training else ()

    def _init_hooks(self, parts: ArtifactParts) -> None:
        """The tensor hooks the call registers: on arguments before and after the graph, and on
        leaves made inside (NOTE [imperative autograd on arguments and outputs], imperative.py)."""
        meta = self.meta
        if len(parts.hook_fns) != len(meta.hooks):
            raise AotcheckError("a compiled entry registers tensor hooks on its arguments but has "
                                "no hook functions for them; clear the cache entry "
                                "and report this")
        hooks = [(h, skip_unreached(fn)) for h, fn in zip(meta.hooks, parts.hook_fns)]
        self._hooks_before = [(h.leaf, fn) for h, fn in hooks if not h.written and h.leaf is not None]
        self._hooks_after = [(h.leaf, fn) for h, fn in hooks if h.written and h.leaf is not None]
        # NOTE [hooks on leaves made inside] (capture/autograd_facts.py)
        self._hooks_new = [(h.new_leaf, fn) for h, fn in hooks if h.leaf is None]

    def _all_fresh_slots(self) -> list | None:
        """Where every output is a fresh graph value and the call has nothing else to do: each
        one's slot among the graph's values (the call's fast path); else None."""
        meta = self.meta
        if all(o.kind == OutputKind.FRESH for o in meta.outputs) and not self._restride and not meta.mutations \
                and not meta.retained and not meta.hooks \
                and not meta.metadata_ops and not self._rg_on and not self._rg_off \
                and not meta.new_leaves and not meta.member_metadata \
                and not self._inference_outputs and not self._ordinary_outputs and not self._moved_kind:
            return [self._slot[o.graph_output] for o in meta.outputs]
        return None

    def set_grad_facts(self, any_requires_grad: bool, grad_enabled: bool) -> None:
        """Inference graphs need no no_grad context when nothing can record autograd."""
        # an argument whose requires_grad_(True) the runtime sets before the call requires grad
        # too: an inference graph must not record autograd on it
        self._needs_no_grad = (any_requires_grad or bool(self._rg_on)) and grad_enabled
        self._grad_region_only = self.training and not grad_enabled

    def call(self, leaves: list):
        """Run and return the outputs in the function's own structure."""
        return self._unflatten(self(leaves))

    # -- backward, built lazily
    def backward_module(self):
        if self._backward is None:
            if self.backward_graph is None:
                with outside_saved_tensors_hooks():   # NOTE [saved tensors hooks around the call]
                    self.backward_graph = self.backward_source()
            self._backward = to_callable(self.backward_graph, "backward", self.constants)
            if self.on_backward is not None:
                self.on_backward(self.backward_graph)
        return self._backward

    # -- the call
    def __call__(self, leaves: list) -> list:
        early, primals, grad_leaves, early_views = self._before_graph(leaves)
        values, late, at_call_storages = self._run_graph(primals, grad_leaves, early)
        if self._fresh_slots is not None:
            return [values[s] for s in self._fresh_slots]
        nodes_at_call = self._write_back(leaves, primals, values, late, at_call_storages)
        out = self._outputs(leaves, values, grad_leaves, early_views)
        if self.meta.retained or self._hooks_after:
            # a retained output made in an enable_grad region of a call under no_grad is
            # handed out on a node of its own (own_node) as under grad mode
            with torch.enable_grad() if self._grad_region_only else _NO_CONTEXT:
                imperative_autograd(self, leaves, out, values, nodes_at_call)
        return out

    def _before_graph(self, leaves: list) -> tuple:
        """What the caller's tensors get before the graph runs (early metadata calls, flags,
        hooks); returns (their geometry at the call for those early calls, or None; the
        placeholders; the grad leaves made inside; the views cut at the call)."""
        early = None
        if self._early_meta:
            # the geometry at the call, which the graph reads, then eager's leaf geometry
            early = tuple((p, *geometry(leaves[self._leaf_of_placeholder[p]]))
                          for p in sorted(self._early_meta))
            self._replay_metadata(None, leaves, "placeholder", self._early_meta)
        for i in self._rg_on:
            leaves[i].requires_grad_(True)
        for i, fn in self._hooks_before:
            leaves[i].register_hook(fn)
        if self._simple_plan:
            primals = [leaves[i] for i in self._leaf_of_placeholder]
        else:
            primals = placeholder_tensors(self.plan, leaves)
        grad_leaves = _make_grad_leaves(self.meta.new_leaves, leaves) if self.meta.new_leaves else ()
        # NOTE [views taken before .data =] (capture/outputs.py): cut before any swap replay
        early_views = {o.index: alias(leaves[o.source], o) for o in self._at_call_outputs} \
            if self._at_call_outputs else {}
        for j, fn in self._hooks_new:
            grad_leaves[j].register_hook(fn)
        return early, primals, grad_leaves, early_views

    def _run_graph(self, primals: list, grad_leaves, early) -> tuple:
        """Run the forward graph (in training mode, through the autograd Function); returns
        (its values, the leaves set_() onto another shape, their storages at the call)."""
        late, pre, olds, at_call_storages = (), None, (), None
        if self.training:
            late = reshaped_leaves(self._reshaping, primals) if self._reshaping else ()
            if late:
                # the graph runs first, the swaps follow, and only then the compiled function
                # takes its inputs (NOTE [set_ under no_grad onto another shape])
                with grad_mode_as_eager():     # NOTE [kernels that read grad mode]
                    pre = self.forward(*as_at_call(primals, early))
                if self._olds:
                    olds = old_grad_edges(primals, self._olds, late, self._grad_region_only)
                at_call_storages = [p.untyped_storage() for p in primals]
                replay_reshaping_swaps(late, primals, pre, self._slot)
            inputs = primals if not self._unread else [
                t.detach() if k in self._unread and t.requires_grad else t
                for k, t in enumerate(primals)]
            if self._grad_region_only:
                # grad mode is off at the call, but an enable_grad region inside the
                # function records autograd: so does the compiled function
                with torch.enable_grad():
                    values = self._function.apply(*inputs, *grad_leaves, early, pre, *olds)
            else:
                values = self._function.apply(*inputs, *grad_leaves, early, pre, *olds)
        elif self._needs_no_grad:
            with torch.no_grad():
                values = self.forward(*as_at_call(primals, early))
        else:
            values = self.forward(*as_at_call(primals, early))
        return values, late, at_call_storages

    def _write_back(self, leaves: list, primals: list, values, late, at_call_storages) -> dict:
        """Apply the function's changes to its arguments on the caller's tensors
        (NOTE [mutation replay]); returns the retained arguments' nodes at the call."""
        for i in self._rg_off:
            leaves[i].requires_grad_(False)
        meta = self.meta
        # A placeholder's new value has its final layout, so its own metadata calls come first;
        # an alias group's base value has the base's layout, so members' calls come after.
        storages_at_call = [p.untyped_storage() for p in primals] if self._member_swaps else ()
        # an argument written, then set_() elsewhere: the write goes into the memory it had,
        # in its geometry at the call (NOTE [writes before a storage swap]), which its own
        # metadata calls (squeeze_, ...) change
        at_call = {p: geometry(primals[p]) for p in self._written_then_moved} \
            if meta.metadata_ops else {}
        at_call.update(self._between)        # written back before their metadata calls
        nodes_at_call = retain_at_call(self, leaves) if meta.retained else {}
        # NOTE [writes in an enable_grad region]
        # grad mode is off at the call, but the
        # function wrote an argument inside an enable_grad region, where eager's autograd
        # recorded the write (the argument's grad_fn changes); each write and metadata call
        # is replayed in the grad mode it ran in, so the replay turns grad on for the
        # stretch, as the function did
        with torch.enable_grad() if self._grad_region_only else _NO_CONTEXT:
            if meta.metadata_ops:
                self._replay_metadata(primals, leaves, "placeholder")
            if meta.mutations:
                apply_mutations(meta, self._slot, primals, values, at_call,
                                frozenset(m.placeholder for m in late), at_call_storages)
            if self._between:
                retain_between(self, leaves, primals, nodes_at_call)
            if meta.metadata_ops:
                self._replay_metadata(primals, leaves, "leaf")
        if meta.member_metadata:
            restore_member_geometry(leaves, meta.member_metadata, storages_at_call,
                                     lambda c: values[self._slot[c]])
        return nodes_at_call

    def _replay_metadata(self, primals, leaves, which: str, early: frozenset | None = None,
                         between: bool = False):
        """Replay the logged calls of one kind; ``early``: only (placeholder kind) those of
        these placeholders, before the call, on the caller's tensors; otherwise all but
        those (NOTE [requires_grad_ on an argument]); ``between``: only (placeholder kind)
        those of arguments retained between their writes and their metadata calls, which
        the others' replay leaves out (NOTE [where an argument's retained gradient sits])."""
        grad_on = torch.is_grad_enabled()
        for op in self.meta.metadata_ops:
            kind, index = op.kind, op.index
            if kind != which:
                continue
            if kind == "placeholder" and ((index in self._early_meta) != (early is not None)
                                          or (index in self._between) != between):
                continue
            if kind == "placeholder":
                target = primals[index] if early is None else leaves[self._leaf_of_placeholder[index]]
            else:
                target = leaves[index]
            with torch.set_grad_enabled(grad_on and op.grad_enabled):
                getattr(target, op.method)(*op.args, **dict(op.kwargs))

    def _share_with_detached_leaves(self, out: list) -> None:
        """``v2 = v0.detach(); v2.requires_grad_()`` with both returned: eager's v0 owns the
        storage v2 shares. The runtime made v2 (a grad leaf, NOTE [new grad leaves]) before the
        graph ran, so v0 is moved into v2's memory: a detached alias of the leaf that its graph
        value is copied into (its gradient flows through that value, as in ``detached_alias``)."""
        meta = self.meta
        for o in meta.outputs:
            if o.new_leaf is None or o.kind != OutputKind.ALIAS_OF_OUTPUT or o.graph_output is None or \
                    meta.new_leaves[o.new_leaf].kind != "fresh":
                continue
            src = meta.outputs[o.source]
            leaf, value = out[o.index], out[src.index]
            if src.kind != OutputKind.FRESH or src.new_leaf is not None or src.poisoned or src.inference or \
                    not isinstance(value, torch.Tensor) or value.dtype != leaf.dtype or \
                    not fits(leaf, src.shape, src.stride, src.offset) or \
                    any(p.kind != OutputKind.SAME_AS_OUTPUT and p.source == src.index and p is not o
                        for p in meta.outputs if p.kind in (OutputKind.ALIAS_OF_OUTPUT, OutputKind.SAME_AS_OUTPUT)):
                continue
            shared = leaf.detach().as_strided(src.shape, src.stride, src.offset)
            if torch._debug_has_internal_overlap(shared) == 1:     # 1: overlaps (an expand)
                continue
            with torch.set_grad_enabled(torch.is_grad_enabled() and value.requires_grad):
                shared.copy_(value)
            for p in meta.outputs:              # ``return v0, v0``: every copy of it
                if p.index == src.index or (p.kind == OutputKind.SAME_AS_OUTPUT and p.source == src.index):
                    out[p.index] = shared

    def _grad_leaf(self, grad_leaves, j: int, value, onto=None):
        """Grad leaf ``j`` made inside; a "fresh" one gets ``value``, the graph's, or the memory
        of argument ``onto`` moved onto it (``a.data = t``: eager's leaf and ``a`` share it)."""
        leaf, spec = grad_leaves[j], self.meta.new_leaves[j]
        with torch.no_grad():
            if spec.kind == "fresh" and (value is not None or onto is not None):
                leaf.copy_(value) if onto is None else leaf.set_(
                    onto.untyped_storage(), spec.offset, spec.shape, spec.stride)
        return leaf

    def _outputs(self, leaves, values, grad_leaves=(), early_views=None) -> list:
        """Each output the caller gets: graph values, arguments, constants and aliases rebuilt
        as views (NOTE [alias regeneration] in regenerate.py)."""
        meta = self.meta
        out: list = [None] * len(meta.outputs)
        pending = []
        bases: dict[int, torch.Tensor] = {}      # intermediate base, laid out once per call
        # poisoned views first (NOTE [poisoned views] in outputs.py): each bumps its storage's
        # version, which every view of that storage shares; a view eager made after the write
        # (a no_grad or unbind view among them) must be made after the bump, or reading its
        # grad_fn would raise where eager's does not
        for o in sorted(meta.outputs, key=lambda o: not o.poisoned):
            if o.new_leaf is not None:
                out[o.index] = self._new_leaf_output(o, leaves, values, grad_leaves)
            elif o.kind in _OF_ARGUMENTS_OR_GRAPH:
                out[o.index] = self._direct_output(o, leaves, values, grad_leaves, early_views)
            elif o.kind == OutputKind.ALIAS_OF_INTERMEDIATE:
                base = self._intermediate_base(o, values, grad_leaves, bases)
                out[o.index] = alias(base, o) if o.graph_output is None else \
                    view_in_custom_function(base, o, values[self._slot[o.graph_output]]) \
                    if o.custom_view else detached_alias(base, o, values[self._slot[o.graph_output]])
            else:
                pending.append(o)
        self._aliases_of_outputs(out, pending, values)
        self._share_with_detached_leaves(out)
        if self._inference_outputs:
            as_inference_tensors(out, self._inference_outputs, self._inference_shared)
        if self._ordinary_outputs and torch.is_inference_mode_enabled():
            as_ordinary_tensors(out, self._ordinary_outputs)
        if self._moved_kind:
            as_moved_kind(out, self._moved_kind)
        return out

    def _new_leaf_output(self, o, leaves, values, grad_leaves):
        """An output that is a grad leaf made inside (NOTE [new grad leaves]): a "view" leaf
        already shares the argument's memory; a "fresh" one (requires_grad_ on a detach of a
        fresh value or of a view of an intermediate) gets the value the graph computed for it
        (another output that *is* this leaf, or an alias of one, gets it as it is)."""
        meta, k = self.meta, o.kind
        value, onto = None, leaves[o.source] if k == OutputKind.ALIAS_OF_INPUT else None
        if meta.new_leaves[o.new_leaf].kind == "fresh" and k in (OutputKind.FRESH, OutputKind.ALIAS_OF_INTERMEDIATE):
            value = values[self._slot[o.graph_output]] if o.graph_output is not None else \
                alias(values[self._slot[meta.intermediate_bases[o.source]]], o)
        elif meta.new_leaves[o.new_leaf].kind == "fresh" and o.graph_output is not None:
            # a detach of another output made a leaf (``v2 = v0.detach()`` ... then
            # ``v2.requires_grad_()``): its value is its own graph value
            value = values[self._slot[o.graph_output]]
        return self._grad_leaf(grad_leaves, o.new_leaf, value, onto)

    def _direct_output(self, o, leaves, values, grad_leaves, early_views):
        """A fresh graph value, an argument, a constant, or an alias of an argument."""
        k = o.kind
        if k == OutputKind.FRESH:
            t = values[self._slot[o.graph_output]]
            if o.index in self._restride and t.stride() != o.stride and t.numel() > 1:
                t = restride(t, o.shape, o.stride, o.offset)
            return t
        if k == OutputKind.IS_INPUT:
            return leaves[o.source]
        if k == OutputKind.CONSTANT:
            return self._constants[o.index]
        if o.at_call:
            return early_views[o.index]
        if o.base_new_leaf is not None:
            # a view of a grad leaf made inside over the argument's memory: eager's is a
            # view of that leaf (in place on it raises; its gradient goes to the leaf)
            return alias(self._grad_leaf(grad_leaves, o.base_new_leaf, None), o)
        if o.custom_view:
            return view_in_custom_function(leaves[o.source], o, values[self._slot[o.graph_output]])
        if o.graph_output is not None:
            return detached_alias(leaves[o.source], o, values[self._slot[o.graph_output]])
        # as_strided on the argument itself (capture picked one that holds the output):
        # as in eager, a view reaching outside the argument gets no gradient there
        return alias(leaves[o.source], o)

    def _intermediate_base(self, o, values, grad_leaves, bases: dict):
        """The tensor an alias of an intermediate is cut from, made once per call (``bases``).

        # NOTE [one storage per intermediate]
        Every view of one intermediate is cut from the same tensor, so they share storage as
        in eager. The graph's value is re-laid out only when its elements sit elsewhere in
        memory (a size-1 dimension's stride addresses nothing); a copy per output would leave
        the others stale after one is mutated."""
        c = self.meta.intermediate_bases[o.source]
        base = bases.get(c)
        if base is None:
            base = values[self._slot[c]]
            cand = self.meta.candidates[c]
            shape, stride, offset = cand.shape, cand.stride, cand.offset
            if base.storage_offset() != offset or \
                    addressing(base.shape, base.stride()) != addressing(shape, stride):
                base = restride(base, shape, stride, offset)
            if o.base_new_leaf is not None:
                # a view of a grad leaf made inside the function: eager's is a view of
                # that leaf (in place on it raises), so it is cut from the runtime's
                # leaf, which gets the graph's value (NOTE [new grad leaves])
                base = self._grad_leaf(grad_leaves, o.base_new_leaf, base)
            bases[c] = base
        return base

    def _aliases_of_outputs(self, out: list, pending: list, values) -> None:
        """Aliases of other outputs, once those exist."""
        while pending:
            waiting = []
            for o in pending:
                if any(p.index == o.source for p in pending):
                    waiting.append(o)            # its source is an alias not built yet
                    continue
                src = out[o.source]
                if o.kind == OutputKind.SAME_AS_OUTPUT:
                    out[o.index] = src
                elif o.custom_view:
                    out[o.index] = view_in_custom_function(src, o, values[self._slot[o.graph_output]])
                elif o.graph_output is not None:
                    out[o.index] = detached_alias(src, o, values[self._slot[o.graph_output]])
                else:
                    out[o.index] = alias(src, o)
            if len(waiting) == len(pending):
                raise AssertionError("output aliases form a cycle")  # capture never makes one
            pending = waiting


def _unread_placeholders(parts: ArtifactParts) -> frozenset:
    """The placeholders of a training artifact that get no gradient edge.

    # NOTE [unread placeholders]
    A placeholder the forward graph never reads and whose gradient the joint found None (a
    lifted tensor the function overwrote in its Python state before reading it) gets no
    gradient edge, as eager's function has none to it: autograd's engine runs every node that
    an edge reaches, even with no gradient, and one on a graph already freed would raise."""
    fw_placeholders = [n for n in parts.forward.nodes if n.op == "placeholder"]
    no_grad = {p for p, r in zip(parts.grad_inputs, parts.grad_reach) if not r} \
        if len(parts.grad_reach) >= len(parts.grad_inputs) else set()
    return frozenset(k for k, n in enumerate(fw_placeholders[:len(parts.plan.placeholders)])
                     if not n.users and k in no_grad)


def _placeholder_of(plan: InputPlan, i: int):
    """The placeholder argument leaf ``i`` is (following ``same``), or None for a member."""
    src = plan.sources[i]
    while src.kind == "same":
        src = plan.sources[src.index]
    return src.index if src.kind == "placeholder" else None


def _constant(text: str):
    """A returned non-tensor value, from its stored text (never eval'd)."""
    if text.startswith("torch.Size(") and text.endswith(")"):
        return torch.Size(ast.literal_eval(text[len("torch.Size("):-1]))
    if text in ("inf", "-inf", "nan"):
        return float(text)
    return ast.literal_eval(text)


def _fast_unflatten(spec):
    """tree_unflatten, specialised for the common shapes of a return value."""
    if spec is None:
        return lambda flat: flat
    if spec.is_leaf():
        return lambda flat: flat[0]
    if spec.type is tuple and all(spec.child(i).is_leaf() for i in range(spec.num_children)):
        return tuple
    return lambda flat: pytree.tree_unflatten(flat, spec)


def _make_grad_leaves(specs, leaves: list) -> list:
    """The leaves that require grad which the function makes
    (NOTE [new grad leaves] in capture/autograd_facts.py), made before the graph runs."""
    device = next((t.device for t in leaves if isinstance(t, torch.Tensor)), torch.device("cpu"))
    out = []
    for spec in specs:
        kind, src, shape, stride, offset = spec.kind, spec.source, spec.shape, spec.stride, spec.offset
        if kind == "argument":
            # an aliased argument given requires_grad_() (NOTE [new grad leaves]): the
            # caller's own tensor
            t = leaves[src]
        elif kind == "view":
            # a detach() shares the argument's memory and version counter, as eager's
            # ``a.detach()`` does; a no_grad view would carry a creation mode that makes
            # autograd raise after a later write of the argument
            t = leaves[src].detach()
            if (tuple(t.shape), tuple(t.stride()), t.storage_offset()) != \
                    (tuple(shape), tuple(stride), offset):
                t = t.as_strided(shape, stride, offset)
        else:
            t = restride(torch.empty(0, dtype=getattr(torch, spec.dtype), device=device), shape, stride,
                          offset, fill=False)
        # always: a no_grad view of an argument that requires grad reports requires_grad True
        # through its base, yet has no gradient edge until requires_grad_() gives it one
        t.requires_grad_()
        out.append(t)
    return out

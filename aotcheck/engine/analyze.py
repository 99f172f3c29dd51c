"""analyze: turn a capture's raw facts into view/mutation metadata.

The metadata is plain frozen data in one vocabulary: per argument leaf, what
the function did to it; per output leaf, what it is and what it aliases. It
round-trips through JSON (``to_json`` / ``from_json``) with a schema version.

Before::

    def f(x):                     # x: a non-leaf that requires grad
        x.mul_(2)
        return x.view(-1), x + 1

After (``print(meta.format())``)::

    input 0: data mutated (autograd saw it); requires_grad, non-leaf
    output 0: alias_of_input 0, requires_grad
    output 1: fresh (graph output 2), requires_grad
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from . import serial
from .capture.facts import (Candidate, HookSite, MemberFacts, MetadataOp, MovedKind, NewLeaf, NewLeafKind, Poison,
                            Retained, StorageSource)
from .capture.mode import TraceMode
from .capture.trace import Captured
from .signature import Signature, TensorSpec

SCHEMA_VERSION = 3     # 2: candidates, member metadata, metadata ops, new leaves, storage
                       # sources and the trace mode are records; 3: None for absence (no -1),
                       # kinds as Enums, retained tensors and hooks as records (engine/serial.py)

class OutputKind(enum.StrEnum):
    """What one output leaf is, to the caller."""
    FRESH = "fresh"                          # a new tensor computed by the graph
    IS_INPUT = "is_input"                    # the very argument tensor
    ALIAS_OF_INPUT = "alias_of_input"        # a view of (or shares storage with) an argument
    ALIAS_OF_INTERMEDIATE = "alias_of_intermediate"   # a view of a value that is not returned
    ALIAS_OF_OUTPUT = "alias_of_output"      # a view of (or shares storage with) another output
    SAME_AS_OUTPUT = "same_as_output"        # the very tensor of another output
    CONSTANT = "constant"                    # a non-tensor value (int, float, bool, str, None)


@dataclass(frozen=True)
class InputInfo:
    index: int                      # argument leaf index
    is_tensor: bool
    requires_grad: bool = False
    is_leaf: bool = True
    data_mutated: bool = False
    metadata_mutated: bool = False
    all_mutations_under_no_grad: bool = False   # invisible to autograd: no_grad, inference
                                                # mode, or through a detached alias
    requires_grad_after: bool = False
    via_base: bool = False          # mutated through its alias group's root (synthetic base)
    requires_grad_set: bool = False  # the function set its requires_grad (a leaf, flag flipped
                                     # to requires_grad_after; NOTE [requires_grad_ on an argument])


@dataclass(frozen=True)
class OutputInfo:
    index: int
    kind: OutputKind
    source: int | None = None       # input leaf / output / intermediate index, by kind
    graph_output: int | None = None # for fresh outputs: index among graph candidates; for an
                                    # alias of an input that is no autograd view of it (a detached
                                    # alias mutated with a value that requires grad): the candidate
                                    # its gradient flows through
    requires_grad: bool = False
    is_leaf: bool = True
    shape: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    offset: int = 0
    dtype: str = ""
    value: str = ""                 # repr, for constants
    multi_output_view: bool = False  # made by unbind/split: eager forbids in-place on it
    grad_dead_end: bool = False      # requires grad, but (as in eager) its gradient reaches no input
    new_leaf: int | None = None      # it is the grad leaf made inside, meta.new_leaves[k]
    base_new_leaf: int | None = None # a view of that grad leaf: cut from the leaf itself
    poisoned: Poison | None = None   # NOTE [poisoned views] in capture/outputs.py
    custom_view: bool = False        # a view made by a custom autograd.Function (or a view of
                                     # one): rebuilt as such, gradient through graph_output
    inference: bool = False          # an inference tensor in eager (made in inference_mode):
                                     # NOTE [inference outputs] in regenerate.py
    ordinary: bool = False           # an ordinary tensor in eager although the call is under
                                     # inference_mode (NOTE [ordinary outputs of an inference call])
    clips: tuple = ()                # (shape, stride, offset) per as_strided input cut through
                                     # (NOTE [as_strided clips] in recorder.py)
    from_root: bool = False          # rebuilt on the argument's own base (eager regenerated it)
    moved_kind: MovedKind | None = None   # handed back as a mix of kinds, as eager's
                                     # (NOTE [inference state moved by .data =] in capture/storage/watch.py)
    at_call: bool = False            # rebuilt from the argument before the runtime replays its
                                     # ``.data =`` (NOTE [views taken before .data =] in outputs.py)


@dataclass(frozen=True)
class MutationInfo:
    """A placeholder the runtime must update after the graph runs."""
    placeholder: int
    data: bool
    metadata: bool
    grad_mode: bool                 # replay with grad on (autograd saw the mutation)
    value_output: int | None       # graph candidate holding the new value
    final_shape: tuple[int, ...]
    final_stride: tuple[int, ...]
    final_offset: int
    storage_bytes: int | None = None # resize the storage to this many bytes first
    storage_source: StorageSource = StorageSource()   # set_() it onto: a new storage (that of
                                    # storage_output), or a placeholder's (as it was at the
                                    # call); a data write (value_output) comes first, into the old
    storage_output: int | None = None # a new storage_source: the candidate holding that storage
    grad_value_output: int | None = None # after the swap, copy_() this candidate into it under grad
                                    # mode (NOTE [grad writes after a swap] in swap_grad.py)
    final_dtype: str = ""           # the swap is ``x.data = y`` onto another dtype: y's
                                    # (NOTE [.data assignment] in runtime/writeback.py)
    old_grad_edge: bool = False     # the compiled function also takes the leaf's gradient node
                                    # of before the swap
                                    # (NOTE [set_ under no_grad onto another shape] in runtime/swap_grad.py)
    data_only: bool = False         # the swap is ``.data =``, never recorded by autograd
                                    # (NOTE [.data assignment of an argument that requires grad] in capture/storage/swaps.py)
    kept_grad_node: bool = False    # ``.data =`` onto another shape that kept the leaf's gradient
                                    # node: replayed as ``.data =``, after the compiled function
                                    # takes its input
                                    # (NOTE [.data = onto another shape while a use holds the node] in capture/storage/watch.py)


@dataclass(frozen=True)
class ViewMutationMeta:
    inputs: tuple[InputInfo, ...]
    outputs: tuple[OutputInfo, ...]
    mutations: tuple[MutationInfo, ...]
    member_metadata: tuple[MemberFacts, ...]  # NOTE [member storage swaps] in storage/swaps.py
    intermediate_bases: tuple[int, ...]      # graph candidate index of each intermediate base
    candidates: tuple[Candidate, ...]        # per graph candidate
    out_tree: str
    metadata_ops: tuple[MetadataOp, ...] = ()   # replayed in order
    new_leaves: tuple[NewLeaf, ...] = ()     # NOTE [new grad leaves] in capture/autograd_facts.py
    schema: int = SCHEMA_VERSION
    # eager's error at .backward() when a derivative on the path is not implemented (e.g. an
    # in-place acosh_): the compiled function raises it there too, never at compile time
    backward_error: str = ""
    trace_mode: TraceMode = TraceMode()     # which way capture traced it, and why
    # NOTE [imperative autograd on arguments and outputs] (runtime/imperative.py)
    retained: tuple[Retained, ...] = ()   # retain_grad() on the caller's tensors
                               # (NOTE [where an argument's retained gradient sits] in capture/autograd_facts.py)
    hooks: tuple[HookSite, ...] = ()      # per hook registered on an argument or a leaf made inside

    def to_json(self) -> str:
        return serial.dumps(self)

    @staticmethod
    def from_json(text: str) -> "ViewMutationMeta":
        """From ``to_json`` text; another schema's is a ``serial.SerialError`` (a ValueError)."""
        return serial.loads(ViewMutationMeta, text, schema=SCHEMA_VERSION)

    def format(self) -> str:
        """A readable, deterministic printout (used by explain and golden tests)."""
        lines = []
        for i in self.inputs:
            if not i.is_tensor:
                lines.append(f"input {i.index}: non-tensor")
                continue
            what = []
            if i.data_mutated:
                what.append("data mutated")
            if i.metadata_mutated:
                what.append("metadata mutated")
            if what:
                what[-1] += " (under no_grad)" if i.all_mutations_under_no_grad else " (autograd saw it)"
            if i.via_base:
                what.append("through its alias group's base")
            if i.requires_grad_set:
                what.append(f"requires_grad_({i.requires_grad_after}) called")
            flags = ("requires_grad" if i.requires_grad else "no grad") + \
                (", leaf" if i.is_leaf else ", non-leaf")
            lines.append(f"input {i.index}: {', '.join(what) or 'not mutated'}; {flags}")
        for o in self.outputs:
            desc = o.kind
            if o.custom_view:
                desc += f" {o.source} (custom Function view; gradient through graph output " \
                        f"{o.graph_output})"
            elif o.kind in (OutputKind.IS_INPUT, OutputKind.ALIAS_OF_INPUT):
                desc += f" {o.source}"
                if o.graph_output is not None:
                    desc += f" (detached; gradient through graph output {o.graph_output})"
            elif o.kind in (OutputKind.ALIAS_OF_OUTPUT, OutputKind.SAME_AS_OUTPUT):
                desc += f" {o.source}"
            elif o.kind == OutputKind.ALIAS_OF_INTERMEDIATE:
                desc += f" (base {o.source})"
            if o.custom_view:
                pass
            elif o.kind in (OutputKind.ALIAS_OF_OUTPUT, OutputKind.ALIAS_OF_INTERMEDIATE) and o.graph_output is not None:
                desc += f" (detached; gradient through graph output {o.graph_output})"
            elif o.kind == OutputKind.FRESH:
                desc += f" (graph output {o.graph_output})"
            elif o.kind == OutputKind.CONSTANT:
                desc += f" {o.value}"
            if o.new_leaf is not None:
                desc += f" (grad leaf {o.new_leaf}, made inside)"
            if o.kind != OutputKind.CONSTANT:
                desc += ", requires_grad" if o.requires_grad else ", no grad"
            lines.append(f"output {o.index}: {desc}")
        return "\n".join(lines)


def analyze(captured: Captured, sig: Signature) -> ViewMutationMeta:
    """Classify every argument and output of a captured function."""
    facts, plan = captured.facts, captured.plan
    by_placeholder = {f.placeholder: f for f in facts.inputs}
    inputs = []
    for i, spec in enumerate(sig.leaves):
        if not isinstance(spec, TensorSpec):
            inputs.append(InputInfo(i, False))
            continue
        src = plan.sources[i]
        while src.kind == "same":
            src = plan.sources[src.index]
        p = src.index
        f = by_placeholder[p]
        member = src.kind == "member"
        meta_mut = f.metadata_mutated if not member else any(m.leaf == i for m in facts.members)
        # an aliased argument given requires_grad_(): NOTE [new grad leaves]
        made_leaf = member and any(nl.kind is NewLeafKind.ARGUMENT and nl.source == i for nl in facts.new_leaves)
        mutated = f.data_mutated or meta_mut
        rg_after = f.requires_grad_after if not member else spec.requires_grad or f.requires_grad_after
        for op in facts.metadata_ops:
            if member and op.kind == "leaf" and op.index == i and op.method == "requires_grad_":
                rg_after = op.args[0]     # NOTE [requires_grad_ on an aliased argument]
        inputs.append(InputInfo(
            i, True, spec.requires_grad, spec.is_leaf, f.data_mutated, meta_mut,
            mutated and not f.autograd_saw_mutation,
            rg_after or made_leaf, member, f.requires_grad_set and not member))
    mutations = tuple(
        MutationInfo(f.placeholder, f.data_mutated, f.metadata_mutated, f.autograd_saw_mutation,
                     f.value_output, f.final_shape, f.final_stride, f.final_offset,
                     f.storage_bytes, f.storage_source, f.storage_output, f.grad_value_output,
                     f.final_dtype, f.old_grad_edge, f.data_only, f.kept_grad_node)
        for f in facts.inputs
        if f.data_mutated or f.metadata_mutated or f.storage_bytes is not None or f.storage_source.swapped)
    outputs = tuple(_classify(k, o) for k, o in enumerate(facts.outputs))
    return ViewMutationMeta(
        tuple(inputs), outputs, mutations,
        facts.members,
        facts.intermediate_outputs, facts.candidates, facts.out_tree, facts.metadata_ops,
        facts.new_leaves, trace_mode=captured.mode, retained=facts.retained, hooks=facts.hooks)


def _classify(k, o) -> OutputInfo:
    if not o.is_tensor:
        return OutputInfo(k, OutputKind.CONSTANT, value=o.value)
    common = dict(requires_grad=o.requires_grad, is_leaf=o.is_leaf, shape=o.shape,
                  stride=o.stride, offset=o.offset, dtype=o.dtype,
                  multi_output_view=o.multi_output_view, grad_dead_end=o.grad_dead_end,
                  custom_view=o.custom_view, new_leaf=o.new_leaf, inference=o.inference, ordinary=o.ordinary,
                  base_new_leaf=o.base_new_leaf, poisoned=o.poisoned, clips=o.clips,
                  from_root=o.from_root, at_call=o.at_call, moved_kind=o.moved_kind)
    if o.same_output is not None:
        return OutputInfo(k, OutputKind.SAME_AS_OUTPUT, o.same_output, **common)
    if o.is_input is not None:
        return OutputInfo(k, OutputKind.IS_INPUT, o.is_input, **common)
    if o.input_storage is not None:
        return OutputInfo(k, OutputKind.ALIAS_OF_INPUT, o.input_storage, graph_output=o.graph_output, **common)
    if o.base_output is not None:
        return OutputInfo(k, OutputKind.ALIAS_OF_OUTPUT, o.base_output, graph_output=o.graph_output, **common)
    if o.output_storage is not None:
        return OutputInfo(k, OutputKind.ALIAS_OF_OUTPUT, o.output_storage, **common)
    if o.base_intermediate is not None:
        return OutputInfo(k, OutputKind.ALIAS_OF_INTERMEDIATE, o.base_intermediate,
                          graph_output=o.graph_output, **common)
    return OutputInfo(k, OutputKind.FRESH, graph_output=o.graph_output, **common)

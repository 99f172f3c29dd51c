"""decide: inference or training, and the sentence that says why.

Training (an autograd.Function with a backward graph) is needed when grad
mode is on, some argument requires grad, and at least one of:

- some output that is not merely an alias of an argument requires grad
  (aliases of arguments are rebuilt as views at runtime, so autograd already
  gives them a correct grad_fn; not so a detached alias that an in-place op
  with a grad-requiring value gave a grad_fn of its own);
- some argument's data is mutated where autograd sees it, and the argument
  requires grad afterwards. This is PyTorch PR #128229: without it,
  ``a.mul_(2); return ()`` would silently lose the gradient through ``a``;
- grad mode off at the call, but an enable_grad region inside the function gives an
  output that requires grad, or writes an argument that requires grad (eager's autograd
  records that write);
- (grad mode on at the call or inside) an argument set_() onto another storage and then
  written with values that require grad (NOTE [grad writes after a swap]).

Example::

    >>> decide(meta_of(lambda x: x.view(-1)), sig)      # x requires grad
    Decision(mode='inference', reason='no output requires grad except aliases of arguments, ...')
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from .analyze import OutputKind, ViewMutationMeta
from .signature import Signature, TensorSpec


class CompileMode(enum.StrEnum):
    """What the engine compiles."""
    INFERENCE = "inference"     # one forward graph
    TRAINING = "training"       # a joint graph, partitioned into forward and backward


@dataclass(frozen=True)
class Decision:
    mode: CompileMode
    reason: str

    def __post_init__(self):
        object.__setattr__(self, "mode", CompileMode(self.mode))     # from a cache entry's JSON


def _alias_of_argument(meta: ViewMutationMeta, o) -> bool:
    """Is this output an argument, or an alias of one (possibly through other outputs)?"""
    seen = set()
    while o.kind in (OutputKind.SAME_AS_OUTPUT, OutputKind.ALIAS_OF_OUTPUT) and o.index not in seen:
        seen.add(o.index)
        o = meta.outputs[o.source]
    # a detached alias that an in-place op gave a grad_fn gets its gradient from the graph
    return o.kind == OutputKind.IS_INPUT or (o.kind == OutputKind.ALIAS_OF_INPUT and o.graph_output is None)


def decide(meta: ViewMutationMeta, sig: Signature) -> Decision:
    if sig.inference_mode:
        return Decision(CompileMode.INFERENCE, "called under inference_mode")
    regrad = [m.placeholder for m in meta.mutations if m.grad_value_output is not None]
    if regrad:
        return Decision(CompileMode.TRAINING, f"placeholder {regrad[0]} is set_() onto another storage and "
                                  "then written with values that require grad "
                                  "(NOTE [grad writes after a swap])")
    if not sig.grad_enabled:
        for o in meta.outputs:
            if o.kind != OutputKind.CONSTANT and o.requires_grad and not _alias_of_argument(meta, o):
                return Decision(CompileMode.TRAINING, f"grad mode is off at the call, but output {o.index} "
                                          "requires grad (an enable_grad region inside the function)")
        for i in meta.inputs:
            if i.data_mutated and i.requires_grad_after and not i.all_mutations_under_no_grad:
                return Decision(CompileMode.TRAINING, f"grad mode is off at the call, but argument {i.index} "
                                          "requires grad and is written inside an enable_grad "
                                          "region of the function, where autograd records it")
        return Decision(CompileMode.INFERENCE, "grad mode is off")
    if not any(isinstance(l, TensorSpec) and l.requires_grad for l in sig.leaves) and \
            not any(i.requires_grad_set and i.requires_grad_after for i in meta.inputs) and \
            not meta.new_leaves:
        rg_mut = [i.index for i in meta.inputs
                  if i.data_mutated and i.requires_grad_after and not i.all_mutations_under_no_grad]
        if not rg_mut:
            return Decision(CompileMode.INFERENCE, "no argument requires grad")
        return Decision(CompileMode.TRAINING, f"argument {rg_mut[0]} does not require grad but is mutated with "
                                  "values that do, so gradients flow through the mutation")
    for o in meta.outputs:
        if o.kind != OutputKind.CONSTANT and o.requires_grad and not _alias_of_argument(meta, o):
            return Decision(CompileMode.TRAINING, f"output {o.index} ({o.kind}) requires grad")
    for i in meta.inputs:
        if i.data_mutated and i.requires_grad_after and not i.all_mutations_under_no_grad:
            return Decision(CompileMode.TRAINING, f"argument {i.index} requires grad and its data is mutated "
                                      "outside no_grad, so gradients flow through the mutation "
                                      "(PyTorch PR #128229)")
    return Decision(CompileMode.INFERENCE, "no output requires grad except aliases of arguments, and no "
                               "argument that requires grad is mutated outside no_grad")

"""imperative: the runtime's part of the user's imperative autograd calls.

``retain_grad()`` and ``register_hook`` act on a tensor's autograd identity, which the traced
tensors do not share with the caller's; capture records them (``capture/recorder.py``) and
these functions make the same calls on the caller's tensors after a compiled call
(:func:`imperative_autograd`), and give retained outputs the gradient of the function's own
uses of them in the backward (:func:`add_retained`). ``art`` is the
:class:`~aotcheck.engine.runtime.artifact.CompiledArtifact` being run.
"""
from __future__ import annotations

import weakref

import torch

from ..analyze import OutputKind
from ..capture.facts import RetainKind

# NOTE [imperative autograd on arguments and outputs]
def imperative_autograd(art, leaves: list, out: list, values: list, at_call: dict) -> None:
    """``retain_grad()`` and ``register_hook`` act on a tensor's autograd identity, which
    the trace's tensors do not share with the caller's: capture records them (recorder.py)
    and the runtime makes the same calls on the caller's tensors. An argument's hook is
    registered on the caller's tensor, persisting after the call as eager's does, and is
    never traced into the joint (it would apply twice); before the call when the function
    registered it before writing the argument in place (it then belongs to the gradient of
    the argument as it was, as eager's), after the write-back otherwise. retain_grad() on an
    argument is made on the caller's tensor, where eager's hook ends
    (NOTE [where an argument's retained gradient sits] in capture/autograd_facts.py: before the replays
    when a metadata call follows it, else after the write-back, with the function's own part
    of the gradient added by the backward), and on a returned tensor on the output the
    caller gets, after the call.
    Hooks are Python callables: a cache entry records where they go (meta.hooks), and a
    hit collects them from a run of the function on fake arguments, as eager runs it
    (capture.trace.argument_hooks)."""
    for i, fn in art._hooks_after:
        leaves[i].register_hook(fn)
    own = {(r.kind, r.index): j for j, r in enumerate(art.retained_diff)}  # NOTE [retained outputs]
    compiled = next((v.grad_fn for v in values if isinstance(v, torch.Tensor)
                     and hasattr(v.grad_fn, "retained_refs")), None) if own else None
    for kind, index in ((r.kind, r.index) for r in art.meta.retained):
        if kind is RetainKind.ARGUMENT_AT_CALL:
            continue                # made before the replays (retain_at_call)
        t = out[index] if kind == "output" else leaves[index]
        if not isinstance(t, torch.Tensor) or not t.requires_grad:
            continue
        node = t.grad_fn if kind == "output" else compiled
        if node is not None and hasattr(node, "retained_refs"):
            if kind == "output":
                t = own_node(art, out, index, t)
            # an argument's own part: only where the call gave it a new node
            # (NOTE [retained outputs]); on its node at the call, its hook gets the whole gradient
            node_now = at_call.get(("v", index), t.grad_fn)     # retain_between's
            if (kind, index) in own and (kind == "output" or node_now is not at_call.get(index)):
                node.retained_refs[own[kind, index]] = weakref.ref(t)
        t.retain_grad()


def retain_at_call(art, leaves: list) -> dict:
    """retain_grad() on the arguments whose hook stays on their node at the call
    (NOTE [where an argument's retained gradient sits] in capture/autograd_facts.py), before the
    runtime replays their metadata calls: autograd leaves it there, as eager's. Returns the
    retained arguments' gradient nodes at the call."""
    at_call = {}
    for r in art.meta.retained:
        t = leaves[r.index] if r.on_argument else None
        if isinstance(t, torch.Tensor):
            at_call[r.index] = t.grad_fn
            if r.kind is RetainKind.ARGUMENT_AT_CALL and t.requires_grad:
                t.retain_grad()
    return at_call

def skip_unreached(hook):
    """A hook the runtime registers on a caller's tensor, skipped for a None gradient.

    The compiled function is one node with an edge to every argument that requires grad; a
    backward through only some of its outputs hands the others' arguments None
    (NOTE [per-output reach] in joint.py), and autograd still calls their tensor hooks, with None,
    where eager's backward never reaches their nodes: ``x.register_hook(lambda g: g * 2);
    return x * 2, y * 3`` and a backward through ``y * 3`` raised TypeError in the hook.
    (Eager does call a hook with None where a custom Function's backward returns None for
    its input; that call is not made.)"""
    def skipping(grad):
        return None if grad is None else hook(grad)
    skipping.__wrapped__ = hook
    return skipping


def retain_between(art, leaves: list, primals: list, nodes: dict) -> None:
    """retain_grad() on the arguments retained between their writes and their metadata calls
    (NOTE [where an argument's retained gradient sits] in capture/autograd_facts.py), after
    their write-back (made in their geometry at the call) and before their metadata calls
    are replayed: the hook stays on the write-back's node, as eager's on the last write's.
    ``nodes`` gets that node per argument, ("v", index)."""
    for r in art.meta.retained:
        if r.kind is RetainKind.ARGUMENT_BETWEEN:
            t = leaves[r.index]
            nodes["v", r.index] = t.grad_fn
            if t.requires_grad:
                t.retain_grad()
    art._replay_metadata(primals, leaves, "placeholder", between=True)


def own_node(art, out: list, k: int, t: torch.Tensor) -> torch.Tensor:
    """A retained output of the compiled function, on an autograd node of its own.

    PyTorch (2.13) raises an internal assert (``out != nullptr``, variable.cpp) when an
    output of a multi-output node that retains its grad is written in place after a
    sibling output was (eager's ``s, m = torch.std_mean(x); m.retain_grad(); s.add_(1);
    m.add_(1)`` raises too). Eager's retained tensors are usually the single output of
    their op, so a retained output of the compiled function (one node for all its outputs)
    is handed out as a clone, whose node is its own, where no other output aliases it."""
    if art.num_fw_outputs < 2 or any(
            o.kind in (OutputKind.ALIAS_OF_OUTPUT, OutputKind.SAME_AS_OUTPUT) and o.source == k and out[o.index] is not t
            for o in art.meta.outputs):
        return t
    c = t.clone()
    for j, x in enumerate(out):
        if x is t:
            out[j] = c
    return c


def add_retained(refs: dict, own: list, live: set, reach) -> None:
    """NOTE [retained outputs] (joint.py): each retained output's ``.grad`` gets the part
    of its gradient that the function's own uses of it give; autograd's retain_grad() hook
    has added the caller's part before this backward ran."""
    for j, g in enumerate(own):
        ref = refs.get(j)
        t = ref() if ref is not None else None
        if t is None or g is None or (reach is not None and not reach[j] & live):
            continue
        value = g.detach().clone() if t.grad is None else t.grad + g
        if value.shape == t.shape:
            t.grad = value
        else:
            # retained between its writes and its metadata calls: eager's .grad has the
            # shape of the value the hook stayed on, which the .grad setter refuses; a fresh
            # grad tensor is given that value in place, as eager's hook assigns it unchecked
            t.grad = torch.zeros_like(t)
            with torch.no_grad():
                t.grad.set_(value)

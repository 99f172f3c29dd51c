"""view_flags: ``requires_grad_()`` on an argument that another argument views or aliases.

Two cases, each with its NOTE: an argument viewed by another (taken before the call) whose
flag the function sets (``argument_views``, used by the functional run and the joint;
NOTE [views of an argument given requires_grad_]), and an argument of a mutated alias group
whose flag the function sets (``check_member_flags``, after capture;
NOTE [requires_grad_ on an aliased argument]).
"""
from __future__ import annotations

import torch

from ...errors import UnsupportedInputError
from .facts import RawFacts
from .plan import InputPlan
from ..signature import Signature


def argument_views(sig: Signature, plan: InputPlan) -> tuple[dict[int, list[int]], dict[int, bool]]:
    """The placeholders whose flag reads through another placeholder's, per base
    placeholder, and each one's own flag at the call.

    # NOTE [views of an argument given requires_grad_]
    ``f(a0, a1)`` with ``a1 = a0.t()`` taken before the call, neither requiring grad: after
    ``a0.requires_grad_()`` inside the function eager's ``a1`` requires grad too (a view
    reads ``requires_grad`` through its ``._base``), yet it has no grad_fn and no gradient
    edge (autograd regenerates a view's grad_fn only when its version moves), so
    ``v.add_(a1)`` gives a ``v`` that requires grad and sends no gradient anywhere;
    ``a0.requires_grad_(False)`` turns it back off, and ``a1.requires_grad_()`` gives it an
    edge of its own, for the uses that follow. A view made under no_grad or inference_mode
    reads through its base alike; a detach() is no view of the argument.

    In the trace each argument is a placeholder of its own, so when a capture sees a
    requires_grad setter called on such a base, it runs again with each such argument's
    work made a view of a leaf holding its value (``_as_argument_view``; only then, as the
    other facts, set_() among them, read arguments as non-views), and the recorder gives
    that leaf the flag the base's work gets: autograd then gives the view eager's flag and
    edges. Its own flag alone is the function's to set
    (NOTE [requires_grad_ on an argument]); the joint takes a gradient for it only where that is on, with the
    view as the target. Which argument is whose ``._base`` is in the signature (``GroupSpec.bases``).
    A mutated alias group's members are views of its synthetic base in the trace, outside
    this path.
    """
    views: dict[int, list[int]] = {}
    own: dict[int, bool] = {}
    for g in sig.groups:
        for j, i in zip(g.members, g.bases):
            if i is None or not sig.leaves[j].is_leaf or plan.sources[j].kind != "placeholder" \
                    or plan.sources[i].kind != "placeholder":
                continue
            q, p = plan.sources[j].index, plan.sources[i].index
            views.setdefault(p, []).append(q)
            # a leaf view requiring grad while its base does not sets its own flag
            own[q] = sig.leaves[j].requires_grad and not sig.leaves[i].requires_grad
    return views, own


def _as_argument_view(works: list, q: int, base_flag: bool, own: bool) -> torch.Tensor:
    """Make ``works[q]`` a view, taken before the function runs, of a leaf that holds its
    value and has its caller's base's flag; the view has its caller's own flag. Returns
    that leaf (NOTE [views of an argument given requires_grad_])."""
    leaf = works[q].detach()
    view = leaf.view(leaf.shape)
    leaf.requires_grad_(base_flag)
    if own:
        view.requires_grad_()
    works[q] = view
    return leaf


def caller_view(base: torch.Tensor, shape, stride, offset) -> torch.Tensor:
    """An aliased argument (a member of a synthetic base), rebuilt in the trace as the view its
    caller took before the call, with grad on: made in the call's grad mode (no_grad,
    inference_mode), the view would carry that creation mode, and an in-place op on it inside
    an enable_grad region of the function would raise where eager runs it
    (NOTE [non-leaf copies under no_grad] in functional_run.py)."""
    with torch.inference_mode(False), torch.enable_grad():
        return base.as_strided(shape, stride, offset)


# NOTE [requires_grad_ on an aliased argument]
def check_member_flags(graph, facts: RawFacts, plan: InputPlan) -> None:
    """``a0.requires_grad_()`` where ``a0`` shares storage with another argument that the
    function mutates (in data or metadata): in the trace ``a0`` is a view of the group's
    synthetic base, not the caller's tensor. The runtime replays the flag on the caller's
    tensor, in order with the members' metadata calls, so the caller's ``a0`` and the
    arguments that view it require grad afterwards, as in eager, and outputs that are those
    arguments, or views of them rebuilt after the call, have eager's autograd. A value the
    graph computes from the group's base would need its gradient sent to the caller's tensor
    (and, through eager's view rules, from the other members viewing it), which the joint
    does not model: refused, rather than returned without a gradient. Values computed from
    other arguments only are unaffected."""
    flipped = {plan.sources[op.index].index for op in facts.metadata_ops
               if op.kind == "leaf" and op.method == "requires_grad_" and op.args[0]}
    if not flipped:
        return
    nodes = list(graph.nodes)
    ph = [n for n in nodes if n.op == "placeholder"]
    bases = {ph[p] for p in flipped if p < len(ph)}
    out = next(n for n in nodes if n.op == "output").args[0]
    depends: dict = {}
    for n in nodes:                      # topological order
        depends[n] = n in bases or any(depends.get(a, False) for a in n.all_input_nodes)

    def reads_group(c: int) -> bool:
        v = out[c] if 0 <= c < len(out) else None
        return not isinstance(v, torch.fx.Node) or depends.get(v, True)

    for k, o in enumerate(facts.outputs):
        if not o.is_tensor or o.is_input is not None or o.same_output is not None or \
                (o.input_storage is not None and o.graph_output is None):
            continue
        used = [c for c in (o.graph_output,) if c >= 0]
        if o.base_intermediate is not None:
            used.append(facts.intermediate_outputs[o.base_intermediate])
        if any(reads_group(c) for c in used):
            raise UnsupportedInputError(
                f"output leaf {k} is computed from an argument that shares storage with another "
                "argument the function mutates, and the function calls requires_grad_() on one "
                "of them; aotcheck sets that argument's flag after the call but does not send "
                "gradients computed inside the function to it (or to the arguments that view "
                "it). Call requires_grad_() before passing it, or pass the arguments without "
                "aliasing")

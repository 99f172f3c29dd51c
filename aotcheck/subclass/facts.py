"""The outer-level facts of a call with tensor-subclass arguments (NOTE [outer-level facts]):
what the forward trace reads off the OUTER tensors (which output is an argument, an earlier
output, a view of an argument, a leaf made inside; which arguments moved, gained
requires_grad or were written), and their application to each call's real outer tensors.
Its callers: ``desugar`` (the facts read off the trace) and ``outer`` (applied at each call)."""
from __future__ import annotations

from dataclasses import replace

import torch
from torch._C._autograd import CreationMeta, _get_creation_meta

from ..engine.capture.functional import geometry_of
from ..engine.capture.outputs import poisoned_kind
from ..engine.runtime.regenerate import multi_output_view, poisoned_view
from ..errors import UnsupportedInputError
from .autograd import STALE as _STALE, grad_fn_of as _grad_fn, reaches as _reaches
from .autograd import (detached_written, new_leaf_kind, own_flag, remake_dropped,
                       remake_view_of_leaf, remake_view_of_new_leaf, routed_grad_set, view_home,
                       view_mode)
from .base import flatten, plain_part, storage_key, unflatten
from .records import LeafMade, Moved, OutFact, OuterFacts, ViewMode
from .wrapper_set import move_outer


# NOTE [outer-level facts]
# The compiled plain graph gives the right inner values, but eager's semantics are the OUTER
# tensors': which output is an argument or an earlier output, which one views an argument's
# storage (and so must be a view of that argument, with autograd through it), which is a fresh
# leaf made inside (``requires_grad_()`` under no_grad), and which arguments changed shape or
# gained requires_grad. The forward trace runs the user's function on outer tensors rebuilt
# from the traced inner ones, so it reads these facts off them; the runtime applies them to
# the real outer tensors after each call (``apply_facts``), hit or miss alike.

# NOTE [subclass inference views]
# A wrapper subclass's view op inside ``inference_mode`` makes its new wrapper there, so it is
# an inference tensor: on a wrapper that is none (``a.view(6)``) autograd's view bookkeeping
# then raises ('Cannot set version_counter for inference tensor'), while a composite op that
# gets there without a view op at the outer level (``a.narrow(0, 0, 2).reshape(2)``,
# ``flatten``) returns an inference wrapper over inner tensors that still share the argument's
# memory. That output is no view of the argument at the outer level, and writing it in place
# outside inference mode raises ('Inplace update to inference tensor outside InferenceMode'):
# it is rebuilt from the compiled graph's inner tensors (which alias the argument's) as an
# inference wrapper (``as_inference``), not as a view of the argument. For the trace to see
# this, it makes each argument as the caller made it, inside inference mode or not
# (``_rebuild_args`` in desugar.py), whatever the mode of the call.
#
# NOTE [subclass poisoned views]
# A view that autograd cannot rebuild after its base was written (made under no_grad of a
# base that requires grad, or one of an unbind's views;
# NOTE [poisoned views] in engine/capture/outputs.py): reading its grad_fn or is_leaf raises, and so does
# writing it in place. The trace reads its kind off the outer output (``poisoned_kind``); the call makes the
# same kind of view, of the argument it views (a "stale" view) or else of the compiled output over
# its memory, and bumps its version (``poisoned_view``), before any other output is made.

def outer_facts(outs: list, outer: list, before: list, hidden: dict | None = None) -> OuterFacts:
    """``before``: each outer argument's (geometry, requires_grad, grad_fn, version) at the call;
    ``hidden``: per argument view
    (NOTE [subclass views of an argument given requires_grad_] in autograd.py), its hidden leaf and its
    base's index; its requires_grad in
    ``before`` is its own flag."""
    hidden = hidden or {}
    by_leaf = {id(leaf): outer[i] for leaf, i in hidden.values()}
    keys = [storage_key(a) for a in outer]
    per_out = [_out_fact(i, o, outs, outer, before, keys, by_leaf) for i, o in enumerate(outs)]
    moved = {j: geometry_of(a) for j, a in enumerate(outer) if geometry_of(a) != before[j][0]}
    # an argument view's flag reads its base's: only its own counts
    grad_set = [j for j, a in enumerate(outer) if a.is_leaf and not before[j][1]
                and (own_flag(a) if j in hidden else a.requires_grad)]
    # and ``requires_grad_(False)`` on a leaf argument: the caller's flag is cleared after the
    # call (what was computed from it before keeps its edge; eager's AccumulateGrad then skips
    # a leaf that no longer requires grad)
    grad_unset = [j for j, a in enumerate(outer) if a.is_leaf and before[j][1]
                  and not (own_flag(a) if j in hidden else a.requires_grad)]
    # written in grad mode: autograd gave the argument a new grad_fn (a write under no_grad
    # leaves its history as it was), NOTE [subclass non-leaf writes]
    rebased = [j for j, a in enumerate(outer)
               if _grad_fn(a) is not None and _grad_fn(a) is not before[j][2]]
    # the values that reach the caller through the compiled graph: outputs that are no argument
    # or view of one (those are remade from the caller's argument, flag set), and arguments
    # written in grad mode
    through = [_grad_fn(o) for o, fact in zip(outs, per_out) if fact.through_graph]
    through += [_grad_fn(outer[j]) for j in rebased]
    reached = [j for j in grad_set if any(_reaches(n, outer[j]) for n in through)]
    written = [j for j, a in enumerate(outer) if version_of(a) != before[j][3]
               or geometry_of(a) != before[j][0]]
    family: dict = {}
    for j, (_, i) in hidden.items():
        kin = {i} | {v for v, (_, b) in hidden.items() if b == i}
        for k in kin:
            family[k] = kin
    routed = routed_grad_set(reached, moved, outer, keys, family, written)  # flagged before the call
    if routed != reached:
        raise UnsupportedInputError(
            "requires_grad_() on an argument inside a call with a tensor-subclass argument, "
            "and an output computed from it, where the argument's shape changed in place or it "
            "shares a storage with another argument: aotcheck sets the flag on the caller's "
            "argument after the call but does not route gradients to it, so it refuses this. "
            "Set requires_grad before the call")
    return OuterFacts(tuple(per_out), tuple(Moved(j, g) for j, g in moved.items()),
                      tuple(grad_set), tuple(grad_unset), tuple(rebased), tuple(written),
                      tuple(routed))


def _out_fact(i: int, o, outs: list, outer: list, before: list, keys: list, by_leaf: dict) -> OutFact:
    """The outer-level fact of output ``i``, ``o``."""
    same = next((j for j in range(i) if outs[j] is o), None)
    arg = next((j for j, a in enumerate(outer) if a is o), None)
    if same is not None:
        return OutFact(same_out=same)       # an earlier output: nothing else to remake
    if arg is not None:
        fact = OutFact(same_arg=arg)
    else:
        fact = _remade(o, outs, outer, before, keys, by_leaf)
        inner: list = []
        flatten(o, "returned value", inner)
        flags = tuple(t.is_inference() for t in inner)
        if o.is_inference() or any(flags):
            # made in inference mode inside (NOTE [inference outputs] in regenerate.py); a
            # TwoTensor view of one made outside it is no inference tensor, its inner tensors
            # are. One over an argument's memory too: NOTE [subclass inference views]
            fact = replace(fact, inference=True, outer_inference=o.is_inference(),
                           inner_inference=flags)
    # (a view made before its base came to require grad has no grad_fn: eager's is a leaf that
    # reads its flag through the base, and stays one)
    if (o._is_view() and o.requires_grad and not fact.poisoned
            and _get_creation_meta(o) == CreationMeta.MULTI_OUTPUT_NODE
            and _grad_fn(o) is not None):
        fact = replace(fact, multi_output=True)
    return fact


def _remade(o, outs: list, outer: list, before: list, keys: list, by_leaf: dict) -> OutFact:
    """The fact of an output that is no argument and no earlier output: a view of an argument
    (remade from it), a poisoned view, a leaf made inside, or the graph's value."""
    home = view_home(o, outer, keys, storage_key(o), plain_part, by_leaf)
    if home is not None and o.is_inference() and not outer[home].is_inference():
        home = None     # NOTE [subclass inference views]
    if home is not None and type(o) is not type(outer[home]):
        home = None     # NOTE [subclass output of another type over an argument's memory]
    if home is not None:
        fact = OutFact(home=home, geometry=geometry_of(o),
                       mode=view_mode(o, outer[home], before[home][2], by_leaf))
        if fact.mode is ViewMode.STALE:
            fact = replace(fact, poisoned=poisoned_kind(o))
        else:
            # NOTE [subclass output of another type over an argument's memory]
# ``v = a.diagonal(); v.set_(p)`` with ``a`` a TwoTensor and ``p`` a plain argument: eager's
# ``v`` stays a TwoTensor (``set_()`` keeps the wrapper's type), whose inner tensors are over
# ``p``'s memory. A view remade from ``p`` would be a plain tensor (the wrong type, silently;
# fuzz seed 1). An output of another type than the argument whose memory it holds is no view
# of it at the outer level: it is the compiled graph's value, whose inner tensors the plain
# engine makes aliases of ``p``'s memory, rebuilt as the subclass it was in the trace.

# see NOTE [subclass leaf made inside over an argument's memory]
            leaf = _leaf_made_inside(o, outer, by_leaf)
            if leaf:
                fact = replace(fact, mode=ViewMode.ALIAS, **leaf)
    elif poisoned_kind(o):
        # see NOTE [subclass poisoned views]
        fact = OutFact(poisoned=poisoned_kind(o))
    else:
        fact = OutFact(**_leaf_made_inside(o, outer, by_leaf))
    if fact.new_leaf and any(_reaches(_grad_fn(p), o) for p in outs
                             if _grad_fn(p) not in (None, _STALE)):
        raise UnsupportedInputError(
            "a call with a tensor-subclass argument returns a leaf it made with "
            "requires_grad_() and also an output computed from it; aotcheck "
            "does not route that output's gradient into the new leaf's .grad, so "
            "it refuses this. Return the leaf alone, or make it before the call")
    return fact


# NOTE [subclass leaf made inside over an argument's memory]
# A leaf made inside and given ``requires_grad_()`` may share an argument's memory: made
# under no_grad and ``set_()`` onto the argument (``v1.set_(a); v1.requires_grad_()``), or
# ``a.detach().requires_grad_()``. Eager's output is then a leaf that requires grad (its own
# ``.grad``, nothing reaches the argument) over the argument's memory, not a view of it, and
# a view of it is one of that leaf (eager refuses to write it in place). The storage makes it
# a view fact (the output is remade over the caller's argument, so that it aliases it as in
# eager), in mode ``"alias"`` (no autograd view of the argument), and the leaf facts
# (``new_leaf``, ``leaf_view``) remake that alias as the leaf, or a view of one, as for a leaf
# made over memory of its own.

def _leaf_made_inside(o: torch.Tensor, outer: list, by_leaf: dict) -> dict:
    """The leaf facts of an output (``OutFact`` fields) that is a leaf made inside with
    ``requires_grad_()`` (``new_leaf``) or a view in grad mode of one (``leaf_view``), else
    ``{}``. An argument, an argument's base or a hidden leaf standing for an argument
    (NOTE [subclass views of an argument given requires_grad_]) is no leaf made inside."""
    if not o._is_view():
        return {"new_leaf": LeafMade.LEAF} if o.requires_grad and o.is_leaf else {}
    base = o._base
    if id(base) in by_leaf or any(base is a or base is a._base for a in outer):
        return {}       # a view of an argument made under no_grad is a leaf too
    if o.requires_grad and o.is_leaf:
        return {"new_leaf": new_leaf_kind(o)}
    if base.is_leaf and base.requires_grad:
        # a view of a leaf made inside (``v1[:1]`` after ``v1.requires_grad_()``, or a view in
        # grad mode of one taken before it): eager refuses to write it in place
        return {"leaf_view": True, "leaf_edge": _reaches(_grad_fn(o), base)}
    return {}


def version_of(t):
    """``t._version``, or None for an inference tensor (which tracks none)."""
    return None if t.is_inference() else t._version


def stale_views(facts: OuterFacts, outer: list) -> dict:
    """Outputs that are views (made under no_grad, or by unbind, split, ...) of arguments written
    afterwards ("stale"), made before the write-back, as eager made them."""
    return {k: poisoned_view(outer[fact.home], fact.poisoned, fact.geometry)
            for k, fact in enumerate(facts.outs) if fact.view and fact.mode is ViewMode.STALE}


def apply_facts(facts: OuterFacts, outs: list, outer: list, moved: bool = True,
                early: dict | None = None) -> list:
    """The outer-level facts of the trace, applied to this call's real outer tensors
    (``moved=False``: the arguments' new shapes are already set; ``early``: the outputs made
    before the arguments were written back, ``stale_views``)."""
    for m in facts.moved if moved else ():
        with torch.no_grad():
            move_outer(outer[m.arg], *m.geometry)
    for j in facts.grad_set:
        outer[j].requires_grad_()
    for j in facts.grad_unset:
        outer[j].requires_grad_(False)
    # poisoned views first (NOTE [subclass poisoned views]): each bumps a version counter that
    # other views of its memory may share, and a view eager made after the write that poisoned
    # it must not see that bump (as in the runtime's _outputs). Stale views of arguments are
    # made before the write-back where there is one (``early``), else here
    poisoned = dict(early or {})
    for k, (o, fact) in enumerate(zip(outs, facts.outs)):
        if fact.poisoned and k not in poisoned:
            base, geometry = (outer[fact.home], fact.geometry) if fact.view \
                else (o, geometry_of(o))
            poisoned[k] = poisoned_view(base, fact.poisoned, geometry)
    res = []
    for k, (o, fact) in enumerate(zip(outs, facts.outs)):
        if fact.same_out is not None:
            o = res[fact.same_out]
        elif fact.same_arg is not None:
            o = outer[fact.same_arg]
        elif k in poisoned:
            o = poisoned[k]
        elif fact.view:
            (size, stride, offset), mode = fact.geometry, fact.mode
            a = outer[fact.home]
            if mode is ViewMode.WRITTEN:
                o = detached_written(a, (size, stride, offset), o)
            elif mode in (ViewMode.ALIAS, ViewMode.DETACHED):
                # alias: no view, and no in-place op (as_strided_ bumps the version it shares
                # with a); detached: a view of a's detach, as eager's ``a.detach()[0]``
                o = a.detach().as_strided(size, stride, offset)
                o = o.detach() if mode is ViewMode.ALIAS else o
            elif mode is ViewMode.DROPPED:
                o = remake_dropped(a, (size, stride, offset))
            else:
                with torch.set_grad_enabled(torch.is_grad_enabled() and mode is not ViewMode.NO_GRAD):
                    o = a.as_strided(size, stride, offset)
        if fact.leaf_view:
            o = remake_view_of_new_leaf(o, fact.leaf_edge)
        elif fact.new_leaf:
            o = remake_view_of_leaf(o) if fact.new_leaf is LeafMade.VIEW else o.detach().requires_grad_()
        if fact.multi_output:
            # one of several views of one op (unbind, split, chunk): eager refuses to write it
            # in place; so does a view made the same way (values and gradient unchanged)
            o = multi_output_view(o)
        res.append(o)
    made = {}
    for k, fact in enumerate(facts.outs):
        if fact.inference:
            made[id(res[k])] = as_inference(res[k], fact.outer_inference, fact.inner_inference)
    return [made.get(id(o), o) for o in res]


def as_inference(t: torch.Tensor, outer_flag: bool, flags: list) -> torch.Tensor:
    """``t`` as eager made it inside ``torch.inference_mode()``: the flagged inner tensors
    inference tensors over the same memory (so outputs that shared storage still do), the
    wrapper one when ``outer_flag``."""
    import contextlib

    flat: list = []
    desc = flatten(t, "returned value", flat)
    if t.is_inference() == outer_flag and [x.is_inference() for x in flat] == list(flags):
        return t        # already as eager's (a view of an inference argument): keep it a view
    new = []
    for x, flag in zip(flat, flags):
        if flag and not x.is_inference():
            with torch.inference_mode():
                x = torch.empty(0, dtype=x.dtype, device=x.device).set_(
                    x.untyped_storage(), x.storage_offset(), x.shape, x.stride())
        new.append(x)
    if desc is None:
        return new[0]
    with torch.inference_mode() if outer_flag else contextlib.nullcontext():
        return unflatten(desc, iter(new))

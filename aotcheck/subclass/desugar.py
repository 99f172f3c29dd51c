"""subclass.desugar: a call with tensor-subclass arguments as plain-tensor graphs.

``prepare`` flattens the call's arguments (NOTE [subclass keys] in ``__init__.py``);
``forward_graph`` traces the user's function on outer tensors rebuilt from the inner ones and
compiles the plain graph it gives, reading the outer-level facts off that trace
(NOTE [outer-level facts] in facts.py); ``joint_graph`` does the same for the outer-level backward
(NOTE [subclass autograd]). Each plain graph is compiled by a
:class:`~aotcheck.compiled.CompiledFunction` derived from the caller's::

    f(x: TwoTensor, y)  ->  inner(meta: str, x.a, x.b, y) -> (out_meta, flat outputs)
"""
from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass

import torch
from torch.utils import _pytree as pytree

from ..engine.capture.functional import geometry_of
from ..engine.capture.nondiff import refuse_nondiff_argument, refuse_nondiff_output
from ..errors import TraceError, UnsupportedInputError
from .autograd import (BaseFlags, argument_view_bases, as_argument_view, explain_forward, recorded_in_trace,
                       explain_inputs, outer_training, own_flag)
from .base import flatten, inner_count, save_primals, split_leaves, unflatten
from .facts import outer_facts, version_of
from .groups import grad_slots
from .imperative import ImperativeWatch
from .replay import OuterCallLog, as_before, compile_fake_else_real, split_rebased
from .wrapper_set import WrapperSetOntoPlain


@dataclass(frozen=True)
class ArgTree:
    """How a call's arguments are rebuilt from its inner tensors: ``meta`` (JSON: the pytree,
    each leaf's description, which outer tensors are one object, argument views' bases, the
    non-tensor values' types), ``descs`` (per leaf: ``"value"``, or how inner tensors make it)
    and the non-tensor ``values``."""

    meta: str
    descs: list
    values: list


@dataclass(frozen=True)
class Prepared:
    """A call with tensor-subclass arguments, flattened (``prepare``): its argument tree, its
    inner tensors, its outer tensors and, per outer tensor, whether it takes a gradient
    (``"leaf"``, ``"nonleaf"`` or False)."""

    tree: ArgTree
    tensors: list
    outer: list
    requires: list


@dataclass(frozen=True)
class JointSpec:
    """What the outer-level joint is traced for (``joint_graph``): per output, how its tangent
    is flattened (``tangent_descs``); the number ``n`` of primal inner tensors (the tangents'
    follow); the arguments written in place (``dirty``) and their metadata replay (``replay``);
    the alias ``groups``; whether the forward was traced with argument views (``views``)."""

    tangent_descs: list
    n: int
    dirty: list
    groups: list
    replay: dict
    views: bool = False


class _Alias(torch.autograd.Function):
    """A non-leaf that shares its input's storage (no view): what the forward trace hands the
    function for an argument that requires grad and is not a leaf, so that writing it in place
    is legal, as in eager, and writes the traced input."""

    @staticmethod
    def forward(ctx, t):
        return t.detach()

    @staticmethod
    def backward(ctx, g):
        return g


def _alias_argument(i: int, t):
    """``_Alias.apply(t)``, which remembers ``t``: a ``.data =`` of the alias is one of the
    traced input too (NOTE [subclass .data assignment]). Made with grad on: under a no_grad
    call the argument is a non-leaf that requires grad all the same
    (NOTE [subclass no_grad calls])."""
    with torch.enable_grad():
        a = _Alias.apply(t)
    a._aotcheck_argument = t
    return a


def _rebuild_args(tree: ArgTree, ts, requires: list | None = None, nonleaf=None, member=None,
                  inference: tuple = (), hidden: dict | None = None):
    """(args, kwargs, outer tensors, grad leaves) from plain inner tensors; with ``requires``
    (per outer tensor), the outer tensors that require grad are made autograd leaves, and
    ``nonleaf(i, leaf)`` gives what the function sees for outer tensor ``i`` if it was a
    non-leaf; ``member(i, t)``, when it returns a tensor, gives what the function sees for
    outer tensor ``i`` instead (a member of an alias group, NOTE [subclass alias groups]), with
    no grad leaf of its own. ``inference``: per outer tensor, whether the caller's is an
    inference tensor: it is made inside inference mode, the others outside it
    (NOTE [subclass inference views] in facts.py). ``hidden`` (a dict, filled here): with it, each
    argument that is a leaf view of another one is made a view of a hidden leaf, ``{view:
    (leaf, base)}``
    (NOTE [subclass views of an argument given requires_grad_] in autograd.py)."""
    meta = tree.meta
    it_t, it_v = iter(ts), iter(tree.values)
    leaves, outer, grad_leaves = [], [], []
    same = json.loads(meta)["same"]
    views = {j: (i, own) for j, i, own in json.loads(meta).get("bases", [])} \
        if hidden is not None else {}
    made: dict = {}             # per argument view: its place in grad_leaves
    for d in tree.descs:
        if d == "value":
            leaves.append(next(it_v))
            continue
        i = len(outer)
        with torch.inference_mode(inference[i]) if i < len(inference) else contextlib.nullcontext():
            t = unflatten(d, it_t)
        r = requires is not None and requires[len(outer)]
        if same[len(outer)] is not None:      # the object of an earlier argument; its grad goes there
            t = outer[same[len(outer)]]
            if r:
                grad_leaves.append(None)
        elif member is not None and (m := member(len(outer), t)) is not None:
            t = m
        elif i in views:            # made after the loop, when its base is
            made[i] = len(grad_leaves) if r else None
            if r:
                grad_leaves.append(None)
        elif r:     # a fresh wrapper: an autograd leaf, no op traced ("set": the function sets it)
            t = t if r == "set" else t.requires_grad_()
            grad_leaves.append(t)
            if r == "nonleaf" and nonleaf is not None:
                t = nonleaf(len(outer), t)
        outer.append(t)
        leaves.append(t)
    for j, g in made.items():
        base, own = views[j]
        r = requires is not None and requires[j]
        view, leaf = as_argument_view(outer[j], outer[base].requires_grad, own and r != "set")
        if g is not None and (own or r == "set"):
            grad_leaves[g] = view
        raw = outer[j]
        for k, t in enumerate(outer):       # it, and where it is passed again
            if t is raw:
                hidden[k] = (leaf, base)
                outer[k] = view
        leaves = [view if x is raw else x for x in leaves]
    args, kwargs = pytree.tree_unflatten(leaves, pytree.treespec_loads(json.loads(meta)["tree"]))
    return args, kwargs, outer, grad_leaves


def _flatten_out(out, box: dict, outer: list, before: list, hidden: dict | None = None) -> list:
    # a torch.Size is one value: pytree would rebuild it as a plain tuple
    out_leaves, spec = pytree.tree_flatten(out, is_leaf=lambda v: isinstance(v, torch.Size))
    odescs, flat_out = split_leaves(out_leaves, spec, "returned value")
    box["meta"] = {"tree": pytree.treespec_dumps(spec), "descs": odescs}
    box["values"] = [v for v, d in zip(out_leaves, odescs) if d == "value"]
    box["diff"] = [o.requires_grad for o in out_leaves if isinstance(o, torch.Tensor)]
    for k, o in enumerate(out_leaves):
        if isinstance(o, torch.Tensor):
            # NOTE [outputs of a non-differentiable dtype that require grad] (capture/nondiff.py)
            refuse_nondiff_output(k, o, o.requires_grad)
    box["recorded"] = recorded_in_trace([o for o in out_leaves if isinstance(o, torch.Tensor)], before)
    box["spec"] = spec
    box["facts"] = outer_facts([o for o in out_leaves if isinstance(o, torch.Tensor)], outer, before,
                               hidden)
    return [t for t in flat_out if isinstance(t, torch.Tensor)]


def _compile(owner, plain, tensors: list, grad: bool, real: bool = False):
    """Trace ``plain`` over fake copies of ``tensors`` (``real``: real copies,
    NOTE [subclass joint on real tensors]; no functionalization: in-place ops stay in-place on the graph's
    inputs) into a plain-tensor graph, and compile it with the ordinary engine."""
    from ..engine.capture.functional import TraceGuard, compiling, guard_trace, make_fx_exact
    from ..engine.rng.layout import DrawLikeEager
    from ..engine.rng.seeding import GlobalGeneratorGuard, fresh_generators

    def traced(*ts):
        with TraceGuard(), DrawLikeEager(), WrapperSetOntoPlain():
            return plain(*ts)
    fakes = save_primals(tensors) if real else [t.detach() for t in tensors]
    # NOTE [subclass random draws]
    # The outer trace watches the generators as the plain
    # engine's does (engine/rng/seeding.py): seeding the default generator inside the function becomes
    # an aotcheck op of this graph (not a real seeding at trace time), and a torch.Generator
    # made inside is reset before its first draw on every call (eager makes it anew), which
    # also lets the cache store the graph
    with torch.enable_grad() if grad else torch.no_grad(), compiling(), \
            GlobalGeneratorGuard() as generators:
        gm = guard_trace(lambda: make_fx_exact(traced, tracing_mode="real" if real else "fake")(*fakes))
    fresh_generators(gm, generators)
    random = any(torch.Tag.nondeterministic_seeded in getattr(n.target, "tags", ())
                 for n in gm.graph.nodes if n.op == "call_function")
    if grad and random and any(t.device.type != "cpu" for t in tensors):
        raise UnsupportedInputError(
            "a function with a tensor-subclass argument on a non-CPU device that requires "
            "grad draws random numbers; aotcheck replays the forward's draws in the backward "
            "from the CPU generator only, so it refuses it. Call it without grad, or on CPU")
    # NOTE [subclass trace]
    # the desugared graph is compiled, and persistently cached, as a
    # function that closes over the graph AND the user's function: a GraphModule's fingerprint
    # is its code, which does not hold the values of tensor constants made inside the function
    # (``torch.tensor([2., 3.])``); the user's function's fingerprint does (tested). Rebuilding
    # outputs and gradients (types, ctx, sizes) uses this process's own trace (always run,
    # keyed in memory by the subclass types and ctx), so a hit for an equal plain graph from
    # another subclass is still right.
    user_fn = owner.call_fn

    def desugared(*ts):
        _ = user_fn          # read, so that the fingerprint covers it
        return gm(*ts)
    desugared.graph_module = gm
    desugared.random = random
    return owner.derived(desugared)


def prepare(args: tuple, kwargs: dict) -> Prepared:
    """The call's arguments flattened into inner tensors, and what rebuilds them."""
    leaves, spec = pytree.tree_flatten((args, kwargs))
    descs, flat = split_leaves(leaves, spec, "argument")
    try:
        tree = pytree.treespec_dumps(spec)
    except Exception as e:  # an unregistered container
        raise UnsupportedInputError(f"argument tree {spec} cannot be serialised: {e}") from e
    values = [v for v in flat if not isinstance(v, torch.Tensor)]
    tensors = [t for t in flat if isinstance(t, torch.Tensor)]
    outer = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
    # one tensor passed twice is one object inside the function too (eager writes both)
    same = [next((j for j in range(i) if outer[j] is t), None) for i, t in enumerate(outer)]
    fields = {"tree": tree, "descs": descs, "same": same,
              "values": [[type(v).__name__, repr(v)] for v in values]}
    bases = argument_view_bases(outer)      # NOTE [subclass views of an argument given requires_grad_]
    if bases:
        fields["bases"] = bases
    meta = json.dumps(fields, sort_keys=True)
    grad = torch.is_grad_enabled() and not torch.is_inference_mode_enabled()
    requires = [grad and t.requires_grad and ("leaf" if t.is_leaf else "nonleaf") for t in outer]
    return Prepared(ArgTree(meta, descs, values), tensors, outer, requires)


def desugared(owner, args: tuple, kwargs: dict):
    """For ``explain``: the compiled plain forward graph of this call and its plain inputs,
    those requiring grad where their outer tensor does (the outer-level decision), a
    (mode, reason) that overrides the plain graph's decision, or False, and where an argument
    requires grad, ``explain_forward``'s fallback, else False."""
    call = prepare(args, kwargs)
    descs, tensors, outer, requires = call.tree.descs, call.tensors, call.outer, call.requires
    compiled, box = forward_graph(owner, call.tree, tensors, traced_requires(outer, requires),
                                  inference_args(outer))
    # the desugared graph writes a non-leaf's alias (a detach), so it decides inference; the
    # call itself needs training: NOTE [subclass non-leaf writes]
    written = box["alias"] and ("training", "an argument that requires grad and is not a leaf "
                                "is written in place (at the outer level of a tensor subclass)")
    written = written or outer_training(box, requires)
    grads = []                      # per inner tensor: (its outer one requires grad, in a subclass)
    for d, r in zip([d for d in descs if d != "value"], requires):
        grads += [(bool(r), d is not None)] * inner_count(d)
    return compiled.fn.graph_module, explain_inputs(tensors, grads), written, \
        any(requires) and explain_forward(tensors)


# NOTE [subclass no_grad calls]
# Under no_grad, eager's arguments still require grad where they did: a view of one requires
# grad too (with no grad_fn), a view of its ``detach()`` does not, and a view taken before a
# write of the argument is poisoned (reading its grad_fn raises:
# NOTE [poisoned views] in engine/capture/outputs.py). No gradient flows, so ``requires`` (what takes a
# gradient) is all False then; the forward trace still gives those arguments the flag, as grad leaves, so
# that its outer-level facts (NOTE [outer-level facts]) see what eager's views see; a non-leaf stays
# one (a ``"nonleaf"``, traced again as a non-leaf alias where it is written in place: writing
# a leaf that requires grad in an ``enable_grad`` region raises, writing eager's non-leaf does not).

def traced_requires(outer: list, requires: list) -> list:
    """Per outer tensor, whether the forward trace makes it require grad: ``requires``, or,
    under no_grad (not inference mode), the caller's flag (NOTE [subclass no_grad calls])."""
    if torch.is_grad_enabled() or torch.is_inference_mode_enabled():
        return requires
    return [t.requires_grad and ("leaf" if t.is_leaf else "nonleaf") for t in outer]


def inference_args(outer: list) -> tuple:
    """Per outer tensor, whether it is an inference tensor: the forward trace makes it as the
    caller made it, whatever the mode of the call (NOTE [subclass inference views])."""
    return tuple(t.is_inference() for t in outer)


def _member_view(roots: dict, g: int, t, group: dict, i: int):
    """Member ``i`` of a group that takes no gradient, as a view of the group's root over the
    inputs' memory (``t``: the first member's tensor makes it),
    NOTE [subclass alias groups written with grad]."""
    if g not in roots:
        # no view itself (a detach): the root member is it, as eager's base is no view (an
        # in-place op on a view made before its base came to require grad raises in PyTorch)
        roots[g] = (t.detach().as_strided(*group["root"]).detach(),) * 2
    root = roots[g][0]
    return root if group["input"] == i else root.as_strided(*group["geoms"][str(i)])


def forward_graph(owner, tree: ArgTree, tensors, requires, inference: tuple = (),
                  groups: tuple = (), caller_flags: tuple | None = None):
    """The compiled plain forward graph of the call and the facts of its trace (a box);
    ``groups``: arguments traced as views of one root
    (NOTE [subclass alias groups written with grad]); ``caller_flags``: per outer tensor, the caller's
    requires_grad."""
    box: dict = {"alias": False, "views": False}
    bases = {i for _, i, _ in json.loads(tree.meta).get("bases", [])}
    member_of = {i: g for g, grp in enumerate(groups) for i in grp["members"]}

    def plain(*ts):
        nonleaf = _alias_argument if box["alias"] else None
        hidden = {} if box["views"] else None
        roots: dict = {}

        def member(i, t):
            g = member_of.get(i)
            return None if g is None else _member_view(roots, g, t, groups[g], i)
        args, kwargs, outer, _ = _rebuild_args(tree, ts, requires, nonleaf, member if groups else None,
                                               inference=inference, hidden=hidden)
        before = [(geometry_of(a), own_flag(a) if j in (hidden or {}) else a.requires_grad,
                   a.grad_fn, version_of(a)) for j, a in enumerate(outer)]
        # NOTE [subclass metadata replay] (replay.py)
        # NOTE [subclass imperative autograd] (imperative.py)
        with OuterCallLog(outer) as log, BaseFlags(outer, hidden or {}) as flags, \
                ImperativeWatch(outer, requires, caller_flags) as imperative:
            res = owner.call_fn(*args, **kwargs)
        for j, a in enumerate(outer):   # NOTE [outputs of a non-differentiable dtype that require grad]
            refuse_nondiff_argument(j, a.dtype, before[j][1], a.requires_grad)
        retained, early = imperative.check(res), imperative.retained_before()
        box["retained"] = [j for j in retained if j not in early]
        box["retained_before"] = [j for j in retained if j in early]
        box["hooks"] = imperative.hooks()
        box["data_assigned"] = imperative.data_assigned
        box["data_held"] = imperative.held(res)
        box["in_descs"] = tree.descs
        box["flips_base"] = bool(flags.flags_set & bases)
        out = _flatten_out(res, box, outer, before, hidden)
        box["facts"] = split_rebased(box["facts"], log, outer)
        return out

    def trace(grad: bool):
        box["flips_base"] = False
        try:
            compiled = compile_fake_else_real(
                lambda real: _compile(owner, plain, tensors, grad=grad, real=real))
        except UnsupportedInputError:
            if box["views"] or not box["flips_base"]:
                raise       # else the facts of the views' trace decide
        if box["flips_base"] and not box["views"]:
            # see NOTE [subclass views of an argument given requires_grad_]
            box["views"] = True
            compiled = compile_fake_else_real(
                lambda real: _compile(owner, plain, tensors, grad=grad, real=real))
        return compiled

    try:
        return trace(torch.is_grad_enabled()), box
    except TraceError as e:
        if "nonleaf" not in requires or "in-place operation" not in str(e):
            raise
    # a non-leaf argument that requires grad is written: trace again with it a non-leaf alias
    # (only then, so that other graphs hold no extra ``detach``)
    box["alias"] = True
    return trace(torch.is_grad_enabled()), box


def joint_graph(owner, tree: ArgTree, tensors, requires, spec: JointSpec):
    """The backward at the OUTER level (eager's autograd over the subclass), desugared:
    ``(inner primals, inner tangents) -> inner gradients`` (NOTE [subclass autograd]); the
    arguments in ``spec.dirty`` were written in place (NOTE [subclass non-leaf writes]); the
    members of ``spec.groups`` are views of their group's root (NOTE [subclass alias groups]).
    One gradient per input of :class:`Outer` that takes one (``grad_slots``). ``spec.views``:
    the forward was traced with argument views
    (NOTE [subclass views of an argument given requires_grad_] in autograd.py)."""
    tangent_descs, n, dirty, groups, replay = spec.tangent_descs, spec.n, spec.dirty, spec.groups, \
        spec.replay
    box: dict = {}
    member_of = {i: g for g, grp in enumerate(groups) for i in grp["members"]}

    def plain(*ts):
        roots: dict = {}

        def member(i, t):
            g = member_of.get(i)
            if g is None:
                return None
            size, stride, offset = groups[g]["root"]
            if not groups[g]["grad"]:       # NOTE [subclass alias groups written with grad]
                return _member_view(roots, g, t, groups[g], i)
            if g not in roots:
                # the root, over the primals' storage, as a grad leaf; the function sees views
                # of its clone (laid out as the root: NOTE [subclass alias groups])
                r = t.detach().as_strided(size, stride, offset).requires_grad_()
                roots[g] = (r, r.clone(memory_format=torch.preserve_format))
            r, rc = roots[g]
            if requires[i] and groups[g]["input"] == i and i in replay:
                # the member that is the root, its shape changed in place: no view, as
                # eager's base (autograd rebuilds a view written after its base changed
                # shape by replaying the view's ops on it: 'invalid gradient', fuzz seed 1)
                return rc
            msize, mstride, moffset = groups[g]["geoms"][str(i)]
            return (rc if requires[i] else rc.detach()).as_strided(msize, mstride, moffset - offset)

        hidden = {} if spec.views else None
        args, kwargs, outer, leaves = _rebuild_args(tree, ts[:n], requires, lambda i, t: t.clone(),
                                                    member, hidden=hidden)
        with BaseFlags(outer, hidden or {}), ImperativeWatch(outer, requires):
            res = owner.call_fn(*args, **kwargs)
        outs = [o for o in pytree.tree_leaves(res) if isinstance(o, torch.Tensor)]
        # each written argument as it was at its last write (NOTE [subclass metadata replay])
        outs += [as_before(outer[i], replay[i].after, replay[i].shapes) if i in replay else outer[i]
                 for i in dirty]
        it = iter(ts[n:])
        ys, gs = [], []
        for o, d in zip(outs, tangent_descs):
            if d != "none" and o.requires_grad:
                ys.append(o)
                gs.append(unflatten(d, it))
        it_l = iter(leaves)
        same = json.loads(tree.meta)["same"]
        by_input = {i: next(it_l) for i, r in enumerate(requires)
                    if r and (same[i] is not None or i not in member_of)}
        for g, grp in enumerate(groups):
            if grp["grad"]:
                by_input[grp["input"]] = roots[g][0]
        leaves = [by_input.get(i) for i in grad_slots(requires, groups)]
        # a leaf the function gave requires_grad_(False) takes no gradient (eager's
        # AccumulateGrad skips a leaf that no longer requires grad)
        leaves = [x if x is not None and x.requires_grad else None for x in leaves]
        xs = [x for x in leaves if x is not None]
        got = iter(torch.autograd.grad(ys, xs, gs, allow_unused=True) if ys and xs
                   else [None] * len(xs))
        got = [None if x is None else next(got) for x in leaves]
        gflat: list = []
        box["descs"] = ["none" if g is None else flatten(g, "gradient", gflat) for g in got]
        return gflat

    return compile_fake_else_real(
        lambda real: _compile(owner, plain, tensors, grad=True, real=real)), box


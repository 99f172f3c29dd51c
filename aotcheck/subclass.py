"""Traceable wrapper tensor subclasses (``__tensor_flatten__``/``__tensor_unflatten__``, e.g.
``TwoTensor``) as arguments and outputs, handled at the API boundary; the engine stays
plain-tensor only.

A call with a subclass argument is rewritten into a call over plain tensors::

    f(x: TwoTensor, y)  ->  inner(meta: str, x.a, x.b, y)

``inner`` rebuilds ``x`` with ``__tensor_unflatten__(inner_tensors, ctx, outer_size,
outer_stride)`` from ``meta``, calls ``f``, and returns ``(out_meta: str, flat_outputs)``
where subclass outputs are flattened into their inner tensors. ``inner`` is compiled by an
ordinary :class:`~aotcheck.api.AotFunction`.

NOTE [subclass keys]: ``meta`` (the argument tree, and per subclass argument its type,
flatten ctx, inner attribute names, outer size and stride) is a *str argument*, and the
signature records str arguments by exact value, so the in-memory and the persistent keys
both change with the subclass type or ctx. ``out_meta`` is a str *output* (a constant of
the traced graph), so it is cached with the artifact and a cache hit can rebuild the
subclass outputs without tracing.

NOTE [subclass autograd]: eager autograd records at the OUTER level (``x.grad`` of a
TwoTensor leaf is a TwoTensor; the inner tensors do not require grad). When grad is
needed, :class:`_Outer` (an ``autograd.Function`` over the outer tensors) runs ``inner`` on
detached inner tensors that require grad where the outer one does; its backward flattens
the subclass tangents, backpropagates through the compiled graph and unflattens the
gradients with each argument's ctx.

NOTE [subclass limits]: ctx must be plain data (None, bool, int, float, str, tuples, lists,
str-keyed dicts, torch.dtype) and the class importable by module and qualified name. Refused
by name: a call that returns a leaf it made with ``requires_grad_()`` together with an output
computed from it, ``requires_grad_()`` on an argument whose shape it changed or that shares a
storage with another argument, together with an output (or a written argument) computed from
it (NOTE [requires_grad_ on a subclass argument] in subclass_autograd.py), random draws with
grad on a non-CPU device, and arguments that share a storage, are written, and require grad
without being views of one dense base (NOTE [subclass alias groups]). Anything else raises a
named error, never a wrong result. Eager's outer-level semantics (outputs that are arguments or
views of them, writes, reshapes) follow NOTE [outer-level facts] (subclass_facts.py) and NOTE
[subclass non-leaf writes].
"""
from __future__ import annotations

import contextlib
import importlib
import json

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from .engine.capture.functional import geometry_of, storage_ref
from .engine.signature import call_key
from .errors import TraceError, UnsupportedInputError
from .subclass_autograd import (BaseFlags, argument_view_bases, as_argument_view, explain_forward,
                                explain_inputs, flag_before_call, needs_history, outer_training,
                                own_flag)
from .subclass_replay import (OuterCallLog, as_before, compile_joint, dirty_values, split_rebased,
                              write_back)
from .subclass_facts import apply_facts, outer_facts, plain_part, stale_views, storage_key, version_of
from .subclass_set import WrapperSetOntoPlain, move_outer

_PLAIN = (torch.Tensor, torch.nn.Parameter)


def has_subclass(args: tuple, kwargs: dict) -> bool:
    """Whether any argument leaf is a traceable wrapper subclass."""
    return any(isinstance(t, torch.Tensor) and type(t) not in _PLAIN and is_traceable_wrapper_subclass(t)
               for t in pytree.tree_leaves((args, kwargs)))


# ---- plain-data encoding of ctx and classes ----

def _enc(v, where: str):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, torch.dtype):
        return {"dtype": str(v).replace("torch.", "")}
    if isinstance(v, (tuple, list)):
        return {"tuple" if isinstance(v, tuple) else "list": [_enc(x, where) for x in v]}
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return {"dict": {k: _enc(x, where) for k, x in v.items()}}
    raise UnsupportedInputError(
        f"{where}: its __tensor_flatten__ ctx holds a {type(v).__name__}; aotcheck supports "
        "subclass ctx made of None, bool, int, float, str, torch.dtype, tuples, lists and "
        "str-keyed dicts")


def _dec(v):
    if not isinstance(v, dict):
        return v
    (tag, x), = v.items()
    if tag == "dtype":
        return getattr(torch, x)
    if tag == "tuple":
        return tuple(_dec(e) for e in x)
    if tag == "list":
        return [_dec(e) for e in x]
    return {k: _dec(e) for k, e in x.items()}


def _class_name(cls: type, where: str) -> str:
    name = f"{cls.__module__}:{cls.__qualname__}"
    if _load_class(name) is not cls:
        raise UnsupportedInputError(
            f"{where}: tensor subclass {cls.__qualname__} is not importable as {name}; "
            "aotcheck supports subclasses defined at module level")
    return name


def _load_class(name: str):
    mod, _, qual = name.partition(":")
    try:
        obj = importlib.import_module(mod)
        for part in qual.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    return obj


# ---- flatten / unflatten ----

def flatten(t, where: str, flat: list):
    """Append t's plain inner tensors (recursively) to ``flat``; return its plain-data desc
    (None for a plain tensor)."""
    if type(t) in _PLAIN or isinstance(t, FakeTensor):     # FakeTensor: while tracing
        flat.append(t)
        return None
    if not is_traceable_wrapper_subclass(t):
        raise UnsupportedInputError(
            f"{where} is a tensor subclass ({type(t).__name__}) without __tensor_flatten__ and "
            "__tensor_unflatten__; aotcheck supports plain torch.Tensor, nn.Parameter and "
            "traceable wrapper subclasses")
    attrs, ctx = t.__tensor_flatten__()
    inner = [flatten(getattr(t, a), f"{where}.{a}", flat) for a in attrs]
    return {"type": _class_name(type(t), where), "ctx": _enc(ctx, where), "attrs": list(attrs),
            "size": list(t.shape), "stride": list(t.stride()), "inner": inner}


def unflatten(desc, it):
    """Rebuild one value from its desc, taking its inner tensors from iterator ``it``."""
    if desc is None:
        return next(it)
    inner = {a: unflatten(d, it) for a, d in zip(desc["attrs"], desc["inner"])}
    cls = _load_class(desc["type"])
    return cls.__tensor_unflatten__(inner, _dec(desc["ctx"]), tuple(desc["size"]), tuple(desc["stride"]))


def _count(desc) -> int:
    return 1 if desc is None else sum(_count(d) for d in desc["inner"])


def _split(leaves: list, spec, where: str):
    """(descs, flat): per leaf a desc (None: plain tensor, "value": non-tensor) and the flat
    list of plain leaves."""
    descs, flat = [], []
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, torch.Tensor):
            descs.append(flatten(leaf, f"{where} leaf {i}", flat))
        else:
            descs.append("value")
            flat.append(leaf)
    return descs, flat


def _join(descs: list, flat) -> list:
    it = iter(flat)
    return [next(it) if d == "value" else unflatten(d, it) for d in descs]


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


def _rebuild_args(meta: str, descs: list, values: list, ts, requires: list | None = None,
                  nonleaf=None, member=None, inference: tuple = (), hidden: dict | None = None):
    """(args, kwargs, outer tensors, grad leaves) from plain inner tensors; with ``requires``
    (per outer tensor), the outer tensors that require grad are made autograd leaves, and
    ``nonleaf(i, leaf)`` gives what the function sees for outer tensor ``i`` if it was a
    non-leaf; ``member(i, t)``, when it returns a tensor, gives what the function sees for
    outer tensor ``i`` instead (a member of an alias group, NOTE [subclass alias groups]), with
    no grad leaf of its own. ``inference``: per outer tensor, whether the caller's is an
    inference tensor: it is made inside inference mode, the others outside it (NOTE [subclass
    inference views] in subclass_facts.py). ``hidden`` (a dict, filled here): with it, each
    argument that is a leaf view of another one is made a view of a hidden leaf, ``{view:
    (leaf, base)}`` (NOTE [subclass views of an argument given requires_grad_] in
    subclass_autograd.py)."""
    it_t, it_v = iter(ts), iter(values)
    leaves, outer, grad_leaves = [], [], []
    same = json.loads(meta)["same"]
    views = {j: (i, own) for j, i, own in json.loads(meta).get("bases", [])} \
        if hidden is not None else {}
    made: dict = {}             # per argument view: its place in grad_leaves
    for d in descs:
        if d == "value":
            leaves.append(next(it_v))
            continue
        i = len(outer)
        with torch.inference_mode(inference[i]) if i < len(inference) else contextlib.nullcontext():
            t = unflatten(d, it_t)
        r = requires is not None and requires[len(outer)]
        if same[len(outer)] >= 0:      # the object of an earlier argument; its grad goes there
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
    odescs, flat_out = _split(out_leaves, spec, "returned value")
    box["meta"] = {"tree": pytree.treespec_dumps(spec), "descs": odescs}
    box["values"] = [v for v, d in zip(out_leaves, odescs) if d == "value"]
    box["diff"] = [o.requires_grad for o in out_leaves if isinstance(o, torch.Tensor)]
    box["spec"] = spec
    box["facts"] = outer_facts([o for o in out_leaves if isinstance(o, torch.Tensor)], outer, before,
                               hidden)
    return [t for t in flat_out if isinstance(t, torch.Tensor)]


def _compile(owner, plain, tensors: list, grad: bool, real: bool = False):
    """Trace ``plain`` over fake copies of ``tensors`` (``real``: real copies, NOTE [subclass
    joint on real tensors]; no functionalization: in-place ops stay in-place on the graph's
    inputs) into a plain-tensor graph, and compile it with the ordinary engine."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from .api import AotFunction
    from .engine.capture.functional import TraceGuard, compiling, guard_trace
    from .engine.rng.layout import DrawLikeEager
    from .engine.rng.seeding import GlobalGeneratorGuard, fresh_generators

    def traced(*ts):
        with TraceGuard(), DrawLikeEager(), WrapperSetOntoPlain():
            return plain(*ts)
    fakes = _save_primals(tensors) if real else [t.detach() for t in tensors]
    # NOTE [subclass random draws]: the outer trace watches the generators as the plain
    # engine's does (engine/rng.py): seeding the default generator inside the function becomes
    # an aotcheck op of this graph (not a real seeding at trace time), and a torch.Generator
    # made inside is reset before its first draw on every call (eager makes it anew), which
    # also lets the cache store the graph
    with torch.enable_grad() if grad else torch.no_grad(), compiling(), \
            GlobalGeneratorGuard() as generators:
        gm = guard_trace(lambda: make_fx(traced, tracing_mode="real" if real else "fake")(*fakes))
    fresh_generators(gm, generators)
    random = any(torch.Tag.nondeterministic_seeded in getattr(n.target, "tags", ())
                 for n in gm.graph.nodes if n.op == "call_function")
    if grad and random and any(t.device.type != "cpu" for t in tensors):
        raise UnsupportedInputError(
            "a function with a tensor-subclass argument on a non-CPU device that requires "
            "grad draws random numbers; aotcheck replays the forward's draws in the backward "
            "from the CPU generator only, so it refuses it. Call it without grad, or on CPU")
    # NOTE [subclass trace]: the desugared graph is compiled, and persistently cached, as a
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
    return AotFunction(desugared, owner.partitioner, cache=owner.cache, remote=owner.remote)


def _prepare(args: tuple, kwargs: dict):
    leaves, spec = pytree.tree_flatten((args, kwargs))
    descs, flat = _split(leaves, spec, "argument")
    try:
        tree = pytree.treespec_dumps(spec)
    except Exception as e:  # an unregistered container
        raise UnsupportedInputError(f"argument tree {spec} cannot be serialised: {e}") from e
    values = [v for v in flat if not isinstance(v, torch.Tensor)]
    tensors = [t for t in flat if isinstance(t, torch.Tensor)]
    outer = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
    # one tensor passed twice is one object inside the function too (eager writes both)
    same = [next((j for j in range(i) if outer[j] is t), -1) for i, t in enumerate(outer)]
    fields = {"tree": tree, "descs": descs, "same": same,
              "values": [[type(v).__name__, repr(v)] for v in values]}
    bases = argument_view_bases(outer)      # NOTE [subclass views of an argument given requires_grad_]
    if bases:
        fields["bases"] = bases
    meta = json.dumps(fields, sort_keys=True)
    grad = torch.is_grad_enabled() and not torch.is_inference_mode_enabled()
    requires = [grad and t.requires_grad and ("leaf" if t.is_leaf else "nonleaf") for t in outer]
    return meta, descs, values, tensors, outer, requires


def desugared(owner, args: tuple, kwargs: dict):
    """For ``explain``: the compiled plain forward graph of this call and its plain inputs,
    those requiring grad where their outer tensor does (the outer-level decision), a
    (mode, reason) that overrides the plain graph's decision, or False, and where an argument
    requires grad, ``explain_forward``'s fallback, else False."""
    meta, descs, values, tensors, outer, requires = _prepare(args, kwargs)
    compiled, box = _forward(owner, meta, descs, values, tensors, _traced_requires(outer, requires),
                             _inference_args(outer))
    # the desugared graph writes a non-leaf's alias (a detach), so it decides inference; the
    # call itself needs training: NOTE [subclass non-leaf writes]
    written = box["alias"] and ("training", "an argument that requires grad and is not a leaf "
                                "is written in place (at the outer level of a tensor subclass)")
    written = written or outer_training(box, requires)
    grads = []                      # per inner tensor: (its outer one requires grad, in a subclass)
    for d, r in zip([d for d in descs if d != "value"], requires):
        grads += [(bool(r), d is not None)] * _count(d)
    return compiled.fn.graph_module, explain_inputs(tensors, grads), written, \
        any(requires) and explain_forward(tensors)


# NOTE [subclass no_grad calls]
# Under no_grad, eager's arguments still require grad where they did: a view of one requires
# grad too (with no grad_fn), a view of its ``detach()`` does not, and a view taken before a
# write of the argument is poisoned (reading its grad_fn raises: NOTE [poisoned views] in
# engine/outputs.py). No gradient flows, so ``requires`` (what takes a gradient) is all False
# then; the forward trace still gives those arguments the flag, as grad leaves, so that its
# outer-level facts (NOTE [outer-level facts]) see what eager's views see.

def _traced_requires(outer: list, requires: list) -> list:
    """Per outer tensor, whether the forward trace makes it require grad: ``requires``, or,
    under no_grad (not inference mode), the caller's flag (NOTE [subclass no_grad calls])."""
    if torch.is_grad_enabled() or torch.is_inference_mode_enabled():
        return requires
    return ["leaf" if t.requires_grad else False for t in outer]


def _inference_args(outer: list) -> tuple:
    """Per outer tensor, whether it is an inference tensor: the forward trace makes it as the
    caller made it, whatever the mode of the call (NOTE [subclass inference views])."""
    return tuple(t.is_inference() for t in outer)


def _forward(owner, meta, descs, values, tensors, requires, inference: tuple = ()):
    box: dict = {"alias": False, "views": False}
    bases = {i for _, i, _ in json.loads(meta).get("bases", [])}

    def plain(*ts):
        nonleaf = (lambda i, t: _Alias.apply(t)) if box["alias"] else None
        hidden = {} if box["views"] else None
        args, kwargs, outer, _ = _rebuild_args(meta, descs, values, ts, requires, nonleaf,
                                               inference=inference, hidden=hidden)
        before = [(geometry_of(a), own_flag(a) if j in (hidden or {}) else a.requires_grad,
                   a.grad_fn, version_of(a)) for j, a in enumerate(outer)]
        # NOTE [subclass metadata replay]
        with OuterCallLog(outer) as log, BaseFlags(outer, hidden or {}) as flags:
            res = owner.call_fn(*args, **kwargs)
        box["flips_base"] = bool(flags.flags_set & bases)
        out = _flatten_out(res, box, outer, before, hidden)
        box["facts"] = split_rebased(box["facts"], log, outer)
        return out

    def trace(grad: bool):
        box["flips_base"] = False
        try:
            compiled = _compile(owner, plain, tensors, grad=grad)
        except UnsupportedInputError:
            if box["views"] or not box["flips_base"]:
                raise       # else the facts of the views' trace decide
        if box["flips_base"] and not box["views"]:
            # NOTE [subclass views of an argument given requires_grad_]
            box["views"] = True
            compiled = _compile(owner, plain, tensors, grad=grad)
        return compiled

    try:
        return trace(torch.is_grad_enabled()), box
    except TraceError as e:
        if "nonleaf" not in requires or "in-place operation" not in str(e):
            raise
    # a non-leaf argument that requires grad is written: trace again with it a non-leaf alias
    # (only then, so that other graphs hold no extra ``detach``)
    box["alias"] = True
    return trace(True), box


def _joint(owner, meta, descs, values, tensors, requires, tangent_descs, n: int, dirty: list,
           groups: list, replay: dict, views: bool = False):
    """The backward at the OUTER level (eager's autograd over the subclass), desugared:
    ``(inner primals, inner tangents) -> inner gradients`` (NOTE [subclass autograd]); the
    arguments in ``dirty`` were written in place (NOTE [subclass non-leaf writes]); the
    members of ``groups`` are views of their group's root (NOTE [subclass alias groups]).
    One gradient per input of :class:`_Outer` that takes one (``_grad_slots``). ``views``: the
    forward was traced with argument views (NOTE [subclass views of an argument given
    requires_grad_] in subclass_autograd.py)."""
    box: dict = {}
    member_of = {i: g for g, grp in enumerate(groups) for i in grp["members"]}

    def plain(*ts):
        roots: dict = {}

        def member(i, t):
            g = member_of.get(i)
            if g is None:
                return None
            size, stride, offset = groups[g]["root"]
            if g not in roots:
                # the root, over the primals' storage, as a grad leaf; the function sees views
                # of its clone (laid out as the root: NOTE [subclass alias groups])
                r = t.detach().as_strided(size, stride, offset).requires_grad_()
                roots[g] = (r, r.clone(memory_format=torch.preserve_format))
            r, rc = roots[g]
            msize, mstride, moffset = groups[g]["geoms"][str(i)]
            return (rc if requires[i] else rc.detach()).as_strided(msize, mstride, moffset - offset)

        hidden = {} if views else None
        args, kwargs, outer, leaves = _rebuild_args(meta, descs, values, ts[:n], requires,
                                                    lambda i, t: t.clone(), member, hidden=hidden)
        with BaseFlags(outer, hidden or {}):
            res = owner.call_fn(*args, **kwargs)
        outs = [o for o in pytree.tree_leaves(res) if isinstance(o, torch.Tensor)]
        # each written argument as it was at its last write (NOTE [subclass metadata replay])
        outs += [as_before(outer[i], *replay[i][1::2]) if i in replay else outer[i] for i in dirty]
        it = iter(ts[n:])
        ys, gs = [], []
        for o, d in zip(outs, tangent_descs):
            if d != "none" and o.requires_grad:
                ys.append(o)
                gs.append(unflatten(d, it))
        it_l = iter(leaves)
        same = json.loads(meta)["same"]
        by_input = {i: next(it_l) for i, r in enumerate(requires)
                    if r and (same[i] >= 0 or i not in member_of)}
        for grp, (r, _) in zip(groups, [roots[g] for g in range(len(groups))]):
            by_input[grp["input"]] = r
        leaves = [by_input.get(i) for i in _grad_slots(requires, groups)]
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

    return compile_joint(lambda real: _compile(owner, plain, tensors, grad=True, real=real)), box


def call(owner, args: tuple, kwargs: dict):
    """Run ``owner.call_fn(*args, **kwargs)`` (an AotFunction's) with subclass arguments, with
    eager's outer-level autograd (NOTE [subclass autograd])."""
    meta, descs, values, tensors, outer, requires = _prepare(args, kwargs)
    state = owner._state()[0]
    traced = _traced_requires(outer, requires)
    inference = _inference_args(outer)
    base_key = (state, meta, call_key(tensors, len(tensors)), tuple(traced), inference)

    def cached(key, build):
        e = owner._subclass.get(key)
        if e is None:
            e = owner._subclass[key] = build()
        return e

    compiled, box = cached(base_key + ("forward",),
                           lambda: _forward(owner, meta, descs, values, tensors, traced, inference))
    requires = flag_before_call(box["facts"], outer, requires)
    if not any(requires) and not needs_history(box):
        return _finish(box, _unflatten_outs(box, list(compiled(*tensors))), outer)

    groups, extra = _alias_groups(outer, requires, box["facts"]["written"])
    extra += [] if any(requires) else [torch.zeros((), requires_grad=True)]   # needs_history

    def joint(tangent_descs, ins, dirty):
        return cached(base_key + ("joint", json.dumps([tangent_descs, dirty, groups])),
                      lambda: _joint(owner, meta, descs, values, ins, requires, tangent_descs,
                                     len(tensors), dirty, groups, box["facts"]["replay"],
                                     box["views"]))

    res = {}
    slots = _grad_slots(requires, groups)
    outs = _Outer.apply(compiled, box, joint, descs, tensors, (len(outer), slots), res,
                        *outer, *extra)
    n = len(outs) - len(res["dirty"])
    early = stale_views(box["facts"], outer)
    write_back(box["facts"], outer, res["dirty"], outs[n:])     # NOTE [subclass non-leaf writes]
    return _finish(box, list(outs[:n]), outer, moved=False, early=early)


def _finish(box: dict, outs: list, outer: list, moved: bool = True, early: dict | None = None):
    """The call's result: the outer outputs with the trace's outer-level facts applied, and the
    non-tensor values, in the returned tree."""
    m = box["meta"]
    it = iter(apply_facts(box["facts"], outs, outer, moved, early))
    it_v = iter(box["values"])
    vals = [next(it_v) if d == "value" else next(it) for d in m["descs"]]
    return pytree.tree_unflatten(vals, box["spec"])


def _unflatten_outs(box: dict, flat_out: list) -> list:
    it = iter(flat_out)
    return [unflatten(d, iter([next(it) for _ in range(_count(d))]))
            for d in box["meta"]["descs"] if d != "value"]


def _versions(ts):
    return [t._version for t in ts]


# NOTE [subclass alias groups]
# Arguments that share one storage (``f(b, b.t())``) are one tensor to eager: a write through
# one is seen by the other, in values and in autograd history. The joint rebuilds each
# argument that requires grad as a leaf of its own (a clone when it is no leaf), which loses
# that, so when the trace saw such a group written, its members that require grad must be
# views of one root (their common ``._base``): the root is the input of :class:`_Outer` that
# takes the group's gradient (one more input when it is no argument), and the joint makes it
# a grad leaf over the primals' storage and gives the function views of its clone (laid out
# as the root: a dense root) instead of the members; a member that does not require grad
# views the clone detached. The saved primals keep their aliasing (``_save_primals``). Only
# members whose memory overlaps form a group: disjoint ones see nothing of each other's writes,
# and a view whose shape is changed in place (``t_``) before its base is written loses that
# change when autograd regenerates it on the joint's fake tensors (a PyTorch limit: the joint
# is then traced on real ones, NOTE [subclass joint on real tensors] in subclass_replay.py).

def _grad_slots(requires: list, groups: list) -> list:
    """The inputs of :class:`_Outer` (outer tensors, then the groups' extra roots) that take a
    gradient, in order."""
    members = {i for grp in groups for i in grp["members"]}
    slots = {i for i, r in enumerate(requires) if r and i not in members}
    slots |= {grp["input"] for grp in groups}
    return sorted(slots)


def _alias_groups(outer: list, requires: list, written: list) -> tuple[list, list]:
    """(groups, extra roots) for this call (NOTE [subclass alias groups])."""
    if not written:
        return [], []
    from torch._prims_common import is_non_overlapping_and_dense_or_false as is_non_overlapping_and_dense

    from .engine.signature import root_of, storage_extent
    by_storage: dict = {}
    for i, t in enumerate(outer):
        if not any(t is o for o in outer[:i]):
            by_storage.setdefault(storage_key(t), []).append(i)
    # members that reach disjoint memory do not see each other's writes: only overlapping ones
    # form a group (fewer views in the joint: a view whose shape is changed in place before its
    # base is written loses that change when autograd regenerates it on fake tensors)
    parts = []
    for members in by_storage.values():
        spans = sorted((storage_extent(plain_part(outer[i])), i) for i in members)
        for (first, last), i in spans:
            if parts and parts[-1][0] is members and first <= parts[-1][1] and last >= first:
                parts[-1][2].append(i)
                parts[-1][1] = max(parts[-1][1], last)
            else:
                parts.append([members, last, [i]])
    groups, extra = [], []
    for members in (sorted(p[2]) for p in parts):
        if len(members) < 2 or not any(requires[i] for i in members) \
                or not any(i in written for i in members):
            continue
        roots = {id(root_of(outer[i])): root_of(outer[i]) for i in members if requires[i]}
        root = next(iter(roots.values()))
        if len(roots) > 1 or not is_non_overlapping_and_dense(plain_part(root)) \
                or any(not requires[i] and outer[i].requires_grad for i in members):
            raise UnsupportedInputError(
                "arguments of a call with a tensor-subclass argument share one storage, one of "
                "them is written, and the ones that require grad are not views of one dense "
                "base; aotcheck supports such arguments when they are")
        at = next((i for i in members if outer[i] is root), None)
        if at is None:
            at = len(outer) + len(extra)
            extra.append(root)
        groups.append({"members": members, "input": at, "root": list(geometry_of(root)),
                       "geoms": {str(i): list(geometry_of(outer[i])) for i in members}})
    return groups, extra


def _unview(flat: list) -> list:
    """A view among the compiled graph's outputs (``matmul`` of a vector ends in a ``squeeze``)
    returned by :class:`_Outer` is a view made by a custom Function, which autograd forbids
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


def _save_primals(tensors: list) -> list:
    """Copies of the primals as they are before the forward, sharing storage where they do."""
    copies: dict = {}
    out = []
    with torch.no_grad():
        for t in tensors:
            key = storage_ref(t)
            if key not in copies:
                copies[key] = t.untyped_storage().clone()
            c = torch.empty(0, dtype=t.dtype, device=t.device)
            c = c.set_(copies[key], t.storage_offset(), t.shape, t.stride())
            if t.is_conj():
                c = c.conj()
            if t.is_neg():
                c = c._neg_view()
            out.append(c)
    return out


class _Outer(torch.autograd.Function):
    """Autograd at the outer level: forward runs the compiled forward graph; backward runs the
    compiled outer-level joint on the primals as they were before the forward."""

    @staticmethod
    def forward(ctx, compiled, box, joint, descs, tensors, slots, res, *inputs):
        n_outer, ctx.slots = slots
        outer = inputs[:n_outer]
        before = _versions(tensors)
        saved = _save_primals(tensors)     # the primals before any mutation
        # NOTE [subclass random draws]: the backward recomputes the forward inside the joint
        # graph, so it starts the joint from the generator state the forward started from (its
        # draws then equal the forward's) and puts the generator back afterwards: eager's
        # backward draws nothing.
        ctx.rng = torch.get_rng_state() if compiled.fn.random else None
        dets = [t.detach() for t in tensors]
        flat_out = _unview(list(compiled(*dets)))
        after = _versions(tensors)
        # the graph ran on detached aliases: a write reaches the argument through the shared
        # storage, but a set_() onto another storage moves only the alias; move the argument too
        # (its outer shape follows with the facts' "moved")
        with torch.no_grad():
            for t, d in zip(tensors, dets):
                if storage_ref(d) != storage_ref(t):
                    t.set_(d)
        moved = box["facts"]["moved"]
        # NOTE [subclass non-leaf writes]: an argument written in grad mode (in data or in
        # shape; one that required grad and was no leaf, or one that did not and was given a
        # value that does) gets a copy of its new value as one more output; the caller gives
        # it its new shape and copies the value back in grad mode, which rebases the
        # argument's history as eager's in-place op does (a copy_ works for views too, where
        # mark_dirty with several outputs does not). The joint takes that value as one more
        # output, with every grad-requiring non-leaf argument a clone of its grad leaf there.
        # The trace tells which arguments autograd rebased (writes under no_grad are not).
        dirty = box["facts"]["rebased"]
        for j, (size, stride, offset) in moved.items():
            if j not in dirty and j not in box["facts"]["replay"]:
                move_outer(outer[j], size, stride, offset)
        res["dirty"] = dirty
        if after == before:
            saved = [t.detach() for t in tensors]          # no mutation: no copies needed
        outs = _unflatten_outs(box, flat_out)
        ctx.saved_primals, ctx.joint, ctx.dirty = saved, joint, dirty
        ctx.n_inputs = len(inputs)
        ctx.mark_non_differentiable(*[o for o, df in zip(outs, box["diff"]) if not df])
        ctx.set_materialize_grads(False)   # outputs replaced by the outer facts get no grad
        return tuple(outs) + dirty_values(box["facts"], outer, dirty)

    @staticmethod
    def backward(ctx, *grads):
        if not ctx.slots:           # no input takes a gradient (needs_history)
            return (None,) * (7 + ctx.n_inputs)
        tdescs, tflat = [], []
        for g in grads:
            tdescs.append("none" if g is None else flatten(g, "gradient of an output", tflat))
        ins = list(ctx.saved_primals) + tflat
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

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
str-keyed dicts, torch.dtype) and the class importable by module and qualified name; an
in-place mutation of a non-leaf argument that requires grad, within a call that has a
subclass argument, is refused (UnsupportedInputError) since its autograd history would not
be rebased as eager's is. Anything else raises a named error, never a wrong result.
"""
from __future__ import annotations

import importlib
import json

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from .engine.signature import call_key
from .errors import TraceError, UnsupportedInputError

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


def _rebuild_args(meta: str, descs: list, values: list, ts, requires: list | None = None):
    """(args, kwargs, outer tensors) from plain inner tensors; with ``requires`` (per outer
    tensor), the outer tensors that require grad are made autograd leaves."""
    it_t, it_v = iter(ts), iter(values)
    leaves, outer = [], []
    for d in descs:
        if d == "value":
            leaves.append(next(it_v))
            continue
        t = unflatten(d, it_t)
        r = requires is not None and requires[len(outer)]
        if r:
            t = t.requires_grad_()          # a fresh wrapper: an autograd leaf, no op traced
        outer.append(t)
        leaves.append(t)
    args, kwargs = pytree.tree_unflatten(leaves, pytree.treespec_loads(json.loads(meta)["tree"]))
    return args, kwargs, outer


def _flatten_out(out, box: dict) -> list:
    out_leaves, spec = pytree.tree_flatten(out)
    odescs, flat_out = _split(out_leaves, spec, "returned value")
    box["meta"] = {"tree": pytree.treespec_dumps(spec), "descs": odescs}
    box["values"] = [v for v, d in zip(out_leaves, odescs) if d == "value"]
    box["diff"] = [o.requires_grad for o in out_leaves if isinstance(o, torch.Tensor)]
    return [t for t in flat_out if isinstance(t, torch.Tensor)]


def _compile(owner, plain, tensors: list, grad: bool):
    """Trace ``plain`` over fake copies of ``tensors`` (no functionalization: in-place ops stay
    in-place on the graph's inputs) into a plain-tensor graph, and compile it with the
    ordinary engine (NOTE [subclass trace])."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from .api import AotFunction
    from .engine.functional import guard_trace
    fakes = [t.detach() for t in tensors]
    with torch.enable_grad() if grad else torch.no_grad():
        gm = guard_trace(lambda: make_fx(plain, tracing_mode="fake")(*fakes))
    if grad and any(torch.Tag.nondeterministic_seeded in getattr(n.target, "tags", ())
                    for n in gm.graph.nodes if n.op == "call_function"):
        raise UnsupportedInputError(
            "a function with a tensor-subclass argument that requires grad draws random "
            "numbers; aotcheck recomputes such a forward in the backward and cannot replay "
            "the draws, so it refuses it. Call it without grad, or with plain tensors")
    # NOTE [subclass trace]: the desugared graph is compiled, and persistently cached, as a
    # function that closes over the graph AND the user's function: a GraphModule's fingerprint
    # is its code, which does not hold the values of tensor constants made inside the function
    # (``torch.tensor([2., 3.])``); the user's function's fingerprint does (tested). Rebuilding
    # outputs and gradients (types, ctx, sizes) uses this process's own trace (always run,
    # keyed in memory by the subclass types and ctx), so a hit for an equal plain graph from
    # another subclass is still right.
    user_fn = owner.fn

    def desugared(*ts):
        _ = user_fn          # read, so that the fingerprint covers it
        return gm(*ts)
    desugared.graph_module = gm
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
    meta = json.dumps({"tree": tree, "descs": descs,
                       "values": [[type(v).__name__, repr(v)] for v in values]}, sort_keys=True)
    outer = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
    grad = torch.is_grad_enabled() and not torch.is_inference_mode_enabled()
    requires = [grad and t.requires_grad and ("leaf" if t.is_leaf else "nonleaf") for t in outer]
    return meta, descs, values, tensors, outer, requires


def desugared(owner, args: tuple, kwargs: dict):
    """For ``explain``: the compiled plain forward graph of this call and its plain inputs,
    those requiring grad where their outer tensor does (the outer-level decision)."""
    meta, descs, values, tensors, _, requires = _prepare(args, kwargs)
    compiled, _ = _forward(owner, meta, descs, values, tensors, requires)
    ins, k = [], 0
    for d, r in zip([d for d in descs if d != "value"], requires):
        for t in tensors[k:k + _count(d)]:
            x = t.detach()
            ins.append(x.requires_grad_() if r and (x.is_floating_point() or x.is_complex()) else x)
        k += _count(d)
    return compiled.fn.graph_module, ins


def _forward(owner, meta, descs, values, tensors, requires):
    box: dict = {}

    def plain(*ts):
        args, kwargs, _ = _rebuild_args(meta, descs, values, ts, requires)
        return _flatten_out(owner.fn(*args, **kwargs), box)

    try:
        compiled = _compile(owner, plain, tensors, grad=any(requires))
    except TraceError as e:
        if "nonleaf" in requires and "in-place operation" in str(e):
            raise UnsupportedInputError(
                "an argument that requires grad and is not a leaf was mutated in place in a call "
                "with a tensor-subclass argument; aotcheck traces such arguments as leaves and "
                "does not rebase their autograd history, so it refuses it. Mutate an argument "
                "that does not require grad") from e
        raise
    return compiled, box


def _joint(owner, meta, descs, values, tensors, requires, tangent_descs, n: int):
    """The backward at the OUTER level (eager's autograd over the subclass), desugared:
    ``(inner primals, inner tangents) -> inner gradients`` (NOTE [subclass autograd])."""
    box: dict = {}

    def plain(*ts):
        args, kwargs, outer = _rebuild_args(meta, descs, values, ts[:n], requires)
        outs = [o for o in pytree.tree_leaves(owner.fn(*args, **kwargs)) if isinstance(o, torch.Tensor)]
        it = iter(ts[n:])
        ys, gs = [], []
        for o, d in zip(outs, tangent_descs):
            if d != "none" and o.requires_grad:
                ys.append(o)
                gs.append(unflatten(d, it))
        xs = [o for o, r in zip(outer, requires) if r]
        got = torch.autograd.grad(ys, xs, gs, allow_unused=True) if ys else [None] * len(xs)
        gflat: list = []
        box["descs"] = ["none" if g is None else flatten(g, "gradient", gflat) for g in got]
        return gflat

    return _compile(owner, plain, tensors, grad=True), box


def call(owner, args: tuple, kwargs: dict):
    """Run ``owner.fn(*args, **kwargs)`` (an AotFunction's) with subclass arguments, with
    eager's outer-level autograd (NOTE [subclass autograd])."""
    meta, descs, values, tensors, outer, requires = _prepare(args, kwargs)
    state = owner._state()[0]
    base_key = (state, meta, call_key(tensors, len(tensors)), tuple(requires))

    def cached(key, build):
        e = owner._subclass.get(key)
        if e is None:
            e = owner._subclass[key] = build()
        return e

    compiled, box = cached(base_key + ("forward",),
                           lambda: _forward(owner, meta, descs, values, tensors, requires))
    if not any(requires):
        return _rebuild(box["meta"], box["values"], list(compiled(*tensors)),
                        _by_parts(outer, tensors, descs), outer)

    def joint(tangent_descs, ins):
        return cached(base_key + ("joint", json.dumps(tangent_descs)),
                      lambda: _joint(owner, meta, descs, values, ins, requires, tangent_descs,
                                     len(tensors)))

    res = {}
    outs = _Outer.apply(compiled, box, joint, descs, tensors, requires, res, *outer)
    m, it, it_v = box["meta"], iter(outs), iter(box["values"])
    same = iter(res.get("same", []))
    vals = [next(it_v) if d == "value" else _pick(next(it), next(same), outer) for d in m["descs"]]
    return pytree.tree_unflatten(vals, pytree.treespec_loads(m["tree"]))


def _pick(out, same, outer):
    return out if same is None else outer[same]


def _by_parts(outer: list, parts: list, descs: list) -> dict:
    """(ids of an argument's plain parts, its desc) -> the argument's index: an output made of
    exactly those parts IS that argument (``return x``), as in eager."""
    res, k = {}, 0
    for i, d in enumerate([d for d in descs if d != "value"]):
        n = _count(d)
        res[(tuple(id(t) for t in parts[k:k + n]), json.dumps(d))] = i
        k += n
    return res


def _rebuild(m: dict, out_values: list, flat_out: list, by_parts: dict, outer: list | None = None):
    it_t, it_v = iter(flat_out), iter(out_values)
    vals = []
    for d in m["descs"]:
        if d == "value":
            vals.append(next(it_v))
            continue
        part = [next(it_t) for _ in range(_count(d))]
        same = by_parts.get((tuple(id(t) for t in part), json.dumps(d)))
        vals.append(unflatten(d, iter(part)) if same is None else outer[same])
    return pytree.tree_unflatten(vals, pytree.treespec_loads(m["tree"]))


def _versions(ts):
    return [t._version for t in ts]


class _Outer(torch.autograd.Function):
    """Autograd at the outer level: forward runs the compiled forward graph; backward runs the
    compiled outer-level joint on the primals as they were before the forward."""

    @staticmethod
    def forward(ctx, compiled, box, joint, descs, tensors, requires, res, *outer):
        k, watched = 0, []
        for d, o, r in zip([d for d in descs if d != "value"], outer, requires):
            n = _count(d)
            if r and not o.is_leaf:
                watched += tensors[k:k + n]
            k += n
        before = _versions(tensors)
        saved = [t.detach().clone() for t in tensors]     # the primals before any mutation
        detached = [t.detach() for t in tensors]
        flat_out = list(compiled(*detached))
        by_parts = _by_parts(outer, detached, descs)
        after = _versions(tensors)
        if any(_versions([t])[0] != v for t, v in zip(tensors, before) if any(t is w for w in watched)):
            raise UnsupportedInputError(
                "an argument that requires grad and is not a leaf was mutated in place in a call "
                "with a tensor-subclass argument; aotcheck does not rebase its autograd history "
                "there, so it refuses it. Mutate an argument that does not require grad")
        if after == before:
            saved = [t.detach() for t in tensors]          # no mutation: no copies needed
        it = iter(flat_out)
        outs = []
        for d in box["meta"]["descs"]:
            if d != "value":
                part = [next(it) for _ in range(_count(d))]
                res.setdefault("same", []).append(by_parts.get((tuple(id(t) for t in part), json.dumps(d))))
                outs.append(unflatten(d, iter(part)))
        ctx.saved_primals, ctx.joint, ctx.requires = saved, joint, requires
        ctx.mark_non_differentiable(*[o for o, df in zip(outs, box["diff"]) if not df])
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        tdescs, tflat = [], []
        for g in grads:
            tdescs.append("none" if g is None else flatten(g, "gradient of an output", tflat))
        ins = list(ctx.saved_primals) + tflat
        compiled, box = ctx.joint(tdescs, ins)
        got = iter(compiled(*ins))
        gd = iter(box["descs"])
        out = []
        for r in ctx.requires:
            d = next(gd) if r else "none"
            out.append(None if d == "none" else unflatten(d, got))
        return (None, None, None, None, None, None, None, *out)

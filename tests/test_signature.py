"""Call keys against signatures (``engine/signature.py``, ``compiled.py``'s ``flat_key``).

A call is looked up in memory by a cheap key (NOTE [one read of the inputs] in compiled.py):
``fast_call_key`` for a flat tuple of plain tensors over distinct storages, ``call_key`` for
any other call. An artifact compiled for one signature is served to every call with an equal
key, so an equal key must mean an equal :func:`signature`; the property below draws pairs of
calls, one recipe twice with fresh tensors (equal keys) or two recipes one fact apart, and
checks it. It can fail: with the strides dropped from ``call_key`` or ``fast_call_key`` it
failed in each of 4 runs (1,000 examples, about 3 s).
"""
from __future__ import annotations

import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from aotcheck.engine.signature import call_key, fast_call_key, flatten_inputs, signature

DTYPES = (torch.float32, torch.float64, torch.int64)
VIEWS = ("none", "t", "row", "narrow", "expand")


@st.composite
def tensor_recipes(draw, earlier: int):
    """How to make one tensor argument: fresh, the very tensor of an earlier argument, or a
    view of an earlier argument's base (an alias group)."""
    alias = draw(st.sampled_from(("fresh", "same", "view_of"))) if earlier else "fresh"
    return {
        "alias": alias,
        "of": draw(st.integers(0, earlier - 1)) if earlier else 0,
        "shape": tuple(draw(st.lists(st.integers(1, 3), min_size=draw(st.integers(1, 2)), max_size=3))),
        "dtype": draw(st.sampled_from(DTYPES)),
        "view": draw(st.sampled_from(VIEWS)),
        "layout": draw(st.sampled_from(("contiguous", "transposed"))),   # same shape, other strides
        "requires_grad": draw(st.booleans()),
        "nonleaf": draw(st.booleans()),
        "retain": draw(st.booleans()),
    }


@st.composite
def call_recipes(draw):
    n = draw(st.integers(1, 4))
    args = []
    for _ in range(n):
        kind = draw(st.sampled_from(("tensor", "tensor", "int", "float", "none")))
        if kind == "tensor":
            args.append(("tensor", draw(tensor_recipes(len(args)))))
        else:
            args.append((kind, draw({"int": st.integers(-2, 2), "float": st.sampled_from([0.0, -0.0, 1.5]),
                                     "none": st.none()}[kind])))
    return {"args": args, "grad": draw(st.booleans()), "nested": draw(st.booleans())}


def _view(t: torch.Tensor, how: str) -> torch.Tensor:
    if how == "t" and t.dim() == 2:
        return t.t()
    if how == "row" and t.shape[0] > 1:
        return t[1:]
    if how == "narrow" and t.shape[-1] > 1:
        return t.narrow(-1, 1, t.shape[-1] - 1)
    if how == "expand" and t.shape[0] == 1:
        return t.expand(2, *t.shape[1:])
    return t


def _tensor(r: dict, made: list):
    if r["alias"] == "same" and isinstance(made[r["of"]], torch.Tensor):
        return made[r["of"]]
    if r["alias"] == "view_of" and isinstance(made[r["of"]], torch.Tensor):
        base = made[r["of"]]
        return _view(base._base if base._base is not None else base, r["view"])
    grad = r["requires_grad"] and r["dtype"] != torch.int64
    t = (torch.randn(r["shape"], dtype=r["dtype"]) if r["dtype"] != torch.int64
         else torch.randint(0, 5, r["shape"]))
    if r["layout"] == "transposed" and t.dim() >= 2:
        t = t.mT.contiguous().mT
    t.requires_grad_(grad)
    if grad and r["nonleaf"]:
        t = t * 1
        if r["retain"]:
            t.retain_grad()
    return _view(t, r["view"])


def build(recipe: dict):
    """Fresh arguments (positional, plus a nested kwarg where ``nested``) from a recipe."""
    made = []
    for kind, r in recipe["args"]:
        made.append(_tensor(r, made) if kind == "tensor" else r)
    if recipe["nested"]:
        return tuple(made[:1]), {"rest": {"xs": list(made[1:])}}
    return tuple(made), {}


def _keys_and_signature(recipe: dict):
    args, kwargs = build(recipe)
    with torch.set_grad_enabled(recipe["grad"]):
        leaves, spec = flatten_inputs(args, kwargs)
        fast = None if kwargs else fast_call_key(args)
        flat_sig = None if fast is None else signature(list(args), len(args))
        return call_key(leaves, spec), signature(leaves, spec), fast, flat_sig


@st.composite
def call_pairs(draw):
    """A call recipe and another: the same one (fresh tensors), or one that differs from it in
    one fact (one field of one argument, or grad mode): the pairs whose keys a careless key
    would confuse."""
    a = draw(call_recipes())
    how = draw(st.sampled_from(("same", "argument", "argument", "argument", "grad", "nested")))
    b = {**a, "args": list(a["args"])}
    if how == "grad":
        b["grad"] = not a["grad"]
    elif how == "nested":
        b["nested"] = not a["nested"]
    elif how == "argument":
        tensors = [j for j, (kind, _) in enumerate(a["args"]) if kind == "tensor"]
        i = draw(st.sampled_from(tensors or range(len(a["args"]))))
        kind, r = a["args"][i]
        if kind == "tensor":
            # the facts a key most easily loses (strides at one shape, aliasing) drawn oftener
            field = draw(st.sampled_from(sorted(r) + ["layout"] * 6 + ["alias", "view"] * 2))
            other = draw(tensor_recipes(i))
            b["args"][i] = (kind, {**r, field: other[field] if field != "of" or i else 0})
        else:
            b["args"][i] = draw(call_recipes())["args"][0]
    return a, b, how == "same"


@settings(max_examples=1000, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(pair=call_pairs())
def test_equal_call_keys_mean_equal_signatures(pair):
    a, b, same = pair
    ka, sa, fa, fsa = _keys_and_signature(a)
    kb, sb, fb, fsb = _keys_and_signature(b)
    if same:        # one recipe, fresh tensors: the keys agree, so the implication is exercised
        assert ka == kb and fa == fb
    if ka == kb:
        assert sa == sb, (sa, sb)
    if fa is not None and fa == fb:
        assert fsa == fsb, (fsa, fsb)


def test_keys_tell_apart_what_signatures_tell_apart():
    """The property can fail: two calls whose signatures differ in one fact each (a stride,
    an alias, requires_grad, a scalar's sign, grad mode) get different keys."""
    x = torch.randn(2, 3)
    pairs = [((x,), (x.t().contiguous().t(),)), ((x, x), (x, x.clone())),
             ((x,), (x.clone().requires_grad_(),)), ((0.0,), (-0.0,))]
    for one, other in pairs:
        assert signature(*flatten_inputs(one, {})) != signature(*flatten_inputs(other, {}))
        assert call_key(*flatten_inputs(one, {})) != call_key(*flatten_inputs(other, {}))
    with torch.no_grad():
        off = call_key(*flatten_inputs((x,), {}))
    assert off != call_key(*flatten_inputs((x,), {}))

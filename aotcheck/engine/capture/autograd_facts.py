"""autograd_facts: what a functional run leaves in autograd that the facts must carry.

Read after the function ran: the tensors that became leaves requiring grad inside it
(NOTE [new grad leaves]), a digest of each custom ``autograd.Function`` backward the
candidates reach (NOTE [custom Function backward in the key]), and where each argument's
retain_grad() hook ends (NOTE [where an argument's retained gradient sits]).
"""
from __future__ import annotations

import hashlib
import types

import torch

from ...errors import UnsupportedInputError
from .facts import HookSite, NewLeaf, NewLeafKind, RetainKind, Retained
from .functional import geometry_of, storage_ref
from ..graph_walk import grad_nodes
from ..signature import Signature


def new_leaf_facts(tensors: list, user: list, sig: Signature, geometry: dict,
                   members: dict | None = None, at_call: set | None = None) -> tuple:
    """Per tensor that became a leaf requiring grad inside the function:
    a :class:`~.facts.NewLeaf`.

    # NOTE [new grad leaves]
    ``v = x.view(-1); v.requires_grad_()`` (x an argument that does not require grad), or
    ``h = x * 2; h.requires_grad_()``, or ``torch.zeros(3, requires_grad=True)``: eager makes
    a leaf that requires grad inside the function; what is computed from it requires grad,
    and backward accumulates its ``.grad``. The compiled graph computes every value itself,
    so the runtime makes each such leaf before the graph runs (kind ``"view"``: an
    ``as_strided`` view of argument ``source`` taken under no_grad, as eager's is a view of
    it; kind ``"fresh"``: an empty tensor, filled from its graph value when it is returned)
    and passes them to the compiled autograd.Function as extra inputs that the forward graph
    does not read: the joint graph differentiates with respect to them too, so outputs get
    eager's requires_grad and the leaves get eager's ``.grad``.

    An argument that is a member of an alias group (a view of the synthetic base inside the
    graph) given requires_grad_() is kind ``"argument"``, source its leaf index: the caller's
    own tensor is that leaf, so the runtime sets its flag and passes it (the flag of an
    argument that is its own placeholder is set as NOTE [requires_grad_ on an argument] says).
    """
    members = members or {}
    storages = {}
    for i, t in enumerate(user):
        if isinstance(t, torch.Tensor):
            storages.setdefault(storage_ref(t), i)
    out = []
    for t in tensors:
        shape, stride, offset = geometry.get(id(t), geometry_of(t))
        src = storages.get(storage_ref(t))
        if at_call is not None and storage_ref(t) not in at_call:
            # an argument moved onto its memory (``a.data = t``): it is the leaf's own,
            # made inside (``at_call``: the arguments' storages at the call)
            src = None
        kind = NewLeafKind.VIEW if src is not None else NewLeafKind.FRESH
        if id(t) in members:
            kind, src = NewLeafKind.ARGUMENT, members[id(t)]
            shape, stride, offset = geometry_of(t)
        out.append(NewLeaf(kind, src, tuple(shape), tuple(stride), offset,
                           str(t.dtype).replace("torch.", "")))
    return tuple(out)


def custom_function_digests(tensors: list) -> tuple[str, ...]:
    """One digest per custom ``autograd.Function`` whose backward node the candidates'
    autograd graphs reach, in a fixed order.

    # NOTE [custom Function backward in the key]
    The captured graph is the forward only; a custom Function's backward shows up in the
    joint graph, which the cache key does not see. Two Functions with the same forward and
    different backwards would share a key, and a hit would run the wrong backward. So the
    raw facts (a key component) carry, per reached Function, its qualified name and a digest
    of its backward's code (bytecode, constants, names, nested code) and of its closure's
    plain values. A helper the backward calls, or a global it reads, is not in the digest.
    """
    from torch.autograd.function import BackwardCFunction
    found: dict[str, str] = {}
    for fn in grad_nodes(t.grad_fn for t in tensors if isinstance(t, torch.Tensor)):
        if isinstance(fn, BackwardCFunction):
            cls = getattr(fn, "_forward_cls", type(fn))
            name = f"{cls.__module__}.{cls.__qualname__}"
            found.setdefault(name, _function_digest(cls.backward))
    return tuple(f"{n}:{d}" for n, d in sorted(found.items()))


def _function_digest(fn) -> str:
    h = hashlib.sha256()
    fn = getattr(fn, "__wrapped__", fn)          # once_differentiable wraps the backward
    code = getattr(fn, "__code__", None)

    def add(c):
        h.update(c.co_code)
        h.update(repr(c.co_names).encode())
        for k in c.co_consts:
            add(k) if isinstance(k, types.CodeType) else h.update(repr(k).encode())
    if code is None:
        h.update(repr(fn).encode())
        return h.hexdigest()[:16]
    add(code)
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        h.update((repr(v) if isinstance(v, (bool, int, float, str, type(None))) else
                  type(v).__qualname__).encode())
    return h.hexdigest()[:16]

def imperative_facts(recorder, plan, out_leaves) -> tuple[tuple, tuple, list]:
    """NOTE [imperative autograd on arguments and outputs] (runtime/imperative.py): the
    retain_grad() calls on arguments and on returned tensors (``Retained``), and the hooks
    registered on arguments and on grad leaves made inside (and not removed; ``HookSite``,
    NOTE [hooks on leaves made inside]); and the hooks themselves."""
    refuse_returned_leaf_hooks(recorder.inner_hooks, out_leaves)

    def argument(kind: str, index: int) -> int | None:
        return index if kind == "leaf" else next((i for i, src in enumerate(plan.sources)
                                                  if src.kind == "placeholder" and src.index == index), None)
    retained: list[Retained] = []
    for kind, index, before in recorder.retained:
        i = argument(kind, index)
        fact = argument_retained(recorder.inplace_calls.get((kind, index), ()), before, i,
                                 index if kind == "placeholder" else None)
        # a second retain_grad() of a tensor that retains its grad changes nothing
        if fact is not None and all(r.index != i for r in retained):
            retained.append(fact)
    for k, o in enumerate(out_leaves):
        if isinstance(o, torch.Tensor) and id(o) in recorder.retained_tensors:
            retained.append(Retained(RetainKind.OUTPUT, k))
    hooks, fns = [], []
    for (kind, index), hook, live, hid, written in recorder.argument_hooks:
        site = HookSite(None, written, index) if kind == "new" else HookSite(argument(kind, index), written)
        if (site.leaf is not None or site.new_leaf is not None) and hid in live:
            hooks.append(site)
            fns.append(hook)
    return tuple(retained), tuple(hooks), fns


# NOTE [where an argument's retained gradient sits]
def argument_retained(calls, before: int, i: int | None, placeholder: int | None) -> Retained | None:
    """Eager's retain_grad() puts a hook on the tensor's gradient node of the moment. An
    in-place write (add_, copy_, set_, ``.data =``) moves it to the write's new node; a
    metadata call (t_, unsqueeze_, as_strided_, ...) leaves it where it was, so ``x.grad``
    is then the gradient of x as it was before the call (of its old shape). Per argument
    retain_grad() (``calls``: the argument's in-place calls, "data" or "meta", ``before`` of
    them made before it; ``placeholder``: the graph placeholder the argument is, or None for a
    member of an alias group), where the hook ends:
    - ARGUMENT_AT_CALL: on the argument's node at the call (no write before it and
      a metadata call next): the runtime calls retain_grad() on the caller's tensor before
      it replays anything, and autograd gives it the whole gradient, the function's and the
      caller's later uses';
    - ARGUMENT: on its final node (only writes, or nothing, after it):
      made on the caller's tensor after the write-back (the caller's part); where the
      function writes the placeholder under grad, the function's own uses of the new value
      are its other part, traced into the joint (NOTE [retained outputs] in joint.py);
    - ARGUMENT_BETWEEN: on the node of a value between its writes and
      its metadata calls (``a.add_(2); a.retain_grad(); a.t_()``: the add's node, whose
      gradient has a's shape before t_), where every metadata call comes after the writes
      (eager's autograd asserts at a write after a metadata call that left the hook behind)
      and the argument is a graph placeholder: the runtime writes the value back in the
      geometry the argument has at the call, calls retain_grad(), and only then replays the
      metadata calls; the function's own part comes from the joint, at the node the recorder
      took (``retained_edges``), less the caller's part (NOTE [retained outputs] in joint.py);
    - between two of its in-place calls otherwise: not a value the compiled function
      keeps; refused.

    # NOTE [an argument the caller retains]
    ``x.retain_grad(); f(x)`` where f writes x in place (``x.mul_(2); return x * x``): eager
    moves the hook to each write's node, so ``x.grad`` is the gradient of x's final value,
    the function's own uses of it included. The runtime's write-back moves the caller's hook
    to its own node, which sees the caller's part only (it was silently missing the rest).
    So the signature carries each argument's ``retains_grad`` (a key component), and the
    functional run starts as if the function had called retain_grad() first: the facts are
    one of the kinds above, whose own part the joint computes."""
    if i is None:
        return None
    after = list(calls[before:])
    if not after or "meta" not in after:
        return Retained(RetainKind.ARGUMENT, i, placeholder)
    if after[0] == "meta" and "data" not in calls[:before]:
        return Retained(RetainKind.ARGUMENT_AT_CALL, i)
    first_meta = before + after.index("meta")
    if placeholder is not None and "meta" not in calls[:first_meta] and \
            "data" not in calls[first_meta:]:
        return Retained(RetainKind.ARGUMENT_BETWEEN, i, placeholder)
    raise UnsupportedInputError(
        f"the function calls retain_grad() on argument {i} and then both writes it in place "
        "and changes its metadata (t_, unsqueeze_, as_strided_, ...): eager's retained "
        "gradient is then that of a value between two of its in-place calls, which aotcheck "
        "does not keep; supported: retain_grad() before only metadata calls, before only "
        "in-place writes, or between writes and the metadata calls that follow them all "
        "(NOTE [where an argument's retained gradient sits])")


# NOTE [hooks on returned tensors]
def refuse_returned_leaf_hooks(hooked: list, out_leaves: list) -> None:
    """A hook on a tensor the function makes is traced into the joint with its uses, and a
    returned intermediate's tangent enters the joint at that tensor, so its hook sees the
    caller's part too, as eager's.

    # NOTE [hooks on leaves made inside]
    A leaf made inside (``torch.randn(..., requires_grad=True)``, ``nn.Parameter``) is
    different: the runtime makes it before the graph runs and hands the caller that very
    tensor (NOTE [new grad leaves]), so a returned leaf's (or view's) gradient from the
    caller reaches its ``.grad`` without passing the compiled function (fuzz seeds 1 and 3:
    a returned Parameter's hook doubled nothing). Eager's hook on a leaf acts on the whole
    gradient its AccumulateGrad sums, once. So a hook on such a leaf is recorded like an
    argument's (the recorder's ``_argument_hook``, numbered -j - 1 for ``meta.new_leaves[j]``),
    kept out of the joint, and registered by the runtime on the leaf it makes, before the
    compiled function runs. A hook the recorder does not see on such a leaf (the tensor was
    not yet a leaf that requires grad when hooked) is traced, and refused by name here when
    the leaf is returned."""
    made = [t for t in hooked if t.is_leaf and t.requires_grad and getattr(t, "_backward_hooks", None)]
    if any(isinstance(o, torch.Tensor) and any(o is t or o._base is t for t in made)
           for o in out_leaves):
        raise UnsupportedInputError(
            "the function registers a hook on a leaf it makes that requires grad (torch.randn(..., "
            "requires_grad=True), nn.Parameter) and returns that leaf (or a view of it): the "
            "caller's part of its gradient would bypass the hook, which eager applies to the "
            "whole gradient; supported: hooks on arguments, on intermediates, and on leaves made "
            "inside that are not returned (NOTE [hooks on returned tensors])")


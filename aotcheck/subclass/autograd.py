"""The outer-level autograd graph of a tensor-subclass call
(NOTE [outer-level facts] in ``facts.py``), read off the forward trace: which argument an output views,
whether an output's gradient reaches that argument, which arguments given ``requires_grad_()`` inside
take a gradient, and the outputs remade at the call from those facts; and the arguments that
are views of another one, traced so that their flag reads through their base's
(NOTE [subclass views of an argument given requires_grad_]).

Eager's autograd drops an edge where a view has no history of its own::

    with torch.no_grad():
        v0 = a.permute(0, 1)      # requires grad (its base does), no grad_fn
    v1 = v0.unbind(1)[0]          # UnbindBackward0 -> (no edge): a.grad stays None

so an output with a ``grad_fn`` is a view "with grad" of its argument only when that
``grad_fn`` reaches the argument; otherwise it is remade as a view whose edge is dropped
(mode ``"dropped"``), and the same holds for a view of a leaf made inside (``"view"``).
"""
from __future__ import annotations

import torch
from torch.fx.experimental.proxy_tensor import disable_proxy_modes_tracing

from torch.overrides import TorchFunctionMode

from ..engine.capture.recorder import REQUIRES_GRAD_ATTR, call_name
from ..engine.graph_walk import grad_nodes
from ..engine.signature import storage_extent
from .records import LeafMade, OuterFacts, ViewMode

STALE = object()


def grad_fn_of(t):
    """``t.grad_fn``, or ``STALE`` where reading it raises (a view made under no_grad whose
    base was written in grad mode since)."""
    try:
        return t.grad_fn
    except RuntimeError:
        return STALE


def reaches(node, leaf) -> bool:
    """Does autograd node ``node`` lead back to ``leaf``'s AccumulateGrad?"""
    return _walk(node, lambda n: getattr(n, "variable", None) is leaf)


def reaches_arg(node, arg, start_fn) -> bool:
    """Does ``node`` lead back to argument ``arg`` of the trace: its AccumulateGrad, its
    ``grad_fn`` now, or ``start_fn`` (its ``grad_fn`` when the call began)?"""
    now = grad_fn_of(arg)
    return _walk(node, lambda n: getattr(n, "variable", None) is arg or n is now
                 or (start_fn is not None and n is start_fn))


def has_history(node, hidden: dict = {}) -> bool:
    """Does ``node`` lead back to any leaf's AccumulateGrad (not a dropped edge's dead end)?
    A hidden leaf's (NOTE [subclass views of an argument given requires_grad_]) is a dead end
    too: eager's view has no gradient edge."""
    return _walk(node, lambda n: hasattr(n, "variable") and id(n.variable) not in hidden)


def _walk(node, hit) -> bool:
    return any(hit(n) for n in grad_nodes([node], stop=STALE))


def view_home(o, outer: list, keys: list, key, plain, hidden: dict = {}) -> int | None:
    """The argument an output over an argument's storage is remade from: the one it is a view
    of (``o._base``), else the first whose memory holds all of the output's, else the first
    over that storage. Two rows of one base passed as two arguments share a storage: remade
    from the other row, the output's gradient would fall outside it (as_strided's backward
    drops it). ``plain(t)``: a plain tensor over ``t``'s storage; ``hidden``: per hidden leaf
    (by id), the argument it stands for
    (NOTE [subclass views of an argument given requires_grad_])."""
    homes = [j for j, k in enumerate(keys) if k == key]
    base = o._base if o._is_view() else None
    base = hidden.get(id(base), base)
    first, last = storage_extent(plain(o))
    spans = {j: storage_extent(plain(outer[j])) for j in homes}
    inside = [j for j in homes if spans[j][0] <= first and last <= spans[j][1]]
    return next((j for j in homes if outer[j] is base), next(iter(inside + homes), None))


def view_mode(o, arg, start_fn, hidden: dict = {}) -> ViewMode:
    """How an output over argument ``arg``'s storage is remade (``apply_facts``):

    - ``"alias"``: no view (a ``detach()``);
    - ``"written"``: no autograd view of the argument (a ``detach()``, or a view of one), with
      a history of its own that does not go through it: written in grad mode with a value
      that requires grad (``a.detach().copy_(w)``, ``a.detach()[0].mul_(a[0])``); remade as
      a detached alias over which the graph's value is copied, which gives it that history
      (``detached_written``, as ``detached_alias`` in engine/runtime/regenerate.py);
    - ``"stale"``: made under no_grad, its base written in grad mode since (eager raises when
      its grad_fn is read, so it is made before the write-back);
    - ``"grad"``: a view whose ``grad_fn`` reaches the argument;
    - ``"dropped"``: a view with a ``grad_fn`` that does not reach it (it views a view made
      under no_grad: the gradient stops there);
    - ``"no_grad"``: no ``grad_fn``, requires grad through the argument (made under no_grad);
    - ``"detached"``: no ``grad_fn`` and no grad, the argument requires grad (a view of its
      ``detach()``);
    - ``"plain"``: the argument requires no grad.

    By grad_fn, not requires_grad: a view made under no_grad of one that requires grad
    requires grad too, with no grad_fn, in eager as in the trace."""
    gf = grad_fn_of(o)
    if not o._is_view():
        return ViewMode.WRITTEN if gf is not None else ViewMode.ALIAS
    if gf is STALE:
        return ViewMode.STALE
    if gf is not None:
        base = hidden.get(id(o._base), o._base)
        if base is not arg and base is not arg._base and has_history(gf, hidden):
            return ViewMode.WRITTEN        # a view of a detach of the argument: no autograd view of it
        if reaches_arg(gf, arg, start_fn):
            return ViewMode.GRAD
        return ViewMode.WRITTEN if has_history(gf, hidden) else ViewMode.DROPPED
    if not arg.requires_grad:
        return ViewMode.PLAIN
    return ViewMode.NO_GRAD if o.requires_grad else ViewMode.DETACHED


def new_leaf_kind(o) -> LeafMade:
    """A leaf that requires grad made inside: ``LeafMade.LEAF``, or ``LeafMade.VIEW`` for a view of
    one whose flag was set after the view was made (``v2 = v1[:1]; v1.requires_grad_()``): it
    requires grad through its base but has no gradient edge, so backward leaves its ``.grad``
    None."""
    if not o._is_view():
        return LeafMade.LEAF
    # its gradient edge, as torch.autograd.graph.get_gradient_edge finds it (a view_as, kept
    # out of the traced graph)
    with disable_proxy_modes_tracing(), torch.enable_grad():
        edge = o.view_as(o).grad_fn.next_functions[0][0]
    return LeafMade.VIEW if edge is None else LeafMade.LEAF


def remake_dropped(a: torch.Tensor, geometry) -> torch.Tensor:
    """A view of ``a`` in ``geometry`` with a ``grad_fn`` whose edge to ``a`` is dropped (mode
    ``"dropped"``): a view made under no_grad, viewed again in grad mode."""
    with torch.no_grad():
        o = a.as_strided(*geometry)
    with torch.enable_grad():
        return o.view_as(o)


def remake_view_of_leaf(o: torch.Tensor) -> torch.Tensor:
    """``o`` as a view of a leaf made inside whose ``requires_grad_()`` came after the view
    (``new_leaf_kind`` ``LeafMade.VIEW``)."""
    base = o.detach()
    with torch.enable_grad():
        v = base.view_as(base)
    base.requires_grad_()
    return v


# NOTE [requires_grad_ on a subclass argument]
# ``a.requires_grad_()`` on a leaf argument inside the call, then an output computed from it:
# eager's output requires grad and its gradient reaches the caller's ``a``. As the plain
# engine does (NOTE [requires_grad_ on an argument] in engine/capture/functional_run.py), the runtime
# sets the caller's flag before the compiled function runs, so that ``a`` is an input of
# ``Outer`` that takes a gradient; the joint rebuilds ``a`` without the flag and the
# function's own ``requires_grad_()`` sets it there, so that what was computed before the
# flag stays without history, as in eager (and the forward trace, made with the flag unset,
# marks those outputs non-differentiable). Only an argument whose gradient an output (or a
# written argument) reaches is routed; the others get the flag after the call. Refused by
# name instead: an argument whose shape changed in place (its gradient's geometry would be
# the new one, the edge's the old one) or that shares its storage with another argument.

def routed_grad_set(reached: list, moved: dict, outer: list, keys: list,
                    family: dict | None = None, written: list = ()) -> list:
    """Of the arguments given ``requires_grad_()`` inside whose gradient an output reaches,
    those the runtime flags before the call (NOTE [requires_grad_ on a subclass argument]).
    ``family``: per argument, the arguments traced as its base or its argument views
    (NOTE [subclass views of an argument given requires_grad_]): where nothing of them is written,
    sharing a storage with them alone is no hindrance, since the trace reads their flags
    through one another as eager does."""
    family = family or {}

    def shared(j):
        kin = family.get(j, set())
        if kin & set(written):
            kin = set()
        return any(keys[i] == keys[j] and a is not outer[j] and i not in kin
                   for i, a in enumerate(outer))
    return [j for j in reached if j not in moved and not shared(j)]


def flag_before_call(facts: OuterFacts, outer: list, requires: list) -> list:
    """Set the routed arguments' flags on the caller's tensors (in grad mode); ``requires``
    with ``"set"`` at those arguments: grad leaves of the joint whose flag the function sets."""
    routed = facts.routed if torch.is_grad_enabled() else ()
    for j in routed:
        outer[j].requires_grad_()
    return [("set" if j in routed and not r else r) for j, r in enumerate(requires)]


def needs_history(box: dict) -> bool:
    """Whether outputs need autograd history although no argument takes a gradient: one
    computed from a leaf made inside requires grad in the trace, or an argument was written
    with a value that does. Then ``Outer`` runs over one more input, a grad leaf of its own,
    so that its outputs get a ``grad_fn`` (its backward gives the arguments no gradient)."""
    return torch.is_grad_enabled() and (any(box["diff"]) or bool(box["facts"].rebased))


# NOTE [subclass enable_grad regions of a no_grad call]
# Under no_grad the subclass path runs the compiled graph with no outer-level autograd
# (nothing takes a gradient). But an ``enable_grad`` region inside the function records
# autograd as in eager: a write there of a non-leaf argument that requires grad gives it a
# new grad_fn (its gradient then flows through the write), and an output computed there from
# an argument that requires grad comes back with a grad_fn. The forward trace (traced under
# no_grad, the arguments given the caller's flags, a non-leaf kept a non-leaf) sees both
# (``rebased``, ``recorded``) and its autograd is eager's: only the region's ops are on it.
# Such a call takes the grad path (``Outer``, its joint traced in the forward's state, so
# the backward differentiates what eager's autograd recorded and nothing else), with
# ``requires`` as under grad mode; the outputs the trace gave no history are marked
# non-differentiable (``box["diff"]``), as eager's are not recorded.

def recorded_in_trace(outs: list, before: list) -> bool:
    """Does an output of the forward trace have a grad_fn that none of the arguments had at the
    call (``before``: per argument, its grad_fn third)?"""
    old = {id(b[2]) for b in before if b[2] is not None}
    return any(fn is not None and fn is not STALE and id(fn) not in old
               for fn in (grad_fn_of(o) for o in outs))


def grad_region_of_no_grad_call(box: dict) -> bool:
    """NOTE [subclass enable_grad regions of a no_grad call]: does this no_grad call record
    autograd in an enable_grad region?"""
    return not torch.is_grad_enabled() and not torch.is_inference_mode_enabled() and \
        bool(box["facts"].rebased or box.get("recorded"))


def outer_training(box: dict, requires: list):
    """For ``explain``: (mode, reason) where the call trains though no argument requires grad
    at the call, else False."""
    if torch.is_grad_enabled() and box.get("views") and any(box["diff"]):
        # the hidden leaves' flags are no input of the plain graph, which sees no grad there
        return ("training", "an output requires grad through an argument that views another "
                "one given requires_grad_() inside "
                "(NOTE [subclass views of an argument given requires_grad_])")
    if not torch.is_grad_enabled() or any(requires):
        return False
    if box["facts"].routed:
        return ("training", "requires_grad_() on an argument inside the call: the runtime sets "
                "its flag before the call, and it takes a gradient "
                "(NOTE [requires_grad_ on a subclass argument])")
    return needs_history(box) and ("training", "an output has autograd history from a leaf "
                                   "made inside, though no argument requires grad")


def detached_written(a: torch.Tensor, geometry, value: torch.Tensor) -> torch.Tensor:
    """An output over ``a``'s storage that is no autograd view of it, with a history of its own
    (mode ``"written"``): ``a``'s detach in ``geometry``, over which the graph's ``value`` (the
    same data) is copied in grad mode, so that its gradient flows through ``value``."""
    o = a.detach().as_strided(*geometry)
    if value.requires_grad and torch.is_grad_enabled():
        o.copy_(value)
    return o


def remake_view_of_new_leaf(o: torch.Tensor, edge: bool) -> torch.Tensor:
    """``o`` as a view (in grad mode) of a leaf made inside, which eager refuses to write in
    place: its gradient reaches that leaf (``edge``; the leaf is not returned, so its
    ``.grad`` is seen by no one), or, viewing a view taken before the leaf's
    ``requires_grad_()``, it reaches nothing (``new_leaf_kind`` ``LeafMade.VIEW``)."""
    if not edge:
        v = remake_view_of_leaf(o)
        with torch.enable_grad():
            return v.view_as(v)
    base = o.detach().requires_grad_()
    with torch.enable_grad():
        return base.view_as(base)


def explain_inputs(tensors: list, grads: list) -> list:
    """For ``explain``: the desugared graph's plain inputs, each inner tensor of a subclass
    argument that requires grad a tensor requiring grad. A plain argument keeps its views, and
    a tensor passed twice stays one tensor. Inner tensors of several such arguments that share
    a storage (views of one TwoTensor) stay views of one base: a non-leaf copy of that storage
    that requires grad, as the arguments are in eager; apart, the plain graph would see
    aliased grad leaves, which it refuses."""
    from ..engine.capture.functional import storage_ref

    def wants(t, r, sub):
        return r and sub and (t.is_floating_point() or t.is_complex())
    shared: dict = {}
    for t, (r, sub) in zip(tensors, grads):
        if wants(t, r, sub):
            shared.setdefault(storage_ref(t), set()).add(id(t))
    made, bases, ins = {}, {}, []
    for t, (r, sub) in zip(tensors, grads):
        if id(t) not in made:
            x = t if r and not sub else t.detach()
            if wants(t, r, sub) and len(shared[storage_ref(t)]) > 1:
                key = storage_ref(t)
                if key not in bases:
                    whole = torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())
                    bases[key] = whole.detach().requires_grad_().clone()
                x = bases[key].as_strided(t.shape, t.stride(), t.storage_offset())
            elif wants(t, r, sub):
                x.requires_grad_()
            made[id(t)] = x
        ins.append(made[id(t)])
    return ins


def explain_forward(tensors: list) -> tuple:
    """For ``explain``, where the plain engine refuses the desugared graph with inner tensors
    that require grad (``explain_inputs``; e.g. a set_() of an argument that then requires
    grad): the graph as the call runs it, on detached inner tensors (``Outer.forward``; the
    outer-level joint is another graph), and the decision of the call, which trains since an
    argument requires grad at the outer level. (inputs, (mode, reason))."""
    made: dict = {}
    ins = [made.setdefault(id(t), t.detach()) for t in tensors]
    return ins, ("training", "an argument requires grad at the outer level (of a tensor "
                 "subclass call); the forward graph shown runs on detached inner tensors")


# NOTE [subclass views of an argument given requires_grad_]
# ``f(x, a1, a2)`` with ``a2 = a1[1:]`` taken before the call (a view that is a leaf: no
# grad_fn), then ``a1.requires_grad_()`` inside: eager's ``a2`` requires grad through its
# ``._base``, with no gradient edge, so ``a2.sin()`` requires grad and sends no gradient
# anywhere (NOTE [views of an argument given requires_grad_] in engine/capture/view_flags.py, the
# plain engine's counterpart; its machinery reads the plain signature's alias groups, which the
# desugared graph's detached inner tensors do not have). The forward trace rebuilds each
# argument on its own, so when it sees a requires_grad setter on an argument that is another
# one's ``._base`` (plain or subclass alike: a TwoTensor view of a TwoTensor), it runs again
# with each such view a view (taken before the function runs) of a hidden leaf holding its
# value (``as_argument_view``), whose flag follows its base's (``BaseFlags``): autograd then
# gives the view eager's flag and edges. Only a view's own flag (a gradient edge of its own,
# ``own_flag``) is the function's to set or the joint's to take a gradient for, and an output
# that views the hidden leaf views the base argument (``hidden``). The joint is rebuilt alike.

def own_flag(t: torch.Tensor) -> bool:
    """Whether ``t`` requires grad with a gradient edge of its own (a grad_fn or a gradient
    accumulator), as ``torch.autograd.graph.get_gradient_edge`` finds it; a leaf view that
    reads its flag through its base has none."""
    if not t.requires_grad or t.is_inference():
        return False
    if t.grad_fn is not None:
        return True
    with disable_proxy_modes_tracing(), torch.enable_grad():
        return t.view_as(t).grad_fn.next_functions[0][0] is not None


def argument_view_bases(outer: list) -> list:
    """``[view, base, own flag]`` per argument that is a leaf view of another argument (its
    ``._base``), for the trace's meta
    (NOTE [subclass views of an argument given requires_grad_])."""
    found = []
    for j, t in enumerate(outer):
        if not t._is_view() or t.is_inference() or t.grad_fn is not None \
                or any(t is o for o in outer[:j]):
            continue
        i = next((k for k, o in enumerate(outer) if o is t._base), None)
        if i is not None:
            found.append([j, i, own_flag(t)])
    return found


def as_argument_view(t: torch.Tensor, base_flag: bool, own: bool) -> tuple:
    """(view, hidden leaf): ``t`` as a view of a leaf holding its value with its base's flag;
    the view has its own flag where ``own``
    (NOTE [subclass views of an argument given requires_grad_])."""
    leaf = t.detach()
    view = leaf.view(leaf.shape)
    leaf.requires_grad_(base_flag)
    if own:
        view.requires_grad_()
    return view, leaf


class BaseFlags(TorchFunctionMode):
    """While the user's function runs on the outer tensors: which arguments a requires_grad
    setter was called on, and, per base argument (by id), the hidden leaves whose flag follows
    its own (NOTE [subclass views of an argument given requires_grad_])."""

    def __init__(self, outer: list, hidden: dict):
        super().__init__()
        self.index = {id(t): j for j, t in reversed(list(enumerate(outer)))}
        self.followers: dict[int, list] = {}
        for leaf, i in hidden.values():
            self.followers.setdefault(id(outer[i]), []).append(leaf)
        self.flags_set: set[int] = set()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        target = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if target is not None and (call_name(func) == "requires_grad_" or (
                call_name(func) == "__set__"
                and getattr(func, "__self__", None) is REQUIRES_GRAD_ATTR)):
            if id(target) in self.index:
                self.flags_set.add(self.index[id(target)])
            for leaf in self.followers.get(id(target), ()):
                leaf.requires_grad_(target.requires_grad)
        return out

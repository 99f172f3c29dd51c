"""higher_order: torch's control-flow operators run inline while a function is traced, with
the autograd eager gives them.

# NOTE [higher-order ops, inline]
``torch.cond``, ``torch._higher_order_ops.while_loop``, ``map`` and ``scan`` are
higher-order operators (HOPs): eager hands the user's functions to the operator, whose
dense kernel calls them (``if pred: true_fn(*operands)``; ``while cond_fn(*c): c =
body_fn(*c)``; one call per row, the rows stacked), inside an ``autograd.Function`` whose
inputs are the operands and the tensors the functions read from outside (Dynamo lifts them).
While aotcheck traces, a call of one of these operators runs that meaning inline instead of
dispatching the operator (``inline_higher_order_ops``, which every trace enters through
``functional.compiling()``): the user's functions run on the traced tensors, so their aten
ops are traced like any other. Eager's semantics, rule by rule:

- the predicate and each loop condition are read as Python bools, as the dense kernels read
  them: a tensor read is a value read, refused on fake tensors and pinned by a guard in the
  values trace (NOTE [value specialization] in values.py), so a graph serves only calls
  that take the same branch, the same number of times; a call that differs compiles again
  (from the cache as well: the guard is in the cached graph);
- under grad mode, where an operand, or a tensor the functions read from outside, requires
  grad, eager's outputs come out of its ``autograd.Function``: every floating output
  requires grad, and each such input gets a gradient, zeros where no output depends on it.
  The inline outputs pass through :class:`Join`, a Function over the outputs and those
  inputs whose backward adds zeros to each input: the gradients of the ops themselves flow
  through the inline graph, and the requires_grad flags and zero gradients are eager's.
  For ``cond`` the branch not taken is run too, on fake tensors outside the trace, to find
  the tensors it reads (eager lifts both branches');
- a random op inside, under grad with such an input, is refused: eager's backward runs the
  functions again and draws again, so its gradients do not match its own forward, which a
  traced graph cannot follow.

A HOP without a rule here keeps PyTorch's dispatch, which refuses it by name while tracing.

Before and after, for ``cond(x.sum() > 0, lambda a: a.sin(), lambda a: a.cos(), (x,))`` on a
call where ``x.sum() > 0``, traced on this call's values::

    sum_1 = aten.sum.default(x); gt = aten.gt.Scalar(sum_1, 0)
    guard_value = aotcheck.guard_value.default(gt, True)
    sin = aten.sin.default(x); clone = aten.clone.default(sin)     # the Join's output
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch._ops import HigherOrderOperator
from torch.multiprocessing.reductions import StorageWeakRef
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from ...errors import TraceError, UnsupportedInputError

class inline_higher_order_ops:
    """While entered (re-entrant), calls of the HOPs in ``RULES`` run their rule instead of
    dispatching (NOTE [higher-order ops, inline]). The base class's ``__call__`` is replaced,
    and that of each ruled operator's class that defines its own (``cond``'s validates, then
    calls the base; ``tag_activation_checkpoint``'s runs its kernel directly)."""
    depth = 0
    saved: dict = {}

    def __enter__(self):
        if inline_higher_order_ops.depth == 0:
            for cls in _classes():
                own = cls.__dict__["__call__"]
                inline_higher_order_ops.saved[cls] = own
                cls.__call__ = _inline_call(own)
        inline_higher_order_ops.depth += 1
        return self

    def __exit__(self, *exc):
        inline_higher_order_ops.depth -= 1
        if inline_higher_order_ops.depth == 0:
            for cls, own in inline_higher_order_ops.saved.items():
                cls.__call__ = own
            inline_higher_order_ops.saved.clear()
        return False


def _classes() -> list:
    """HigherOrderOperator, and the class of each operator in ``RULES`` that defines its own
    ``__call__``."""
    out = [HigherOrderOperator]
    for name in RULES:
        hop = getattr(torch.ops.higher_order, name, None)
        if hop is not None and "__call__" in type(hop).__dict__ and type(hop) not in out:
            out.append(type(hop))
    return out


def _inline_call(own):
    def call(hop, /, *args, **kwargs):
        rule = RULES.get(hop.name())
        if rule is None:
            return own(hop, *args, **kwargs)
        return rule(*args, **kwargs)
    return call


def truth(pred) -> bool:
    """A predicate as the dense kernels read it (``if pred:``): a tensor's value is read."""
    if isinstance(pred, torch.Tensor) and pred.numel() != 1:
        raise TraceError(f"a control-flow predicate must have one element, got shape "
                         f"{tuple(pred.shape)}")
    return bool(pred)


@dataclass(frozen=True)
class Semantics:
    """What eager's operator allows and gives, for one call (Dynamo's checks, grad-dependent
    for cond and while_loop): a write to an input, an output that aliases an input or another
    output, and whether its outputs are views made inside its Function (while_loop's and
    map's are pieces of the stacked steps, which autograd forbids writing in place)."""
    name: str
    mutation_ok: bool = False
    aliasing_ok: bool = False
    views: bool = False


def _cond(pred, true_fn, false_fn, operands, **_):
    taken, other = (true_fn, false_fn) if truth(pred) else (false_fn, true_fn)
    operands = tuple(operands)
    free = not torch.is_grad_enabled()
    return as_function(lambda ops: taken(*ops), operands, Semantics("torch.cond", free, free),
                       also_reads=lambda: read_from_outside(other, operands))


def _while_loop(cond_fn, body_fn, carried_inputs, additional_inputs=(), **_):
    n = len(carried_inputs)

    def run(inputs):
        carried, extra = tuple(inputs[:n]), tuple(inputs[n:])
        if not truth(_condition(cond_fn(*carried, *extra))):
            return tuple(v.clone() if isinstance(v, torch.Tensor) else v for v in carried)
        while True:
            out = body_fn(*carried, *extra)
            if not isinstance(out, tuple) or len(out) != n:
                raise TraceError(f"while_loop's body_fn must return a tuple of {n} values, "
                                 f"got {type(out).__name__}")
            carried = out
            if not truth(_condition(cond_fn(*carried, *extra))):
                return carried
    return as_function(run, (*carried_inputs, *additional_inputs), Semantics(
        "torch.while_loop", mutation_ok=not torch.is_grad_enabled(), views=True))


def _condition(pred):
    if isinstance(pred, bool) or (isinstance(pred, torch.Tensor) and pred.dim() == 0
                                  and pred.dtype == torch.bool):
        return pred
    raise TraceError(f"cond_fn must return a boolean scalar tensor or a boolean but got {pred}")


def _map(f, xs, pos_args, **_):
    n = len(xs)

    def run(inputs):
        rows = zip(*(x.unbind(0) for x in inputs[:n]))
        outs = [pytree.tree_flatten(f(*row, *inputs[n:])) for row in rows]
        spec = outs[0][1]
        return pytree.tree_unflatten([torch.stack(leaves) for leaves in
                                      zip(*(leaves for leaves, _ in outs))], spec)
    return as_function(run, (*xs, *pos_args), Semantics("map", views=True))


def _scan(combine_fn, init, xs, additional_inputs=(), **_):
    n_init, n_xs = len(init), len(xs)

    def run(inputs):
        carry = list(inputs[:n_init])
        xs_, extra = inputs[n_init:n_init + n_xs], inputs[n_init + n_xs:]
        if not xs_:
            return (*carry,)
        steps = []
        for i in range(xs_[0].shape[0]):
            out = list(combine_fn(*carry, *(x.select(0, i) for x in xs_), *extra))
            carry, step = out[:n_init], out[n_init:]
            steps.append(step)
        stacked = [torch.stack(col) if isinstance(col[0], torch.Tensor) else None
                   for col in zip(*steps)]
        return (*carry, *stacked)
    return as_function(run, (*init, *xs, *additional_inputs), Semantics("scan"))


# later releases pass more keywords (map_impl: mutated_arg_indices), which the rules ignore;
# checkpoint.py adds Dynamo's checkpoint region (tag_activation_checkpoint)
RULES = {"cond": _cond, "while_loop": _while_loop, "map_impl": _map, "scan": _scan}


def as_function(run, inputs: tuple, sem: Semantics, also_reads=None):
    """``run(inputs)`` inline, with eager's autograd.Function semantics over the inputs and
    the tensors it reads from outside (``also_reads()``: more of those, from code not run),
    and eager's refusals (``sem``)."""
    versions = {id(t): t._version for t in inputs if isinstance(t, torch.Tensor)}
    with OutsideReads(inputs) as reads, Draws() as draws:
        outs = run(inputs)
    read = [t for t in (*inputs, *reads.found) if isinstance(t, torch.Tensor)]
    refuse_what_eager_refuses(sem, read, {**reads.versions, **versions}, outs)
    if not torch.is_grad_enabled():
        return outs
    outside = list(reads.found) + (list(also_reads()) if also_reads is not None else [])
    lifted = _unique([t for t in (*inputs, *outside)
                      if isinstance(t, torch.Tensor) and t.requires_grad])
    if not lifted:
        return outs
    if draws.seen:
        raise UnsupportedInputError(
            f"a random op ({draws.seen[0]}) inside {sem.name}, under autograd: eager's "
            "backward runs the functions again and draws again, so its gradients do not "
            "follow its own forward; aotcheck cannot follow that. Draw the random values "
            "outside and pass them in as operands")
    return join(outs, lifted, views=sem.views)


def refuse_what_eager_refuses(sem: Semantics, read: list, versions: dict, outs) -> None:
    """Eager's operator (Dynamo, tracing the functions for it) refuses a write to a tensor
    the functions read from their inputs or from outside, and an output that shares memory
    with one of those or with another output, where ``sem`` does not allow it."""
    if not sem.mutation_ok and any(t._version != versions.get(id(t), t._version) for t in read):
        raise TraceError(f"{sem.name}: a function writes one of its inputs in place, which eager "
                         "refuses here (Dynamo: \"Higher order ops do not support input "
                         "mutation\")")
    if sem.aliasing_ok:
        return
    seen = {_storage_key(t) for t in read}
    for o in pytree.tree_leaves(outs):
        if isinstance(o, torch.Tensor):
            key = _storage_key(o)
            if key in seen:
                raise TraceError(f"{sem.name}: an output shares memory with an input or another "
                                 "output, which eager refuses here (Dynamo: \"Higher order ops "
                                 "do not support aliasing\")")
            seen.add(key)


def _storage_key(t: torch.Tensor):
    while torch._C._functorch.is_functorch_wrapped_tensor(t):
        t = torch._C._functorch.get_unwrapped(t)
    return StorageWeakRef(t.untyped_storage())


def join(outs, lifted: list, *, views: bool = False, zeros: bool = True):
    """``outs`` as outputs of one autograd.Function over them and ``lifted`` (:class:`Join`;
    ``zeros``: each of ``lifted`` gets a zero gradient, else none)."""
    leaves, spec = pytree.tree_flatten(outs)
    where = [i for i, t in enumerate(leaves) if isinstance(t, torch.Tensor)]
    joined = Join.apply(len(where), views, zeros, *(leaves[i] for i in where), *lifted)
    for i, t in zip(where, joined):
        leaves[i] = t
    return pytree.tree_unflatten(leaves, spec)


class Join(torch.autograd.Function):
    """Identity on its first ``n`` inputs (copied: a Function's output is a new tensor, or
    with ``views`` a view of one made inside); with ``zeros`` every other input gets a zero
    gradient, as eager's HOP Function gives an input that no output depends on. The outputs' own
    gradients pass through to the inline graph."""

    @staticmethod
    def forward(ctx, n, views, zeros, *tensors):
        ctx.zeros = zeros
        ctx.lifted = [(t.shape, t.dtype, t.device) for t in tensors[n:]]
        outs = tuple(t.clone() for t in tensors[:n])
        if views:
            outs = tuple(o.view_as(o) for o in outs)
        ctx.mark_non_differentiable(*(o for o in outs if not (o.is_floating_point() or o.is_complex())))
        return outs

    @staticmethod
    def backward(ctx, *grads):
        zeros = [torch.zeros(shape, dtype=dtype, device=device) if ctx.zeros else None
                 for shape, dtype, device in ctx.lifted]
        return (None, None, None, *grads, *zeros)


def _unique(tensors: list) -> list:
    seen, out = set(), []
    for t in tensors:
        if id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


class OutsideReads(TorchFunctionMode):
    """The tensors a run reads that are neither its inputs nor made inside it (closures,
    globals, module parameters: what Dynamo lifts as a HOP's extra inputs)."""

    def __init__(self, inputs):
        super().__init__()
        self.known = {id(t): t for t in pytree.tree_leaves(inputs) if isinstance(t, torch.Tensor)}
        self.found: list = []
        self.versions: dict = {}     # id -> version when first read

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        for t in pytree.tree_leaves((args, kwargs)):
            if isinstance(t, torch.Tensor) and id(t) not in self.known:
                self.known[id(t)] = t
                self.found.append(t)
                self.versions[id(t)] = t._version
        out = func(*args, **kwargs)
        for t in pytree.tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self.known.setdefault(id(t), t)
        return out


class Draws(TorchDispatchMode):
    """The random ops a run dispatches (tagged ``nondeterministic_seeded``)."""
    supports_higher_order_operators = True

    def __init__(self):
        super().__init__()
        self.seen: list = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if isinstance(func, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in func.tags:
            self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


def read_from_outside(fn, operands: tuple) -> list:
    """The tensors ``fn(*operands)`` reads from outside, found by running it on fake copies
    outside the trace (the branch ``cond`` does not take: eager lifts what it reads too).
    Only needed under grad mode; a run that fails is refused (Dynamo, which eager's cond
    runs, must trace both branches)."""
    if not torch.is_grad_enabled():
        return []
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import _disable_current_modes
    with _disable_current_modes(), _no_functionalization():
        mode = FakeTensorMode(allow_non_fake_inputs=False)
        speculate = Speculate(mode)
        fakes = [speculate.fake(t) if isinstance(t, torch.Tensor) else t for t in operands]
        speculate.made.update(id(t) for t in fakes)
        try:
            with mode, speculate:
                fn(*fakes)
        except Exception as e:  # noqa: BLE001 - refused by name
            raise TraceError(f"the branch torch.cond does not take could not be run on fake "
                             f"tensors to find the tensors it reads ({type(e).__name__}: "
                             f"{str(e).splitlines()[0] if str(e) else ''})") from None
    return speculate.outside


class _no_functionalization:
    def __enter__(self):
        self.was = _functionalization_on()
        self.views = torch._C._functionalization_reapply_views_tls()
        if self.was:
            torch._disable_functionalization()

    def __exit__(self, *exc):
        if self.was:
            torch._enable_functionalization(reapply_views=self.views)
        return False


def _functionalization_on() -> bool:
    return torch._C._dispatch_tls_is_dispatch_key_included(torch._C.DispatchKey.Functionalize)


class Speculate(TorchFunctionMode):
    """Runs a function on fake tensors: each tensor from outside that a call receives is
    recorded and replaced by a fake of its geometry; the call itself runs below every other
    torch-function mode (nothing of the trace sees it)."""

    def __init__(self, mode):
        super().__init__()
        self.mode, self.made, self.fakes, self.outside = mode, set(), {}, []

    def fake(self, t: torch.Tensor) -> torch.Tensor:
        if id(t) not in self.fakes:
            with torch._C.DisableTorchFunction(), self.mode:
                f = torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype,
                                        device=t.device)
                if t.requires_grad:
                    f.requires_grad_(True)
            self.fakes[id(t)] = (t, f)
            self.made.add(id(f))
        return self.fakes[id(t)][1]

    def __torch_function__(self, func, types, args=(), kwargs=None):
        def swap(t):
            if id(t) in self.made:
                return t
            if id(t) not in self.fakes:
                self.outside.append(t)
            return self.fake(t)
        args, kwargs = pytree.tree_map_only(torch.Tensor, swap, (args, kwargs or {}))
        with torch._C.DisableTorchFunction():
            out = func(*args, **kwargs)
        for t in pytree.tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self.made.add(id(t))
        return out

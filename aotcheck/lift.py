"""lift: the tensors a function reads that are not its arguments become arguments.

# NOTE [lifted tensors]
A function may read tensors it is not passed: a closure's or a global's, a module's
parameters and buffers (``aot_function(model)``, ``aot_function(lambda x: model(x))``).
Eager reads their values at each call, sends gradients to them and writes their mutations
into them. A graph that held them as constants would get all three wrong, so the API passes
them in: the fingerprint walk that keys the Python state (cache/fingerprint.py) also lists
every tensor it reaches, and the call appends them, in walk order, to the arguments under
one reserved keyword (``LIFTED``). The traced function is :func:`wrap`'s, which runs the
user's function with a TorchFunctionMode (:class:`Substitute`) that swaps each lifted
tensor for its placeholder in every torch call, so the trace reads the placeholder: an
argument like any other, in the signature (metadata, aliasing with the real arguments),
the cache key, the mutations written back and the gradients. At run time the compiled
function is called with the real tensors of that call.

Before and after, for ``lin = nn.Linear(3, 2); f = lambda x: lin(x)``::

    f(x)                       -> refused: "uses a tensor that is not one of its arguments"
    wrap(f)(x, __aotcheck_lifted__=(lin.weight, lin.bias))
        t = aten.t.default(arg1_1); addmm = aten.addmm.default(arg2_1, arg0_1, t)

A tensor the walk cannot reach (one held only by a C++ object), and a tensor subclass held
in a closure, keep the named refusal.
"""
from __future__ import annotations

import functools

import torch
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree

from .cache.fingerprint import fingerprint_walk
from .errors import AotcheckError

LIFTED = "__aotcheck_lifted__"


def reachable_tensors(fn) -> tuple:
    """The tensors ``fn`` can read that are not its arguments, in a fixed order."""
    return liftable(fingerprint_walk(fn, identity_fallback=True)[1])


def liftable(tensors) -> tuple:
    """The tensors that are lifted: plain tensors and parameters. A tensor subclass (a
    closure's TwoTensor) is not: the subclass layer desugars arguments only, so such a
    tensor keeps the named refusal."""
    return tuple(t for t in tensors if type(t) in (torch.Tensor, torch.nn.Parameter)
                 or isinstance(t, torch.nn.parameter.Buffer))


def wrap(fn):
    """``fn`` taking its lifted tensors as the keyword ``LIFTED`` (see the NOTE above)."""
    @functools.wraps(fn)
    def lifted(*args, **kwargs):
        placeholders = kwargs.pop(LIFTED, ())
        if not placeholders:
            return fn(*args, **kwargs)
        reals = reachable_tensors(fn)
        if len(reals) != len(placeholders):
            raise AotcheckError(
                f"the function reaches {len(reals)} tensors that are not its arguments, where "
                f"the call lifted {len(placeholders)}: did the function change its closure, "
                "globals or module attributes while it was traced?")
        table = {id(r): p for r, p in zip(reals, placeholders) if r is not p}
        if not table:
            return fn(*args, **kwargs)
        with Substitute(table, reals):
            out = fn(*args, **kwargs)
        return pytree.tree_map_only(torch.Tensor, lambda t: table.get(id(t), t), out)
    return lifted


class Substitute(TorchFunctionMode):
    """While the function is traced: each lifted tensor, wherever a torch call receives it,
    is its placeholder (``table``: id of the real tensor -> placeholder; ``keep`` holds the
    real tensors, so their ids stay theirs)."""

    def __init__(self, table: dict, keep):
        super().__init__()
        self.table, self.keep = table, keep

    def __torch_function__(self, func, types, args=(), kwargs=None):
        table = self.table
        args, kwargs = pytree.tree_map_only(torch.Tensor, lambda t: table.get(id(t), t),
                                            (args, kwargs or {}))
        return func(*args, **kwargs)

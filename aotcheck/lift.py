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
    """``fn`` taking its lifted tensors as the keyword ``LIFTED`` (NOTE [lifted tensors])."""
    @functools.wraps(fn)
    def lifted(*args, **kwargs):
        state = PythonState(fn)
        try:
            return traced_call(*args, **kwargs)
        finally:
            state.restore()

    def traced_call(*args, **kwargs):
        placeholders = kwargs.pop(LIFTED, ())
        if not placeholders:
            return fn(*args, **kwargs)
        # the call's own lifted tensors, where the compile of that call set them: a walk now
        # may find other tensors, where an earlier trace of the function wrote a traced value
        # into its state (a module forward hook storing its output in a closed-over dict)
        reals = lifted.reals
        if reals is None or len(reals) != len(placeholders):
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
    lifted.reals = None        # set by CompiledFunction while it compiles a call
    return lifted


class PythonState:
    """The containers a function's state holds (the dicts, lists and module attributes the
    fingerprint walk reaches), as they are before one traced run of it.

    # NOTE [traced values left in Python state]
    A traced run may store a value it computed into Python state: a module forward hook that
    writes its output into a closed-over dict, ``self.last = out`` in a forward. Eager stores
    a real tensor there; the trace stores a traced one (a functional or fake tensor), which
    the next trace would read, or lift, as if it were a real tensor (PyTorch's functional
    storage asserts), and the caller would find in its dict after the call. After each traced
    run, every slot that now holds a traced tensor gets back what it held before the run
    (or is removed, if it was not there). The compiled function does not run the hook again:
    the slot keeps its value from before the call (eager's holds the call's value)."""

    def __init__(self, fn):
        from .cache.fingerprint import reachable_objects
        self.saved = []
        for obj in reachable_objects(fn):
            if type(obj) in (dict, list):
                self.saved.append((obj, obj.copy()))
            elif isinstance(obj, torch.nn.Module):
                self.saved.append((obj.__dict__, dict(obj.__dict__)))
                # a module's own lists of tensors: an RNN's _flat_weights, which functional_call
                # refills (a new list, through RNNBase.__setattr__) with the traced parameters
                self.saved.extend((v, v.copy()) for v in obj.__dict__.values() if type(v) is list)

    def restore(self) -> None:
        for box, before in self.saved:
            if isinstance(box, list):
                if len(box) == len(before):
                    for k, v in enumerate(box):
                        if _traced(v) and not _traced(before[k]):
                            box[k] = before[k]
                elif any(_traced(v) for v in box):
                    box[:] = before
                continue
            for k in [k for k, v in box.items() if _traced(v) or _holds_traced(v)]:
                if k in before and not _traced(before[k]):
                    box[k] = before[k]
                elif k not in before:
                    del box[k]


def _holds_traced(v) -> bool:
    return type(v) is list and any(_traced(t) for t in v)


def _traced(v) -> bool:
    """A tensor of a trace (functional or fake), never a real one."""
    from torch._subclasses.fake_tensor import FakeTensor
    return isinstance(v, torch.Tensor) and (
        isinstance(v, FakeTensor) or torch._is_functional_tensor(v)
        or type(v).__name__ == "FunctionalTensor")


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

"""In-place metadata calls on the arguments of a call with a tensor-subclass argument, replayed
on the caller's tensors (the subclass path's counterpart of NOTE [mutation replay] in
engine/runtime.py).

NOTE [subclass metadata replay]
An argument whose shape changes in place in grad mode (``a1.transpose_(0, 2)``) gets a new
grad_fn in eager, of that very call (``TransposeBackward1``, next to its old grad_fn). The
subclass runtime gives an argument that autograd rebased its new value with a ``copy_`` in
grad mode (NOTE [subclass non-leaf writes]), after an ``as_strided_`` to its new geometry.
For a VIEW that is wrong where nothing wrote its data: the ``copy_`` makes autograd rebuild
the view's grad_fn from its base, and for a wrapper subclass (no ``as_strided`` replay)
autograd replays the ops that made the view, which miss the in-place metadata change; the
backward then fails ("MulBackward0 returned an invalid gradient ... got [4, 3, 1] but
expected shape compatible with [1, 3, 4]"). Eager never rebuilds it, as nothing was written.

So the outer trace logs the user's in-place metadata calls on the arguments, and the data
writes (by storage). An argument that autograd rebased, whose storage nothing wrote, takes no
new value from the compiled graph: the runtime calls the logged methods on the caller's
tensor, each in the grad mode autograd recorded it in, and gets eager's geometry and grad_fn
(no ``copy_``, no gradient through the compiled graph: the value is a view of the old one).

Before (trace of ``f(a0, a1)``; ``a1.transpose_(0, 2)``)::

    facts = {"moved": {1: ((4, 3, 1), (3, 1, 12), 0)}, "rebased": [1], ...}

After ``split_rebased``::

    facts = {"moved": {...}, "rebased": [], "replay": {1: [("transpose_", [0, 2], [], True)]}}
"""
from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

from .engine.functional import geometry_of, storage_ref
from .engine.recorder import METADATA_METHODS, _mutating

# resize_ may change the storage itself: a write for this purpose
_REPLAYED = METADATA_METHODS - {"resize_"}


def _storage(t):
    from .subclass import plain_part
    try:
        return storage_ref(plain_part(t))
    except (RuntimeError, NotImplementedError):      # no storage to name: unknown
        return None


def _plain_args(v):
    """``v`` as plain data (ints, floats, bools, None, sequences), or raise TypeError."""
    if isinstance(v, (bool, int, float)) or v is None:
        return v
    if isinstance(v, (list, tuple, torch.Size)):
        return [_plain_args(x) for x in v]
    raise TypeError(type(v).__name__)


class OuterCallLog(TorchFunctionMode):
    """Logs, while the user's function runs on the outer tensors, each argument's in-place
    metadata calls (in order, with whether autograd recorded them) and the storages that
    in-place data ops wrote (NOTE [subclass metadata replay])."""

    def __init__(self, outer: list):
        super().__init__()
        self.index: dict[int, int] = {}
        for j, t in enumerate(outer):
            self.index.setdefault(id(t), j)          # a tensor passed twice: its first place
        self.calls: dict[int, list] = {}
        self.unreplayable: set[int] = set()
        self.written: list = []                      # storages written; None: unknown
        self._outer = outer

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        target = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if target is not None and name in _REPLAYED and id(target) in self.index:
            j = self.index[id(target)]
            try:
                call = (name, _plain_args(list(args[1:])), _plain_args(sorted(kwargs.items())),
                        torch.is_grad_enabled() and target.requires_grad)
                self.calls.setdefault(j, []).append(call)
            except TypeError:
                self.unreplayable.add(j)
        elif target is not None and (_mutating(name) or name == "resize_"):
            self.written.append(_storage(target))
        out = kwargs.get("out")
        for t in (out if isinstance(out, (tuple, list)) else (out,)):
            if isinstance(t, torch.Tensor):
                self.written.append(_storage(t))
        return func(*args, **kwargs)

    def metadata_only(self, j: int) -> bool:
        """Did the function change argument ``j`` by logged metadata calls alone (no write to
        its storage, through any tensor)?"""
        if j not in self.calls or j in self.unreplayable or any(w is None for w in self.written):
            return False
        st = _storage(self._outer[j])
        return st is not None and all(w != st for w in self.written)


def split_rebased(facts: dict, log: OuterCallLog, outer: list) -> dict:
    """``facts`` with the rebased arguments that only logged metadata calls changed moved from
    ``rebased`` (a new value through the compiled graph) to ``replay`` (their calls)."""
    first = {j: log.index[id(t)] for j, t in enumerate(outer)}
    only = {j for j in facts["rebased"] if log.metadata_only(first[j])}
    replay = {j: log.calls[j] for j in only if first[j] == j}
    replay.update({j: [] for j in only if first[j] != j})       # the same tensor: once
    return dict(facts, rebased=[j for j in facts["rebased"] if j not in only], replay=replay)


def replay_metadata(facts: dict, outer: list) -> None:
    """Call each replayed argument's logged metadata methods on the caller's tensor, in the
    grad mode autograd recorded them in (NOTE [subclass metadata replay])."""
    for j, calls in facts.get("replay", {}).items():
        t = outer[j]
        for name, args, kwargs, grad in calls:
            with torch.set_grad_enabled(grad):
                getattr(t, name)(*args, **dict(kwargs))
        if j in facts["moved"] and geometry_of(t) != facts["moved"][j]:
            with torch.no_grad():                    # the trace's final geometry wins
                t.as_strided_(*facts["moved"][j])

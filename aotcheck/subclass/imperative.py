"""subclass.imperative: the user's imperative autograd calls in a call with tensor-subclass
arguments, refused by name where the subclass path would lose them.

NOTE [subclass imperative autograd]: the subclass path traces the user's function with
``make_fx`` (desugar.py), which records aten ops only. ``retain_grad()``, ``register_hook``
and ``x.data = y`` act on a tensor's autograd identity or swap its data outside the
dispatcher, so the trace drops them: an argument's hook never ran, ``retains_grad`` of an
argument or a returned tensor was False, and the values after ``.data =`` were the old ones
(silently wrong; found by ``aotcheck fuzz --engine aotcheck --seed 3``). The plain engine
replays them on the caller's tensors (NOTE [imperative autograd on arguments and outputs]
in engine/runtime/imperative.py); the subclass path does not yet, so it refuses what it
would lose, by name:
- ``x.data = y`` on any tensor (the trace keeps the old data);
- ``retain_grad()`` on a tensor the function returns that is not an argument (its ``.grad``
  holds the function's own later uses of it too, which the outer backward does not hand
  out); on an intermediate that is not returned nothing can see it, and it runs. On a leaf
  it is a no-op, as in eager; on a non-leaf argument it is replayed on the caller's tensor
  after the call (``retained_arguments``): the retain hook then sits on the argument's own
  node, which every gradient into the argument reaches, the function's included (the
  traces, forward and joint, skip it: autograd's retain hook on a traced argument written in
  place can trip torch's internal assert, fuzz seed 3);
- ``register_hook`` on an argument (plain or subclass, leaf or not, with grad or without) is
  not registered in the traces, forward or joint (the joint would apply it to the function's
  part of the gradient only, and a hook on a non-leaf argument was lost): it is recorded
  (``hooks``: position, hook, whether the argument was written before it) and registered on
  the caller's tensor, as the plain engine does (NOTE [imperative autograd on arguments and
  outputs] in engine/runtime/imperative.py): before the call, or after the write-back when
  the function wrote the argument first (the hook then belongs to the gradient of the
  argument as written, as eager's). The handle it returns is a real one on a dict of the
  watch's, so ``remove()`` inside the function takes the hook off the record. Hooks on
  intermediates run inside the traced joint as in eager (tested in tests/test_engine.py).
"""
from __future__ import annotations

from collections import OrderedDict

import torch
from torch.overrides import TorchFunctionMode
from torch.utils.hooks import RemovableHandle
from torch.utils import _pytree as pytree

from ..engine.capture.recorder import call_name
from ..errors import UnsupportedInputError

_DATA_ATTR = torch._C.TensorBase.data


class ImperativeWatch(TorchFunctionMode):
    """Watches the user's function run over ``outer`` (the tensors it is given) and, with
    :meth:`check`, refuses the calls the subclass trace would lose (NOTE [subclass imperative
    autograd])."""

    def __init__(self, outer: list, requires: list):
        super().__init__()
        self._outer = {id(t): t for t in outer}
        self._position = {}                 # an argument passed twice: its first place
        for j, t in enumerate(outer):
            self._position.setdefault(id(t), j)
        self._versions = {id(t): _version(t) for t in outer}
        self.retained: dict[int, torch.Tensor] = {}
        # per hook on an argument: (position, hook, its handle's dict, handle id, written before)
        self._hooks: list[tuple] = []
        self.refusal: str | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = call_name(func)
        target = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if target is not None and self.refusal is None:
            if name == "__set__" and getattr(func, "__self__", None) is _DATA_ATTR:
                self.refusal = "assigns x.data = y"
            elif name == "register_hook" and id(target) in self._outer and len(args) == 2 \
                    and not kwargs and target.requires_grad:
                return self._argument_hook(target, args[1])
            elif name == "retain_grad":
                self.retained[id(target)] = target
                if id(target) in self._outer:   # replayed on the caller's tensor, not traced
                    return None
        return func(*args, **kwargs)

    def check(self, result) -> list[int]:
        """Raise the refusal, if any, once the function has returned ``result``; else the
        positions among the outer tensors of the arguments to retain the grad of after the call."""
        if self.refusal is None:
            returned = {id(t) for t in pytree.tree_leaves(result) if isinstance(t, torch.Tensor)}
            if any(i in returned and i not in self._outer and not t.is_leaf    # a leaf's: no-op
                   for i, t in self.retained.items()):
                self.refusal = "calls retain_grad() on a tensor it returns"
        if self.refusal is not None:
            raise UnsupportedInputError(
                f"a function called with a tensor-subclass argument {self.refusal}; the subclass "
                "path traces aten ops only and would lose it (NOTE [subclass imperative "
                "autograd]). Call it with plain tensors, or move that call outside the function")
        return [self._position[i] for i in self.retained if i in self._outer]

    def _argument_hook(self, target: torch.Tensor, hook) -> RemovableHandle:
        """A hook on an argument, recorded for the call (see the NOTE), not registered here."""
        live: OrderedDict = OrderedDict()       # weakly referenced by the handle
        handle = RemovableHandle(live)
        live[handle.id] = hook
        written = _version(target) != self._versions[id(target)]
        self._hooks.append((self._position[id(target)], hook, live, handle.id, written))
        return handle

    def hooks(self) -> list[tuple]:
        """The hooks on arguments the function registered and did not remove, in order:
        (position, hook, written before)."""
        return [(j, hook, written) for j, hook, live, hid, written in self._hooks if hid in live]


def _version(t: torch.Tensor):
    return None if t.is_inference() else t._version


def argument_hooks(hooks: list, outer: list, written: bool) -> None:
    """``register_hook`` on the caller's arguments (``ImperativeWatch.hooks``): those
    registered before the function wrote their argument (``written=False``, before the call),
    or after (``written=True``, after the write-back)."""
    for j, hook, after in hooks:
        if after == written:
            outer[j].register_hook(hook)


def retained_arguments(positions, outer: list) -> None:
    """``retain_grad()`` on the caller's arguments the function called it on (a non-leaf that
    still requires grad after the call: ``check``'s positions)."""
    for j in positions:
        t = outer[j]
        if t.requires_grad and not t.is_leaf:
            t.retain_grad()

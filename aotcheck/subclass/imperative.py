"""subclass.imperative: the user's imperative autograd calls in a call with tensor-subclass
arguments, made where eager makes them, or refused by name where the subclass path would lose
them.

# NOTE [subclass imperative autograd]
the subclass path traces the user's function with
``make_fx`` (desugar.py), which records aten ops only. ``retain_grad()``, ``register_hook``
and ``x.data = y`` act on a tensor's autograd identity or swap its data outside the
dispatcher, so the trace drops them: an argument's hook never ran, ``retains_grad`` of an
argument or a returned tensor was False, and the values after ``.data =`` were the old ones
(silently wrong; found by ``aotcheck fuzz --engine aotcheck --seed 3``). The plain engine
replays them on the caller's tensors (NOTE [imperative autograd on arguments and outputs]
in engine/runtime/imperative.py); :class:`ImperativeWatch` watches the traces and:
- ``x.data = y``: recorded in the graph as a call the plain engine traces
  (NOTE [subclass .data assignment]); refused where ``x`` or ``y`` is a subclass;
- ``retain_grad()`` on a tensor the function returns that is not an argument: refused (its
  ``.grad`` holds the function's own later uses of it too, which the outer backward does not hand
  out); on an intermediate that is not returned nothing can see it, and it runs. On a leaf
  it is a no-op, as in eager; on a non-leaf argument it is replayed on the caller's tensor
  after the call (``retained_arguments``), or before it where a metadata call
  (``transpose_``) and no write followed (``retained_before``: eager's hook stays on the
  node the argument had, fuzz seed 1): the retain hook then sits on the argument's own
  node, which every gradient into the argument reaches, the function's included (the
  traces, forward and joint, skip it: autograd's retain hook on a traced argument written in
  place can trip torch's internal assert, fuzz seed 3);
- ``register_hook`` on an argument (plain or subclass, leaf or not, with grad or without) is
  not registered in the traces, forward or joint (the joint would apply it to the function's
  part of the gradient only, and a hook on a non-leaf argument was lost): it is recorded
  (``hooks``: position, hook, whether the argument was written before it) and registered on
  the caller's tensor, as the plain engine does
  (NOTE [imperative autograd on arguments and outputs] in engine/runtime/imperative.py): before the call, or
  after the write-back when the function wrote the argument first (the hook then belongs to the gradient of
  the argument as written, as eager's). The handle it returns is a real one on a dict of the
  watch's, so ``remove()`` inside the function takes the hook off the record. Hooks on
  intermediates run inside the traced joint as in eager (tested in tests/test_engine.py).
"""
from __future__ import annotations

from collections import OrderedDict

import torch
from torch.overrides import TorchFunctionMode
from torch.fx.node import has_side_effect
from torch.utils._python_dispatch import is_traceable_wrapper_subclass
from torch.utils.hooks import RemovableHandle
from torch.utils import _pytree as pytree

from ..engine.capture.recorder import METADATA_METHODS, call_name
from ..engine.runtime.imperative import skip_unreached
from .autograd import STALE, grad_fn_of, reaches
from ..errors import UnsupportedInputError

_DATA_ATTR = torch._C.TensorBase.data


class ImperativeWatch(TorchFunctionMode):
    """Watches the user's function run over ``outer`` (the tensors it is given) and, with
    :meth:`check`, refuses the calls the subclass trace would lose
    (NOTE [subclass imperative autograd])."""

    def __init__(self, outer: list, requires: list, caller_flags: tuple | None = None):
        """``caller_flags``: per outer tensor, whether the caller's requires grad (under
        inference mode the traced ones do not), else the traced tensors' own flags count."""
        super().__init__()
        self._outer = {id(t): t for t in outer}
        self._caller_flags = caller_flags
        self._position = {}                 # an argument passed twice: its first place
        for j, t in enumerate(outer):
            self._position.setdefault(id(t), j)
        self._versions = {id(t): _version(t) for t in outer}
        self.retained: dict[int, torch.Tensor] = {}
        # per argument retained: its version then, and the metadata calls on it since
        self._retained_at: dict[int, list] = {}
        # per hook on an argument: (position, hook, its handle's dict, handle id, written before)
        self._hooks: list[tuple] = []
        self.data_assigned: set[int] = set()    # the positions of arguments given ``x.data =``
        self._grad_leaves = {id(t) for t in outer if t.requires_grad and t.is_leaf}
        self._used: set[int] = set()            # those used in grad mode so far
        # those given ``.data =`` of another shape after a use, and those of them whose node of
        # the old shape a use after it holds (NOTE [subclass .data assignment onto another shape])
        self._reshaped_after_use: dict[int, torch.Tensor] = {}
        self._held: set[int] = set()
        self.refusal: str | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = call_name(func)
        target = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if target is not None and self.refusal is None:
            if name == "__set__" and getattr(func, "__self__", None) is _DATA_ATTR:
                return self._assign_data(func, args, kwargs)
            elif name == "register_hook" and id(target) in self._outer and len(args) == 2 \
                    and not kwargs and target.requires_grad:
                return self._argument_hook(target, args[1])
            elif name == "retain_grad" and self._requires_grad(target):  # else it raises, as eager's
                self.retained[id(target)] = target
                if id(target) in self._outer:   # replayed on the caller's tensor, not traced
                    if id(target) not in self._retained_at:
                        self._retained_at[id(target)] = [_version(target), 0]
                    return None
        out = func(*args, **kwargs)
        if target is not None and name in METADATA_METHODS and id(target) in self._retained_at:
            self._retained_at[id(target)][1] += 1       # (each bumps the version by one)
        if self._grad_leaves and torch.is_grad_enabled():
            # a leaf argument used in grad mode: autograd made its gradient node
            used = [t for t in pytree.tree_leaves((args, kwargs)) if id(t) in self._grad_leaves]
            if used and any(isinstance(o, torch.Tensor) and grad_fn_of(o) not in (None, STALE)
                            for o in pytree.tree_leaves(out)):
                self._used.update(id(t) for t in used)
                self._held.update(id(t) for t in used if id(t) in self._reshaped_after_use)
        return out

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
                "path traces aten ops only and would lose it "
                "(NOTE [subclass imperative autograd]). Call it with plain tensors, or move that call outside the function")
        return [self._position[i] for i in self.retained if i in self._outer]

    def retained_before(self) -> set[int]:
        """The positions of the arguments retained before a metadata call on them
        (``transpose_``) and written after it by nothing else: eager's retain hook stays on
        the node the argument had then, so the caller's tensor retains its grad before the
        call (NOTE [subclass imperative autograd]); the others after it, where a write moves
        the hook along with the argument."""
        return {self._position[i] for i, (version, calls) in self._retained_at.items()
                if calls and _version(self._outer[i]) == (None if version is None else version + calls)}

    def held(self, result) -> set[int]:
        """The positions of the leaf arguments given ``.data =`` of another shape after a use
        in grad mode whose gradient node of the old shape outlives the call: a use after the
        assignment holds it, or an output's history reaches it
        (NOTE [subclass .data assignment onto another shape])."""
        if not self._reshaped_after_use:
            return set()
        # (a stale view's grad_fn raises when read: it reaches nothing)
        nodes = [n for o in pytree.tree_leaves(result) if isinstance(o, torch.Tensor)
                 for n in [grad_fn_of(o)] if n is not None and n is not STALE]
        return {self._position[i] for i, t in self._reshaped_after_use.items()
                if i in self._held or any(reaches(n, t) for n in nodes)}

    def _requires_grad(self, t: torch.Tensor) -> bool:
        if self._caller_flags is not None and id(t) in self._outer:
            return self._caller_flags[self._position[id(t)]]
        return t.requires_grad

    def _assign_data(self, func, args, kwargs):
        """``x.data = y`` (NOTE [subclass .data assignment])."""
        from torch.fx.experimental.proxy_tensor import get_proxy_mode, get_proxy_slot
        mode = get_proxy_mode()
        target, source = (args + (None,))[:2]
        if mode is None or kwargs or not isinstance(source, torch.Tensor):
            return func(*args, **kwargs)
        if is_traceable_wrapper_subclass(target) or is_traceable_wrapper_subclass(source):
            self.refusal = "assigns x.data = y where x or y is a tensor subclass"
            return func(*args, **kwargs)
        proxies = [get_proxy_slot(t, mode.tracer, None) for t in (target, source)]
        if any(p is None for p in proxies):
            self.refusal = "assigns x.data = y where the trace does not follow x or y"
            return func(*args, **kwargs)
        if id(target) in self._used and source.shape != target.shape:
            # NOTE [subclass .data assignment onto another shape]: its node of the old shape
            # stays while a use holds it
            self._reshaped_after_use[id(target)] = target
        out = func(*args, **kwargs)
        mode.tracer.create_proxy("call_function", assign_data, tuple(p.proxy for p in proxies), {})
        # a non-leaf argument written in place is traced as an alias of its input (desugar's
        # _Alias): the input takes the new data too, so that the argument moves
        arg = getattr(target, "_aotcheck_argument", None)
        arg_proxy = None if arg is None else get_proxy_slot(arg, mode.tracer, None)
        if arg_proxy is not None:
            mode.tracer.create_proxy("call_function", assign_data,
                                     (arg_proxy.proxy, proxies[1].proxy), {})
        if id(target) in self._outer:
            self.data_assigned.add(self._position[id(target)])
        return out

    def _argument_hook(self, target: torch.Tensor, hook) -> RemovableHandle:
        """A hook on an argument, recorded for the call (NOTE [subclass imperative autograd]), not
        registered here."""
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


# NOTE [subclass .data assignment]
# ``x.data = y`` (``set_data``) keeps ``x``'s identity and autograd metadata and gives it
# ``y``'s storage, geometry and dtype outside the dispatcher, so ``make_fx`` records nothing
# and the subclass graph went on reading ``x``'s old data. The watch lets it run on the traced
# tensors (the outer-level facts see ``x``'s new storage and geometry) and records it as a
# call of :func:`assign_data` in the graph, so the plain engine traces the very ``x.data = y``
# the plain path handles (NOTE [.data assignment] in engine/runtime/writeback.py): on a leaf
# made inside, on an argument (replayed on the argument, which :class:`~.outer.Outer` moves
# with ``.data =`` too), swaps. Refused by name where ``x`` or ``y`` is a subclass.

# NOTE [subclass .data assignment onto another shape]
# ``p.data = y`` onto a leaf argument that requires grad, with ``y`` of another shape: eager's
# leaf gets a gradient node of the new shape at its next use
# (NOTE [set_ under no_grad onto another shape] in engine/runtime/swap_grad.py), and ``p.grad`` has the new
# shape. Outer's edge to an input is taken when it is applied, with the shape the argument has then, and
# autograd checks the gradient against it ('invalid gradient'): so for such a call the graph
# runs first (``run_graph`` in outer.py), the caller's arguments move with it, and Outer is
# applied to the moved arguments with the graph's values. After a use in grad mode, eager's
# leaf keeps its node of the old shape (``.data =`` keeps a live one of the same dtype) while
# a use holds it: a use after the assignment (its history then goes there too, autograd
# summing or raising as it does for a shape that differs), or an output computed from it.
# The trace sees both (``ImperativeWatch.held``), and such a call is applied as any other, to
# the argument of the old shape, whose node Outer's edge is: the joint's gradient for it is
# what eager's node of the old shape gets. Where nothing holds it, it dies with the call, and
# the leaf's next use makes one of the new shape: the graph runs first, as above.

@has_side_effect
def assign_data(x: torch.Tensor, y: torch.Tensor) -> None:
    """``x.data = y``, as a call of a subclass graph (NOTE [subclass .data assignment])."""
    x.data = y


def _version(t: torch.Tensor):
    return None if t.is_inference() else t._version


def argument_hooks(hooks: list, outer: list, written: bool) -> None:
    """``register_hook`` on the caller's arguments (``ImperativeWatch.hooks``): those
    registered before the function wrote their argument (``written=False``, before the call),
    or after (``written=True``, after the write-back)."""
    for j, hook, after in hooks:
        if after == written:     # None where the backward does not reach it, as eager's runs none
            outer[j].register_hook(skip_unreached(hook))


def retained_arguments(positions, outer: list) -> None:
    """``retain_grad()`` on the caller's arguments the function called it on (a non-leaf that
    still requires grad after the call: ``check``'s positions)."""
    for j in positions:
        t = outer[j]
        if t.requires_grad and not t.is_leaf:
            t.retain_grad()

"""In-place metadata calls on the arguments of a call with a tensor-subclass argument, replayed
on the caller's tensors (the subclass path's counterpart of
NOTE [mutation replay] in engine/runtime/artifact.py), and the outer-level joint traced on real tensors where
fake ones fail.

# NOTE [subclass metadata replay]
An argument whose shape changes in place in grad mode (``a1.transpose_(0, 2)``) gets a new
grad_fn in eager, of that very call (``TransposeBackward1``, next to its old grad_fn). The
runtime gives an argument that autograd rebased its new value with a ``copy_`` in grad mode
(NOTE [subclass non-leaf writes]). Done after an ``as_strided_`` to the final geometry, that
is wrong for a VIEW: the ``copy_`` makes autograd rebuild the view's grad_fn from its base,
and for a wrapper subclass (no ``as_strided`` replay) autograd replays the ops that made the
view, which miss the metadata change; the backward then fails ("MulBackward0 returned an
invalid gradient ... got [4, 3, 1] but expected shape compatible with [1, 3, 4]"). Eager
rebuilt it only where a write came after the metadata call (and fails the same way then).

So the outer trace logs each argument's in-place metadata calls, and where the last write
to its storage fell among them. The runtime then does what eager did, in order:

- nothing wrote it: no new value through the compiled graph; its calls are made on the
  caller's tensor, each in the grad mode autograd recorded it in;
- written: the calls before its last write, then the ``copy_`` of its value as it was at
  that write (the joint's output for it is that view of its final value, ``as_before``),
  then the calls after.

An argument whose set_() moved it (set_ reaches no TorchFunctionMode, so the log misses it)
is moved to its geometry at the write where the calls replayed before it do not give that.

Calls with non-plain arguments, calls after the last write that have no inverse view
(``as_strided_``) and writes to an unknown storage keep the ``as_strided_`` and ``copy_``.

Before (trace of ``f(a0, a1)``; ``a1.transpose_(0, 2)``)::

    OuterFacts(moved=(Moved(arg=1, geometry=((4, 3, 1), (3, 1, 12), 0)),), rebased=(1,), ...)

After ``split_rebased`` (calls before the last write, after it, geometry at it, shapes)::

    OuterFacts(moved=(...), rebased=(),
               replay=(Replay(arg=1, after=(OuterCall('transpose_', (0, 2), (), True),)),))

# NOTE [subclass writes through another argument]
``a1.unsqueeze_(1); a3.copy_(v)`` with ``a1``, ``a3`` views of one TwoTensor ``a0``: eager
writes only ``a3`` (``a0`` gets ``CopySlices``); ``a0`` and ``a1`` see the new value through
the storage, and ``a1``'s grad_fn is rebuilt from ``a0``'s when next read. A ``copy_`` into
``a1`` too would give ``a0`` a ``CopySlices`` whose view replay (the transpose, without the
unsqueeze_) has the wrong shape, and backward crashed. So an argument no op wrote as its own
target, whose every element a written argument that an op did target addressed at the last
write, takes no ``copy_``: only its metadata calls, and that one's ``copy_`` gives it its
value and (through the shared base) its history, as in eager.

# NOTE [subclass joint on real tensors]
The outer-level joint is traced with ``make_fx`` on fake tensors. A fake tensor has no
``as_strided`` replay, so when a view is written after an in-place metadata change (a row of
an argument ``squeeze_()``d, then zeroed), autograd rebuilds its grad_fn by replaying the
ops that made it, which miss the change, and the trace raises "invalid gradient". Eager's
plain views are rebuilt with ``as_strided`` of their own geometry. Where the fake trace
raises so, the joint is traced again on copies of the real primals and tangents (they
share storage as the primals do), under a forked RNG: the same graph, with eager's view
replay. (A wrapper subclass view has no ``as_strided`` replay in eager either: it fails
there as in eager.)
"""
from __future__ import annotations

from dataclasses import replace

import torch
from torch.overrides import TorchFunctionMode

from ..engine.capture.functional import geometry_of
from ..engine.capture.outputs import holds
from ..engine.capture.recorder import METADATA_METHODS, call_name, is_mutating_name, plain_args
from ..errors import TraceError, UnsupportedInputError
from ..engine.serial import deep_tuple
from .base import storage_key
from .records import Covered, OuterCall, OuterFacts, Replay
from .wrapper_set import move_outer

_NONE = Replay(-1)          # no calls to replay

# resize_ may change the storage itself: a write for this purpose
_REPLAYED = METADATA_METHODS - {"resize_"}


def _storage(t):
    try:
        return storage_key(t)
    except (RuntimeError, NotImplementedError):      # no storage to name: unknown
        return None


class OuterCallLog(TorchFunctionMode):
    """Logs, while the user's function runs on the outer tensors, each argument's in-place
    metadata calls (in order, with whether autograd recorded them) and, per argument, how
    many of them came before the last write to its storage and its geometry then
    (NOTE [subclass metadata replay])."""

    def __init__(self, outer: list):
        super().__init__()
        self.index: dict[int, int] = {}
        for j, t in enumerate(outer):
            self.index.setdefault(id(t), j)          # a tensor passed twice: its first place
        self.calls: dict[int, list] = {}
        self.shapes: dict[int, list] = {}            # j -> its shape before each call
        self.unreplayable: set[int] = set()
        self.last_write: dict[int, tuple] = {}       # j -> (calls before it, geometry after it)
        self.unknown_write = False
        self.targets: set[int] = set()              # arguments written as the op's own target
        self._outer = outer

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = call_name(func)
        target = args[0] if args and isinstance(args[0], torch.Tensor) else None
        written = []
        if target is not None and name in _REPLAYED and id(target) in self.index:
            j = self.index[id(target)]
            try:
                call = OuterCall(name, deep_tuple(plain_args(list(args[1:]))),
                                 deep_tuple(plain_args(sorted(kwargs.items()))),
                                 torch.is_grad_enabled() and target.requires_grad)
                self.calls.setdefault(j, []).append(call)
                self.shapes.setdefault(j, []).append(list(target.shape))
            except UnsupportedInputError:        # not plain data: kept as_strided_ + copy_
                self.unreplayable.add(j)
        elif target is not None and (is_mutating_name(name) or name == "resize_"):
            written.append(target)
            if id(target) in self.index:
                self.targets.add(self.index[id(target)])
        out = kwargs.get("out")
        written += [t for t in (out if isinstance(out, (tuple, list)) else (out,))
                    if isinstance(t, torch.Tensor)]
        result = func(*args, **kwargs)
        for st in (_storage(t) for t in written):
            self.unknown_write |= st is None
            for j in set(self.index.values()):
                if st is not None and _storage(self._outer[j]) == st:
                    self.last_write[j] = (len(self.calls.get(j, ())), geometry_of(self._outer[j]))
        return result

    def split(self, j: int) -> Replay | None:
        """Argument ``j``'s calls before the last write, calls after it, geometry at it (``()``
        where nothing wrote it) and shapes before each call after it, or None where the
        calls cannot be replayed so (NOTE [subclass metadata replay])."""
        calls = self.calls.get(j, [])
        if not calls or j in self.unreplayable or self.unknown_write:
            return None
        if j not in self.last_write:
            return Replay(j, (), tuple(calls))
        k, geometry = self.last_write[j]
        if any(c.method not in _INVERTIBLE for c in calls[k:]):
            return None
        return Replay(j, tuple(calls[:k]), tuple(calls[k:]), geometry,
                      deep_tuple(self.shapes[j][k:]))


# the inverse view of each in-place metadata call (given the shape before it)
_INVERTIBLE = {"t_", "transpose_", "swapdims_", "swapaxes_", "unsqueeze_", "squeeze_"}


def as_before(t: torch.Tensor, calls: tuple, shapes: tuple) -> torch.Tensor:
    """A view of ``t`` as it was before ``calls`` (``shapes``: its shape before each)."""
    for c, shape in reversed(list(zip(calls, shapes))):
        t = t.t() if c.method == "t_" else t.view(shape) if c.method in ("squeeze_", "unsqueeze_") \
            else t.transpose(*c.args, **dict(c.kwargs))
    return t


def split_rebased(facts: OuterFacts, log: OuterCallLog, outer: list) -> OuterFacts:
    """``facts`` with ``replay``: per argument changed by logged metadata calls that can be
    replayed, (calls before the last write to it, calls after, its geometry at that write);
    the ones that nothing wrote leave ``rebased`` (no new value through the compiled graph),
    and so does a second place of one tensor passed twice."""
    first = {j: log.index[id(t)] for j, t in enumerate(outer)}
    moved = facts.moved_to()
    replay = {}
    for j in facts.rebased:
        s = log.split(first[j])
        if s is None and first[j] in log.last_write and j in moved \
                and not holds(moved[j], log.last_write[first[j]][1]):
            raise UnsupportedInputError(
                "a call with a tensor-subclass argument writes an argument and then changes its "
                "metadata in place (as_strided_, resize_) so that it no longer reaches every "
                "element it had when written; aotcheck gives the argument its new value in its "
                "final geometry, which would miss the written elements outside it, so it refuses "
                "this. Change the metadata of a view of the argument instead")
        if s is not None:
            replay[j] = replace(s, arg=j) if first[j] == j else Replay(j, at=s.at)
    dropped = {j for j, s in replay.items() if not s.at or first[j] != j}
    rebased = [j for j in facts.rebased if j not in dropped]
    return facts.with_replay(rebased, list(replay.values()), _covered(log, outer, rebased, first))


def _covered(log: OuterCallLog, outer: list, rebased: list, first: dict) -> list[Covered]:
    """``Covered(j, k)`` per written argument j that no op wrote as its own target, whose every element
    the written argument k, one that an op did write, on the same storage, addressed at the
    last write: j's new value comes with k's ``copy_`` where both view one autograd base
    (NOTE [subclass writes through another argument])."""
    written = [j for j in rebased if first[j] in log.last_write and _storage(outer[j]) is not None]
    at = {j: log.last_write[first[j]][1] for j in written}
    pairs = []
    for j in written:
        k = next((k for k in written if first[k] != first[j] and first[k] in log.targets
                  and _storage(outer[k]) == _storage(outer[j]) and holds(at[k], at[j])), None)
        if first[j] not in log.targets and k is not None:
            pairs.append(Covered(j, k))
    return pairs


def _base(t: torch.Tensor) -> torch.Tensor:
    return t._base if t._is_view() else t


def replay_calls(t: torch.Tensor, calls: tuple) -> None:
    """Call the logged metadata methods on ``t``, each in the grad mode autograd recorded it
    in (NOTE [subclass metadata replay])."""
    for c in calls:
        with torch.set_grad_enabled(c.grad_enabled):
            getattr(t, c.method)(*c.args, **dict(c.kwargs))


def dirty_values(facts: OuterFacts, outer: list, dirty: tuple) -> tuple:
    """Copies of the new values of the arguments in ``dirty`` (after the compiled forward ran
    on their storage), each in the geometry it had at its last write where it is replayed,
    else in its final one."""
    at = {**facts.moved_to(), **{r.arg: r.at for r in facts.replay if r.after and r.at}}
    news = [outer[i].detach() for i in dirty]
    return tuple((t.as_strided(*at[i]) if i in at else t).clone() for i, t in zip(dirty, news))


def write_back(facts: OuterFacts, outer: list, dirty: tuple, news) -> None:
    """Give the caller's arguments their new values and metadata: each one in ``dirty`` its
    value (``news``) with a ``copy_`` in grad mode (NOTE [subclass non-leaf writes]), between
    its calls before and after its last write where it is replayed; each other replayed one
    its calls alone; then the trace's final geometry wherever the calls did not give it."""
    moved, replay = facts.moved_to(), facts.replayed()
    # (the caller's tensors: one base in autograd, or each takes its copy_ after all)
    covered = {c.arg for c in facts.covered if _base(outer[c.arg]) is _base(outer[c.by])}
    with torch.enable_grad():
        for i in covered:
            replay_calls(outer[i], replay.get(i, _NONE).before)
        for i, new in zip(dirty, news):
            if i in covered:
                continue
            r = replay.get(i)
            if r is not None:
                replay_calls(outer[i], r.before)
                if r.at and geometry_of(outer[i]) != tuple(r.at):
                    move_outer(outer[i], *r.at)      # a set_() the log cannot see moved it
            elif i in moved:
                move_outer(outer[i], *moved[i])
            _regenerate_view_node(outer[i])
            _written_view(outer[i], outer, moved).copy_(new)
            replay_calls(outer[i], r.after if r is not None else ())
        for i in covered:
            replay_calls(outer[i], replay.get(i, _NONE).after)
    for j in covered.union(replay):
        r = replay.get(j, _NONE)
        if j not in dirty:
            replay_calls(outer[j], r.before + r.after)
        if j in moved and geometry_of(outer[j]) != tuple(moved[j]):
            with torch.no_grad():
                move_outer(outer[j], *moved[j])


def _written_view(t: torch.Tensor, outer: list, moved: dict) -> torch.Tensor:
    """What the write-back of argument ``t`` copies into: ``t``, or where ``t`` views an
    argument whose own geometry the call changed (``a2 = a1[1:]``, ``a1.squeeze_(1)``), a
    view of that base in ``t``'s geometry: autograd rebuilds a view of the base it writes by
    replaying the view's ops on the base as it is now (a ``slice`` of the squeezed base has
    another shape), and the backward of a ``copy_`` into ``t`` then raised 'invalid gradient'
    where eager's in-place op has no such input (fuzz seed 1). ``t``'s own node is rebuilt
    over the base's, as eager's."""
    base = t._base if t._is_view() else None
    if base is None or not any(base is outer[j] for j in moved):
        return t
    return base.as_strided(t.shape, t.stride(), t.storage_offset())


def _regenerate_view_node(t: torch.Tensor) -> None:
    """Read a view's grad_fn before writing it in place. PyTorch (2.13) refuses an in-place op
    on a view made while its base required no grad, after the base came to require grad by an
    in-place op ('a leaf Variable that requires grad is being used in an in-place operation'),
    until something reads the view's grad_fn, which regenerates its node: the write-back of an
    argument and then of its view (``a1``, ``a1.t()``, both written) met it (fuzz seed 1)."""
    if t._is_view():
        try:
            t.grad_fn
        except RuntimeError:        # a poisoned view: the copy_ raises as eager's would
            pass


# What fails on fake tensors where eager's real ones run
# (NOTE [subclass joint on real tensors]): autograd's view replay across an in-place metadata change; a value
# that requires grad written into a slice of a bool or integer tensor (``v[:, 0] = w``): eager's setitem
# gives the tensor a CopySlices node, a fake one raises (fuzz seed 1, docs/findings.md row 47)
FAKE_ONLY_ERRORS = ("invalid gradient", "Autograd not support dtype")


def compile_fake_else_real(compile_fn):
    """``compile_fn(real=False)``, or where the trace on fake tensors failed as eager's real
    ones do not (``FAKE_ONLY_ERRORS``), ``compile_fn(real=True)``
    (NOTE [subclass joint on real tensors]): the forward graph and the joint alike."""
    try:
        return compile_fn(False)
    except TraceError as e:
        if not any(p in str(e) for p in FAKE_ONLY_ERRORS):
            raise
    with torch.random.fork_rng(devices=[]):      # the trace's draws are not the call's
        return compile_fn(True)

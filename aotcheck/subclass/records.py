"""subclass.records: the outer-level facts of a tensor-subclass call as plain frozen data.

What the forward trace reads off the OUTER tensors (NOTE [outer-level facts] in facts.py), per
output (:class:`OutFact`) and per argument (:class:`OuterFacts`), with the in-place metadata
calls replayed on the caller's arguments (:class:`Replay`,
NOTE [subclass metadata replay] in replay.py). No tensors, autograd nodes or callables. They live in memory
only, beside the compiled plain graph of their trace (the persistent cache stores that plain graph, under its
own key, and a call always traces at the outer level first:
NOTE [subclass trace] in desugar.py), so no schema version; they still round-trip through JSON (``to_data`` /
``from_data``), which a test checks on the corpus's subclass calls.

``f(a: TwoTensor)`` returning ``a[0], a.sin(), a``, ``a`` of shape (2, 3) requiring grad (output
0 is a view of the argument with grad, remade from it; output 1 is the graph's value; output 2
is the argument)::

    OuterFacts(outs=(OutFact(home=0, geometry=((3,), (1,), 0), mode=ViewMode.GRAD), OutFact(),
                     OutFact(same_arg=0)))

and ``g(a)`` doing ``a.transpose_(0, 1); return a * 2``, ``a`` a non-leaf of shape (2, 3) (its
geometry moved; its ``transpose_`` is replayed on the caller's tensor, with grad)::

    OuterFacts(outs=(OutFact(),), moved=(Moved(arg=0, geometry=((3, 2), (1, 3), 0)),),
               written=(0,), replay=(Replay(arg=0, after=(OuterCall(method='transpose_',
               args=(0, 1), kwargs=(), grad_enabled=True),)),))
"""
from __future__ import annotations

import enum
import json
from dataclasses import MISSING, dataclass, fields, replace

from ..engine import serial
from ..engine.capture.facts import Poison


def _short_repr(record) -> str:
    """The record's fields that differ from their defaults (all, where a field has none)."""
    def shown(v):
        return f"{type(v).__name__}.{v.name}" if isinstance(v, enum.Enum) else repr(v)
    return f"{type(record).__name__}(" + ", ".join(
        f"{f.name}={shown(getattr(record, f.name))}" for f in fields(record)
        if f.default is MISSING or getattr(record, f.name) != f.default) + ")"


class ViewMode(enum.StrEnum):
    """How an output over an argument's storage is remade (``autograd.view_mode``)."""
    ALIAS = "alias"         # no view (a detach()), or a leaf made inside over its memory
    WRITTEN = "written"     # no autograd view of the argument, with a history of its own
    STALE = "stale"         # made under no_grad, its base written in grad mode since
    GRAD = "grad"           # a view whose grad_fn reaches the argument
    DROPPED = "dropped"     # a view whose grad_fn does not reach it
    NO_GRAD = "no_grad"     # no grad_fn, requires grad through the argument
    DETACHED = "detached"   # no grad_fn and no grad, the argument requires grad
    PLAIN = "plain"         # the argument requires no grad


class LeafMade(enum.StrEnum):
    """A leaf made inside with requires_grad_() (``autograd.new_leaf_kind``)."""
    LEAF = "leaf"           # the leaf itself
    VIEW = "view"           # a view of one whose flag was set after the view was made


@dataclass(frozen=True)
class OutFact:
    """One tensor output as the trace saw it at the outer level. At most one of
    ``same_out``, ``same_arg`` and ``home`` is set; an output with none of them is
    the compiled graph's value."""
    __repr__ = _short_repr       # the fields that differ from their defaults

    same_out: int | None = None     # it is earlier output k (``return y, y``)
    same_arg: int | None = None     # it is argument j
    home: int | None = None         # it is over argument j's memory, remade from it
                                    # (``autograd.view_home``) ...
    geometry: tuple = ()            # ... in this (size, stride, offset) ...
    mode: ViewMode | None = None    # ... as ``autograd.view_mode`` says, or ALIAS: a leaf made
                                    # inside over its memory
                                    # (NOTE [subclass leaf made inside over an argument's memory])
    poisoned: Poison | None = None  # its grad_fn raises in eager: ``poisoned_kind``
                                    # (NOTE [subclass poisoned views])
    new_leaf: LeafMade | None = None  # a leaf made inside, given requires_grad_()
    leaf_view: bool = False         # a view in grad mode of a leaf made inside ...
    leaf_edge: bool = False         # ... whose gradient reaches that leaf
    inference: bool = False         # made in inference mode inside (remade by ``as_inference``
                                    # with the flags below; NOTE [subclass inference views])
    outer_inference: bool = False   # the wrapper is an inference tensor
    inner_inference: tuple[bool, ...] = ()     # each inner tensor is
    multi_output: bool = False      # one of several views of one op (unbind, split, chunk)

    @property
    def view(self) -> bool:
        """Over an argument's memory: remade from that argument."""
        return self.home is not None

    @property
    def through_graph(self) -> bool:
        """Its value reaches the caller through the compiled graph (no argument, earlier output
        or remade view of an argument)."""
        return self.same_out is None and self.same_arg is None and self.home is None


@dataclass(frozen=True)
class Moved:
    """An argument whose geometry the call changed in place, and its new one."""
    __repr__ = _short_repr       # the fields that differ from their defaults

    arg: int
    geometry: tuple                 # (size, stride, offset)


@dataclass(frozen=True)
class OuterCall:
    """One in-place metadata call on an argument (``a.transpose_(0, 2)``), replayed on the
    caller's tensor (``replay.replay_calls``)."""
    __repr__ = _short_repr       # the fields that differ from their defaults

    method: str
    args: tuple                     # plain data (``recorder.plain_args``)
    kwargs: tuple                   # ((name, value), ...), sorted by name
    grad_enabled: bool              # autograd recorded it: replayed with grad on


@dataclass(frozen=True)
class Replay:
    """An argument's in-place metadata calls, split at the last write to its storage
    (NOTE [subclass metadata replay])."""
    __repr__ = _short_repr       # the fields that differ from their defaults

    arg: int
    before: tuple[OuterCall, ...] = ()     # the calls before its last write
    after: tuple[OuterCall, ...] = ()      # the calls after it
    at: tuple = ()                  # its geometry at that write; () where nothing wrote it
    shapes: tuple = ()              # its shape before each call in ``after``


@dataclass(frozen=True)
class Covered:
    """Argument ``arg``, which no op wrote as its own target, takes its new value from the
    ``copy_`` of written argument ``by`` (NOTE [subclass writes through another argument])."""
    __repr__ = _short_repr       # the fields that differ from their defaults

    arg: int
    by: int


@dataclass(frozen=True)
class OuterFacts:
    """The outer-level facts of one traced call: per tensor output, and per argument (by its
    index among the outer tensors)."""
    __repr__ = _short_repr       # the fields that differ from their defaults

    outs: tuple[OutFact, ...]
    moved: tuple[Moved, ...] = ()   # arguments whose geometry changed
    grad_set: tuple[int, ...] = ()  # leaves given requires_grad_() inside: flagged after the call
    grad_unset: tuple[int, ...] = ()    # leaves given requires_grad_(False): cleared after it
    rebased: tuple[int, ...] = ()   # written in grad mode: autograd gave them a new grad_fn
                                    # (NOTE [subclass non-leaf writes])
    written: tuple[int, ...] = ()   # written, in data or in geometry
    routed: tuple[int, ...] = ()    # of grad_set, those flagged before the call, whose gradient
                                    # an output reaches
                                    # (NOTE [requires_grad_ on a subclass argument])
    replay: tuple[Replay, ...] = ()     # set by ``replay.split_rebased``
    covered: tuple[Covered, ...] = ()   # set by ``replay.split_rebased``

    def moved_to(self) -> dict[int, tuple]:
        """``{argument: its new geometry}``."""
        return {m.arg: m.geometry for m in self.moved}

    def replayed(self) -> dict[int, Replay]:
        """``{argument: its replay}``."""
        return {r.arg: r for r in self.replay}

    def with_replay(self, rebased: list, replay: list, covered: list) -> OuterFacts:
        return replace(self, rebased=tuple(rebased), replay=tuple(replay), covered=tuple(covered))

    def to_data(self) -> dict:
        return serial.to_data(self)

    @staticmethod
    def from_data(data: dict) -> OuterFacts:
        return serial.from_data(OuterFacts, data)

    def to_json(self) -> str:
        return json.dumps(self.to_data(), sort_keys=True, allow_nan=False)

    @staticmethod
    def from_json(text: str) -> OuterFacts:
        return OuterFacts.from_data(json.loads(text))

"""Divergences as data: each difference the oracle finds, and each problem the harness around it
sees, as one frozen record.

A record names the check that failed (``Check``); what it is about (``subject``: an output, an
argument after the call, or a leaf whose ``.grad`` is compared; ``other``: the second one, for
the checks that relate two); eager's side and the compiled side as short text (``expected``,
``actual``); the error of a raise (``error``, "Type: first line"); and free text the check
reports (``detail``: torch.testing's mismatch summary, Dynamo's break reasons). ``state`` and
``cache_fill`` say where the harness saw it: in a case's state K, in the run that fills the
cache. ``None`` is absence. ``str()`` is the sentence the oracle has always printed::

    >>> d = Divergence(Check.REQUIRES_GRAD, Subject.output(1), expected="True", actual="False")
    >>> print(d)
    output 1 requires_grad: eager True, compiled False
    >>> print(Divergence(Check.VALUES, Subject.argument(0), detail="Tensor-likes are not close!"))
    argument 0 after the call values: Tensor-likes are not close!
    >>> print(Divergence(Check.GRAD_PRESENCE, Subject.leaf(2), expected="None", actual="a tensor"))
    grad of leaf 2: eager None, compiled a tensor
    >>> print(replace(d, state=1, cache_fill=True))
    run that fills the cache: in state 1: output 1 requires_grad: eager True, compiled False

Fingerprints read the fields (``aotcheck.fuzz.fingerprint.check_kind``,
``aotcheck.regress.fingerprint.fingerprint``); a record round-trips through JSON
(``to_dict``/``from_dict``, ``SCHEMA``; ``problem_to_json`` for a run's problems, where a
harness sentence without a record of its own is a plain string).
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from enum import Enum

SCHEMA = 1


class Role(Enum):
    OUTPUT = "output"            # the function's flat outputs, in pytree order
    ARGUMENT = "argument"        # its flat arguments (args then kwargs), after the call
    LEAF = "leaf"                # the leaves whose .grad is compared (``Inputs.leaves``)


@dataclass(frozen=True)
class Subject:
    role: Role
    index: int

    def __post_init__(self):
        if not isinstance(self.role, Role) or type(self.index) is not int or self.index < 0:
            raise ValueError(f"a subject is a Role and an index >= 0, not {self.role!r} {self.index!r}")

    @classmethod
    def output(cls, k: int) -> "Subject":
        return cls(Role.OUTPUT, k)

    @classmethod
    def argument(cls, k: int) -> "Subject":
        return cls(Role.ARGUMENT, k)

    @classmethod
    def leaf(cls, k: int) -> "Subject":
        return cls(Role.LEAF, k)

    def __str__(self) -> str:
        return f"{self.role.value} {self.index}"

    @property
    def short(self) -> str:
        """``out1``, ``arg0``: the storage-sharing check's spelling."""
        return {Role.OUTPUT: "out", Role.ARGUMENT: "arg", Role.LEAF: "leaf"}[self.role] + str(self.index)


class Check(Enum):
    """What failed. The oracle's checks in the order it runs them, then the harness's own."""
    COMPILED_RAISED = "compiled raised"           # error: the compiled call raised, eager did not
    EAGER_RAISED = "eager raised"                 # error (its type): eager raised, compiled did not
    STRUCTURE = "structure"                       # the outputs' pytree structure
    UNREADABLE = "unreadable"                     # an output's storage cannot be read (detail: why)
    VALUE = "value"                               # a non-tensor value, or a tensor against one
    DTYPE = "dtype"
    SHAPE = "shape"
    REQUIRES_GRAD = "requires_grad"
    STRIDE = "stride"                             # of the dimensions larger than 1
    STORAGE_OFFSET = "storage_offset"             # of an argument after the call
    IS_LEAF = "is_leaf"
    GRAD_FN = "grad_fn"                           # its presence (or a raise reading it)
    TYPE = "type"                                 # the tensor's Python type
    STORAGE_BYTES = "storage bytes"               # a storage of zero bytes against one of more
    VALUES = "values"                             # detail: torch.testing's mismatch summary
    ALIASING = "aliasing"                         # what an output is a view of
    SHARING = "sharing"                           # subject and other share a storage in one run only
    RANDOM_STATE = "random state"                 # the default generator after the call
    BACKWARD_RAISED = "backward raised"           # error: backward raised in the compiled run only
    BACKWARD_EAGER_RAISED = "backward eager raised"   # error: in eager's only
    GRAD_PRESENCE = "grad presence"               # .grad None against a tensor (a leaf, or an output that is one)
    GRAD_VALUES = "grad values"
    RETAINS_GRAD = "retains_grad"                 # the flag of an output or argument (retain_grad())
    RETAINED_GRAD_PRESENCE = "retained grad presence"
    RETAINED_GRAD_VALUES = "retained grad values"
    OUTPUT_MUTATION = "output mutation"           # mutating the output in place: ok or the error's type
    MUTATION_EFFECT = "mutation effect"           # after mutating subject in place, other differs
    # the harness's own problems, not the oracle's
    GRAPH_BREAK = "graph break"                   # detail: Dynamo's reasons
    NO_GRAPH = "no graph"
    CACHE_MISS = "cache miss"                     # actual: the counts (the regression command's words)
    CACHED_RUN_MISS = "cached run miss"           # actual: the counts (the fuzzer's words)
    HARNESS_RAISED = "harness raised"             # error; detail: the phase, if not the case's run
    ORACLE_RAISED = "oracle raised"               # error
    STATE_LEAK = "state leak"                     # detail: the global state a compiled call left changed


SHARED, APART = "shared", "apart"           # the sides of a SHARING record
_ATTRIBUTES = (Check.DTYPE, Check.SHAPE, Check.REQUIRES_GRAD, Check.STRIDE, Check.STORAGE_OFFSET,
               Check.IS_LEAF, Check.GRAD_FN, Check.TYPE, Check.STORAGE_BYTES)
_RANDOM = ("random generator state after the call differs from eager's (the compiled function drew a "
           "different number of random values)")


def _harness_raised(d: "Divergence") -> str:
    if d.detail is None:
        return f"harness raised {d.error}"
    kind, _, message = d.error.partition(": ")
    return f"harness raised {kind} {d.detail}: {message}"


def _sharing(d: "Divergence") -> str:
    only = "eager only" if d.expected == SHARED else "compiled only"
    return f"{d.subject.short} and {d.other.short} share a storage in {only}"


_PROSE = {
    Check.COMPILED_RAISED: lambda d: f"compiled raised {d.error}",
    Check.EAGER_RAISED: lambda d: f"eager raised {d.error} but compiled did not",
    Check.STRUCTURE: lambda d: f"output structure: eager {d.expected} vs compiled {d.actual}",
    Check.UNREADABLE: lambda d: (f"{d.subject}: compiled returned a tensor whose storage cannot be "
                                 f"read ({d.detail})"),
    Check.VALUE: lambda d: f"{d.where}: {d.sides}",
    **{c: (lambda d: f"{d.where} {d.check.value}: {d.sides}") for c in _ATTRIBUTES},
    Check.VALUES: lambda d: f"{d.where} values: {d.detail}",
    Check.ALIASING: lambda d: f"{d.subject} aliasing: {d.sides}",
    Check.SHARING: _sharing,
    Check.RANDOM_STATE: lambda d: _RANDOM,
    Check.BACKWARD_RAISED: lambda d: f"backward: only compiled raised {d.error}",
    Check.BACKWARD_EAGER_RAISED: lambda d: f"backward: only eager raised {d.error}",
    Check.GRAD_PRESENCE: lambda d: f"{d.grad_of}: {d.sides}",
    Check.GRAD_VALUES: lambda d: f"{d.grad_of}: {d.detail}",
    Check.RETAINS_GRAD: lambda d: (f"retained grad of {d.subject}: eager retains_grad {d.expected}, "
                                   f"compiled {d.actual}"),
    Check.RETAINED_GRAD_PRESENCE: lambda d: f"retained grad of {d.subject}: {d.sides}",
    Check.RETAINED_GRAD_VALUES: lambda d: f"retained grad of {d.subject}: {d.detail}",
    Check.OUTPUT_MUTATION: lambda d: f"mutating {d.subject} in place: {d.sides}",
    Check.MUTATION_EFFECT: lambda d: f"after mutating {d.subject} in place, {d.other} differs from eager",
    Check.GRAPH_BREAK: lambda d: f"Dynamo could not capture the whole function: {d.detail}",
    Check.NO_GRAPH: lambda d: "Dynamo captured no graph: the function ran eagerly",
    Check.CACHE_MISS: lambda d: f"expected cache hits only, got {d.actual}",
    Check.CACHED_RUN_MISS: lambda d: f"cached run did not hit: {d.actual}",
    Check.HARNESS_RAISED: _harness_raised,
    Check.ORACLE_RAISED: lambda d: f"oracle raised {d.error}",
    Check.STATE_LEAK: lambda d: f"global state leaked from the compiled call: {d.detail}",
}

_SIDES = ("expected", "actual")
_NEEDS = {   # the fields each check's sentence reads, besides the check
    **{c: ("subject", *_SIDES) for c in (Check.VALUE, *_ATTRIBUTES, Check.ALIASING, Check.GRAD_PRESENCE,
                                          Check.RETAINS_GRAD, Check.RETAINED_GRAD_PRESENCE,
                                          Check.OUTPUT_MUTATION)},
    **{c: ("subject", "detail") for c in (Check.UNREADABLE, Check.VALUES, Check.GRAD_VALUES,
                                          Check.RETAINED_GRAD_VALUES)},
    **{c: ("error",) for c in (Check.COMPILED_RAISED, Check.EAGER_RAISED, Check.BACKWARD_RAISED,
                               Check.BACKWARD_EAGER_RAISED, Check.HARNESS_RAISED, Check.ORACLE_RAISED)},
    Check.STRUCTURE: _SIDES, Check.SHARING: ("subject", "other", "expected"),
    Check.MUTATION_EFFECT: ("subject", "other"), Check.GRAPH_BREAK: ("detail",),
    Check.STATE_LEAK: ("detail",), Check.CACHE_MISS: ("actual",), Check.CACHED_RUN_MISS: ("actual",),
}
_TEXT = ("expected", "actual", "error", "detail")


@dataclass(frozen=True)
class Divergence:
    check: Check
    subject: Subject | None = None
    expected: str | None = None      # eager's side, as short text
    actual: str | None = None        # the compiled run's side
    error: str | None = None         # a raise: "Type: first line"
    detail: str | None = None
    other: Subject | None = None     # the second subject (SHARING, MUTATION_EFFECT)
    state: int | None = None         # seen in the case's state K (``harness.check_case``)
    cache_fill: bool = False         # seen in the run that fills the cache (``engines.outcome``)

    def __post_init__(self):
        if not isinstance(self.check, Check):
            raise ValueError(f"a divergence's check is a Check, not {self.check!r}")
        missing = [n for n in _NEEDS.get(self.check, ()) if getattr(self, n) is None]
        if missing:
            raise ValueError(f"a {self.check.value!r} divergence needs {', '.join(missing)}")
        for name in ("subject", "other"):
            if not isinstance(getattr(self, name), (Subject, type(None))):
                raise ValueError(f"a divergence's {name} is a Subject or None")
        for name in _TEXT:
            if not isinstance(getattr(self, name), (str, type(None))):
                raise ValueError(f"a divergence's {name} is short text or None, not {getattr(self, name)!r}")
        if self.state is not None and (type(self.state) is not int or self.state < 0):
            raise ValueError(f"a divergence's state is an index >= 0 or None, not {self.state!r}")

    def __str__(self) -> str:
        place = ("run that fills the cache: " if self.cache_fill else "") + \
            ("" if self.state is None else f"in state {self.state}: ")
        return place + _PROSE[self.check](self)

    @property
    def message(self) -> str:
        return str(self)

    def bare(self) -> "Divergence":
        """The record as the oracle gave it: without the state or the cache fill it was seen in."""
        return replace(self, state=None, cache_fill=False)

    @property
    def where(self) -> str:
        """``output 1``; an argument is compared after the call: ``argument 0 after the call``."""
        return f"{self.subject} after the call" if self.subject.role is Role.ARGUMENT else str(self.subject)

    @property
    def sides(self) -> str:
        return f"eager {self.expected}, compiled {self.actual}"

    @property
    def grad_of(self) -> str:
        """``grad of leaf 2``; an output that is a leaf requiring grad: ``grad of output 1 (a leaf)``."""
        return f"grad of {self.subject}" + (" (a leaf)" if self.subject.role is Role.OUTPUT else "")

    def to_dict(self) -> dict:
        d: dict = {"schema": SCHEMA, "check": self.check.value}
        for name in ("subject", "other"):
            if getattr(self, name) is not None:
                s = getattr(self, name)
                d[name] = {"role": s.role.value, "index": s.index}
        d.update({n: getattr(self, n) for n in (*_TEXT, "state") if getattr(self, n) is not None})
        if self.cache_fill:
            d["cache_fill"] = True
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Divergence":
        known = {f.name for f in fields(cls)} | {"schema"}
        if not isinstance(d, dict) or d.get("schema") != SCHEMA or set(d) - known or "check" not in d:
            raise ValueError(f"not a divergence of schema {SCHEMA}: {d!r}")
        try:
            kw = {n: str(d[n]) for n in _TEXT if d.get(n) is not None}
            kw.update({n: Subject(Role(d[n]["role"]), d[n]["index"]) for n in ("subject", "other") if n in d})
            return cls(Check(d["check"]), state=d.get("state"), cache_fill=bool(d.get("cache_fill")), **kw)
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"not a divergence of schema {SCHEMA}: {d!r} ({e})") from None


def problem_to_json(p: "Divergence | str"):
    """A run's problem for JSON: a record's dict, or a harness sentence as it is."""
    return p if isinstance(p, str) else p.to_dict()


def problem_from_json(x) -> "Divergence | str":
    return x if isinstance(x, str) else Divergence.from_dict(x)

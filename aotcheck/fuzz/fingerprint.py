"""Fingerprints: a failure's root cause, as the check that failed plus the program's op skeleton.

A fuzz failure is one oracle report (``aotcheck.check.oracle``) on one program. Message stems
split one cause into several signatures (output 0 vs output 1) and merge two causes that share a
stem. A fingerprint has two parts:

- ``check``: which check failed, from the first divergence: ``values``, ``aliasing``,
  ``mutation`` (an argument after the call), ``grad values``, ``grad presence`` (None against a
  tensor), ``retained grad values``/``presence`` (``retain_grad()``), ``requires_grad``, ``autograd metadata`` (is_leaf, grad_fn), ``layout`` (shape,
  stride, dtype), ``output mutation`` (mutating an output in place), ``structure``,
  ``random state`` (the default generator after the call), ``cache miss``, or
  ``crash in <component>: <error stem>`` where the component is dynamo, aot_autograd, inductor,
  the compiled forward or the backward;
- ``skeleton``: the ops of the (shrunk) program in order, each with the region it ran in, and
  the kinds of its inputs: ``nonleaf,transposed | mul_ t no_grad:add``.

The explore pass groups by ``stage/check`` (before shrinking, the skeleton is noise); after
shrinking, groups whose full fingerprint is equal merge.

    >>> from aotcheck.check.divergence import Check, Divergence, Subject
    >>> check_kind([Divergence(Check.VALUES, Subject.output(0), detail="Tensor-likes are not close!")])
    'values'
    >>> check_kind([Divergence(Check.VALUES, Subject.argument(1), detail="Tensor-likes are not close!")])
    'mutation'
    >>> check_kind([Divergence(Check.COMPILED_RAISED, error="BackendCompilerFailed: backend='aot_eager' "
    ...             "raised: AssertionError: outs_to_grad length (1) != tangents length (2)")])
    'crash in aot_autograd: AssertionError: outs_to_grad length [...] != tangents length [...]'

A check with no name of its own (a type or a storage size, the gradient of an output that is a
leaf, a graph break to the fuzzer, ...) is named by its sentence's stem, as it always was.

# NOTE [harness sentences without a record]
Most problems are records (``aotcheck.check.divergence``); a few sentences are still handed as
plain strings by their producers, because no fingerprint needs their parts:

- ``regress/run.py``: "not run: ..." (never fingerprinted), each key variation's verdict line
  ("stale hit: ...", whose fingerprint ``run_variations`` builds from the variation's records)
  and ``CRASHED_NOW`` (its fingerprint, "crash in process", is given with it);
- ``fuzz/runner.py``: a key variation's verdict line ("key variation LABEL: VERDICT: ...", the
  variation's records after it) and "warm worker failed: ...";
- ``targets/report.py``: "not run: ..." and "harness raised ..." (shown, never fingerprinted).

One parser reads them, ``sentence_check``: a line with the cache-miss words is a ``cache miss``,
any other sentence is named by its stem; the regression command's fingerprint adds the
key-variation verdicts ``stale hit`` and ``lost hit`` (``aotcheck.regress.fingerprint``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..check.divergence import Check, Divergence, Role

VERSION = 5     # bump when check_kind changes: cached fingerprints of known cases are redone

_NAMES = {    # a check's name; a check missing here is named by its sentence's stem
    Check.STRUCTURE: "structure",
    Check.BACKWARD_EAGER_RAISED: "missing error in backward",
    Check.EAGER_RAISED: "missing error",
    Check.OUTPUT_MUTATION: "output mutation",
    Check.MUTATION_EFFECT: "output mutation",
    Check.ALIASING: "aliasing",
    Check.RETAINS_GRAD: "retained grad presence",
    Check.RETAINED_GRAD_PRESENCE: "retained grad presence",
    Check.RETAINED_GRAD_VALUES: "retained grad values",
    Check.REQUIRES_GRAD: "requires_grad",
    Check.IS_LEAF: "autograd metadata",
    Check.GRAD_FN: "autograd metadata",
    Check.DTYPE: "layout",
    Check.SHAPE: "layout",
    Check.STRIDE: "layout",
    Check.VALUES: "values",
    Check.VALUE: "non-tensor output",
    Check.CACHE_MISS: "cache miss",
    Check.CACHED_RUN_MISS: "cache miss",
    Check.STATE_LEAK: "global state leak",
    Check.RANDOM_STATE: "random state",
    Check.ORACLE_RAISED: "oracle error",
}
# an argument compared after the call: a change to its values or layout is a mutation
_AFTER_THE_CALL = (Check.VALUE, Check.DTYPE, Check.SHAPE, Check.REQUIRES_GRAD, Check.STRIDE,
                   Check.STORAGE_OFFSET, Check.IS_LEAF, Check.GRAD_FN, Check.TYPE, Check.STORAGE_BYTES,
                   Check.VALUES)
_ARGUMENT_NAMES = {**{c: "mutation" for c in (Check.VALUES, Check.STRIDE, Check.STORAGE_OFFSET,
                                             Check.SHAPE, Check.DTYPE)},
                   Check.REQUIRES_GRAD: "requires_grad"}
# a leaf's gradient; the gradient of an output that is a leaf has no name
_LEAF_NAMES = {Check.GRAD_PRESENCE: "grad presence", Check.GRAD_VALUES: "grad values"}
_CACHE_LINES = ("cached run did not hit", "expected cache hits only")


def stem(message: str, n: int = 90) -> str:
    """A message with numbers, quoted names and shapes removed, cut to ``n`` characters."""
    s = re.sub(r"\[[\d, ]*\]|\([\d, ]*\)", "[...]", message)
    s = re.sub(r"'[^']*'|\"[^\"]*\"", "'...'", s)
    s = re.sub(r"0x[0-9a-f]+|\d+", "N", s)
    return s[:n].rstrip()


def crash_component(message: str) -> str:
    """Which part of the stack raised, from a compiled run's error ("Type: message")."""
    if "BackendCompilerFailed" in message:
        return "inductor" if "backend='inductor'" in message else "aot_autograd"
    # Dynamo's own ``Unsupported``, not aotcheck's ``UnsupportedInputError`` (a named refusal
    # of aotcheck's engine, which has no Dynamo in front of it)
    if re.search(r"\bUnsupported\b", message) or any(
            k in message for k in ("torch._dynamo", "InternalTorchDynamoError", "TorchRuntimeError")):
        return "dynamo"
    return "compiled forward"


def check_kind(problems: list) -> str:
    """The check the first problem failed, by name (see the module docstring)."""
    if not problems:
        return ""
    first = problems[0]
    return sentence_check(first) if isinstance(first, str) else record_check(first)


def record_check(d: Divergence) -> str:
    """A record's check name. Seen in a case's state or in the cache fill, a record is named by
    its whole sentence's stem (the prefix hid every name from the old message patterns)."""
    if d.state is not None or d.cache_fill:
        return sentence_check(str(d))
    if d.check is Check.BACKWARD_RAISED:
        kind, message = _error(d)
        return f"crash in backward: {stem(kind + ': ' + message, 70)}"
    if d.check is Check.COMPILED_RAISED:
        kind, message = _error(d)
        # BackendCompilerFailed wraps the real error: "backend='x' raised: Kind: message"
        inner = re.search(r"raised:\s*(\w+(?:Error|Exception|Failure)?): ?(.*)", message)
        shown = f"{inner.group(1)}: {inner.group(2)}" if inner else f"{kind}: {message}"
        return f"crash in {crash_component(d.error)}: {stem(shown)}"
    return _name(d) or sentence_check(str(d))


def _name(d: Divergence) -> str | None:
    if d.check in _LEAF_NAMES:
        return _LEAF_NAMES[d.check] if d.subject.role is Role.LEAF else None
    if d.check in _AFTER_THE_CALL and d.subject.role is Role.ARGUMENT:
        return _ARGUMENT_NAMES.get(d.check)
    return _NAMES.get(d.check)


def _error(d: Divergence) -> tuple[str, str]:
    """A raise's type and the first line of its message."""
    kind, _, message = d.error.partition(": ")
    return kind, message.split("\n")[0]


def sentence_check(text: str) -> str:
    """NOTE [harness sentences without a record]: the one parser of problems handed as text."""
    if any(line in text for line in _CACHE_LINES):
        return "cache miss"
    return stem(text, 60)


def skeleton(program) -> str:
    """The ops of ``program`` in order (region-qualified), after the kinds of its inputs."""
    kinds = ",".join(sorted({spec.kind for spec in program.inputs}))
    ops = " ".join((f"{stmt.block}:" if stmt.block else "") + stmt.op
                   for stmt in program.statements)
    return f"{kinds} | {ops}" if ops else kinds


@dataclass(frozen=True)
class Fingerprint:
    stage: str          # cold | cached | warm (the cached run in a new process)
    check: str
    skeleton: str = ""

    @property
    def group(self) -> str:
        """The explore-time key: stage and check, without the skeleton."""
        return f"{self.stage}: {self.check}"

    def __str__(self) -> str:
        return f"{self.group} [{self.skeleton}]" if self.skeleton else self.group

    def to_dict(self) -> dict:
        return {"stage": self.stage, "check": self.check, "skeleton": self.skeleton}

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

    >>> check_kind(["output 0 values: Tensor-likes are not close!"])
    'values'
    >>> check_kind(["compiled raised BackendCompilerFailed: backend='aot_eager' raised: "
    ...             "AssertionError: outs_to_grad length (1) != tangents length (2)"])
    'crash in aot_autograd: AssertionError: outs_to_grad length [...] != tangents length [...]'
"""
from __future__ import annotations

import re
from dataclasses import dataclass

VERSION = 5     # bump when check_kind changes: cached fingerprints of known cases are redone

_FIELDS = (  # (pattern in the first divergence, check kind); the first match wins
    (r"^output structure", "structure"),
    (r"^backward: only eager raised", "missing error in backward"),
    (r"^eager raised", "missing error"),
    (r"^mutating output \d+ in place|^after mutating output", "output mutation"),
    (r"^output \d+ aliasing", "aliasing"),
    (r"^argument \d+ after the call (values|stride|storage_offset|shape|dtype)", "mutation"),
    (r"^argument \d+ after the call requires_grad", "requires_grad"),
    (r"^grad of leaf \d+: eager (None|a tensor), compiled", "grad presence"),
    (r"^grad of leaf", "grad values"),
    (r"^retained grad of (output|argument) \d+: eager (None|a tensor|retains_grad)", "retained grad presence"),
    (r"^retained grad of", "retained grad values"),
    (r"^output \d+ requires_grad", "requires_grad"),
    (r"^output \d+ (is_leaf|grad_fn)", "autograd metadata"),
    (r"^output \d+ (dtype|shape|stride)", "layout"),
    (r"^output \d+ values", "values"),
    (r"^output \d+: eager", "non-tensor output"),
    (r"cached run did not hit|expected cache hits only", "cache miss"),
    (r"^global state leaked", "global state leak"),
    (r"^random generator state after the call", "random state"),
    (r"^oracle raised", "oracle error"),
)


def _stem(message: str, n: int = 90) -> str:
    """A message with numbers, quoted names and shapes removed, cut to ``n`` characters."""
    s = re.sub(r"\[[\d, ]*\]|\([\d, ]*\)", "[...]", message)
    s = re.sub(r"'[^']*'|\"[^\"]*\"", "'...'", s)
    s = re.sub(r"0x[0-9a-f]+|\d+", "N", s)
    return s[:n].rstrip()


def crash_component(message: str) -> str:
    """Which part of the stack raised, from the oracle's 'compiled raised ...' line."""
    if "BackendCompilerFailed" in message:
        return "inductor" if "backend='inductor'" in message else "aot_autograd"
    # Dynamo's own ``Unsupported``, not aotcheck's ``UnsupportedInputError`` (a named refusal
    # of aotcheck's engine, which has no Dynamo in front of it)
    if re.search(r"\bUnsupported\b", message) or any(
            k in message for k in ("torch._dynamo", "InternalTorchDynamoError", "TorchRuntimeError")):
        return "dynamo"
    return "compiled forward"


def check_kind(divergences: list[str]) -> str:
    if not divergences:
        return ""
    first = divergences[0]
    m = re.match(r"backward: only compiled raised (\w+): ?(.*)", first)
    if m:
        return f"crash in backward: {_stem(m.group(1) + ': ' + m.group(2), 70)}"
    m = re.match(r"compiled raised (\w+): ?(.*)", first)
    if m:
        kind, msg = m.group(1), m.group(2)
        # BackendCompilerFailed wraps the real error: "backend='x' raised:\nKind: message"
        inner = re.search(r"raised:\s*(\w+(?:Error|Exception|Failure)?): ?(.*)", msg)
        shown = f"{inner.group(1)}: {inner.group(2)}" if inner else f"{kind}: {msg}"
        return f"crash in {crash_component(first)}: {_stem(shown)}"
    for pattern, name in _FIELDS:
        if re.search(pattern, first):
            return name
    return _stem(first, 60)


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

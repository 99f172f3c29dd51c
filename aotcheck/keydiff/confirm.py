"""confirm: is a KEY GAP a stale hit a user meets?

The differential compiled A and B cold, each into its own cache directory, each checked against
eager under its own condition. For a KEY GAP between value A (which writes) and value B (which
reads), a process that compiled nothing under A compiles the program under B over a copy of A's
directory (after a Dynamo reset and cleared in-memory caches), and calls it against eager under
B. The runner confirms A -> B first and B -> A only when that was no stale hit; the values of a
``setup`` input each get a new process (a registration lasts as long as its process). The decision, with its reason (``Confirmation``)::

    STALE HIT         B was served A's entry (a hit) and differs from eager under B, while B's
                      own cold compile equals eager: the cache gave a wrong result
    served, equal     B was served A's entry and happens to equal eager (the gap is real, this
                      program's values do not show it)
    not served        B missed in a new process (the key differs across processes, or the entry
                      was not written)
    B wrong cold      B's own cold compile already differs from eager: not the cache's fault
    failed            the new process did not compile or run B
"""
from __future__ import annotations

import enum
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .observe import Observation
from .worker import Request, run
from ..engine import serial


class Outcome(enum.Enum):
    STALE_HIT = "STALE HIT"
    SERVED_EQUAL = "served, equal"
    NOT_SERVED = "not served"
    B_WRONG_COLD = "B wrong cold"
    FAILED = "failed"


@dataclass(frozen=True)
class Confirmation:
    """One direction of one gap: value ``a`` wrote the entry, value ``b`` read it."""
    a: int
    b: int
    outcome: Outcome
    reason: str

    def to_json(self) -> dict:
        return serial.to_data(self)

    @staticmethod
    def from_json(d: dict) -> "Confirmation":
        return serial.from_data(Confirmation, d)


def decide(a: int, b: int, cold_b: Observation, warm_b: Observation) -> Confirmation:
    """The outcome of reading A's entry under B (``warm_b``), given B's own cold compile."""
    hits = warm_b.event("aot_autograd.autograd_cache_hit") + warm_b.event("inductor.fxgraph_cache_hit") \
        + warm_b.event("aotcheck.hits")
    if warm_b.error:
        return Confirmation(a, b, Outcome.FAILED, f"B over A's cache directory failed: {warm_b.error}")
    if cold_b.eager:
        return Confirmation(a, b, Outcome.B_WRONG_COLD, f"B's own cold compile already differs from eager: "
                            f"{cold_b.eager}")
    if not hits:
        return Confirmation(a, b, Outcome.NOT_SERVED, "B missed A's entry in a new process "
                            f"({dict(warm_b.events)})")
    if warm_b.eager:
        return Confirmation(a, b, Outcome.STALE_HIT, f"B was served A's entry ({hits} hit) and differs from "
                            f"eager under B: {warm_b.eager}; B's own cold compile equals eager")
    return Confirmation(a, b, Outcome.SERVED_EQUAL, f"B was served A's entry ({hits} hit) and equals eager "
                        f"under B")


def request(program: str, name: str, b: int, a_dir: str, tmp, target: str = "torch") -> Request:
    """The request that reads a copy of A's cache directory under B (the copy in ``tmp``)."""
    copy = Path(tempfile.mkdtemp(prefix="confirm-", dir=tmp)) / "cache"
    shutil.copytree(a_dir, copy)
    return Request(program, name, b, str(copy), eager=True, details=False, target=target)


def confirm(program: str, name: str, a: int, b: int, a_dir: str, cold_b: Observation,
            target: str = "torch") -> Confirmation:
    """Copy A's cache directory, compile under B over the copy in a new process, and decide."""
    with tempfile.TemporaryDirectory(prefix="aotcheck-keydiff-confirm-") as tmp:
        warm = run([request(program, name, b, a_dir, tmp, target)])[0]
    return decide(a, b, cold_b, warm)

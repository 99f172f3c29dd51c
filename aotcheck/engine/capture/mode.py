"""mode: which way capture traced the function, and why, as one frozen record.

The first way traces under functionalization on fake tensors. Capture (trace.py) changes
the way when the first cannot follow the program, and says why:

    TraceMode()                                    functional, "the first way: ..."
      .then("alias group ... is mutated", synthetic=(0,))        NOTE [synthetic bases]
      .then("autograd's view replay failed ...", nonleaf_views=True)  NOTE [non-leaf copies]
      .then("... a limit of functionalization", way=Way.PLAIN)  NOTE [plain trace, then functionalize]

The mode travels with the capture (``Captured.mode``), into the joint trace, and into the
metadata (``ViewMutationMeta.trace_mode``), so the cache entry keeps it and ``explain``
prints it. No tensors, no callables: it round-trips through JSON.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, replace


class Way(enum.StrEnum):
    """How capture traced the function."""
    FUNCTIONAL = "functional"   # under functionalization on fake tensors
    PLAIN = "plain"             # on plain fake tensors with eager autograd, then
                                # functionalized (storage_views.py)


FIRST_WAY = "the first way: traced under functionalization on fake tensors"


@dataclass(frozen=True)
class TraceMode:
    way: Way = Way.FUNCTIONAL
    nonleaf_views: bool = False     # non-leaf argument copies are views of fresh storage
                                    # (NOTE [non-leaf copies] in functional_run.py)
    argument_views: bool = False    # argument views are views in the trace too
                                    # (NOTE [views of an argument given requires_grad_] in view_flags.py)
    synthetic: tuple[int, ...] = ()  # alias groups (storage numbers) traced through a
                                     # synthetic base (NOTE [synthetic bases] in trace.py)
    reason: str = FIRST_WAY         # why: each change of way adds its sentence

    @property
    def plain(self) -> bool:
        return self.way is Way.PLAIN

    def then(self, why: str, **changes) -> "TraceMode":
        """This mode changed as ``changes`` say, for the reason ``why``."""
        reason = why if self.reason == FIRST_WAY else f"{self.reason}; then {why}"
        return replace(self, reason=reason, **changes)

    def format(self) -> str:
        """One line for ``explain``: the way, its options, and the reason."""
        options = [o for o, on in (("non-leaf views", self.nonleaf_views),
                                   ("argument views", self.argument_views)) if on]
        if self.synthetic:
            options.append(("synthetic bases for storages " if len(self.synthetic) > 1 else
                            "synthetic base for storage ") + ", ".join(map(str, self.synthetic)))
        way = self.way + (f" ({', '.join(options)})" if options else "")
        return f"way: {way}; {self.reason}"

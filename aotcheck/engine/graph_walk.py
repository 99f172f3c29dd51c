"""graph_walk: the two graph walks the engine makes, written once.

- :func:`grad_nodes`: every node of an eager autograd graph reachable from some roots
  (``grad_fn`` through ``next_functions``), each once: capture asks which custom Functions
  a graph reaches, whether it reaches a recorded ``set_()``, whether an output's chain
  reaches a custom Function before its base's; the joint asks which inputs an output
  reaches; the subclass layer whether a gradient reaches a leaf.
- :func:`ancestors`: every fx node an fx graph's roots read, transitively (both
  partitioners' regions).
"""
from __future__ import annotations

from typing import Iterable, Iterator

import torch.fx as fx


def grad_nodes(roots: Iterable, stop=None, limit: int | None = None) -> Iterator:
    """Each autograd node reachable from ``roots`` (None entries are skipped), once, depth
    first. ``stop``: a node neither yielded nor walked past; ``limit``: at most that many
    nodes. The walked nodes are kept alive while the walk runs, so ids stay unique."""
    stack, seen = list(roots), {}
    while stack:
        fn = stack.pop()
        if fn is None or fn is stop or id(fn) in seen:
            continue
        if limit is not None and len(seen) >= limit:
            return
        seen[id(fn)] = fn
        yield fn
        stack.extend(f for f, _ in fn.next_functions)


def ancestors(roots, stop=frozenset()) -> set[fx.Node]:
    """Every fx node the roots (non-nodes are skipped) read, transitively, the roots
    included; nodes in ``stop`` are included but not walked past."""
    seen: set[fx.Node] = set()
    stack = [r for r in roots if isinstance(r, fx.Node)]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n not in stop:
            stack.extend(n.all_input_nodes)
    return seen

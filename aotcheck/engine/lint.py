"""Checkers, one per representation. Turned on by AOTCHECK_CHECK_GRAPHS (the test
suite forces it on). Errors print the graph around the failing node."""
from __future__ import annotations

import operator

import torch
import torch.fx as fx

from ..errors import AotcheckError


class LintError(AotcheckError):
    """A representation broke one of its invariants: an aotcheck bug, not a user error."""


ALLOWED_NAMESPACES = ("aten", "prims")


def _around(graph: fx.Graph, node: fx.Node, radius: int = 3) -> str:
    nodes = list(graph.nodes)
    i = nodes.index(node)
    lines = []
    for n in nodes[max(0, i - radius): i + radius + 1]:
        mark = ">>" if n is node else "  "
        lines.append(f"{mark} {n.format_node()}")
    return "\n".join(lines)


def check_graph(graph: fx.Graph, what: str, functional: bool = True) -> None:
    """Invariants of every aotcheck graph:
    - fx's own lint (topological order, defined names);
    - every call targets an OpOverload (or picks an item of a multi-output op);
    - a functional graph contains no op that mutates its arguments."""
    try:
        graph.lint()
    except Exception as e:
        raise LintError(f"{what} graph fails fx lint: {e}") from None
    for n in graph.nodes:
        if n.op in ("placeholder", "output", "get_attr"):
            continue             # get_attr: a tensor constant (e.g. from torch.tensor(...))
        if n.op == "call_function" and n.target is operator.getitem:
            continue             # picks one result of a multi-output op
        if n.op != "call_function" or not isinstance(n.target, torch._ops.OpOverload):
            raise LintError(f"{what} graph: node {n.name} is {n.op} {n.target!r}; only aten/prims "
                            f"op calls are allowed\n{_around(graph, n)}\nFix: trace with make_fx, "
                            "which records only aten calls")
        # Any OpOverload may appear (torch.library ops too); the cache's serializer is the
        # one that accepts aten/prims targets only, and bypasses other graphs.
        if functional and n.target._schema.is_mutable:
            raise LintError(f"{what} graph: node {n.name} calls mutating op {n.target}; the graph "
                            f"must be functional\n{_around(graph, n)}\nFix: the op escaped "
                            "functionalization; check capture.trace_functional")


def check_meta(meta, sig) -> None:
    """Metadata invariants: indices in range, kinds known, and a JSON round trip."""
    from .analyze import OutputKind, ViewMutationMeta
    n_leaves = len(sig.leaves)
    for o in meta.outputs:
        if not isinstance(o.kind, OutputKind):
            raise LintError(f"output {o.index} has unknown kind {o.kind!r}")
        if o.kind in ("is_input", "alias_of_input") and not 0 <= o.source < n_leaves:
            raise LintError(f"output {o.index} ({o.kind}) names argument {o.source}, out of range")
        if o.kind in ("alias_of_output", "same_as_output") and not 0 <= o.source < len(meta.outputs):
            raise LintError(f"output {o.index} ({o.kind}) names output {o.source}, out of range")
    if ViewMutationMeta.from_json(meta.to_json()) != meta:
        raise LintError("view/mutation metadata does not round-trip through JSON")

"""rng.draws: every draw runs, in the forward graph, in eager's order.

# NOTE [every draw in the forward]
A random op whose value nothing uses still advances the generator in eager; the partitioner
keeps each random node (and what it needs) in the forward graph (:func:`random_nodes`), and
never in the backward, so the backward reuses the forward's values instead of redrawing.
"""
from __future__ import annotations

import torch
import torch.fx as fx


def is_random(target) -> bool:
    """Whether an op draws from a generator (PyTorch tags such ops nondeterministic_seeded)."""
    return isinstance(target, torch._ops.OpOverload) and \
        torch.Tag.nondeterministic_seeded in target.tags


def random_nodes(graph: fx.Graph) -> list[fx.Node]:
    """The graph's random draws (and guards, tagged like them), in graph (= eager call) order."""
    return [n for n in graph.nodes if n.op == "call_function" and is_random(n.target)]


def split_draws(graph: fx.Graph, tangents) -> tuple[list[fx.Node], list[fx.Node]]:
    """A joint graph's impure nodes, in order, as (those the forward runs: see the
    module docstring, those eager runs in the backward). The backward's are those traced while autograd ran the backward
    (``meta["backward"]``, functional.backward_phase), and any computed from a tangent. A draw
    in a custom Function's backward is one (eager draws it at ``.backward()``); so is a guard
    on a value the backward reads (``grad[mask]``, NOTE [value specialization] in values.py),
    which the forward could not run: it has no tangent."""
    dep, forward, backward = set(tangents), [], []
    for n in graph.nodes:
        if n.op != "call_function":
            continue
        from_tangent = any(a in dep for a in n.all_input_nodes)
        if from_tangent:
            dep.add(n)
        if is_random(n.target):
            (backward if from_tangent or n.meta.get("backward") else forward).append(n)
    return forward, backward

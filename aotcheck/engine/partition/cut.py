"""partition: cut a joint graph into a forward graph and a backward graph.

The forward graph takes the primals and returns the forward outputs followed
by the *saved values*; the backward graph takes the saved values followed by
the tangents and returns one gradient per primal that requires grad.

Strategies (``STRATEGIES``):

    default  puts in the forward every node the forward outputs need, and saves
             every forward value the backward uses. Nodes that only the backward
             needs (and that do not depend on tangents) are computed in the
             backward from saved values.
    mincut   saves the cheapest set of values in bytes, found by a min-cut
             (``mincut.py``), and recomputes cheap ops (pointwise, views) in the
             backward; never random ops, mutations or expensive ops.

Both build their graphs with ``_build`` from the set of saved values.

Before (the joint of ``f(x) = x.sin().sum()``)::

    %x, %tangents_1 = placeholder
    %sin = aten.sin.default(%x)
    %sum = aten.sum.default(%sin)
    %expand = aten.expand.default(%tangents_1, [4])
    %cos = aten.cos.default(%x)
    %mul = aten.mul.Tensor(%expand, %cos)
    return (%sum, %mul)

After (default)::

    forward:  %x -> %sin -> %sum;                 return (%sum, %x)     saved: x
    backward: %x, %tangents_1 -> expand, cos, mul; return (%mul,)
"""
from __future__ import annotations

from dataclasses import dataclass

import operator

import torch
import torch.fx as fx
from torch.multiprocessing.reductions import StorageWeakRef

from ...errors import AotcheckError
from ..graph_walk import ancestors as _ancestors
from ..joint import Joint
from .mincut import choose_saved
from ..rng.draws import random_nodes, split_draws


@dataclass
class Partitioned:
    forward: fx.Graph          # primals -> forward outputs + saved values
    backward: fx.Graph | None  # saved values + tangents -> gradients (None for inference)
    num_fw_outputs: int
    saved: tuple[str, ...]
    reasons: tuple[str, ...] = ()   # why each value was saved or recomputed (min-cut only)


def _copy_nodes(nodes_in_order, inputs: list[fx.Node], names: list[str] | None = None):
    g = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    for i, n in enumerate(inputs):
        env[n] = g.placeholder(names[i] if names else n.name)
        env[n].meta = dict(n.meta)
    for n in nodes_in_order:
        if n in env:
            continue
        env[n] = g.node_copy(n, lambda a: env[a])
    return g, env


def _split(joint: Joint):
    graph = joint.graph.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    primals, tangents = placeholders[:joint.num_primals], placeholders[joint.num_primals:]
    out_node = next(n for n in graph.nodes if n.op == "output")
    outs = list(out_node.args[0])
    nf = len(joint.fw_candidates)
    order = [n for n in graph.nodes if n.op not in ("placeholder", "output")]
    return primals, tangents, outs[:nf], outs[nf:], order


def _with_items(graph: fx.Graph, fw_set: set[fx.Node]) -> set[fx.Node]:
    for n in graph.nodes:       # a multi-output op's items live where the op does
        if n.op == "call_function" and n.target is operator.getitem and n.args[0] in fw_set:
            fw_set.add(n)
    return fw_set


def default_partition(joint: Joint, mutated_placeholders: frozenset[int] = frozenset()) -> Partitioned:
    primals, tangents, fw_outs, grad_outs, order = _split(joint)
    # every random draw runs in the forward, once, even when nothing uses it (rng/draws.py)
    graph = joint.graph.graph
    fw_draws, bw_draws = split_draws(graph, tangents)
    fw_set = _with_items(graph, _ancestors(list(fw_outs) + fw_draws) | set(primals))
    bw_needed = _ancestors(list(grad_outs) + bw_draws)
    bw_set = (bw_needed - fw_set) | set(tangents)
    saved: list[fx.Node] = []
    for n in order:
        if n in bw_set:
            for a in n.all_input_nodes:
                if a in fw_set and a not in saved:
                    saved.append(a)
    for g in grad_outs:          # a gradient that is a forward value (rare) is saved too
        if isinstance(g, fx.Node) and g in fw_set and g not in saved:
            saved.append(g)
    return _build(joint, fw_set, bw_set, saved, mutated_placeholders)


def mincut_partition(joint: Joint, mutated_placeholders: frozenset[int] = frozenset()) -> Partitioned:
    """Save the cheapest set of values in bytes and recompute cheap ops in the backward
    (``mincut.py`` chooses; this builds the graphs from its choice)."""
    choice = choose_saved(joint, mutated_placeholders)
    primals, tangents, fw_outs, grad_outs, order = _split(joint)
    saved = list(choice.saved)
    graph = joint.graph.graph
    fw_draws, bw_draws = split_draws(graph, tangents)
    fw_set = _with_items(graph, _ancestors(
        list(fw_outs) + saved + fw_draws) | set(primals))   # rng/draws.py
    stop = set(saved) | set(tangents)
    bw_set = {n for n in _ancestors(list(grad_outs) + bw_draws, stop)
              if n not in stop} | set(tangents)
    leaked = [n.name for n in bw_set if n.op == "placeholder" and n not in tangents]
    if leaked:
        raise AotcheckError(f"min-cut partitioner: the backward reads inputs {leaked} that were "
                            "not saved (a bug in the cut; use partitioner='default')")
    parts = _build(joint, fw_set, bw_set, saved, mutated_placeholders)
    parts.reasons = choice.reasons
    return parts


def _build(joint: Joint, fw_set: set[fx.Node], bw_set: set[fx.Node], saved: list[fx.Node],
           mutated_placeholders: frozenset[int]) -> Partitioned:
    """The forward graph (fw_set, returning the outputs and the saved values) and the
    backward graph (bw_set, from the saved values and the tangents)."""
    primals, tangents, fw_outs, grad_outs, order = _split(joint)
    nf = len(fw_outs)
    # forward graph
    fg, env = _copy_nodes([n for n in order if n in fw_set], primals)
    fw_results = _dedupe_outputs(fg, [env[o] for o in fw_outs])
    saved_results = []
    mutated_vals = {StorageWeakRef(primals[p].meta["val"].untyped_storage())
                    for p in mutated_placeholders}
    for s in saved:
        node = env[s]
        val = s.meta.get("val")
        if isinstance(val, torch.Tensor) and val.layout == torch.strided \
                and StorageWeakRef(val.untyped_storage()) in mutated_vals:   # sparse: no storage
            # NOTE [saved values of mutated inputs]
            # the runtime mutates that input after the
            # forward; the backward needs the value from before, so save a copy.
            clone = fg.call_function(torch.ops.aten.clone.default, (node,))
            clone.meta = dict(node.meta)
            node = clone
        saved_results.append(node)
    fg.output(tuple(fw_results + saved_results))
    # backward graph
    saved_names = [f"saved_{s.name}" for s in saved]
    bg, benv = _copy_nodes([n for n in order if n in bw_set], saved + tangents,
                           saved_names + [f"tangents_{i + 1}" for i in range(len(tangents))])
    for n in bg.nodes:           # autograd runs the backward with grad off; that is no fact
        n.meta.pop("no_grad", None)
    bg.output(tuple(benv[g] if isinstance(g, fx.Node) else None for g in grad_outs))
    fg.eliminate_dead_code()
    bg.eliminate_dead_code()
    return Partitioned(fg, bg, nf, tuple(saved_names))


def _dedupe_outputs(g: fx.Graph, nodes: list[fx.Node]) -> list[fx.Node]:
    """Forward outputs must be distinct, non-view tensors that are not graph inputs:
    an autograd.Function may not return a view or one of its inputs as a new value."""
    out, seen = [], set()
    for n in nodes:
        val = n.meta.get("val")
        is_view = isinstance(val, torch.Tensor) and val._is_view()
        if n in seen or n.op == "placeholder" or is_view:
            c = g.call_function(torch.ops.aten.clone.default, (n,))
            c.meta = dict(n.meta)
            n = c
        seen.add(n)
        out.append(n)
    return out


def inference_forward(captured_graph: fx.GraphModule, fw_candidates: tuple[int, ...]) -> Partitioned:
    """The forward graph of an inference artifact: the captured graph, keeping only the
    candidates the runtime needs."""
    graph = captured_graph.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    out_node = next(n for n in graph.nodes if n.op == "output")
    outs = list(out_node.args[0])
    keep = [outs[c] for c in fw_candidates]
    order = [n for n in graph.nodes if n.op not in ("placeholder", "output")]
    needed = _ancestors(keep + random_nodes(graph))    # rng/draws.py
    fg, env = _copy_nodes([n for n in order if n in needed], placeholders)
    fg.output(tuple(_dedupe_outputs(fg, [env[o] for o in keep])))
    fg.eliminate_dead_code()
    return Partitioned(fg, None, len(keep), ())


STRATEGIES = {"default": default_partition, "mincut": mincut_partition}


def partition(joint: Joint, strategy: str = "default",
              mutated_placeholders: frozenset[int] = frozenset()) -> Partitioned:
    if strategy not in STRATEGIES:
        raise AotcheckError(f"unknown partitioner {strategy!r}; supported: {sorted(STRATEGIES)}")
    return STRATEGIES[strategy](joint, mutated_placeholders)

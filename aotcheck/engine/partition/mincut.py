"""mincut: choose the values the forward saves for the backward, rematerializing cheap ones.

The default partition saves every forward value the backward reads. This module
instead chooses the *cheapest set of saved values, in bytes*, from which the
backward can recompute everything else it needs, by a max-flow/min-cut over the
joint graph. Cheap ops (pointwise ops, views, constant fills) may be recomputed
in the backward; random ops, mutations and expensive ops never are (see
``recompute_policy``). ``cut.py`` then builds the two graphs from the
chosen saved values.

Before (the joint of ``f(x) = x.sin().cos().sum()``; the default saves ``x`` and
``sin``)::

    %x, %tangents_1 = placeholder
    %sin = aten.sin.default(%x)
    %cos = aten.cos.default(%sin)
    %sum = aten.sum.default(%cos)
    %expand = aten.expand.default(%tangents_1, [4])
    %sin_1 = aten.sin.default(%sin)          # d cos(s) / ds needs sin
    %neg = aten.neg.default(%sin_1)
    %mul = aten.mul.Tensor(%expand, %neg)
    %cos_1 = aten.cos.default(%x)            # d sin(x) / dx needs x
    %mul_1 = aten.mul.Tensor(%mul, %cos_1)
    return (%sum, %mul_1)

After (``choose_saved``)::

    saved:      x        input: free, the caller holds it
    recomputed: sin      aten.sin.default is pointwise, instead of saving 16 B
    forward:    x -> sin -> cos -> sum;                   return (sum, x)
    backward:   x, tangents_1 -> sin, expand, sin_1, neg, mul, cos_1, mul_1;  return (mul_1,)

The steps, one function each:

1. ``regions``: which nodes the forward needs, which are backward nodes (they
   read a tangent), and the candidates between them (forward values the backward
   needs, directly or through other candidates).
2. ``recompute_policy``: for each candidate, whether it may be recomputed, and why.
3. ``node_cost``: the bytes saving a candidate costs.
4. ``flow_network``: the network whose minimum cut is the cheapest saved set.
5. ``cut_nearest_sink``: the minimum cut that recomputes least.
6. ``choose_saved`` runs them and returns the saved nodes with the reasons.

# NOTE [min-cut network]
Each candidate ``n`` becomes two vertices ``n_in -> n_out`` joined by an edge
whose capacity is the bytes it costs to save ``n``; ``n_out -> u_in`` has
infinite capacity for each user ``u``; a backward node's inputs point to the
sink. The source points (infinitely) to every input and to every forward node
that may not be recomputed, so a path from the source to the sink is a way the
backward could read a forward value, and a cut must save something on it. A
candidate whose ``n_in`` falls on the sink side is recomputed in the backward;
a candidate whose edge is cut is saved. Saving an input costs nothing (its
memory is held by the caller), unless the runtime mutates it after the forward:
then the forward saves a copy
(NOTE [saved values of mutated inputs] in cut.py), which costs its bytes. Among the minimum cuts, the one
nearest the sink is taken: it saves the same bytes and recomputes the fewest ops.

# NOTE [min-cut and inputs mutated later]
Rematerializing from an input means the backward reads the input as it was
saved. Like PyTorch's partitioner, the saved input goes through
``save_for_backward``, so if the caller mutates it in place between forward
and backward, the backward raises autograd's "modified by an inplace
operation" error where eager (which may have saved an intermediate instead)
would not. The default partition has the same exposure for the values it saves.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass

import torch
import torch.fx as fx
from torch.multiprocessing.reductions import StorageWeakRef

from ...errors import AotcheckError
from ..graph_walk import ancestors as _ancestors
from ..joint import Joint
from ..rng.draws import split_draws

aten = torch.ops.aten

# Never recomputed, even when cheaper in bytes: each costs far more than it reads
# or writes (matmuls, convolutions, attention), so rerunning it in the backward
# would cost time, not save memory worth having. Ops tagged ``reduction`` (sum,
# mean, amax, var, ...) are never recomputed either: their input is larger than
# their output, so saving the output is cheaper than keeping what recomputes it.
EXPENSIVE = frozenset({
    aten.mm, aten.addmm, aten.bmm, aten.baddbmm, aten.addbmm, aten.matmul, aten.dot, aten.vdot,
    aten.mv, aten.addmv, aten.addr, aten.outer, aten.linear, aten.einsum, aten.tensordot,
    aten.convolution, aten._convolution, aten.conv1d, aten.conv2d, aten.conv3d,
    aten.convolution_backward, aten.conv_transpose1d, aten.conv_transpose2d, aten.conv_transpose3d,
    aten._scaled_dot_product_attention_math, aten._scaled_dot_product_flash_attention,
    aten._scaled_dot_product_efficient_attention, aten.scaled_dot_product_attention,
    aten.native_layer_norm, aten.native_batch_norm, aten._native_batch_norm_legit,
    aten._native_batch_norm_legit_functional, aten.native_group_norm,
    aten._softmax, aten._log_softmax, aten.cumsum, aten.cumprod, aten.sort, aten.topk,
})

# Cheap ops that carry neither the pointwise tag nor a view's alias annotation.
CHEAP = frozenset({
    aten._to_copy, aten.copy, aten.alias, aten._unsafe_view, aten.lift_fresh_copy, aten.detach,
    aten.zeros, aten.ones, aten.full, aten.scalar_tensor, aten.arange,
    aten.zeros_like, aten.ones_like, aten.full_like, aten.new_zeros, aten.new_ones, aten.new_full,
    aten.fill, aten.masked_fill, aten.expand_copy, aten.view_copy, aten.permute_copy,
    aten.t_copy, aten.transpose_copy, aten.unsqueeze_copy, aten.squeeze_copy,
})


@dataclass(frozen=True)
class Regions:
    primals: tuple[fx.Node, ...]
    tangents: tuple[fx.Node, ...]
    fw_outs: tuple
    grad_outs: tuple
    forward: frozenset        # what the forward outputs need (and the primals)
    backward: frozenset       # nodes that read a tangent, which only the backward can run
    candidates: tuple         # forward-computable values the backward needs, in graph order


@dataclass(frozen=True)
class Choice:
    """What ``choose_saved`` decided: the saved nodes (graph order), and one line per
    saved or recomputed value saying why."""
    saved: tuple[fx.Node, ...]
    recomputed: tuple[fx.Node, ...]
    reasons: tuple[str, ...]


def regions(joint: Joint) -> Regions:
    """Step 1: the forward region, the backward region and the candidates between them."""
    graph = joint.graph.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    primals, tangents = placeholders[:joint.num_primals], placeholders[joint.num_primals:]
    outs = list(next(n for n in graph.nodes if n.op == "output").args[0])
    nf = len(joint.fw_candidates)
    fw_outs, grad_outs = outs[:nf], outs[nf:]
    # every random draw runs in the forward, even one only the backward reads (rng/draws.py)
    fw_draws, bw_draws = split_draws(graph, tangents)
    forward = _ancestors(list(fw_outs) + fw_draws) | set(primals)
    backward = set(tangents)
    for n in graph.nodes:
        if n.op == "call_function" and any(a in backward for a in n.all_input_nodes):
            backward.add(n)
    needed = _ancestors(list(grad_outs) + bw_draws)
    candidates = tuple(n for n in graph.nodes
                       if n in needed and n not in backward and n.op != "output")
    return Regions(tuple(primals), tuple(tangents), tuple(fw_outs), tuple(grad_outs),
                   frozenset(forward), frozenset(backward & needed), candidates)


def _packet(target):
    return getattr(target, "overloadpacket", None)


def _is_view(target) -> bool:
    schema = getattr(target, "_schema", None)
    if schema is None or schema.is_mutable or not schema.returns:
        return False
    alias = schema.returns[0].alias_info
    return alias is not None and not alias.is_write


def recompute_policy(node: fx.Node) -> tuple[bool, str]:
    """Step 2: may this node be recomputed in the backward, and why (or why not)."""
    if node.op == "placeholder":
        return False, "an input"
    if node.op == "get_attr":
        return True, "a constant of the graph"
    if node.op != "call_function":
        return False, f"a {node.op} node"
    t = node.target
    if t is operator.getitem:
        return True, "an item of a multi-output op (recomputed with it)"
    name = str(t)
    tags = getattr(t, "tags", ())
    if torch.Tag.nondeterministic_seeded in tags:
        return False, f"{name} is random: the backward must see the forward's values"
    schema = getattr(t, "_schema", None)
    if schema is not None and schema.is_mutable:
        return False, f"{name} mutates"
    if _packet(t) in EXPENSIVE:
        return False, f"{name} is expensive (on the never-recompute list)"
    if torch.Tag.reduction in tags:
        return False, f"{name} is a reduction"
    if torch.Tag.pointwise in tags:
        return True, f"{name} is pointwise"
    if _is_view(t):
        return True, f"{name} is a view"
    if _packet(t) in CHEAP:
        return True, f"{name} is a cheap copy or fill"
    return False, f"{name} is not on the cheap list (pointwise, views, copies, fills)"


def _storage(val):
    return StorageWeakRef(val.untyped_storage())


def node_cost(node: fx.Node, input_storages: set, mutated_storages: set) -> int | None:
    """Step 3: the bytes it costs to save ``node`` (None: it cannot be saved, e.g. a tuple).
    A view keeps its whole storage alive, so it costs the storage's bytes; a value that
    shares an input's storage is free unless that input is mutated later (then the forward
    saves a copy of the value, which costs the value's own bytes)."""
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        return None
    own = val.numel() * val.element_size()
    st = _storage(val)
    if st in mutated_storages:
        return own
    if st in input_storages:
        return 0
    return max(own, val.untyped_storage().nbytes())


def flow_network(reg: Regions, costs: dict, recomputable: dict):
    """Step 4: the network of NOTE [min-cut network]. Edges without a capacity are infinite."""
    import networkx as nx
    g = nx.DiGraph()
    g.add_node("source")
    g.add_node("sink")
    cand = set(reg.candidates)
    for n in reg.candidates:
        if costs[n] is None:
            g.add_edge(f"{n.name}_in", f"{n.name}_out")
        else:
            g.add_edge(f"{n.name}_in", f"{n.name}_out", capacity=costs[n])
        if n.op == "placeholder" or (n in reg.forward and not recomputable[n]):
            g.add_edge("source", f"{n.name}_in")
        for u in n.users:
            if u in cand:
                g.add_edge(f"{n.name}_out", f"{u.name}_in")
            elif u in reg.backward:
                g.add_edge(f"{n.name}_out", "sink")
    for o in reg.grad_outs:          # a gradient that is a forward value is saved or recomputed
        if isinstance(o, fx.Node) and o in cand:
            g.add_edge(f"{o.name}_out", "sink")
    return g


def cut_nearest_sink(g) -> set[str]:
    """Step 5: the vertices on the sink side of the minimum cut nearest the sink: those
    that still reach the sink in the residual network of a maximum flow."""
    from networkx.algorithms.flow import preflow_push
    residual = preflow_push(g, "source", "sink", value_only=False)
    sink_side = {"sink"}
    stack = ["sink"]
    while stack:
        v = stack.pop()
        for u in residual.predecessors(v):
            e = residual[u][v]
            if u not in sink_side and e["capacity"] - e["flow"] > 0:
                sink_side.add(u)
                stack.append(u)
    if "source" in sink_side:
        raise AotcheckError("min-cut partitioner: no finite cut separates the forward from the "
                            "backward (a value the backward needs can be neither saved nor recomputed)")
    return sink_side


def _fmt_bytes(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    for unit in ("KB", "MB", "GB"):
        n /= 1024
        if n < 1024 or unit == "GB":
            return f"{n:.1f} {unit}"


def choose_saved(joint: Joint, mutated_placeholders: frozenset[int] = frozenset()) -> Choice:
    """Step 6: the saved values of the cheapest cut, and the reasons."""
    reg = regions(joint)
    in_storages = {_storage(p.meta["val"]) for p in reg.primals
                   if isinstance(p.meta.get("val"), torch.Tensor)}
    mut_storages = {_storage(reg.primals[i].meta["val"]) for i in mutated_placeholders}
    policy = {n: recompute_policy(n) for n in reg.candidates}
    recomputable = {n: ok for n, (ok, _) in policy.items()}
    costs = {n: node_cost(n, in_storages, mut_storages) for n in reg.candidates}
    sink_side = cut_nearest_sink(flow_network(reg, costs, recomputable))
    saved, recomputed, reasons = [], [], []
    for n in reg.candidates:
        n_in, n_out = f"{n.name}_in" in sink_side, f"{n.name}_out" in sink_side
        if n_out and not n_in:
            saved.append(n)
            ok, why = policy[n]
            if n.op == "placeholder":
                what = "input: free, the caller holds it" if costs[n] == 0 else \
                    f"input mutated later: the forward saves a copy ({_fmt_bytes(costs[n])})"
            elif costs[n] == 0:
                what = "shares an input's storage: free"
            elif not ok and n in reg.forward:
                what = f"never recomputed: {why} ({_fmt_bytes(costs[n])})"
            else:
                what = f"on the cheapest cut ({_fmt_bytes(costs[n])})"
            reasons.append(f"saved {n.name}: {what}")
        elif n_in and n in reg.forward:     # a forward value computed again in the backward
            recomputed.append(n)
            size = "" if costs[n] is None else f", instead of saving {_fmt_bytes(costs[n])}"
            reasons.append(f"recomputed {n.name}: {policy[n][1]}{size}")
    return Choice(tuple(saved), tuple(recomputed), tuple(reasons))

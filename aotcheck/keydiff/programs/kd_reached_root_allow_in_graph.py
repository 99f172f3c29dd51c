"""(a) state reached from the function, the case the cache declines (a control for
kd_checkpoint_allow_in_graph.py): a module global read by an ``allow_in_graph`` helper called at
the root of the graph. ``check_node_safe`` refuses the call, AOTAutogradCache bypasses the
graph, and there is no key to be stale; the same helper inside a checkpoint body is not vetted.
"""
import torch

KIND = "reached"
UPSTREAM = ""
BIAS = [1.0]


@torch._dynamo.allow_in_graph
def _root_opaque(x):
    return x + BIAS[0]


def fn(x):
    return _root_opaque(x * 2)


def inputs():
    return (torch.randn(4, requires_grad=True),)


VARY = {"BIAS": ([1.0], [4.0])}

"""(a) state the compiled code depends on that the function does not name: a module global read
by an ``allow_in_graph`` helper that runs inside an activation-checkpoint body.

AOTAutogradCache vets only the root graph's nodes (``check_node_safe``) and keys a global
callable by its import path, so the checkpoint body's call of ``_opaque`` is keyed by name, not
by what it computes: an entry compiled with SCALE [2.0] is served when SCALE is [3.0].
Upstream: pytorch/pytorch PR #194658 (open), whose description has this program.
"""
import torch
from torch.utils.checkpoint import checkpoint

KIND = "reached"
UPSTREAM = "pytorch/pytorch#194658"
SCALE = [2.0]


@torch._dynamo.allow_in_graph
def _opaque(x):
    return x * SCALE[0]


def fn(x):
    return checkpoint(_opaque, x, use_reentrant=False)


def inputs():
    return (torch.randn(4, requires_grad=True),)


VARY = {"SCALE": ([2.0], [3.0])}

"""Class: configuration fields that change a graph but are left out of the key.
``torch._functorch.config.joint_custom_pass`` (a pass over the joint graph) is in the config's
save-ignore list; a pass that rewrites exp into exp2 is installed in one process only."""
import torch

UPSTREAM = ""


def exp_to_exp2(gm, joint_inputs):
    for node in gm.graph.nodes:
        if node.target is torch.ops.aten.exp.default:
            node.target = torch.ops.aten.exp2.default
    gm.recompile()
    return gm


def fn(x, w):
    return (x @ w).exp().mean(0)


def inputs():
    return (torch.randn(3, 4, requires_grad=True), torch.randn(4, 2, requires_grad=True))


VARY = {"torch._functorch.config.joint_custom_pass": (None, exp_to_exp2)}

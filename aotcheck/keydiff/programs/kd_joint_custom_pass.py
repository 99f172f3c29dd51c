"""(e) a configuration field that changes a graph but is left out of the key:
``torch._functorch.config.joint_custom_pass``, listed in functorch's ``_save_config_ignore``
(a callable cannot be pickled), so AOTAutogradCache's key never sees it.

A pass over the joint graph rewrites ``sin`` to ``cos``; an entry compiled without the pass is
served with it (and the other way round).
Upstream: none found (PR #157990 made Inductor's joint passes cacheable through a uuid;
functorch's joint_custom_pass has no such interface).
"""
import torch

KIND = "config"
UPSTREAM = ""


def sin_to_cos(gm, joint_inputs):
    for node in gm.graph.nodes:
        if node.target is torch.ops.aten.sin.default:
            node.target = torch.ops.aten.cos.default
    gm.recompile()
    return gm


def fn(x):
    return x.sin() * 2


def inputs():
    return (torch.randn(4, requires_grad=True),)


VARY = {"torch._functorch.config.joint_custom_pass": (None, sin_to_cos)}

"""(a) state reached from the function, the case the key does carry (a control for
kd_checkpoint_allow_in_graph.py): a module global read by a plain helper, which Dynamo inlines,
so the value is a constant of the graph and the key changes with it.
"""
import torch

KIND = "reached"
UPSTREAM = ""
FACTOR = 2.0


def _helper(x):
    return x * FACTOR


def fn(x):
    return _helper(x).sin()


def inputs():
    return (torch.randn(4, requires_grad=True),)


VARY = {"FACTOR": (2.0, 3.0)}

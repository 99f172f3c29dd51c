"""probe: the probe program of the config census for Inductor's fields (Inductor on CPU,
its C++ kernels generated and, in the census, not built): the same small training step as
kd_config_probe.py, that reaches many decisions a config field can change: a
matmul and gelu (decompositions, the partitioner's recomputation), dropout (random ops), a
reduction and a softmax, an input written in place, a view returned, a Python int argument,
an ``nn.Module`` called. One graph (no graph break): the census compares the first graph's
key before compiling in full (``config_run.py``).
"""
import torch

KIND = "probe"
UPSTREAM = ""
BACKEND = "inductor"
LINEAR = torch.nn.Linear(8, 8)


def fn(x, w, buf, n: int):
    h = torch.nn.functional.gelu(x @ w) * n
    h = torch.nn.functional.dropout(h, p=0.25, training=True)
    buf.add_(1)
    s = torch.softmax(LINEAR(h), dim=-1)
    return (s * h.detach().abs().amax()).sum(), s.view(-1)[:4], torch.layer_norm(h, (8,))


def inputs():
    return (torch.randn(4, 8, requires_grad=True), torch.randn(8, 8, requires_grad=True), torch.zeros(4), 3)

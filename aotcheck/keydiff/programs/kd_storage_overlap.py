"""(d) storage relations between arguments beyond "same tensor" and "disjoint": the whole
lattice (disjoint, one tensor twice, a view and its base, one storage without overlap, partial
overlap both ways, offset views) for a function that writes one argument and reads the other.

The key holds each argument's metadata (its storage offset zeroed) and no relation between
arguments, so an entry compiled for disjoint arguments is served to partially overlapping ones
(the write through ``a`` must show in ``b``).
Upstream: pytorch/pytorch#139789 (open).
"""
import torch

KIND = "storage"
UPSTREAM = "pytorch/pytorch#139789"
BACKWARD = False


def fn(a, b):
    a.mul_(2)
    return b + 1


def inputs():
    return (torch.arange(4.0), torch.arange(4.0) + 10)


VARY = {"storage:0,1": ("disjoint", "overlap", "overlap_reversed", "offset", "shared_disjoint", "same",
                        "view_of_base")}

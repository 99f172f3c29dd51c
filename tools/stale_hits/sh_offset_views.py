"""Class: storage relations between arguments. A function that writes its first argument and
reads its second, called by the user with two views of one buffer. No VARY: the differential
derives the storage relations of the two arguments (disjoint, the same, overlapping both ways,
offset-shifted, ...) as it does for any program a user gives.
Restated from pytorch/pytorch#139789 (open)."""
import torch

UPSTREAM = "pytorch/pytorch#139789"


def fn(a, b):
    a.mul_(3)
    return b + 1


def inputs():
    return (torch.randn(6), torch.randn(6))

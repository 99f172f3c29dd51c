"""Regression cases: minimized reproducers of engine bugs that the fuzzer found.

Each case names the bug it pins. Input makers build the same tensors as the
reproducer that ``aotcheck fuzz`` wrote.
"""
import torch

from . import Inputs, case


def _randn(shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


@case("regressions", mode="inference", tags=("fuzz", "aliased_inputs", "alias_of_input"))
def fuzz_view_of_sibling_view_input():
    """Two arguments view one non-leaf base at different offsets; the output views the
    second. The engine copied a non-leaf argument with clone(), whose offset is 0, so the
    alias was rebuilt at the wrong element; and rebuilding from the *first* argument with
    as_strided dropped the gradient of elements outside it."""
    def f(a0, a1, a2):
        return (a2.view((1,)),)

    def make():
        l0 = _randn((2, 1)).requires_grad_()
        b0 = l0.clone()
        a1 = b0[1]
        return Inputs((b0[0], a1, a1), leaves=(l0,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "no_grad", "alias_of_input"))
def fuzz_view_of_no_grad_view():
    """A view of a view that was taken under no_grad: it requires grad, but eager's
    autograd chain ends nowhere, so no gradient reaches the argument. The engine rebuilt
    it as a plain view of the argument and sent the gradient through."""
    def f(a2):
        v2 = a2.transpose(0, 1)
        with torch.no_grad():
            v3 = v2.view((1,))
        return (v3.view((1,)),)

    def make():
        l2 = _randn((1, 1)).requires_grad_()
        return Inputs((l2.clone(),), leaves=(l2,))
    return f, make

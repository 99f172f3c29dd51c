"""(f) a compile entry point other than a plain ``torch.compile`` call: a backend built with
``torch._dynamo.backends.common.aot_autograd`` (``aot_module_simplified`` underneath) and a
decomposition table of the user's.

AOTAutogradCache's key reduces the AOTConfig to a few fields; the decompositions, the
partitioner and the compilers are not among them. Under A the user's table holds a gelu
decomposition with a bug (the factor 0.5 forgotten); under B the bug is fixed by dropping it,
and B is served the entry traced with the buggy decomposition.
Upstream: none found.
"""
import torch
from torch._dynamo.backends.common import aot_autograd
from torch._dynamo.backends.debugging import boxed_nop

KIND = "entry"
UPSTREAM = ""
DECOMPOSITIONS = {}


def buggy_gelu(x, approximate="none"):
    return x * (1 + torch.erf(x * 0.7071067811865476))       # gelu is 0.5 * this


def BACKEND():
    return aot_autograd(fw_compiler=boxed_nop, bw_compiler=boxed_nop, keep_inference_input_mutations=True,
                        decompositions=dict(DECOMPOSITIONS))


def fn(x):
    return torch.nn.functional.gelu(x) * 2


def inputs():
    return (torch.randn(8, requires_grad=True),)


VARY = {"DECOMPOSITIONS": ({torch.ops.aten.gelu.default: buggy_gelu}, {})}

"""cache/registrations.py: a registration made in-process compiles again
(NOTE [a registration changed in-process])."""
from __future__ import annotations

import torch

import aotcheck
from aotcheck.cache import registrations
from aotcheck.cache.ambient import call_state


@torch.library.custom_op("aotcheck_test_reg::copy", mutates_args=())
def _copy(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


@_copy.register_fake
def _(x):
    return torch.empty_like(x)


def _formula(k):
    _copy.register_autograd(lambda ctx, grad: grad * k)


def _grads(fn, x):
    x = x.detach().clone().requires_grad_()
    fn(x).sum().backward()
    return x.grad


def test_a_new_autograd_formula_is_used_at_the_next_call():
    def f(x):
        return torch.ops.aotcheck_test_reg.copy(x).sin()
    compiled = aotcheck.aot_function(f)
    x = torch.randn(4)
    _formula(1.0)
    assert torch.allclose(_grads(compiled, x), _grads(f, x))
    _formula(3.0)
    assert torch.allclose(_grads(compiled, x), _grads(f, x))      # eager's new formula
    assert compiled.num_compiled == 2


def test_every_registration_method_moves_the_epoch_and_a_call_does_not():
    before = call_state()
    assert call_state() == before                        # reading it moves nothing
    n = registrations.EPOCH[0]
    _copy.register_fake(lambda x: torch.empty_like(x))
    _formula(2.0)
    assert registrations.EPOCH[0] == n + 2 and call_state() != before


def test_installing_twice_wraps_once():
    from torch._library.custom_ops import CustomOpDef
    method = CustomOpDef.register_autograd
    registrations.install()
    assert CustomOpDef.register_autograd is method

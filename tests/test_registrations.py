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


# ---------------------------------------------------------------- the persistent key (NOTE [custom ops in the persistent key])

@torch.library.custom_op("aotcheck_test_reg::add_into", mutates_args=("out",))
def _add_into(out: torch.Tensor, x: torch.Tensor) -> None:
    out.add_(x)


def test_the_key_holds_a_traced_custom_ops_kernel_a_new_kernel_misses(tmp_path):
    """A mutating custom op's kernel is traced into the stored graph: a kernel registered after
    the entry was written (as another process would) misses, and the result is eager's."""
    import aotcheck
    from aotcheck.cache import counters, reset_counters

    def f(out, x):
        torch.ops.aotcheck_test_reg.add_into(out, x)
        return out * 2

    def call():
        out, x = torch.zeros(3), torch.ones(3)
        return aotcheck.aot_function(f, cache=str(tmp_path))(out, x), f(torch.zeros(3), torch.ones(3))
    reset_counters()
    got, want = call()
    assert torch.equal(got, want) and counters["saves"] == 1
    got, want = call()
    assert counters["hits"] == 1                                  # the same registration hits
    before = registrations.custom_ops_print()
    def subtract(out, x):
        out.sub_(x)
    _add_into.register_kernel("cpu", subtract)
    assert registrations.custom_ops_print() != before
    reset_counters()
    got, want = call()
    assert counters["hits"] == 0 and counters["misses"] == 1 and torch.equal(got, want), (got, want)


def test_the_key_component_is_stable_and_leaves_torchs_own_ops_out():
    import json
    text = registrations.custom_ops_print()
    assert registrations.custom_ops_print() is text or registrations.custom_ops_print() == text
    ops = json.loads(text)
    assert "aotcheck_test_reg::add_into" in ops and not any(k.startswith("prims::") for k in ops)
    assert not any(v.startswith("identity:") for op in ops.values() for v in op.values())

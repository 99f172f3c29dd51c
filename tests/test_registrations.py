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


# ---------------------------------------------------------------- the stored entry (NOTE [custom ops an entry was traced with])

@torch.library.custom_op("aotcheck_test_reg::add_into", mutates_args=("out",))
def _add_into(out: torch.Tensor, x: torch.Tensor) -> None:
    out.add_(x)


def test_an_entry_traced_with_another_kernel_is_a_miss(tmp_path):
    """A mutating custom op's kernel is traced into the stored graph: a kernel registered after
    the entry was written (as another process would) misses, and the result is eager's; the
    entry names the op it was traced with."""
    import aotcheck
    from aotcheck.cache import Cache, counters, reset_counters

    def f(out, x):
        torch.ops.aotcheck_test_reg.add_into(out, x)
        return out * 2

    def call():
        out, x = torch.zeros(3), torch.ones(3)
        return aotcheck.aot_function(f, cache=str(tmp_path))(out, x), f(torch.zeros(3), torch.ones(3))
    reset_counters()
    got, want = call()
    assert torch.equal(got, want) and counters["saves"] == 1
    (key,) = Cache(tmp_path).keys()
    assert list(Cache(tmp_path).read(key, "entry.json")["custom_ops"]) == ["aotcheck_test_reg::add_into"]
    got, want = call()
    assert counters["hits"] == 1                                  # the same registration hits

    def subtract(out, x):
        out.sub_(x)
    _add_into.register_kernel("cpu", subtract)
    reset_counters()
    got, want = call()
    assert counters["hits"] == 0 and counters["misses"] == 1 and torch.equal(got, want), (got, want)
    assert Cache(tmp_path).keys() == [key]                        # the same key, entry replaced
    reset_counters()
    call()
    assert counters["hits"] == 1


def test_a_function_without_custom_ops_stores_none_and_what_is_stored_is_stable():
    from aotcheck.cache import registrations as R
    assert R.ops_print([]) == {}
    stored = R.ops_print(["aotcheck_test_reg::add_into"])
    assert R.changed(stored) == [] and stored == R.ops_print(["aotcheck_test_reg::add_into"])
    assert not any(v.startswith("identity:") for v in stored["aotcheck_test_reg::add_into"].values())
    assert R.changed({"aotcheck_test_reg::gone": None}) == []       # unregistered then and now
    assert R.changed({"aotcheck_test_reg::add_into": None}) == ["aotcheck_test_reg::add_into"]


def test_the_first_compile_of_a_fresh_process_is_reused_by_the_next_call():
    """Tracing imports parts of torch that register kernels; made inside aotcheck's compile
    (``registrations.quiet``), they do not move the epoch, so the next call with the same
    arguments reuses the graph. A fresh interpreter: in this one torch is imported already."""
    import subprocess
    import sys
    script = ("import torch, aotcheck\n"
              "from aotcheck.cache import registrations as R\n"
              "cf = aotcheck.aot_function(lambda x: torch.nn.functional.batch_norm(x, None, None, training=True))\n"
              "x = torch.randn(3, 4, requires_grad=True)\n"
              "e0 = R.EPOCH[0]; cf(x).sum().backward(); e1 = R.EPOCH[0]; cf(x)\n"
              "print(cf.num_compiled, e1 - e0)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["1", "0"], out.stdout


def test_a_registration_inside_quiet_leaves_the_epoch_and_outside_moves_it():
    lib = torch.library.Library("aotcheck_test_quiet", "FRAGMENT")
    lib.define("twice(Tensor x) -> Tensor")
    before = registrations.EPOCH[0]
    with registrations.quiet():
        lib.impl("twice", lambda x: x * 2, "CPU")
    assert registrations.EPOCH[0] == before
    lib.impl("twice", lambda x: x * 2, "Meta")
    assert registrations.EPOCH[0] == before + 1

"""Engine tests of grad modes and autocast around and inside the call: ``no_grad``,
``inference_mode``, grad regions the function enters, autocast's cast cache."""
import pytest
import torch

import aotcheck

from engine_inputs import vjp_gradient, two_nonleaves


def test_a_call_under_autocast_runs_its_graphs_with_autocast_off():
    # NOTE [autocast at run time]: sdpa's decomposition holds float32 bmm ops, which the
    # caller's autocast cast to bfloat16 again at run time; the backward then raised
    # "expected scalar type Float but found BFloat16". The same function called outside
    # autocast afterwards compiles its own graphs (the in-memory key holds the autocast state)
    import torch.nn.functional as F

    def f(x, w):
        q, k, v = (x @ w).chunk(3, dim=-1)
        return F.scaled_dot_product_attention(q, k, v).float().sum(-1)

    def make():
        g = torch.Generator().manual_seed(0)
        return (torch.randn(2, 3, 4, generator=g, requires_grad=True),
                torch.randn(4, 12, generator=g, requires_grad=True))

    compiled = aotcheck.aot_function(f)
    for on in (True, False):
        runs = []
        for fn in (f, compiled):
            x, w = make()
            with torch.autocast("cpu", torch.bfloat16, enabled=on):
                out = fn(x, w)
            out.sum().backward()
            runs.append((out, x.grad, w.grad))
        (eo, *eg), (co, *cg) = runs
        assert torch.equal(eo, co)
        for a, b in zip(eg, cg):     # eager's sdpa kernel and the traced math path round apart
            torch.testing.assert_close(b, a, rtol=2e-2, atol=2e-2)
            if not on:
                torch.testing.assert_close(b, a)


def test_a_parameter_made_under_inference_mode_beside_a_written_argument_view():
    """fuzz seed 3: torch's gradient-edge walk (``get_gradient_edge``) raised AttributeError on
    a leaf made under inference_mode, which escaped the trace as an internal TraceError; the
    per-output reach walk falls back to every output (NOTE [per-output reach])."""
    from aotcheck.check.oracle import Inputs, check

    def f(a1):
        with torch.no_grad():
            with torch.enable_grad():
                a1[:, ::3] = 0.5
        with torch.inference_mode():
            torch.nn.Parameter(torch.randn((2, 2)))
        return ()

    def make():
        torch.manual_seed(0)
        l1 = torch.randn(4, 3).requires_grad_()
        return Inputs((l1.clone().transpose(-2, -1),), {}, (l1,))
    r = check(f, aotcheck.aot_function(f), make)
    assert r.ok, r.divergences


# Programs from `aotcheck fuzz --engine aotcheck --examples 2000 --seed 1`'s key variations
# (compiled under grad mode A, called under B) and beside them: each must give eager's result
# when called under no_grad or inference_mode, cold, again from the in-memory artifact, and
# from the persistent cache.
def _grad_region_fill_of_an_aliased_view(a0, a1):       # fuzz 15: a1 views a0's storage
    with torch.no_grad():
        with torch.enable_grad():
            a1.fill_(2.0)
    return ()


def _grad_region_write_then_aliases(a0, a1):            # fuzz 12
    with torch.no_grad():
        with torch.enable_grad():
            a1.add_(-1.0)
    return (a0.sin(), a1)


def _grad_region_write_then_out(a0, a1):               # fuzz 16
    with torch.no_grad():
        with torch.enable_grad():
            a0.mul_(0.5)
    with torch.no_grad():
        v0 = torch.sin(a0, out=torch.empty(0, dtype=a0.dtype))
    return (a0, a0, v0, v0)


def _grad_region_write_and_output(a0, a1):
    with torch.enable_grad():
        a1.mul_(a0)
        y = a0 * 2
    return (y, a1.sum())


def _retain_grad_on_a_view_of_a_parameter_made_inside(a0, a1):      # fuzz 13
    p = torch.nn.Parameter(torch.randn((2,), dtype=torch.float64))
    v = p.reshape((2,))
    v.retain_grad()
    return (p, a0 + 1)


def _retain_grad_in_a_grad_region(a0, a1):
    with torch.enable_grad():
        y = a0 * 2
        y.retain_grad()
    return (y,)


def _views_of_a_parameters_vjp(a0, a1):                 # fuzz 14
    with torch.no_grad():
        p = torch.nn.Parameter(torch.randn((), dtype=torch.float32))
    v1 = torch.func.vjp(torch.sin, p)[1](torch.ones_like(p))[0]
    v2 = v1.as_strided((1, 1), (3, 1), 0)
    v3 = v2.sigmoid()
    return (v3, v2, v2)


def _func_grad_and_vmap_outputs(a0, a1):
    g = torch.func.grad(lambda t: (t.sin() * t).sum())(a0)
    return (g[1:], g, torch.func.vmap(torch.cos)(a1), a0.view(-1))


def _flag_on_a_base_then_its_view_written_in_a_grad_region(a0, a1):
    a0.requires_grad_()
    with torch.enable_grad():
        a1.mul_(2)
    return (a1 * 1, a0)


def _view_made_in_the_call_written_in_a_grad_region(a0, a1):
    v = a0.view(-1)
    with torch.enable_grad():
        v.mul_(2)
    return (v, a0)


def _retained_output_of_a_grad_region_that_writes_an_argument(a0, a1):
    with torch.enable_grad():
        y = a0 * 2
        y.retain_grad()
        a1.add_(y)
    return (y, a1)


def _data_swapped_with_a_vjp_gradient_then_viewed(a0, a1):     # fuzz 06
    # under inference_mode: v1.data = an ordinary tensor's leaves v1 without a version
    # counter, so its expand raises as eager's (NOTE [inference state moved by .data =])
    v1 = a1.mean(0, keepdim=True)
    with torch.no_grad():
        with torch.enable_grad():
            v2 = vjp_gradient(v1)
            v2.data, v1.data = v1.data, v2.data
            v3 = v1.expand((3, 3))
    return v3 * 2, a0


def _vjp_of_a_view_of_a_parameter_made_inside(a0, a1):         # fuzz 07
    # the primal vjp wraps stays an inference tensor under inference_mode; its gradient does not
    p = torch.nn.Parameter(a0 * 2)
    v = p.as_strided((2,), (2,), 0)
    return v, vjp_gradient(v), p.as_strided((2,), (2,), 0).clone()


def _a_tensor_and_its_transpose():
    from aotcheck.check.oracle import Inputs
    torch.manual_seed(0)
    a0 = torch.randn(2, 3)
    return Inputs((a0, a0.t()), {}, ())


def _aliased_rows():
    from aotcheck.check.oracle import Inputs
    torch.manual_seed(0)
    l0 = torch.randn(2, 2, 1, 2).requires_grad_()
    b0 = l0.clone()
    return Inputs((b0[0], b0[1]), {}, (l0,))


_GRAD_MODE_PROGRAMS = [
    (_grad_region_fill_of_an_aliased_view, _aliased_rows),
    (_grad_region_write_then_aliases, _aliased_rows),
    (_grad_region_write_then_out, two_nonleaves),
    (_grad_region_write_and_output, two_nonleaves),
    (_retain_grad_on_a_view_of_a_parameter_made_inside, two_nonleaves),
    (_retain_grad_in_a_grad_region, two_nonleaves),
    (_views_of_a_parameters_vjp, two_nonleaves),
    (_func_grad_and_vmap_outputs, two_nonleaves),
    (_flag_on_a_base_then_its_view_written_in_a_grad_region, _a_tensor_and_its_transpose),
    (_view_made_in_the_call_written_in_a_grad_region, two_nonleaves),
    (_retained_output_of_a_grad_region_that_writes_an_argument, two_nonleaves),
    (_data_swapped_with_a_vjp_gradient_then_viewed, two_nonleaves),
    (_vjp_of_a_view_of_a_parameter_made_inside, two_nonleaves),
]


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
@pytest.mark.parametrize("fn,make", _GRAD_MODE_PROGRAMS, ids=[f.__name__ for f, _ in _GRAD_MODE_PROGRAMS])
def test_a_call_under_no_grad_or_inference_mode_matches_eager(fn, make, mode, tmp_path):
    """NOTE [writes in an enable_grad region] (runtime/artifact.py), [views of inference
    tensors] (capture/recorder.py), [ordinary outputs of an inference call] (capture/outputs.py),
    and the aliased arguments' views made with grad on (capture/functional_run.py)."""
    from aotcheck.check.oracle import check

    def under(f):
        def called(*args):
            with torch.inference_mode() if mode == "inference_mode" else torch.no_grad():
                return f(*args)
        return called
    compiled = aotcheck.aot_function(fn)
    for _ in range(2):                  # cold, then the in-memory artifact
        r = check(under(fn), under(compiled), make)
        assert r.ok, r.divergences
    for _ in range(2):                  # a cold store, then a fresh function that hits it
        r = check(under(fn), under(aotcheck.aot_function(fn, cache=str(tmp_path))), make)
        assert r.ok, r.divergences


def _a_parameter_in_two_matmuls(a0, a1):                # fuzz seed 1, autocast=cpu:bfloat16
    v1 = torch.matmul(a0, a0.mT)
    v3 = a0.unbind(0)[1]
    return (v1.unbind(1), torch.matmul(a0, v3), torch.nn.functional.linear(a1, a0.mT))


def test_a_leaf_cast_by_autocast_twice_gets_eagers_gradient(tmp_path):
    """NOTE [the autocast cache] (capture/autocast_cache.py): eager casts a leaf that requires
    grad once per autocast region (while its cache is on), so its gradients add up in
    bfloat16; the trace cast it once per op and added them in float32, a rounding apart.
    A region with cache_enabled=False adds them in float32: another key (in memory and in
    the persistent cache), whichever state comes first."""
    from aotcheck.check.oracle import Inputs, check

    def make():
        torch.manual_seed(0)
        p = torch.nn.Parameter(torch.randn(4, 3))
        x = torch.randn(2, 4, requires_grad=True)
        return Inputs((p, x), {}, (p, x))

    def under(f, cache_enabled):
        def called(*args):
            with torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=cache_enabled):
                return f(*args)
        return called
    fn = _a_parameter_in_two_matmuls
    for order in ((True, False), (False, True)):
        compiled = aotcheck.aot_function(fn)
        stored = tmp_path / str(order[0])
        for cache_enabled in order:
            for c in (compiled, aotcheck.aot_function(fn, cache=str(stored))):
                r = check(under(fn, cache_enabled), under(c, cache_enabled), make)
                assert r.ok, (order, cache_enabled, r.divergences)


def _enters_autocast_and_casts_a_leaf_twice(x, w):
    with torch.autocast("cpu"):
        return (x @ w.mT) + (x @ w)


def test_a_region_the_function_enters_caches_casts_as_eagers(tmp_path):
    """NOTE [the autocast cache]: a region the function enters itself, the caller in none,
    inherits the ambient cache setting (on by default): eager casts ``x`` once for both
    matmuls and its gradient adds up in bfloat16. The trace cast it per op (a rounding
    apart, 0.0156 on this input) before the ambient setting was emulated. With the setting
    off, eager casts per op: another graph, under another key (in memory and on disk)."""
    from aotcheck.check.oracle import Inputs, check

    def make():
        torch.manual_seed(0)
        x, w = torch.randn(8, 8, requires_grad=True), torch.randn(8, 8, requires_grad=True)
        return Inputs((x, w), {}, (x, w))
    fn = _enters_autocast_and_casts_a_leaf_twice
    compiled = aotcheck.aot_function(fn)
    for cache_enabled in (True, False, True):
        torch.set_autocast_cache_enabled(cache_enabled)
        try:
            for c in (compiled, aotcheck.aot_function(fn, cache=str(tmp_path))):
                r = check(fn, c, make)
                assert r.ok, (cache_enabled, r.divergences)
        finally:
            torch.set_autocast_cache_enabled(True)
    assert compiled.num_compiled == 2

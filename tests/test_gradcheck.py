"""Tests for aotcheck.grad.gradcheck: each check must pass right gradients and fail wrong ones."""
import dataclasses
import doctest
import json

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import aotcheck.grad.gradcheck as gc
from aotcheck.grad.gradcheck import (Differencing, GradReport, Tol, compare_gradients, draw_cotangents,
                                     numerical_jvp_check)

HUGE = 1e9  # atol/rtol that no finite error exceeds: leaves the asymmetry metric alone
# numerical_jvp_check's default tolerances with HUGE atol and rtol
NUMERICAL_HUGE = Tol(atol=HUGE, rtol=HUGE, asym_floor=1e-8)


def _x(*shape, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=dtype).requires_grad_()


class DoubledSin(torch.autograd.Function):
    """sin with a backward that returns twice the true gradient."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x.cos() * g


class DoubledRelu(torch.autograd.Function):
    """relu with a 2x backward: where x < 0 both gradients are exactly 0 (ggml's NaN hole)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp_min(0)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * g * (x > 0)


def _two_outputs(x, w):
    return (x @ w).tanh(), [x.exp() * 0.1, "not a tensor"]


def _int_output(x):
    return x.sin(), x.argmax()


CORRECT = [
    ("sin", torch.sin, lambda: (_x(3, 4),)),
    ("matmul", torch.matmul, lambda: (_x(3, 4), _x(4, 2, seed=1))),
    ("two_outputs", _two_outputs, lambda: (_x(2, 3), _x(3, 3, seed=1))),
    ("int_output", _int_output, lambda: (_x(5),)),
    ("nondiff_args", lambda x, k, y: x * k + y, lambda: (_x(4), 3.0, torch.ones(4, dtype=torch.float64))),
    ("scalar", lambda x: x.exp(), lambda: (_x(),)),
    ("transposed", lambda x: x.cos(), lambda: (_x(4, 3).detach().t().requires_grad_(),)),
]


# --- correct gradients pass ---------------------------------------------------------------------

@pytest.mark.parametrize("stencil", [2, 4])
@pytest.mark.parametrize("name,fn,make", CORRECT, ids=[c[0] for c in CORRECT])
def test_correct_gradients_pass(name, fn, make, stencil):
    r = numerical_jvp_check(fn, make(), differencing=Differencing(stencil=stencil))
    assert r.status == "pass", str(r)
    assert r.passed and all(i.n_failed == 0 for i in r.inputs)


def test_integer_output_is_skipped_and_cotangents_are_seeded():
    x = _x(5)
    outs = list(_int_output(x))
    cots = draw_cotangents(outs, seed=3)
    assert cots[1] is None and cots[0].dtype == torch.float64
    assert torch.equal(cots[0], draw_cotangents(outs, seed=3)[0])
    assert not torch.equal(cots[0], draw_cotangents(outs, seed=4)[0])


def test_float32_inputs_are_checked_in_float64():
    r = numerical_jvp_check(lambda x: x.sin() * x, (_x(6, dtype=torch.float32),))
    assert r.passed, str(r)


def test_caller_tensors_untouched_and_in_place_fn_gets_fresh_clones():
    def fn(x):
        x.mul_(2)  # in place on the input; every evaluation must start from the original value
        return x.sin()

    x = _x(2, 3).detach().t().requires_grad_()
    before = x.detach().clone()
    r = numerical_jvp_check(fn, (x,), differencing=Differencing(stencil=4))
    assert r.passed, str(r)
    assert torch.equal(x.detach(), before) and x.grad is None and x.stride() == (1, 3)


def test_clone_keeps_strides():
    t = torch.randn(4, 3).t()
    c = gc._clone_strided(t)
    assert c.stride() == t.stride() and torch.equal(c, t) and c.data_ptr() != t.data_ptr()
    e = torch.randn(3, 1).expand(3, 4)  # overlapping memory: contiguous copy instead
    assert gc._clone_strided(e).is_contiguous()


def test_caller_provided_gradients():
    x = _x(3, 2)
    right = lambda cots: (x.detach().cos() * cots[0],)
    assert numerical_jvp_check(torch.sin, (x,), grads=right).passed
    cots = draw_cotangents([torch.sin(x)], seed=7)
    assert numerical_jvp_check(torch.sin, (x,), grads=[x.detach().cos() * cots[0]], seed=7).passed
    r = numerical_jvp_check(torch.sin, (x,), grads=[x.detach().cos() * cots[0]], seed=8)
    assert r.status == "fail"  # gradients against another seed's cotangents
    r = numerical_jvp_check(torch.sin, (x,), grads=[torch.zeros(2, 3)])
    assert r.status == "fail" and "shape" in r.inputs[0].reason


# --- a 2x-wrong backward fails every metric -----------------------------------------------------

@pytest.mark.parametrize("stencil", [2, 4])
def test_doubled_backward_fails_numerical_check(stencil):
    r = numerical_jvp_check(DoubledSin.apply, (_x(3, 4),), differencing=Differencing(stencil=stencil))
    assert r.status == "fail"
    (i,) = r.inputs
    assert i.n_failed == i.n_compared == 12
    assert i.mean_asym == pytest.approx(1 / 3, rel=1e-6)


def test_doubled_backward_fails_on_asymmetry_alone():
    r = numerical_jvp_check(DoubledSin.apply, (_x(3, 4),), tol=NUMERICAL_HUGE)
    assert r.status == "fail" and r.inputs[0].n_failed == 0
    assert "mean asymmetry 0.333 > asym_tol" in r.reason


def test_doubled_backward_fails_compare_gradients():
    x = _x(3, 4)
    cot = torch.randn(3, 4, dtype=torch.float64)
    (true,) = torch.autograd.grad(torch.sin(x), x, cot)
    (wrong,) = torch.autograd.grad(DoubledSin.apply(x), x, cot)
    r = compare_gradients([true], [wrong])
    assert r.status == "fail" and r.inputs[0].n_failed == 12
    r = compare_gradients([true], [wrong], tol=Tol(atol=HUGE, rtol=HUGE))
    assert r.status == "fail" and r.inputs[0].n_failed == 0
    assert r.inputs[0].mean_asym == pytest.approx(1 / 3)
    assert compare_gradients([true], [true.clone()]).passed


class IgnoresCotangent(torch.autograd.Function):
    """sin whose backward returns cos(x): right only when grad_output is all ones."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return x.cos()


class SwapsCotangents(torch.autograd.Function):
    """(sin x, x**2) whose backward feeds each output's cotangent to the other's derivative."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin(), x * x

    @staticmethod
    def backward(ctx, g_sin, g_sq):
        (x,) = ctx.saved_tensors
        return x.cos() * g_sq + 2 * x * g_sin


@pytest.mark.parametrize("fn,eager", [(IgnoresCotangent.apply, torch.sin),
                                      (SwapsCotangents.apply, lambda x: (x.sin(), x * x))],
                         ids=["ignores", "swaps"])
def test_random_cotangents_catch_what_summing_outputs_hides(fn, eager):
    x = _x(6)
    summed = [torch.autograd.grad(sum(o.sum() for o in gc._flatten(f(x))), x)[0] for f in (fn, eager)]
    assert torch.allclose(*summed)  # a sum-of-outputs check would pass this backward
    assert numerical_jvp_check(eager, (x,)).passed
    assert numerical_jvp_check(fn, (x,)).status == "fail"


def test_doubled_relu_with_zero_gradients_still_fails():
    # |x| >= 0.5 keeps every perturbation on one side of the kink; half the entries are negative.
    mag = torch.linspace(0.5, 1.5, 8, dtype=torch.float64)
    x = torch.cat([mag, -mag]).requires_grad_()
    for kwargs in ({}, {"tol": NUMERICAL_HUGE},
                   {"differencing": Differencing(stencil=4), "tol": NUMERICAL_HUGE}):
        r = numerical_jvp_check(DoubledRelu.apply, (x,), **kwargs)
        assert r.status == "fail", (kwargs, str(r))
        (i,) = r.inputs
        assert i.zero_zero == 8 and i.n_compared == 16
        assert i.mean_asym == pytest.approx(1 / 3, rel=1e-6)  # finite, not NaN
    assert numerical_jvp_check(torch.relu, (x,)).passed


# --- vacuity ------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [lambda x: x * 0, lambda x: torch.zeros_like(x) + x.detach(),
                                torch.round, lambda x: x.sign()],
                         ids=["times_zero", "detached", "round", "sign"])
def test_zero_gradient_is_vacuous(fn):
    x = (torch.arange(6, dtype=torch.float64) + 0.25).requires_grad_()
    r = numerical_jvp_check(fn, (x,))
    assert r.status == "vacuous" and not r.passed, str(r)


def test_no_differentiable_inputs_is_vacuous():
    r = numerical_jvp_check(torch.sin, (torch.randn(3, dtype=torch.float64),))
    assert r.status == "vacuous" and r.inputs == () and "requires grad" in r.reason
    r = numerical_jvp_check(lambda n: torch.ones(n), (3,))
    assert r.status == "vacuous"


def test_vacuous_compare_and_partially_vacuous_pass():
    assert compare_gradients([], []).status == "vacuous"
    assert compare_gradients([None], [None]).status == "vacuous"
    r = compare_gradients([torch.zeros(3)], [torch.zeros(3)])
    assert r.status == "vacuous" and r.inputs[0].zero_zero == 3
    r = numerical_jvp_check(lambda x, y: x * 2 + y * 0, (_x(3), _x(3, seed=1)))
    assert r.status == "pass" and [i.status for i in r.inputs] == ["pass", "vacuous"]
    assert "input 1: nothing non-zero compared" in r.reason
    r = numerical_jvp_check(lambda x, y: x.sin(), (_x(3), _x(2, seed=1)))  # y unused: grad None
    assert r.status == "pass" and r.inputs[1].status == "vacuous" and r.inputs[1].zero_zero == 2


# --- element metrics ----------------------------------------------------------------------------

def test_zero_zero_counted_and_opposite_signs_fail():
    t = torch.tensor([0.0, 0.0, -0.0, 1.0, 2.0])
    r = compare_gradients([t], [t.clone()])
    assert r.passed and r.inputs[0].zero_zero == 3 and r.inputs[0].mean_asym == 0.0
    r = compare_gradients([torch.tensor([0.0, 1.0, 2.0])], [torch.tensor([0.0, -1.0, 2.0])],
                          tol=Tol(atol=HUGE, rtol=HUGE))
    assert r.status == "fail" and r.inputs[0].mean_asym == float("inf") and r.inputs[0].zero_zero == 1


def test_nan_and_inf_fail_unless_equal():
    e = torch.tensor([1.0, float("inf"), 3.0])
    assert compare_gradients([e], [e.clone()]).passed
    r = compare_gradients([e], [torch.tensor([1.0, 5.0, float("nan")])], tol=Tol(atol=HUGE, rtol=HUGE))
    assert r.status == "fail" and r.inputs[0].n_failed == 2 and r.inputs[0].max_abs == float("inf")
    assert r.inputs[0].mean_asym == float("inf")  # NaN is disagreement, never a NaN mean
    n = torch.tensor([float("nan"), 1.0])
    assert compare_gradients([n], [n.clone()]).status == "fail"
    assert compare_gradients([n], [n.clone()], tol=Tol(equal_nan=True)).passed


def test_none_versus_zeros_and_structure_mismatches_fail():
    z = torch.zeros(3)
    r = compare_gradients([None], [z])
    assert r.status == "fail" and r.inputs[0].reason == "expected None, got a tensor of shape (3,)"
    r = compare_gradients([z], [None])
    assert r.status == "fail" and r.inputs[0].reason == "expected a tensor, got None"
    assert "shape" in compare_gradients([z], [torch.zeros(1, 3)]).reason
    assert "dtype" in compare_gradients([z], [z.double()]).reason
    with pytest.raises(ValueError):
        compare_gradients([z], [])
    with pytest.raises(ValueError):
        compare_gradients([z], [z], names=["a", "b"])


# --- subsampling --------------------------------------------------------------------------------

def _recording(base):
    seen = []

    def fn(x):
        moved = (x.detach() != base).reshape(-1).nonzero().reshape(-1).tolist()
        seen.extend(moved)
        return x * x

    return fn, seen


@pytest.mark.parametrize("stencil", [2, 4])
def test_max_elements_caps_perturbations_deterministically(stencil):
    x = _x(5, 10)
    runs = {}
    for seed in (0, 0, 1):
        fn, seen = _recording(x.detach())
        r = numerical_jvp_check(fn, (x,), differencing=Differencing(stencil, max_elements=7), seed=seed)
        assert r.passed and r.inputs[0].n_compared == 7 and r.inputs[0].n_elements == 50
        assert r.n_evaluations == 1 + stencil * 7
        assert len(seen) == stencil * 7 and len(set(seen)) == 7
        runs.setdefault(seed, []).append((sorted(set(seen)), r))
    (a, ra), (b, rb) = runs[0]
    assert a == b and ra == rb
    assert runs[1][0][0] != a
    fn, seen = _recording(x.detach())
    assert numerical_jvp_check(fn, (x,), differencing=Differencing(max_elements=None)).inputs[0].n_compared == 50


# --- reports ------------------------------------------------------------------------------------

def test_report_names_worst_element():
    e = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    a = e.clone()
    a[1, 0] = 3.5
    a[0, 1] = 2.01
    r = compare_gradients([e], [a], names=["w"])
    text = str(r)
    assert text.startswith("FAIL  compare_gradients: 1 of 1 input failed; w: 2/4 elements differ")
    assert "FAIL  w (shape (2, 2)): 2/4 elements differ" in text
    assert "worst: [1, 0] expected 3 got 3.5 (abs 0.5, rel 0.166667)" in text
    assert text.index("[1, 0] expected") < text.index("[0, 1] expected 2 got 2.01")
    w = r.inputs[0].worst[0]
    assert (w.index, w.expected, w.actual, w.failed) == ((1, 0), 3.0, 3.5, True)
    assert len(compare_gradients([e], [a], tol=Tol(topk=1)).inputs[0].worst) == 1


def test_module_docstring_example_runs():
    failures, tried = doctest.testmod(gc)
    assert tried >= 8 and failures == 0


def _round_trip(r: GradReport) -> None:
    d = dataclasses.asdict(r)
    loaded = json.loads(json.dumps(d))
    assert json.loads(json.dumps(loaded)) == loaded
    assert GradReport.from_dict(loaded) == r


def test_reports_round_trip_through_json():
    x = _x(3, 4)
    for r in (numerical_jvp_check(DoubledSin.apply, (x,)), numerical_jvp_check(torch.sin, (x,)),
              numerical_jvp_check(torch.round, (x,)), compare_gradients([None, x], [torch.zeros(1), None])):
        _round_trip(r)
    with pytest.raises(ValueError):
        GradReport.from_dict({**dataclasses.asdict(r), "schema_version": 99})


finite = st.floats(-1e6, 1e6, allow_nan=False, width=32)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(finite, finite), min_size=0, max_size=12), st.integers(1, 4))
def test_compare_gradients_round_trip_and_agrees_with_rule(pairs, topk):
    e = torch.tensor([p[0] for p in pairs], dtype=torch.float32)
    a = torch.tensor([p[1] for p in pairs], dtype=torch.float32)
    r = compare_gradients([e], [a], tol=Tol(topk=topk))
    _round_trip(r)
    (i,) = r.inputs
    rule = ~((a.double() - e.double()).abs() <= 1e-5 + 1e-3 * e.double().abs())
    assert i.n_failed == int(rule.sum())
    assert i.zero_zero == int(((a == 0) & (e == 0)).sum())
    assert len(i.worst) == min(topk, len(pairs))
    if i.n_failed:
        assert r.status == "fail" and i.worst[0].failed

"""The oracle itself: planted wrong 'compiled' functions that it must catch."""
import torch

from aotcheck.check.divergence import Check, Divergence, Subject
from aotcheck.check.oracle import Inputs, check


def _two_views(a):
    a.transpose_(1, 0)            # (1, 2, 4) -> (2, 1, 4): a size-1 dimension in the middle
    y = a * 2
    return y[0], y[1]


def _make():
    return Inputs((torch.arange(8.0).view(1, 2, 4),))


def test_views_of_one_intermediate_copied_apart_are_caught():
    """Two outputs that eager cuts from one intermediate, returned by the 'compiled'
    function as views of two separate copies laid out with other size-1 strides:
    every value, shape and addressing stride matches, only the sharing differs."""
    def copied_apart(a):
        a.transpose_(1, 0)
        y = a * 2
        y1 = torch.empty_strided(y.shape, (4, 99, 1)).copy_(y)
        y2 = torch.empty_strided(y.shape, (4, 7, 1)).copy_(y)
        return y1[0], y2[1]
    r = check(_two_views, copied_apart, _make, backward=False)
    assert not r.ok
    assert any(x.check in (Check.SHARING, Check.ALIASING) for x in r.divergences), r.messages


def test_shared_storage_without_overlap_is_compared():
    """Eager's outputs share one storage without overlapping: the alias map alone names
    each output's first sharer; the pairwise relation must match too."""
    def f(x):
        y = x + 1
        return y[0], y[1], x
    def wrong(x):
        y = x + 1
        return y[0], (y + 0)[1], x
    r = check(f, wrong, lambda: Inputs((torch.randn(2, 3),)), backward=False)
    assert not r.ok


def test_integer_outputs_are_mutated_too():
    """Two integer outputs that overlap in eager; the 'compiled' ones share one storage but
    do not overlap. Sharing, values and strides match: only mutating the first output (an
    integer one) shows that the second does not follow."""
    def f(x):
        y = x * 2
        return y.view(-1), y[0]
    def wrong(x):
        y = x * 2
        buf = torch.empty(9, dtype=y.dtype)
        buf[:6].copy_(y.view(-1))
        buf[6:].copy_(y[0])
        return buf[:6], buf[6:]
    r = check(f, wrong, lambda: Inputs((torch.arange(6).view(2, 3),)), backward=False)
    assert Divergence(Check.MUTATION_EFFECT, Subject.output(0), other=Subject.output(1)) in r.divergences, \
        r.messages


def test_matching_program_passes():
    r = check(_two_views, _two_views, _make, backward=False)
    assert r.ok, r.divergences


def _retains(x):
    y = x.clone()
    y.retain_grad()
    z = y.clone()
    z.retain_grad()
    return z, y


def _make_scalar():
    return Inputs((torch.tensor(0.5, requires_grad=True),))


def test_retained_grads_of_outputs_and_arguments_are_compared():
    """Issue 27: ``retain_grad()`` on returned intermediates (and on a non-leaf argument) makes
    their ``.grad`` part of eager's result; a 'compiled' function that drops the flag, or
    retains a wrong gradient, is caught."""
    def forgets(x):
        return x.clone(), x.clone()

    def wrong_grad(x):
        z, y = _retains(x)
        y.register_hook(lambda g: g * 3)     # the retained grad of y is eager's, times 3
        return z, y
    assert check(_retains, _retains, _make_scalar).ok
    r = check(_retains, forgets, _make_scalar)
    assert r.messages[:2] == ["retained grad of output 0: eager retains_grad True, compiled False",
                              "retained grad of output 1: eager retains_grad True, compiled False"]
    r = check(_retains, wrong_grad, _make_scalar)
    assert r.divergences and r.divergences[0].check is Check.RETAINED_GRAD_VALUES, r.messages
    assert r.divergences[0].subject == Subject.output(1)

    def arg_retains(a):
        a.retain_grad()
        return a * 2

    def make_nonleaf():
        leaf = torch.ones(3, requires_grad=True)
        return Inputs((leaf * 1,), leaves=(leaf,))
    r = check(arg_retains, lambda a: a * 2, make_nonleaf)
    assert r.messages == ["retained grad of argument 0: eager retains_grad True, compiled False"]
    assert r.divergences == [Divergence(Check.RETAINS_GRAD, Subject.argument(0), expected="True",
                                        actual="False")]


# ---------------------------------------------------------------- how the backward is driven


def _leaf_inputs():
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    return Inputs((x,), leaves=(x,))


def _grad_after(fn, how):
    from aotcheck.check.oracle import run_once
    inp, _, err, bw_err = run_once(fn, _leaf_inputs, True, how)
    assert err is None and bw_err is None, (err, bw_err)
    return inp.leaves[0].grad


def test_backward_twice_accumulates_two_backwards_of_one_forward():
    from aotcheck.check.oracle import BackwardPass
    once = _grad_after(lambda x: (x.sin(), x * 3), BackwardPass.ONCE)
    twice = _grad_after(lambda x: (x.sin(), x * 3), BackwardPass.TWICE)
    torch.testing.assert_close(twice, 2 * once)


def test_backward_through_the_first_output_gives_the_others_no_gradient():
    from aotcheck.check.oracle import BackwardPass, _cotangent
    got = _grad_after(lambda x: (x * 2, x.exp()), BackwardPass.FIRST_OUTPUT)
    torch.testing.assert_close(got, 2 * _cotangent(torch.empty(3), 0))


def test_double_backward_keeps_the_first_grads_and_adds_the_second_order_ones():
    from aotcheck.check.oracle import BackwardPass, _cotangent
    x = _leaf_inputs().leaves[0].detach()
    got = _grad_after(lambda x: x ** 3, BackwardPass.DOUBLE)
    c0, c1 = _cotangent(x, 0), _cotangent(x, 500)
    torch.testing.assert_close(got, 3 * x ** 2 * c0 + 6 * x * c0 * c1)    # d/dx (3x^2 c0 . c1)


def test_a_backward_that_is_not_differentiable_is_caught_by_the_double_backward():
    import aotcheck
    from aotcheck.check.oracle import BackwardPass

    def f(x):
        return (x ** 3).sum()
    r = check(f, aotcheck.aot_function(f), _leaf_inputs, backward_pass=BackwardPass.DOUBLE)
    assert [d.check for d in r.divergences] == [Check.BACKWARD_RAISED]
    assert check(f, aotcheck.aot_function(f), _leaf_inputs).ok


def test_what_a_compiled_function_needs_is_in_force_over_its_call_and_its_backward():
    """NOTE [what a compiled function needs in force]: ``check`` holds ``in_force()`` of the
    compiled function (found through ``functools.wraps``) over the call and the backward; eager's
    run is outside it."""
    import contextlib
    import functools
    seen = []
    state = {"in": False}

    class Spy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(("forward", state["in"]))
            return x * 2

        @staticmethod
        def backward(ctx, g):
            seen.append(("backward", state["in"]))
            return g * 2

    class Compiled:
        @contextlib.contextmanager
        def in_force(self):
            state["in"] = True
            try:
                yield
            finally:
                state["in"] = False

        def __call__(self, x):
            return Spy.apply(x)

    wrapper = functools.wraps(Compiled())(lambda x: Compiled()(x))
    assert check(lambda x: Spy.apply(x), wrapper, _leaf_inputs).ok
    assert seen == [("forward", False), ("backward", False), ("forward", True), ("backward", True)]

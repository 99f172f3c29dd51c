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

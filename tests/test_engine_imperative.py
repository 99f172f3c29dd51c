"""Engine tests of the imperative autograd real code uses: hooks, ``retain_grad``, leaves
made inside the function, and subclass calls that keep or refuse them."""
import pytest
import torch

import aotcheck

from engine_inputs import nonleaf_argument


def test_new_leaf_output_gets_grad_as_in_eager():
    """A leaf made inside the function and returned is a fresh leaf on every call, and
    backward accumulates its .grad (NOTE [new grad leaves])."""
    def f(x):
        w = torch.ones(3, requires_grad=True)
        return x * w, w
    cf = aotcheck.aot_function(f)
    x = torch.randn(3, requires_grad=True)
    y, w = cf(x)
    y2, w2 = cf(x)
    assert w.is_leaf and w.requires_grad and w is not w2
    assert torch.equal(w.detach(), torch.ones(3))
    (y * 2).sum().backward()
    assert torch.equal(w.grad, 2 * x.detach()) and w2.grad is None
    assert torch.equal(x.grad, torch.full((3,), 2.0))


# NOTE [subclass imperative autograd] (aotcheck/subclass/imperative.py): the subclass path
# traces aten ops only; programs from `aotcheck fuzz --engine aotcheck --seed 3` that lost a
# hook on a non-leaf argument, retain_grad() on an argument or an output, or `x.data = y`
# gave wrong results silently. They are refused by name; what the path keeps still matches.
def _hook_double(g):
    return g * 2


def _sub_then_plain(nonleaf: bool):
    from aotcheck.check.oracle import Inputs
    from torch.testing._internal.two_tensor import TwoTensor
    l0 = torch.arange(3.0, requires_grad=True)
    l1 = TwoTensor(torch.ones(3), torch.full((3,), 2.0)).requires_grad_()
    if nonleaf:
        return Inputs((l0.clone(), l1.clone()), {}, (l0, l1))
    return Inputs((l0, l1), {}, (l0, l1))


def _hook_on_argument(a0, a1):
    a0.register_hook(_hook_double)
    return (a0.sin() * a1,)


def _hook_on_subclass_argument(a0, a1):
    a1.register_hook(_hook_double)
    return (a1.sin() + a0,)


def _retain_argument(a0, a1):
    a0.retain_grad()
    return (a0 * a1,)


def _retain_output(a0, a1):
    y = a1 * 3
    y.retain_grad()
    return (y, y * 2)


def _data_set(a0, a1):
    v = a0.add(a0)
    v.data = a0
    return (v * a1,)


def _hook_on_intermediate(a0, a1):
    y = a1 * 3
    y.register_hook(_hook_double)
    return (y.sin() * a0,)


def _retain_intermediate(a0, a1):
    y = a1 * 3
    y.retain_grad()
    return (y.sin() * a0,)


@pytest.mark.parametrize("fn,nonleaf,grad", [(_retain_output, False, True)])
def test_subclass_call_refuses_imperative_autograd_it_would_lose(fn, nonleaf, grad):
    from aotcheck.errors import UnsupportedInputError
    inputs = _sub_then_plain(nonleaf)
    with torch.set_grad_enabled(grad), pytest.raises(UnsupportedInputError,
                                                      match="subclass imperative autograd"):
        aotcheck.aot_function(fn)(*inputs.args)


@pytest.mark.parametrize("fn,nonleaf", [
    (_hook_on_argument, False), (_hook_on_subclass_argument, False), (_hook_on_intermediate, True),
    (_retain_intermediate, True), (_retain_argument, True), (_retain_argument, False),
    (_hook_on_argument, True), (_hook_on_subclass_argument, True), (_data_set, False)])
def test_subclass_call_keeps_imperative_autograd_it_can(fn, nonleaf, tmp_path):
    """retain_grad() on an argument: a no-op on a leaf (fuzz seed 3, 17 programs refused), and
    on a non-leaf replayed on the caller's tensor after the call, cold and from the cache."""
    from aotcheck.check.oracle import check
    r = check(fn, aotcheck.aot_function(fn), lambda: _sub_then_plain(nonleaf))
    assert r.ok, r.divergences
    for _ in range(2):
        r = check(fn, aotcheck.aot_function(fn, cache=str(tmp_path)), lambda: _sub_then_plain(nonleaf))
        assert r.ok, r.divergences
    if fn is _retain_argument and nonleaf:
        inputs = _sub_then_plain(True)
        (out,) = aotcheck.aot_function(fn)(*inputs.args)
        out.sum().backward()
        assert inputs.args[0].retains_grad and inputs.args[0].grad is not None


def _hook_on_first(a1, a2):
    a1.register_hook(_hook_double)
    return (a1 * 3,)


def _hook_on_second(a1, a2):
    a2.register_hook(_hook_double)
    return (a1 * 3,)


@pytest.mark.parametrize("fn", [_hook_on_first, _hook_on_second])
def test_a_hook_on_an_argument_passed_twice_hits_the_cache(tmp_path, fn):
    """A cache hit collects argument hooks from a run on fake arguments (argument_hooks in
    capture/trace.py); a tensor passed twice is one fake there, which was numbered by its last
    place while the trace numbers it by its first: every later process missed (fuzz seed 3)."""
    from aotcheck.cache.store import Cache
    grads = []
    for strict in (False, True):
        p = torch.nn.Parameter(torch.ones(2))
        compiled = aotcheck.aot_function(fn, cache=Cache(tmp_path, expect_hits=strict))
        compiled(p, p)[0].sum().backward()
        grads.append(p.grad)
    p = torch.nn.Parameter(torch.ones(2))
    fn(p, p)[0].sum().backward()
    assert torch.equal(grads[0], p.grad) and torch.equal(grads[1], p.grad)


def test_retain_grad_on_an_argument_view_written_by_a_custom_function_beside_a_subclass():
    """fuzz seed 3: retain_grad() on an argument (a transposed view written in place by a
    custom Function under no_grad) traced into the subclass joint tripped torch's internal
    assert (variable.cpp ``new_fn``); the traces skip it and the call replays it."""
    from torch.testing._internal.two_tensor import TwoTensor

    from aotcheck.check.corpus.custom_function import DoubleInPlace
    from aotcheck.check.oracle import Inputs, check

    def f(a0, a1, a2, a3):
        a0.squeeze_()
        with torch.no_grad():
            DoubleInPlace.apply(a2)
        with torch.inference_mode():
            a2.retain_grad()
        return ()

    def make():
        torch.manual_seed(0)
        l0 = torch.randn(2, 1).requires_grad_()
        l1 = TwoTensor(torch.randn(2), torch.randn(2)).requires_grad_()
        a0 = l0.clone()
        a1 = a0.t()
        return Inputs((a0, a1, a1, l1.clone()), {}, (l0, l1))
    r = check(f, aotcheck.aot_function(f), make)
    assert r.ok, r.divergences


# NOTE [where an argument's retained gradient sits] (capture/autograd_facts.py): eager's
# retain_grad() hook follows in-place writes of the tensor and stays where it was at a
# metadata call. The runtime had made every argument's retain_grad() after the write-back
# only: `x.retain_grad(); x.add_(1); return x * 2` left x.grad None (eager: 2), and
# `a.retain_grad(); a.transpose_(0, 1)` on a view gave a grad of the new shape (fuzz seed 1).
def _retain_then_write(x):
    x.retain_grad()
    x.mul_(2)
    return (x * 3,)


def _retain_then_write_twice(x):
    x.mul_(2)
    x.retain_grad()
    x.add_(1)
    return (x.sin(), x * x)


def _retain_then_transpose(x):
    x.retain_grad()
    x.transpose_(0, 1)
    return (x * torch.arange(6.0).reshape(x.shape),)


def _retain_then_unsqueeze(x):
    x.retain_grad()
    x.unsqueeze_(0)
    return ()


def _transpose_then_retain(x):
    x.t_()
    x.retain_grad()
    return (x * torch.arange(6.0).reshape(x.shape),)


def _no_grad_write_then_retain(x):
    with torch.no_grad():
        x.mul_(2)
    x.retain_grad()
    return (x * 3,)


def _retain_write_then_transpose(x):
    x.retain_grad()
    x.mul_(2)
    x.t_()
    return (x * 1,)


@pytest.mark.parametrize("way", ["functional", "plain"])
@pytest.mark.parametrize("view", [False, True])
@pytest.mark.parametrize("fn", [_retain_then_write, _retain_then_write_twice,
                                _retain_then_transpose, _retain_then_unsqueeze,
                                _transpose_then_retain, _no_grad_write_then_retain])
def test_argument_retained_grad_sits_where_eager_puts_it(fn, view, way, tmp_path, monkeypatch):
    """Also the function's own uses of the argument after its last in-place call, which
    reach the compiled function's input and not the caller's new node
    (NOTE [retained outputs]): `x.t_(); x.retain_grad(); return x * w` had lost them."""
    from aotcheck.check.oracle import check
    if way == "plain":
        monkeypatch.setenv("AOTCHECK_TRACE_PLAIN", "1")
    make = lambda: nonleaf_argument(view)      # noqa: E731
    r = check(fn, aotcheck.aot_function(fn), make)
    assert r.ok, r.divergences
    for _ in range(2):      # cold into the cache, then a hit
        r = check(fn, aotcheck.aot_function(fn, cache=str(tmp_path)), make)
        assert r.ok, r.divergences
    inputs = make()
    outs = aotcheck.aot_function(fn)(*inputs.args)
    (inputs.args[0].sum() + sum(o.sum() for o in outs)).backward()
    assert inputs.args[0].grad is not None


def _write_retain_then_transpose(x):
    x.add_(2.0)
    x.retain_grad()
    b = (x * 5).sum()
    x.t_()
    return b, x * 1.5


def _retain_transpose_then_write(x):
    x.retain_grad()
    x.t_()
    x.mul_(3)
    return (x * 1,)


def test_argument_retained_between_a_write_and_a_metadata_call_matches_eager():
    """NOTE [where an argument's retained gradient sits]: eager's hook stays on the node of
    the value between the argument's writes and its metadata calls, and .grad has that
    value's shape (fuzz seed 1: ``a0.add_(2); a0.retain_grad(); a0.t_()``, refused before).
    The function's own uses of it, before and after the metadata call, add their part."""
    from aotcheck.check.oracle import check
    make = lambda: nonleaf_argument(False)     # noqa: E731
    for fn in (_retain_write_then_transpose, _write_retain_then_transpose):
        r = check(fn, aotcheck.aot_function(fn), make)
        assert r.ok, r.divergences
        inputs = make()
        outs = aotcheck.aot_function(fn)(*inputs.args)
        sum(o.sum() for o in outs).backward()
        assert inputs.args[0].grad.shape == (2, 3)      # its shape before t_(), as eager's


def test_argument_retained_then_transposed_then_written_raises_eagers_assert():
    """Eager's own autograd asserts (variable.cpp, 'out != nullptr') at a write after a
    metadata call left the retain hook behind; the trace meets the same assert, and
    aotcheck raises it inside its own error (never a result where eager has none)."""
    from aotcheck.errors import AotcheckError
    with pytest.raises(AotcheckError, match="out != nullptr"):
        aotcheck.aot_function(_retain_transpose_then_write)(*nonleaf_argument(False).args)


def test_leaf_made_inside_and_a_view_written_in_inference_mode_trace_as_eager():
    # the recorder reads an output's grad_fn only for a call under grad mode that uses a grad
    # leaf made inside: reading it after a write in inference mode regenerates a view's
    # grad_fn, and autograd asserts ("new_fn INTERNAL ASSERT") where eager runs
    from aotcheck.check.oracle import Inputs, check

    def f(a):
        v = torch.nn.Parameter(torch.randn(2, 2))
        w = a[:, :2]
        with torch.no_grad():
            with torch.enable_grad():
                m = v.mean(0, keepdim=True)
        with torch.inference_mode():
            w.copy_(m)
        return ()

    def make():
        p = torch.nn.Parameter(torch.randn(4, 3))
        return Inputs((p,), leaves=(p,))
    report = check(f, aotcheck.aot_function(f), make)
    assert report.ok, report.divergences


# NOTE [hooks on returned tensors] (capture/autograd_facts.py)
def _hook_double_grad(g):
    return g * 2


def _returns_hooked_parameter_made_inside(x):
    p = torch.nn.Parameter(torch.ones(3))
    p.register_hook(_hook_double_grad)
    return (p, p * x)


def _returns_hooked_intermediate(x):
    y = x * 1
    y.register_hook(_hook_double_grad)
    return (y, y * 3)


def _hooked_parameter_made_inside_not_returned(x):
    p = torch.nn.Parameter(torch.ones(3))
    p.register_hook(_hook_double_grad)
    return (p * x,)


def test_hook_on_a_returned_leaf_made_inside_matches_eager_cold_and_cached(tmp_path):
    """NOTE [hooks on leaves made inside]: eager's hook doubles the whole gradient of the
    returned Parameter, the caller's part included (fuzz seed 3: that part bypassed it,
    silently; then it was refused by name). The runtime registers the hook on the leaf it
    makes; a cache hit collects it from a run on fake arguments. A returned intermediate's
    hook and an unreturned leaf's keep matching eager."""
    from aotcheck.cache import Cache
    from aotcheck.check.oracle import Inputs, check
    make = lambda: Inputs((torch.arange(3.0, requires_grad=True),))      # noqa: E731
    for fn in (_returns_hooked_parameter_made_inside, _returns_hooked_intermediate,
               _hooked_parameter_made_inside_not_returned):
        r = check(fn, aotcheck.aot_function(fn), make)
        assert r.ok, r.divergences
    fn = _returns_hooked_parameter_made_inside
    for hit in (False, True):       # the second compile must hit (a miss raises)
        cache = Cache(tmp_path / "c", expect_hits=hit)
        r = check(fn, aotcheck.aot_function(fn, cache=cache), make)
        assert r.ok, (hit, r.divergences)


def _hooked_argument_and_another_output(x, y):
    x.register_hook(lambda g: g * 2)
    return x * 2, y * 3


def test_a_hooked_argument_that_the_backward_does_not_reach_is_not_called():
    """Eager's backward through ``y * 3`` alone never reaches x's node, so x's hook does not
    run; the compiled function's edge to x handed it None, and the hook raised TypeError
    (``None * 2``). The runtime's hooks skip a None gradient (imperative.skip_unreached)."""
    for fn in (_hooked_argument_and_another_output, aotcheck.aot_function(_hooked_argument_and_another_output)):
        x, y = torch.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
        a, b = fn(x, y)
        b.sum().backward(retain_graph=True)     # (the compiled outputs share one node)
        assert x.grad is None and y.grad.tolist() == [3.0] * 3
        a.sum().backward()
        assert x.grad.tolist() == [4.0] * 3             # the hook doubled it

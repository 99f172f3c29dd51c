"""The skipped state walk (NOTE [skipping the state walk] in aotcheck/cache/guard.py) and the
one read of the inputs (NOTE [one read of the inputs] in aotcheck/compiled.py).

Every input of the walk the guard lets a call skip gets a test that changes it and expects
a recompile with eager's result: a cache that hits wrongly is worse than none."""
from __future__ import annotations

import types

import pytest
import torch

import aotcheck
import aotcheck.compiled as compiled_mod
from aotcheck.cache.guard import state_guard

SCALE = 2.0
OFFSET = 1.0


def scaled(x):
    return x * SCALE


def helper(x):
    return x + OFFSET


def uses_helper(x):
    return helper(x) * 3


def shadowed(x):
    return x * abs(-2)


@pytest.fixture
def walks(monkeypatch):
    """Counts the state walks of compiled functions."""
    count = [0]
    real = compiled_mod.fingerprint_walk

    def counting(fn, **kw):
        count[0] += 1
        return real(fn, **kw)
    monkeypatch.setattr(compiled_mod, "fingerprint_walk", counting)
    return count


def _check(f, fn, *args, **kwargs):
    out = f(*args, **kwargs)
    torch.testing.assert_close(out, fn(*args, **kwargs))
    return out


def test_walk_is_skipped_while_the_guard_holds(walks):
    f = aotcheck.aot_function(scaled)
    x = torch.randn(4)
    for _ in range(3):
        _check(f, scaled, x)
    assert walks[0] == 1 and f.num_compiled == 1
    assert state_guard(scaled) is not None


def test_rebound_closure_cell_recompiles(walks):
    k = 2.0

    def fn(x):
        return x * k
    f = aotcheck.aot_function(fn)
    x = torch.randn(4)
    _check(f, fn, x)
    _check(f, fn, x)
    assert walks[0] == 1
    k = 5.0      # the cell's contents replaced
    _check(f, fn, x)
    assert walks[0] == 2 and f.num_compiled == 2
    k = 2.0      # back to an equal value: the first artifact again
    _check(f, fn, x)
    assert f.num_compiled == 2


def test_rebound_global_recompiles(monkeypatch):
    f = aotcheck.aot_function(scaled)
    x = torch.randn(4)
    _check(f, scaled, x)
    monkeypatch.setitem(globals(), "SCALE", 7.0)
    _check(f, scaled, x)
    assert f.num_compiled == 2


def test_rebound_global_of_a_reached_helper_recompiles(monkeypatch):
    f = aotcheck.aot_function(uses_helper)
    x = torch.randn(4)
    _check(f, uses_helper, x)
    monkeypatch.setitem(globals(), "OFFSET", -4.0)
    _check(f, uses_helper, x)
    assert f.num_compiled == 2
    monkeypatch.setitem(globals(), "helper", lambda x: x - 10)     # the helper itself rebound
    _check(f, uses_helper, x)
    assert f.num_compiled == 3


def test_global_shadowing_a_builtin_recompiles(monkeypatch):
    f = aotcheck.aot_function(shadowed)
    x = torch.randn(4)
    _check(f, shadowed, x)
    monkeypatch.setitem(globals(), "abs", lambda v: 5)     # a global now hides the builtin
    _check(f, shadowed, x)
    assert f.num_compiled == 2


def test_defaults_and_code_replaced_recompile():
    def fn(x, k=2.0):
        return x * k
    f = aotcheck.aot_function(fn)
    x = torch.randn(4)
    _check(f, fn, x)
    fn.__defaults__ = (3.0,)
    _check(f, fn, x)
    assert f.num_compiled == 2
    fn.__code__ = (lambda x, k=2.0: x - k).__code__
    _check(f, fn, x)
    assert f.num_compiled == 3


def test_module_training_flip_recompiles(walks):
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))

    def fn(x):
        return model(x)
    f = aotcheck.aot_function(fn)
    x = torch.randn(3, 4)
    model.eval()
    _check(f, fn, x)
    model.train()          # a module can change in place: no guard, every call walks
    torch.manual_seed(0)
    out = f(x)
    torch.manual_seed(0)
    torch.testing.assert_close(out, fn(x))
    assert f.num_compiled == 2 and walks[0] == 2
    assert state_guard(fn) is None


def test_closure_tensor_metadata_change_is_seen():
    w = torch.randn(4)

    def fn(x):
        return x * w
    f = aotcheck.aot_function(fn)
    x = torch.randn(4)
    assert f(x).grad_fn is None
    w.requires_grad_()     # the same tensor object, other metadata
    out = f(x)
    assert out.requires_grad
    out.sum().backward()
    torch.testing.assert_close(w.grad, x)
    w2 = torch.randn(4)
    fn.__closure__[0].cell_contents = w2     # another tensor, equal metadata: its values are read
    torch.testing.assert_close(f(x), x * w2)


def test_mutable_containers_are_not_guarded(walks):
    cfg = {"k": 2.0}
    ks = [2.0]

    def by_dict(x):
        return x * cfg["k"]

    def by_list(x):
        return x * ks[0]
    for fn, change in ((by_dict, lambda: cfg.update(k=9.0)), (by_list, lambda: ks.__setitem__(0, 9.0))):
        assert state_guard(fn) is None
        f = aotcheck.aot_function(fn)
        x = torch.randn(4)
        _check(f, fn, x)
        change()
        _check(f, fn, x)
        assert f.num_compiled == 2


def test_user_module_attribute_is_not_guarded(walks):
    cfgmod = types.ModuleType("user_cfg")
    cfgmod.k = 2.0

    def fn(x):
        return x * cfgmod.k
    assert state_guard(fn) is None
    f = aotcheck.aot_function(fn)
    x = torch.randn(4)
    _check(f, fn, x)
    cfgmod.k = 4.0
    _check(f, fn, x)
    assert f.num_compiled == 2


def test_guard_fails_for_each_slot():
    k = 1.0

    def fn(x):
        return x * k + SCALE
    g = state_guard(fn)
    assert g is not None and g.holds()
    fn.__qualname__ = "renamed"
    assert not g.holds()
    g = state_guard(fn)
    k = 3.0
    assert not g.holds() and k == 3.0


def test_one_table_for_flat_and_tree_keys():
    """A flat call and a tree call of one signature class each key one artifact."""
    def fn(x, y):
        return x + y
    f = aotcheck.aot_function(fn)
    a, b = torch.randn(3), torch.randn(3)
    _check(f, fn, a, b)
    _check(f, fn, a, a)            # aliased: the tree key
    _check(f, fn, a, y=b)          # a keyword: the tree key
    _check(f, fn, a, b)
    assert f.num_compiled == 3
    assert sorted(k[1] for k in f._artifacts) == ["flat", "tree", "tree"]

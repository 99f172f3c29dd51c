"""Issue 11, classes 4, 6, 8 and 12, beyond the corpus: named refusals, cache-key misses for
the new facts (storage resizes and swaps), and the runtime's storage check."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import aotcheck
from aotcheck.cache import compute_key
from aotcheck.errors import UnsupportedInputError


def _freed(n: int) -> torch.Tensor:
    t = torch.empty(n)
    t.untyped_storage().resize_(0)
    return t


def test_dropout_on_transposed_input_matches_eager_on_every_call():
    f = aotcheck.aot_function(lambda x: F.dropout(x, 0.5, training=True))
    x = torch.randn(4, 5).t()
    for _ in range(3):                      # cold, then warm calls from the same generator
        state = torch.random.get_rng_state()
        want = F.dropout(x, 0.5, training=True)
        want_state = torch.random.get_rng_state()
        torch.random.set_rng_state(state)
        got = f(x)
        assert torch.equal(got, want)
        assert torch.equal(torch.random.get_rng_state(), want_state)


def test_a_generator_made_inside_the_function_draws_as_a_new_one_on_every_call():
    def f(x):
        g = torch.Generator().manual_seed(5)     # eager: a new generator per call
        a = torch.rand(x.shape, generator=g)
        return x * a + torch.empty_like(x).bernoulli_(0.5, generator=g) + torch.rand(3)
    for requires_grad in (False, True):
        x = torch.randn(3, requires_grad=requires_grad)
        cf = aotcheck.aot_function(f)
        for _ in range(3):
            state = torch.random.get_rng_state()
            want = f(x)
            want_state = torch.random.get_rng_state()
            torch.random.set_rng_state(state)
            assert torch.equal(cf(x), want)
            assert torch.equal(torch.random.get_rng_state(), want_state)
    assert torch.Generator is torch._C.Generator      # the trace's stand-in class is put back


def test_a_generator_made_inside_and_seeded_between_draws(tmp_path):
    def f(x):
        g = torch.Generator().manual_seed(5)
        a = torch.rand(3, generator=g)
        g.manual_seed(6)                 # seeded again after a draw: a graph op, in order
        return x + a + torch.rand(3, generator=g)
    x = torch.randn(3)
    want = f(x)
    cf = aotcheck.aot_function(f, cache=str(tmp_path))
    assert torch.equal(cf(x), want) and torch.equal(cf(x), want)
    assert torch.equal(aotcheck.aot_function(f, cache=str(tmp_path))(x), want)

    def restored(x):                     # restored from its own state: graph ops, in order
        g = torch.Generator().manual_seed(5)
        state = g.get_state()
        a = torch.rand(3, generator=g)
        g.set_state(state)
        return x + a + torch.rand(3, generator=g)
    want = restored(x)
    cr = aotcheck.aot_function(restored, cache=str(tmp_path))
    assert torch.equal(cr(x), want) and torch.equal(cr(x), want)
    assert torch.equal(aotcheck.aot_function(restored, cache=str(tmp_path))(x), want)

    outside = torch.Generator().manual_seed(9).get_state()

    def restored_from_outside(x):        # a real state from outside, set after a draw: refused
        g = torch.Generator().manual_seed(5)
        a = torch.rand(3, generator=g)
        g.set_state(outside)
        return x + a + torch.rand(3, generator=g)
    with pytest.raises(UnsupportedInputError, match="seeded or restored in Python between its draws"):
        aotcheck.aot_function(restored_from_outside)(x)


def test_a_generator_argument_or_closure_advances_as_in_eager_and_is_never_stored(tmp_path):
    gen = torch.Generator().manual_seed(5)

    def f(x, g):
        return x * torch.randn(3, generator=g) + torch.empty_like(x).bernoulli_(0.5, generator=gen)

    x = torch.randn(3, requires_grad=True)
    cf = aotcheck.aot_function(f, cache=str(tmp_path))
    mine, theirs = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    for _ in range(3):        # the same generator object on every call: its state moves on
        start = gen.get_state()
        want = f(x, theirs)
        want_gen = gen.get_state()
        gen.set_state(start)
        got = cf(x, mine)
        assert torch.equal(got, want) and torch.equal(mine.get_state(), theirs.get_state())
        assert torch.equal(gen.get_state(), want_gen)
        (gw,), (gg,) = torch.autograd.grad(want.sum(), x), torch.autograd.grad(got.sum(), x)
        assert torch.equal(gw, gg)
    start = gen.get_state()
    want = f(x, torch.Generator().manual_seed(2))
    gen.set_state(start)
    before = dict(aotcheck.counters)
    assert torch.equal(cf(x, torch.Generator().manual_seed(2)), want)   # another one: compiled again
    assert aotcheck.counters["saves"] == before["saves"]                 # a graph with a generator
    assert aotcheck.counters["bypasses"] == before["bypasses"] + 1       # is never stored


def test_seeding_inside_the_function_is_replayed_on_every_call():
    def f(x):
        torch.manual_seed(3)
        return x + torch.rand(3)
    x = torch.randn(3)
    cf = aotcheck.aot_function(f)
    for seed in (0, 1):                     # the caller's state before the call does not matter
        torch.manual_seed(seed)
        want = f(x)
        want_state = torch.random.get_rng_state()
        torch.manual_seed(seed + 100)
        assert torch.equal(cf(x), want)
        assert torch.equal(torch.random.get_rng_state(), want_state)


def test_a_seed_drawn_into_python_is_refused_by_name_and_the_caller_state_kept():
    x = torch.randn(3)
    state = torch.random.get_rng_state()
    with pytest.raises(UnsupportedInputError, match=r"torch.seed\(\) returned"):
        aotcheck.aot_function(lambda x: x + torch.seed())(x)
    with pytest.raises(UnsupportedInputError, match=r"torch.seed\(\) returned"):
        aotcheck.aot_function(lambda x: (torch.seed(), x * torch.initial_seed())[1])(x)
    assert torch.equal(torch.random.get_rng_state(), state)
    # seeded inside first, the initial seed is the function's own: a constant of the graph
    f = aotcheck.aot_function(lambda x: (torch.manual_seed(7), x + torch.initial_seed())[1])
    assert torch.equal(f(torch.zeros(2)), torch.full((2,), 7.0))


def test_torch_seed_reseeds_nondeterministically_on_every_call():
    def f(x):
        torch.seed()
        return x + 1
    cf = aotcheck.aot_function(f)
    seeds = set()
    for _ in range(3):
        torch.manual_seed(0)
        assert torch.equal(cf(torch.zeros(2)), torch.ones(2))
        seeds.add(torch.initial_seed())
    assert 0 not in seeds and len(seeds) == 3     # reseeded at every call, as eager does


def test_initial_seed_is_guarded_and_a_changed_seed_misses(tmp_path):
    """The graph is specialized on torch.initial_seed(): another seed compiles again, in
    memory and from the cache (a stored entry for seed 3 is not reused for seed 10)."""
    def f(x):
        return x * torch.initial_seed()
    x = torch.ones(2)
    for cache in (None, str(tmp_path)):
        cf = aotcheck.aot_function(f, cache=cache) if cache else aotcheck.aot_function(f)
        for seed in (3, 10, 3):
            torch.manual_seed(seed)
            assert torch.equal(cf(x), torch.full((2,), float(seed)))
    fresh = aotcheck.aot_function(f, cache=str(tmp_path))
    torch.manual_seed(10)
    assert torch.equal(fresh(x), torch.full((2,), 10.0))
    torch.manual_seed(4)
    assert torch.equal(fresh(x), torch.full((2,), 4.0))


def test_resize_is_a_key_component():
    def resized(x):
        y = x * 2
        torch.ops.inductor.resize_storage_bytes_(x, 0)
        return y

    def kept(x):
        return x * 2
    x = torch.randn(4)
    assert compute_key(resized, (x,))[0] != compute_key(kept, (x,))[0]


def test_set_is_a_key_component():
    def swapped(x, y):
        x.set_(y)
        return y * 2

    def kept(x, y):
        return y * 2
    args = (torch.randn(3), torch.randn(3))
    assert compute_key(swapped, args)[0] != compute_key(kept, args)[0]


def test_set_onto_an_argument_that_requires_grad_matches_eager():
    # set_() under no_grad records nothing: x shares w's storage and requires no grad, as in
    # eager (NOTE [set_ under no_grad]); it was refused before
    from aotcheck.check.oracle import Inputs, check

    def f(x, w):
        with torch.no_grad():
            x.set_(w)
        return w * 2

    def make():
        w = torch.randn(3, generator=torch.Generator().manual_seed(0), requires_grad=True)
        return Inputs((torch.randn(3), w), leaves=(w,))
    report = check(f, aotcheck.aot_function(f), make)
    assert report.ok, report.divergences


def test_set_under_no_grad_onto_another_shape_matches_eager():
    # x requires grad and keeps its identity; after the set_ it is y's storage and shape, and its
    # gradient has the new shape, as in eager (once refused by name; issue 27 made it run)
    def f(x, y):
        with torch.no_grad():
            x.set_(y)
        return x * 2

    def run(fn):
        x, y = torch.randn(3, requires_grad=True), torch.arange(2.0)
        out = fn(x, y)
        out.sum().backward()
        return out.detach(), x.shape, x.grad, x.data_ptr() == y.data_ptr()

    want, got = run(f), run(aotcheck.aot_function(f))
    assert torch.equal(got[0], want[0]) and got[1] == want[1] == (2,)
    assert torch.equal(got[2], want[2]) and got[3] and want[3]


def test_resize_between_nonzero_sizes_is_refused_by_name():
    def f(x):
        torch.ops.inductor.resize_storage_bytes_(x, 8)
        return x[:2] * 1
    with pytest.raises(UnsupportedInputError, match="start or end at zero bytes"):
        aotcheck.aot_function(f)(torch.randn(4))


def test_runtime_never_writes_into_a_storage_too_small_for_the_argument():
    # the graph writes x back; a zero-byte storage at the call would be a crash in copy_
    f = aotcheck.aot_function(lambda x, y: x.copy_(y).sum())
    with pytest.raises(UnsupportedInputError, match="storage holds 0 bytes"):
        f(_freed(3), torch.randn(3))


def test_a_seeded_generator_made_inside_is_stored_and_a_new_one_stands_in_on_load(tmp_path):
    def f(x):
        g = torch.Generator().manual_seed(3)
        return x + torch.rand(x.shape, generator=g) + torch.randn(x.shape, generator=g)
    x = torch.randn(4)
    want = f(x)
    aotcheck.aot_function(f, cache=str(tmp_path))(x)
    before = dict(aotcheck.counters)
    again = aotcheck.aot_function(f, cache=str(tmp_path))
    assert torch.equal(again(x), want) and torch.equal(again(x), want)
    assert aotcheck.counters["hits"] == before["hits"] + 1

    # a state that no seed gives (drawn from before the function's first draw is traced: here,
    # restored from a generator that drew): held as a state constant, too large to store
    drawn = torch.Generator().manual_seed(3)
    torch.rand(5, generator=drawn)
    state = drawn.get_state()

    def h(x):
        g = torch.Generator()
        g.set_state(state)
        return x + torch.rand(x.shape, generator=g)
    want = h(x)
    before = dict(aotcheck.counters)
    cf = aotcheck.aot_function(h, cache=str(tmp_path))
    assert torch.equal(cf(x), want) and torch.equal(cf(x), want)
    assert aotcheck.counters["bypasses"] == before["bypasses"] + 1


def test_a_callers_generator_the_function_seeds_is_seeded_on_every_call():
    gen = torch.Generator()

    class Holder:
        def __init__(self):
            self.gen = torch.Generator()
    holder = Holder()

    def f(x):
        gen.manual_seed(0)               # eager: the same values on every call
        holder.gen.manual_seed(1)
        return x + torch.rand(3, generator=gen) + torch.rand(3, generator=holder.gen)

    def again(x):                        # seeded again between draws, to the same seed
        gen.manual_seed(0)
        a = torch.rand(3, generator=gen)
        gen.manual_seed(0)
        return x + a + torch.rand(3, generator=gen)
    x = torch.randn(3)
    for fn in (f,):
        cf = aotcheck.aot_function(fn)
        for _ in range(3):
            want = fn(x)
            want_state = gen.get_state()
            assert torch.equal(cf(x), want) and torch.equal(gen.get_state(), want_state)
    with pytest.raises(UnsupportedInputError, match="seeded or restored in Python between"):
        aotcheck.aot_function(again)(x)


def test_isinstance_of_torch_generator_holds_while_traced():
    outside = torch.Generator().manual_seed(2)

    def f(x):
        assert isinstance(outside, torch.Generator)
        return x + torch.rand(3, generator=outside)
    x = torch.randn(3)
    state = outside.get_state()
    want = f(x)
    outside.set_state(state)
    assert torch.equal(aotcheck.aot_function(f)(x), want)

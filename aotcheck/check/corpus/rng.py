"""Corpus theme ``rng``: random ops draw eager's values and leave the default generator in eager's
state (the oracle compares it after the call); the backward reuses the forward's random values.
See NOTE [a draw in eager's layout], NOTE [every draw in the forward] and
NOTE [seeding as graph ops] (``aotcheck/engine/rng/``). Every case's inputs are built under
seed 0, so eager and compiled draw from the same state.

Where a case came from is a tag, not a module: ``regression`` (a minimized reproducer of a bug
aotcheck's engine had, most found by ``aotcheck fuzz``), ``fuzz`` (found by the fuzzer),
``torch_finding`` (a divergence of PyTorch's own AOTAutograd from eager that the fuzzer found;
docs/findings.md has a row per case, and ``xfail_engines`` names the torch engines that fail it),
``issue:N`` (restated from PyTorch's issue N).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from .builders import leaf, rand, randn, seeded
from .registry import Inputs, case


class _NoisyBackward(torch.autograd.Function):
    """x * 2 whose backward scales the gradient by fresh uniform noise: eager draws it at
    ``.backward()``, not in the forward."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * torch.rand(g.shape)


class _NoisyLikeBackward(_NoisyBackward):
    @staticmethod
    def backward(ctx, g):
        return g * torch.rand_like(g)


# ---------------------------------------------------------------- from cases_regressions


@case("rng", mode="training", tags=("regression", "fuzz", "rng", "aliased_inputs", "metadata_mutation"))
def fuzz_dropout_beside_aliased_arguments_with_metadata_change():
    """Aliased arguments with an in-place metadata change send the trace the second way (on
    real tensors), where dropout really draws: the guard that refuses seeding inside the
    function took the draw for a reseed. Found by aotcheck fuzz --seeds 12 and 14."""
    def f(a0, a1, a2):
        a2.squeeze_()
        a1.fill_(-1.0)
        return torch.nn.functional.dropout(a0, 0.5)

    def make():
        torch.manual_seed(0)
        l0 = randn((3, 2)).requires_grad_()
        l1 = randn((2, 2, 3, 4), 1).requires_grad_()
        b1 = l1.clone()
        return Inputs((l0.clone(), b1[0], b1[1]), leaves=(l0, l1))
    return f, make


# ---------------------------------------------------------------- from cases_rng


@case("rng", mode="training", tags=("noncontiguous",))
def dropout_transposed():
    # CPU dropout draws its mask in place into empty_like(x): x's (transposed) layout
    def f(x):
        return F.dropout(x.t(), 0.5, training=True).sin()
    return f, seeded(lambda: (lambda x: Inputs((x,), leaves=(x,)))(leaf(4, 5)))


@case("rng", mode="inference", tags=("noncontiguous",))
def dropout_nondense_transposed_slice():
    def f(x):
        return F.dropout(x, 0.3, training=True)
    return f, seeded(lambda: Inputs((rand(6, 8).t()[::2, 1:],)))


@case("rng", mode="inference", tags=("noncontiguous", "mutation"))
def bernoulli_inplace_on_transposed_argument():
    # the in-place draw fills the argument in its own memory order
    def f(x, p):
        x.bernoulli_(0.4)
        y = torch.empty_like(p).bernoulli_(p)
        return x + y
    return f, seeded(lambda: Inputs((rand(4, 5).t(), torch.rand(5, 4))))


@case("rng", mode="inference")
def unused_draw_still_advances_generator():
    def f(x):
        torch.rand(7)               # nothing uses it; eager still draws it
        return x * torch.randn_like(x)
    return f, seeded(lambda: Inputs((rand(3, 4),)))


@case("rng", mode="training", tags=("noncontiguous",))
def alpha_and_feature_dropout():
    def f(x):
        a = F.alpha_dropout(x.transpose(0, 1), 0.4, training=True)
        b = F.dropout2d(x.unsqueeze(0), 0.5, training=True)
        return a.sum(0), b * 2
    return f, seeded(lambda: (lambda x: Inputs((x,), leaves=(x,)))(leaf(3, 4, 4)))


@case("rng", mode="inference")
def sampling_ops_in_order():
    def f(w, x):
        i = torch.multinomial(w, 3)
        j = torch.multinomial(w, 6, replacement=True)
        perm = torch.randperm(4)
        k = torch.randint(0, 10, (2, 3))
        return i, j, x[perm], k, torch.poisson(w * 3), torch.normal(x, 0.5)
    return f, seeded(lambda: Inputs((torch.rand(4, 5), rand(4, 2))))


@case("rng", mode="inference", tags=("noncontiguous", "mutation"))
def inplace_distributions_on_strided_arguments():
    def f(a, b):
        a.uniform_(-1, 1)
        a.exponential_()
        b.normal_(2.0, 0.5)
        b.log_normal_()
        b.cauchy_()
        return a.clone(), b.geometric_(0.3).clone(), torch.bernoulli(b.sigmoid(), 0.3)
    return f, seeded(lambda: Inputs((rand(6, 8).t()[::2], rand(5, 3).t())))


@case("rng", mode="training")
def backward_reuses_forward_draws():
    # rrelu's slopes and dropout's mask are drawn once; the backward must reuse them
    def f(x, w):
        h = F.rrelu(x @ w, training=True)
        return F.dropout(h, 0.25, training=True).tanh() + torch.rand_like(h)
    def make():
        x, w = leaf(3, 4), leaf(4, 5)
        return Inputs((x, w), leaves=(x, w))
    return f, seeded(make)


@case("rng", mode="training", tags=("module",))
def transformer_encoder_layer_train():
    layer = torch.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16,
                                             dropout=0.2, batch_first=True)
    layer.train()
    names = [n for n, _ in layer.named_parameters()]

    def f(*args):
        *params, x = args
        return torch.func.functional_call(layer, dict(zip(names, params)), (x,))

    def make():
        params = [p.detach().clone().requires_grad_() for p in layer.parameters()]
        x = leaf(2, 3, 8)
        return Inputs((*params, x), leaves=(*params, x))
    return f, seeded(make)


@case("rng", mode="inference", tags=("mutation", "noncontiguous"))
def random_from_to_in_place():
    """``random_(low, high)``: the ``random_.from`` overload, which FX cannot write (``from`` is a
    Python keyword: functorch's aot_function fails with a SyntaxError), drawn as
    ``random_(high - low)`` into an int64 buffer plus ``low``, the same kernel, so the values and
    the generator's state are eager's (also on a transposed argument and with ``to=``)."""
    def f(x, y):
        y.random_(-3, 1000)
        z = torch.empty(2, dtype=torch.int64).random_(5, to=9)
        return x + 1, z, torch.rand(2)
    return f, seeded(lambda: Inputs((rand(2), rand(3, 4).t())))


@case("rng", mode="training")
def manual_seed_inside_the_function():
    """``torch.manual_seed`` inside the function reseeds the generator between draws: eager's
    second draw repeats nothing of the first, and the state after the call is the new seed's.
    The graph holds the seeding as an op (NOTE [seeding as graph ops] in engine/rng/seeding.py)."""
    def f(x):
        a = torch.rand(3)
        torch.manual_seed(3)
        return x * a + F.dropout(x, 0.5, training=True)
    return f, seeded(lambda: (lambda x: Inputs((x,), leaves=(x,)))(leaf(3)))


@case("rng", mode="inference")
def rng_state_saved_and_restored_inside():
    """``get_rng_state``/``set_rng_state`` inside the function: the second draw repeats the
    first, and the saved state is itself an output."""
    def f(x):
        state = torch.get_rng_state()
        a = torch.randn(2, 3)
        torch.set_rng_state(state)
        return x + a, torch.randn(2, 3), state
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("rng", mode="training")
def fork_rng_inside():
    """Draws inside ``torch.random.fork_rng`` leave the caller's generator where it was."""
    def f(x):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(11)
            y = F.dropout(x, 0.5, training=True)
        return y + torch.rand_like(x)
    return f, seeded(lambda: (lambda x: Inputs((x,), leaves=(x,)))(leaf(4, 2)))


@case("rng", mode="training", tags=("mutation",))
def opinfo_wrapper_set_seed_in_place():
    """OpInfo's ``wrapper_set_seed``: ``freeze_rng_state`` (which reads and restores the state
    under ``no_dispatch``) around ``manual_seed(42)`` and an in-place rrelu of a non-leaf. Its
    restore had hidden the seeding from the trace: every value differed, silently."""
    from torch.testing._internal.common_methods_invocations import wrapper_set_seed

    def f(x):
        return wrapper_set_seed(F.rrelu, x, lower=0.1, upper=0.9, training=True, inplace=True)

    def make():
        l = leaf(5, dtype=torch.float64)
        return Inputs((l.clone(),), leaves=(l,))
    return f, seeded(make)


@case("rng", mode="training", tags=("custom_function",))
def draw_in_custom_backward():
    """A custom Function's backward draws ``torch.rand(shape)``: nothing ties the draw to
    the tangent, and the partitioner put every draw in the forward, so the generator after
    the call was one draw ahead of eager's (the backward then reused that draw: gradients
    right, state wrong). Draws traced while autograd ran the backward now stay there."""
    def f(x):
        return _NoisyBackward.apply(x).sin(), torch.rand(2)
    return f, seeded(lambda: (lambda x: Inputs((x,), leaves=(x,)))(leaf(2, 3)))


@case("rng", mode="training", tags=("custom_function",))
def draw_like_tangent_in_custom_backward():
    def f(x):
        return _NoisyLikeBackward.apply(x.t()).cos()
    return f, seeded(lambda: (lambda x: Inputs((x,), leaves=(x,)))(leaf(2, 3)))


@case("rng", mode="training", tags=("seeding",))
def initial_seed_read_into_a_value():
    """``torch.initial_seed()`` read from the caller's generator: a Python int that the graph
    is specialized on, pinned by a guard (``aotcheck::guard_initial_seed``); a call under
    another seed compiles again. It was refused."""
    def f(x):
        return x * (torch.initial_seed() % 5 + 1) + torch.rand(x.shape)
    return f, seeded(lambda: (lambda x: Inputs((x,), leaves=(x,)))(leaf(2, 3)))


@case("rng", mode="training", tags=("seeding",))
def reseed_nondeterministically_then_seed():
    """``torch.seed()`` reseeds every device from a nondeterministic source; the graph replays
    it at run time (``aotcheck::rng_seed``). A seed set after it makes the draws and the final
    state deterministic again, so eager and compiled agree. It was refused."""
    def f(x):
        torch.seed()
        torch.manual_seed(5)
        return x + torch.rand(x.shape), torch.initial_seed()
    return f, seeded(lambda: (lambda x: Inputs((x,), leaves=(x,)))(leaf(2, 3)))


@case("rng", mode="training", tags=("generator",))
def generator_made_inside_restored_between_draws():
    """A generator made inside, its state read, a draw, the state put back, the same draw
    again: eager draws equal values. Reading and setting the state are graph ops now, in
    order among the draws (it was refused: 'seeded or restored in Python between its draws')."""
    def f(x):
        gen = torch.Generator().manual_seed(11)
        state = gen.get_state()
        a = torch.rand(x.shape, generator=gen)
        gen.set_state(state)
        return x * a + torch.rand(x.shape, generator=gen), torch.rand(2)
    return f, seeded(lambda: (lambda x: Inputs((x,), leaves=(x,)))(leaf(2, 3)))


@case("rng", mode="training", tags=("generator",))
def generator_made_inside_takes_the_default_generators_state():
    """``gen.set_state(torch.get_rng_state())``: the generator made inside draws what the
    caller's default generator would draw next, which the graph reads at run time."""
    def f(x):
        gen = torch.Generator()
        gen.set_state(torch.get_rng_state())
        return x + torch.rand(x.shape, generator=gen) - torch.rand(x.shape)
    return f, seeded(lambda: (lambda x: Inputs((x,), leaves=(x,)))(leaf(2, 3)))

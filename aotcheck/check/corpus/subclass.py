"""Corpus theme ``subclass``: traceable wrapper subclasses (``TwoTensor``, which runs every op on
both of its inner tensors) as arguments and outputs. Eager autograd works at the OUTER level: the
``.grad`` of a TwoTensor leaf is a TwoTensor, and so is that of a plain tensor that meets a
TwoTensor. See NOTE [subclass keys], NOTE [subclass autograd] and
NOTE [subclass limits] in ``aotcheck/subclass/__init__.py``.

Where a case came from is a tag, not a module: ``regression`` (a minimized reproducer of a bug
aotcheck's engine had, most found by ``aotcheck fuzz``), ``fuzz`` (found by the fuzzer),
``torch_finding`` (a divergence of PyTorch's own AOTAutograd from eager that the fuzzer found;
docs/findings.md has a row per case, and ``xfail_engines`` names the torch engines that fail it),
``issue:N`` (restated from PyTorch's issue N).
"""
from __future__ import annotations

import torch
from torch.testing._internal.two_tensor import TwoTensor
from .builders import leaf, rand, randn, seeded
from .registry import CallMode, Inputs, case


def two(*shape, requires_grad=False) -> TwoTensor:
    t = TwoTensor(rand(*shape), rand(*shape))
    return t.requires_grad_() if requires_grad else t


# ---------------------------------------------------------------- from cases_regressions


@case("subclass", mode="training", tags=("regression", "fuzz", "subclass", "multi_output_view", "mutation"))
def fuzz_unbind_view_of_an_argument_written_after_in_a_subclass_call():
    """A call with a TwoTensor argument (unused) returns unbind() views of a plain non-leaf
    argument that it then writes in place: eager's views are multi-output views whose base
    was modified, so reading their grad_fn (or writing them) raises. The subclass layer made
    such a "stale" view under no_grad before the write-back and then re-made it an unbind
    view, which raised 'A view was created in no_grad mode ...' (a crash of the compiled
    forward). It now makes it an unbind view in grad mode and bumps its version, as eager's
    write did. Found by aotcheck fuzz --seed 1."""
    from torch.testing._internal.two_tensor import TwoTensor

    def f(a0, a1, a2):
        v0 = a1.unbind(0)
        a1.add_(a2)
        return (v0,)

    def make():
        l0 = TwoTensor(randn((4,), 1920), randn((4,), 1921)).requires_grad_()
        l1, l2 = randn((1, 2, 4), 101).requires_grad_(), randn((4,), 947).requires_grad_()
        return Inputs((l0.clone(), l1.clone(), l2.clone()), leaves=(l0, l1, l2))
    return f, make


@case("subclass", mode="inference", tags=("regression", "fuzz", "subclass", "set_", "input_mutation"))
def fuzz_twotensor_argument_set_onto_a_plain_tensor_made_inside():
    """A TwoTensor argument set_() onto a plain tensor the function made: eager's TwoTensor
    sets both inner tensors onto it and the wrapper takes its storage and geometry. In the
    subclass trace the plain tensor is a FakeTensor, whose storage is on the meta device,
    and the wrapper's metadata step raised ('Attempted to set the storage of a tensor on
    device "cpu" to a storage on different device "meta"'; a TraceError for a function eager
    runs). The trace now completes the wrapper's geometry itself, and the runtime gives the
    caller's wrapper the inner tensors' new storage (its own is too small):
    NOTE [subclass set_ onto a plain tensor]. Found by aotcheck fuzz --seed 1."""
    from torch.testing._internal.two_tensor import TwoTensor

    def f(a0, a2, a3):
        with torch.no_grad():
            v0 = a3.detach()
        a2.set_(v0.exp())
        return ()

    def make():
        l0 = randn((4, 2, 3), 154).requires_grad_()
        b0 = l0.clone()
        a2 = TwoTensor(randn((), 451), randn((), 452))
        return Inputs((b0, a2, b0.transpose(-2, -1)), leaves=(l0,))
    return f, make


@case("subclass", mode="inference", tags=("regression", "fuzz", "subclass", "inference_mode", "alias_of_input"))
def fuzz_inference_mode_reshape_of_a_view_of_a_twotensor_argument():
    """A view of a TwoTensor argument reshaped inside inference_mode: eager's reshape makes its
    wrapper there, so the output is an inference tensor (no view of the argument at the outer
    level) whose inner tensors share the argument's memory, and writing it in place afterwards
    raises. The subclass layer rebuilt it as an ordinary view of the argument, which could be
    written. It is now rebuilt as an inference wrapper over the compiled inner tensors
    (NOTE [subclass inference views]). Found by aotcheck fuzz --seed 1."""
    from torch.testing._internal.two_tensor import TwoTensor

    def f(a0):
        with torch.no_grad():
            with torch.enable_grad():
                v1 = a0.narrow(0, 0, 2)
        with torch.inference_mode():
            v3 = v1.reshape((2,))
        return (v3,)

    def make():
        return Inputs((TwoTensor(randn((2,), 75), randn((2,), 76)),))
    return f, make


@case("subclass", mode="training", tags=("regression", "subclass", "no_grad", "multi_output_view", "mutation",
                                            "alias_of_intermediate"))
def twotensor_views_of_an_intermediate_poisoned_by_its_write():
    """A no_grad view and an unbind view of a TwoTensor intermediate that requires grad, then
    the intermediate written in place, all returned: eager's two views are poisoned (reading
    their grad_fn or is_leaf, or writing them, raises; NOTE [poisoned views]). The subclass
    trace read is_leaf of the no_grad view and raised, so aotcheck refused a function eager
    runs; it now makes both the same kinds of view, version bumped
    (NOTE [subclass poisoned views]). Found while checking the fix for
    fuzz_inference_mode_reshape_of_a_view_of_a_twotensor_argument."""
    from torch.testing._internal.two_tensor import TwoTensor

    def f(a0):
        b = a0 * 2
        with torch.no_grad():
            v = b.view(6)
        u = b.unbind(0)
        b.mul_(2)
        return (v, u[0], b)

    def make():
        l0 = TwoTensor(randn((2, 3), 1), randn((2, 3), 2)).requires_grad_()
        return Inputs((l0.clone(),), leaves=(l0,))
    return f, make


@case("subclass", mode="training", tags=("regression", "fuzz", "subclass", "requires_grad_", "no_grad",
                                            "aliased_inputs"))
def fuzz_view_argument_of_a_base_given_requires_grad_with_a_twotensor_argument():
    """The case ``fuzz_view_argument_of_a_base_given_requires_grad_inside`` with a TwoTensor
    argument present: ``a2 = a1[1:]`` taken before the call, ``a1.requires_grad_()`` under
    no_grad inside; eager's ``a2`` requires grad through its base (no gradient edge), so
    ``a2.sin()`` requires grad. The tensor-subclass layer rebuilds each argument on its own
    for its trace, so ``a2`` did not, and aotcheck returned ``v2`` without requires_grad.
    The trace now makes such a view a view of a hidden leaf whose flag follows its base's
    (NOTE [subclass views of an argument given requires_grad_]). Found by aotcheck fuzz
    --seed 1."""
    from torch.testing._internal.two_tensor import TwoTensor

    def f(a0, a1, a2):
        with torch.no_grad():
            a1.requires_grad_()
        v2 = a2.sin()
        return (v2,)

    def make():
        l0 = TwoTensor(randn((1, 1), 397), randn((1, 1), 398)).requires_grad_()
        a1 = randn((3, 3), 2677)
        return Inputs((l0.clone(), a1, a1[1:]), leaves=(l0,))
    return f, make


@case("subclass", mode="training", tags=("regression", "subclass", "requires_grad_", "aliased_inputs"))
def twotensor_view_argument_given_its_own_requires_grad_after_its_base():
    """A TwoTensor view ``a2 = a1[1:]`` of a TwoTensor argument, both passed, the function
    flagging ``a1`` then ``a2`` and returning values computed from each: eager's ``a2.sin()``
    reaches ``a2``'s own gradient edge, ``a1.cos()`` reaches ``a1``'s; ``a0.grad`` gets the
    product's gradient. The subclass layer refused it (an argument given requires_grad_()
    that shares a storage with another); with the view traced as a view of a hidden leaf
    whose flag follows ``a1``'s, the flags are routed as eager's
    (NOTE [subclass views of an argument given requires_grad_])."""
    from torch.testing._internal.two_tensor import TwoTensor

    def f(a0, a1, a2):
        a1.requires_grad_()
        v0 = a2 * 2
        a2.requires_grad_()
        return (v0, a2.sin() * a0, a1.cos())

    def make():
        l0 = TwoTensor(randn((1, 1), 397), randn((1, 1), 398)).requires_grad_()
        a1 = TwoTensor(randn((3, 3), 5), randn((3, 3), 6))
        a2 = a1[1:]
        return Inputs((l0.clone(), a1, a2), leaves=(l0, a1, a2))
    return f, make


@case("subclass", mode="training", tags=("regression", "fuzz", "subclass", "set_", "requires_grad_", "alias_of_input"))
def fuzz_twotensor_made_inside_set_onto_argument_then_requires_grad():
    """A TwoTensor made under no_grad, set_() onto the TwoTensor argument, then given
    requires_grad_() and returned: eager's output is a leaf that requires grad over the
    argument's memory (its own ``.grad`` after backward; nothing reaches the argument).
    aotcheck read the output as an alias of the argument (it shares its storage) and remade it
    from the caller's argument without the flag (requires_grad False, no ``.grad``). The leaf
    facts are now read for outputs over an argument's memory too, and the alias is remade as
    the leaf: NOTE [subclass leaf made inside over an argument's memory]. Found by aotcheck
    fuzz --seed 1."""
    from torch.testing._internal.two_tensor import TwoTensor

    def f(a1):
        with torch.no_grad():
            v1 = a1 * 2
        v1.set_(a1)
        v1.requires_grad_()
        return (v1,)

    def make():
        return Inputs((TwoTensor(randn((), 5196), randn((), 5197)),))
    return f, make


@case("subclass", mode="training", tags=("regression", "subclass", "set_", "requires_grad_", "alias_of_input"))
def twotensor_view_of_a_leaf_made_inside_set_onto_an_argument_that_requires_grad():
    """As ``fuzz_twotensor_made_inside_set_onto_argument_then_requires_grad``, the argument a
    TwoTensor that requires grad, the set_() under no_grad (so the new tensor stays a leaf) and
    a view of the new leaf returned with a value computed from the argument: eager's view
    requires grad through the new leaf, refuses an in-place write (a view of a leaf that
    requires grad), and shares the argument's memory; the argument gets the product's
    gradient. aotcheck remade the view as a plain view of the argument (no grad, writable).
    NOTE [subclass leaf made inside over an argument's memory]."""
    from torch.testing._internal.two_tensor import TwoTensor

    def f(a1):
        with torch.no_grad():
            v1 = a1 * 2
            v1.set_(a1)
        v1.requires_grad_()
        return (v1[1:], a1 * 3)

    def make():
        l0 = TwoTensor(randn((3,), 11), randn((3,), 12)).requires_grad_()
        return Inputs((l0,), leaves=(l0,))
    return f, make


# ---------------------------------------------------------------- from cases_torch_findings


@case("subclass", mode="training", tags=("fuzz", "torch_finding", "mixed", "metadata_mutation"))
def plain_value_multiplied_into_a_twotensor_after_a_graph_break():
    """A plain intermediate multiplied into a TwoTensor argument after the argument is
    ``unsqueeze_``d in place: eager's gradient of the plain value is a TwoTensor. Under
    torch.compile the metadata mutation of a subclass is a graph break, so the plain value is
    the first graph's output, and its cotangent from the second graph is a TwoTensor: the
    backward raises 'we guessed its metadata incorrectly. Expected: ... torch.Tensor, got: ...
    TwoTensor' (docs/findings.md row 64; backend="eager" passes)."""
    from torch.testing._internal.two_tensor import TwoTensor

    def f(x, y):
        b = y.sin()
        x.unsqueeze_(0)
        return x * b

    def make():
        lx = TwoTensor(randn((3,), 1), randn((3,), 2)).requires_grad_()
        y = randn((3,), 3).requires_grad_()
        return Inputs((lx.clone(), y), leaves=(lx, y))
    return f, make


# ---------------------------------------------------------------- from cases_subclass


@case("subclass", mode="training")
def twotensor_pointwise_leaf():
    def f(x):
        return (x.sin() * 2).cos()
    def make():
        x = two(3, 4, requires_grad=True)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("subclass", mode="training", tags=("mixed",))
def twotensor_times_plain_leaf():
    # the plain leaf's .grad is a TwoTensor in eager: autograd adds the two branches' grads
    # as a TwoTensor, not as one plain sum
    def f(x, y):
        return x * y + y.exp()
    def make():
        x, y = two(3, 4, requires_grad=True), leaf(3, 4)
        return Inputs((x, y), leaves=(x, y))
    return f, seeded(make)


@case("subclass", mode="training", tags=("mixed",))
def twotensor_matmul_plain_weight():
    def f(x, w, b):
        return (x @ w + b).relu().sum(0)
    def make():
        x, w, b = two(3, 4, requires_grad=True), leaf(4, 5), leaf(5)
        return Inputs((x, w, b), leaves=(x, w, b))
    return f, seeded(make)


@case("subclass", mode="inference", tags=("mutation",))
def twotensor_argument_mutated_in_place():
    def f(x, y):
        x.mul_(2)
        x.add_(y)
        return x.sum(1)
    return f, seeded(lambda: Inputs((two(3, 4), rand(3, 4))))


@case("subclass", mode="inference", tags=("alias",))
def twotensor_output_is_view_of_argument():
    def f(x):
        return x.t()[1:], x * 3
    return f, seeded(lambda: Inputs((two(3, 4),)))


@case("subclass", mode="training", tags=("scalars",))
def twotensor_mixed_outputs_and_scalars():
    # a plain output built from the inner tensors does not require grad (autograd is outer)
    def f(x, s, flag):
        y = x * s if flag else x
        return {"sub": y.exp(), "plain": x.a + x.b, "n": 3}
    def make():
        x = two(2, 3, requires_grad=True)
        return Inputs((x, 0.5, True), leaves=(x,))
    return f, seeded(make)


@case("subclass", mode="training", tags=("nested",))
def twotensor_nested_in_twotensor():
    def f(x, y):
        return (x * y).tanh()
    def make():
        x = TwoTensor(two(4), two(4)).requires_grad_()
        y = leaf(4)
        return Inputs((x, y), leaves=(x, y))
    return f, seeded(make)


@case("subclass", mode="training", tags=("non_leaf",))
def twotensor_non_leaf_argument():
    def f(x):
        return x.sigmoid() * x
    def make():
        base = two(3, 3, requires_grad=True)
        return Inputs((base * 2,), leaves=(base,))
    return f, seeded(make)


@case("subclass", mode="training", tags=("alias",))
def twotensor_argument_returned_unchanged():
    # eager returns the argument object itself (the oracle checks identity)
    def f(x, y):
        return x, y, x * y
    def make():
        x, y = two(3, requires_grad=True), leaf(3)
        return Inputs((x, y), leaves=(x, y))
    return f, seeded(make)


@case("subclass", mode="training", tags=("non_leaf", "mutation"))
def twotensor_non_leaf_argument_written_in_place():
    # eager rebases the argument's history onto the in-place op: its gradient flows through
    # the write to the leaf it was cloned from
    def f(x):
        x.mul_(2)
        return x.sin()
    def make():
        base = two(3, 2, requires_grad=True)
        return Inputs((base.clone(),), leaves=(base,))
    return f, seeded(make)


@case("subclass", mode="training", tags=("non_leaf", "mutation", "mixed"))
def plain_non_leaf_argument_written_beside_a_twotensor():
    def f(x, y):
        y[::2] = 2.0
        return x * y.sum()
    def make():
        lx, ly = two(3, requires_grad=True), leaf(4, 2)
        return Inputs((lx.clone(), ly.clone()), leaves=(lx, ly))
    return f, seeded(make)


@case("subclass", mode="training", tags=("alias",))
def twotensor_one_output_returned_twice():
    # eager returns one object twice
    def f(x):
        v = x @ x.mT
        return v, v
    def make():
        base = two(1, 4, requires_grad=True)
        return Inputs((base.clone(),), leaves=(base,))
    return f, seeded(make)


@case("subclass", mode="inference", tags=("alias",))
def twotensor_view_of_a_leaf_and_a_detached_alias_returned():
    # the view is a view of the leaf (writing it in place raises, its gradient reaches the
    # leaf); the detached alias shares the leaf's storage and needs no grad. Both outputs are
    # aliases of the argument, rebuilt at the outer level (NOTE [outer-level facts]), so the
    # graph is an inference one
    def f(x):
        return x.detach(), x[:, ::2]
    def make():
        x = two(2, 3, requires_grad=True)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("subclass", mode="inference", tags=("alias", "mutation"))
def twotensor_aliased_argument_unsqueezed_in_place():
    def f(x, y):
        y.unsqueeze_(0)
        return x + 1
    def make():
        x = two(2)
        return Inputs((x, x[1:]))
    return f, seeded(make)


@case("subclass", mode="inference", tags=("mixed",))
def requires_grad_set_on_a_plain_argument_beside_a_twotensor():
    def f(x, y):
        y.requires_grad_()
        return x * 2
    return f, seeded(lambda: Inputs((two(3), rand(3))))


@case("subclass", mode="training", tags=("no_grad",))
def twotensor_leaf_made_under_no_grad_returned():
    # the result is a new leaf of its own: no grad_fn, and its .grad is filled at backward
    def f(x):
        with torch.no_grad():
            v = x.add(1.0)
            v.requires_grad_()
        return v, x * 2
    def make():
        x = two(3, requires_grad=True)
        return Inputs((x,), leaves=(x,))
    return f, seeded(make)


@case("subclass", mode="training", tags=("rng",))
def twotensor_dropout_with_grad():
    # the backward must reuse the forward's mask, and leave the generator as eager's does
    def f(x, y):
        return torch.nn.functional.dropout(x, 0.5) * y, torch.rand_like(y)
    def make():
        x, y = two(4, 3, requires_grad=True), leaf(4, 3)
        return Inputs((x.clone(), y), leaves=(x, y))
    return f, seeded(make)


@case("subclass", mode="training", tags=("non_leaf", "metadata"))
def twotensor_non_leaf_argument_transposed_in_place():
    # the argument's new shape reaches the caller, and its history with it: a gradient taken
    # from it afterwards has the new shape
    def f(x):
        x.transpose_(0, 1)
        return ()
    def make():
        base = two(2, 3, requires_grad=True)
        return Inputs((base.clone(),), leaves=(base,))
    return f, seeded(make)


@case("subclass", mode="training", tags=("duplicate", "mutation"))
def twotensor_passed_twice_one_written():
    # one object inside the function too: the write through the first is the second's value
    def f(x, p, y):
        x.copy_(p)
        return y * 2
    def make():
        base, p = two(3, requires_grad=True), leaf(3)
        x = base.clone()
        return Inputs((x, p, x), leaves=(base, p))
    return f, seeded(make)


@case("subclass", mode="training", tags=("multi_output",))
def twotensor_unbind_of_an_intermediate_returned():
    # outputs of one unbind: eager refuses to write one in place
    def f(x):
        return (x @ x.mT).unbind(1)
    def make():
        base = two(2, 2, 4, requires_grad=True)
        return Inputs((base.clone(),), leaves=(base,))
    return f, seeded(make)


@case("subclass", mode="training", tags=("mixed", "mutation"))
def plain_argument_given_a_grad_value_beside_a_twotensor():
    # the argument needed no grad; written with a value that does, it requires grad after the
    # call, with its history through the write
    def f(w, y, x):
        with torch.no_grad():
            with torch.enable_grad():
                y.mul_(w)
        return (w,)
    def make():
        w = leaf(())
        return Inputs((w, rand(()), two(1, 1)), leaves=(w,))
    return f, seeded(make)


@case("subclass", mode="training", tags=("mixed", "no_grad"))
def row_of_a_leaf_written_under_no_grad_beside_a_twotensor():
    # a write under no_grad leaves the argument's history alone: no copy back in grad mode
    def f(x, a, b):
        v = a.unbind(0)[0]
        with torch.no_grad():
            b.add_(v)
        return (x * 2,)
    def make():
        base, lx = leaf(2, 1, 2, 3), two(3, requires_grad=True)
        return Inputs((lx.clone(), base[0], base[1]), leaves=(lx, base))
    return f, seeded(make)


@case("subclass", mode="inference", tags=("alias", "no_grad"))
def twotensor_view_made_under_no_grad_returned():
    # eager's view requires grad, with no grad_fn and no gradient (TwoTensor under no_grad)
    def f(x):
        with torch.no_grad():
            return (x.reshape((1, 1)),)
    def make():
        base = two(1, 1, requires_grad=True)
        return Inputs((base.clone(),), leaves=(base,))
    return f, seeded(make)


@case("subclass", mode="training", tags=("rng",))
def twotensor_beside_a_generator_made_inside_and_a_seeding():
    # a torch.Generator made and seeded inside is reset before its first draw on every call
    # (eager makes it anew), and torch.manual_seed inside is a graph op, not a seeding done
    # once at trace time; the cache stores the graph (fuzz seed 7)
    def f(x, y):
        v = torch.rand(y.shape, generator=torch.Generator().manual_seed(2))
        torch.manual_seed(3)
        return x * v + torch.rand_like(y), v
    def make():
        x = two(4, requires_grad=True)
        return Inputs((x, rand(4)), leaves=(x,))
    return f, seeded(make)


@case("subclass", mode="training", tags=("mixed", "mutation"))
def plain_row_set_to_an_intermediate_beside_a_twotensor():
    # set_() moves the argument onto a new storage: a later write of the row it shared a base
    # with must not show through it (the graph runs on detached aliases; fuzz seed 7)
    def f(a0, a1, x):
        v = a0.mean(1, keepdim=True)
        a1.set_(v)
        a0.mul_(2)
        return (x * 2,)
    def make():
        base, x = rand(2, 4, 1), two(3, requires_grad=True)
        return Inputs((base[0], base[1], x), leaves=(x,))
    return f, seeded(make)


@case("subclass", mode="training", tags=("alias", "non_leaf", "mutation", "mixed"))
def plain_argument_and_its_transpose_written_beside_a_twotensor():
    # one storage, two arguments: the fill through the first is the second's value and history
    # too, so no gradient reaches the base's leaf through either (NOTE [subclass alias groups];
    # fuzz seed 7)
    def f(a, at, x):
        with torch.no_grad():
            with torch.enable_grad():
                a.fill_(2.0)
        at.unsqueeze_(2)
        return (x * 2,)
    def make():
        l, x = leaf(2, 3, dtype=torch.float64), two(4, requires_grad=True)
        base = l.clone()
        return Inputs((base, base.t(), x), leaves=(l, x))
    return f, seeded(make)


@case("subclass", mode="training", tags=("alias", "no_grad", "mixed"))
def argument_written_under_no_grad_read_through_its_alias_beside_a_twotensor():
    # the backward recomputes from the arguments as they were, sharing storage as they did:
    # the write through one shows in the other's value the gradient of w is taken at
    def f(a, at, w, x):
        with torch.no_grad():
            a.fill_(2.0)
        return at * w, x * 2
    def make():
        w, x = leaf(3, 2), two(2, requires_grad=True)
        base = rand(2, 3)
        return Inputs((base, base.t(), w, x), leaves=(w, x))
    return f, seeded(make)


@case("subclass", mode="training", tags=("inference_mode", "mixed"))
def clone_made_in_inference_mode_returned_beside_a_twotensor():
    # an inference tensor in eager, which may not be written in place outside inference mode;
    # a TwoTensor view of one made there is no inference tensor, its inner tensors are (fuzz
    # seed 7)
    def f(a, x):
        with torch.inference_mode():
            v, w = a.clone(), x * 2
        return v, w, w.t(), x.sin()
    def make():
        base, x = leaf(3, 1, 3), two(2, 3, requires_grad=True)
        return Inputs((base.transpose(-2, -1), x), leaves=(base, x))
    return f, seeded(make)


@case("subclass", mode="training", tags=("alias", "no_grad", "non_leaf", "mutation"))
def twotensor_chunks_made_under_no_grad_then_the_argument_written():
    # eager returns the chunks; reading their grad_fn raises (a view made under no_grad whose
    # base was written in grad mode since), and so must the compiled ones' (fuzz seed 7)
    def f(a0, a1):
        with torch.no_grad():
            v = a1.chunk(2, 2)
        a1.copy_(a0)
        return v
    def make():
        l0, l1 = two((), requires_grad=True), two(1, 3, 3, requires_grad=True)
        return Inputs((l0.clone(), l1.clone()), leaves=(l0, l1))
    return f, seeded(make)


@case("subclass", mode="training", tags=("mixed", "requires_grad_"))
def requires_grad_set_on_an_unused_twotensor_while_an_output_requires_grad():
    # the flag reaches the caller; no output is computed from the argument, so there is no
    # gradient to route to it (fuzz seed 7)
    def f(a, b, x):
        a.requires_grad_()
        return x.expand((2,)), x, b.sum()
    def make():
        lx, lb = leaf(()), two(2, 1, requires_grad=True)
        return Inputs((two(2, 4), lb.clone(), lx.clone()), leaves=(lx, lb))
    return f, seeded(make)


@case("subclass", mode="training", tags=("alias", "non_leaf", "mutation", "metadata"))
def rows_of_one_base_one_transposed_in_place_one_written_beside_a_twotensor():
    # disjoint rows see nothing of each other's writes: each is its own tensor in the backward
    # (NOTE [subclass alias groups]; a row transposed in place, then its base written, would
    # lose the transpose in a fake trace of the joint)
    def f(x, a1, a2):
        a2.t_()
        a1.add_(1.0)
        with torch.no_grad():
            v = x.view((4, 12))
        return v, a1, a2 * 2
    def make():
        lx, l = two(3, 4, 4, requires_grad=True), leaf(2, 4, 3, dtype=torch.float64)
        base = l.clone()
        return Inputs((lx.clone(), base[0], base[1]), leaves=(lx, l))
    return f, seeded(make)


@case("subclass", mode="training", tags=("mixed",))
def vector_matmul_returned_twice_beside_a_twotensor_then_written():
    # matmul of a vector ends in a squeeze: a view of an intermediate, which eager lets the
    # caller write in place (fuzz seed 7)
    def f(a, x):
        v = torch.matmul(a.select(1, 0).detach(), a)
        return v, x * 2, v
    def make():
        l, x = leaf(1, 4), two((), requires_grad=True)
        return Inputs((l.clone().transpose(-2, -1), x), leaves=(l, x))
    return f, seeded(make)


@case("subclass", mode="training", tags=("fuzz", "non_leaf", "metadata", "mutation"))
def fuzz_twotensor_views_transposed_in_place_one_written_first():
    """Two TwoTensor views (non-leaf arguments): ``a1`` only transpose_()d; ``b1`` written,
    then unsqueeze_()d. Eager gives each a new grad_fn of the metadata call
    (``TransposeBackward1``, ``UnsqueezeBackward1``) and backward works. The runtime set each
    argument's new geometry with ``as_strided_`` and then ``copy_``'d its value in grad mode:
    autograd then rebuilt the view's grad_fn from the ops that made it (a wrapper subclass has
    no as_strided replay), which miss the metadata change, and backward crashed ("MulBackward0
    returned an invalid gradient ... got [2, 1, 2] but expected shape compatible with [2, 2]").
    The outer trace now logs the arguments' in-place metadata calls and writes: one only
    reshaped takes no new value, its calls are replayed on the caller's tensor; one written
    takes its value at its last write, and the later calls are replayed after the copy_
    (NOTE [subclass metadata replay]). Found by aotcheck fuzz --seed 1."""
    def f(a1, b1):
        a1.transpose_(0, 2)
        b1.mul_(2.0)
        b1.unsqueeze_(1)
        return ()
    def make():
        la, lb = two(1, 4, 3, requires_grad=True), two(3, 2, requires_grad=True)
        return Inputs((la.clone().transpose(-2, -1), lb.clone()[1:]), leaves=(la, lb))
    return f, seeded(make)


@case("subclass", mode="training", tags=("fuzz", "metadata", "alias", "mixed"))
def fuzz_intermediate_transposed_in_place_returned_detached_beside_a_twotensor():
    """An intermediate transpose_()d in place, returned detached, beside a TwoTensor. Eager
    returns it with strides (1, 3). The subclass path compiles its desugared graph, which
    calls aten ops directly (``torch.ops.aten.transpose_.default``); the engine's recorder
    named calls by ``__name__`` (``transpose_.default``), so it missed the in-place metadata
    call, and the output was rebuilt from the intermediate with the functional wrapper's
    drifted geometry (strides (3, 1)): it read uninitialised memory (silently wrong values,
    different on every run). The recorder now names an aten op by its overload packet.
    Found by aotcheck fuzz --seed 1."""
    def f(a, x):
        v = a.exp()
        v.transpose_(0, 1)
        return v.detach(), x * 2
    def make():
        x = two(2, requires_grad=True)
        return Inputs((rand(1, 3), x), leaves=(x,))
    return f, seeded(make)


@case("subclass", mode="training", tags=("fuzz", "alias", "non_leaf", "metadata", "mutation", "mixed"))
def fuzz_plain_row_squeezed_in_place_then_written_beside_a_twotensor():
    """A plain non-leaf argument and a row of it (one storage), the row squeeze_()d in place,
    then written through a view of it, beside a TwoTensor. Eager rebuilds the row's grad_fn
    with as_strided of its own geometry; backward works. The outer-level joint was traced on
    fake tensors, where autograd rebuilds a view's grad_fn by replaying the ops that made it,
    which miss the squeeze_: the trace raised ("invalid gradient ... got [3, 2] but expected
    shape compatible with [3, 1, 2]") inside backward. The joint is now traced again on
    (copies of) the real tensors when that happens (NOTE [subclass joint on real tensors]).
    Found by aotcheck fuzz --seed 1."""
    def f(a0, a1, x):
        a1.squeeze_()
        a1.transpose(0, 1).zero_()
        return (x * 2,)
    def make():
        l, x = leaf(4, 1, 2, dtype=torch.float64), two((), requires_grad=True)
        a0 = l.clone()
        return Inputs((a0, a0[1:], x), leaves=(l, x))
    return f, seeded(make)


@case("subclass", mode="training", tags=("fuzz", "alias", "metadata", "mutation", "mixed"))
def fuzz_plain_row_set_onto_other_row_unsqueezed_then_twotensor_copied_in():
    """A plain row ``a1`` set_() onto the other row ``a0`` of one base, unsqueeze_()d, then
    given a TwoTensor's value with ``copy_``. Eager writes ``a0``'s memory and ``a1`` (a
    ``(1, 3)`` view at offset 0) carries the copy's history: the TwoTensor leaf gets its
    gradient. The runtime replayed the logged metadata calls before the write (the
    unsqueeze_) on the caller's tensor, but set_() reaches no TorchFunctionMode, so it stayed
    at the other row's offset: the copy_ wrote there, and the final ``as_strided_`` moved the
    argument onto memory whose history missed the copy (the leaf's gradient was 0). The
    runtime now moves the argument to its geometry at the write where the replayed calls do
    not give it (NOTE [subclass metadata replay]). Found by aotcheck fuzz --seed 1."""
    def f(a0, a1, x):
        a1.set_(a0)
        a1.unsqueeze_(0)
        a1.copy_(x)
        return ()
    def make():
        base, x = rand(2, 3), two(3, requires_grad=True)
        return Inputs((base[0], base[1], x.clone()), leaves=(x,))
    return f, seeded(make)


@case("subclass", mode="training", tags=("fuzz", "alias", "non_leaf", "metadata", "mutation"))
def fuzz_twotensor_view_unsqueezed_in_place_other_view_written():
    """A TwoTensor non-leaf ``a0`` and two transposed views of it: ``a1`` unsqueeze_()d, then
    ``a3`` written. Eager writes only ``a3`` (``a0`` gets ``CopySlices``); ``a0`` and ``a1``
    see the new value through the storage and ``a1``'s grad_fn is rebuilt from ``a0``'s;
    backward works. The runtime gave every argument on the written storage its new value with
    a ``copy_`` in grad mode, ``a1`` too: its ``CopySlices`` replays the view from ``a0``
    (the transpose, without the unsqueeze_), and backward crashed ("CopySlices returned an
    invalid gradient at index 1 - got [1, 3, 4] but expected shape compatible with
    [1, 1, 3, 4]"). An argument that no op wrote as its own target, all of whose elements a
    written argument that one did addressed, now takes no ``copy_``
    (NOTE [subclass writes through another argument]). Found by aotcheck fuzz --seed 1."""
    def f(a0, a1, a3):
        a1.unsqueeze_(1)
        a3.copy_(torch.ones_like(a3))
        return ()
    def make():
        l = two(1, 4, 3, requires_grad=True)
        a0 = l.clone()
        return Inputs((a0, a0.transpose(-2, -1), a0.transpose(-2, -1)), leaves=(l,))
    return f, seeded(make)


@case("subclass", mode="training", tags=("requires_grad_",))
def requires_grad_false_on_arguments_beside_a_twotensor():
    """``requires_grad_(False)`` inside the call on a plain leaf argument and on a TwoTensor
    leaf argument, each used before and after: eager clears both caller's flags, the outputs
    made before keep their edges, and at backward AccumulateGrad skips the leaves (their
    ``.grad`` stays None). The subclass path left the caller's flags set, and its backward
    trace raised ('One of the differentiated Tensors does not require grad')."""
    def f(a0, a1):
        y = a1 * 2 + a0
        a1.requires_grad_(False)
        a0.requires_grad_(False)
        return y, a1 * a0
    def make():
        a0 = TwoTensor(torch.randn(3), torch.randn(3)).requires_grad_()
        a1 = leaf(3)
        return Inputs((a0, a1), leaves=(a0, a1))
    return f, seeded(make)


@case("subclass", mode="inference", tags=("requires_grad_", "multi_output"))
def twotensor_chunks_made_before_their_base_requires_grad():
    """``chunk`` views of a detached TwoTensor, made before ``requires_grad_()`` on it: eager's
    views read their flag through the base but stay leaves (no grad_fn). The subclass path
    took them for multi-output views and rebuilt them with an UnbindBackward grad_fn (not a
    leaf). Found by aotcheck fuzz --seed 1."""
    def f(a0):
        with torch.no_grad():
            v2 = a0.detach()
        v4 = v2.chunk(2, 0)
        v2.requires_grad_()
        return (v4,)
    def make():
        b0 = TwoTensor(torch.randn(4, dtype=torch.float64),
                       torch.randn(4, dtype=torch.float64)).requires_grad_()
        return Inputs((b0,), leaves=(b0,))
    return f, seeded(make)


@case("subclass", mode="training", tags=("fuzz", "mixed", "mutation", "casts", "non_leaf"))
def twotensor_written_into_a_slice_of_a_bool_tensor():
    """The fuzzer's program (seed 1): a 0-dim TwoTensor that requires grad (a non-leaf)
    written by ``v[:, :, 0] = a1`` into a bool tensor made from an expand of a transposed
    plain argument. Eager's bool ``v`` is a plain tensor (TwoTensor's copy_ writes both
    inner values into it, the second last); returned detached."""
    def f(a0, a1):
        v = a0.expand(3, 3, 1).gt(0.5)
        v[:, :, 0] = a1
        return a1 * 2, v.detach()
    def make():
        x = TwoTensor(torch.randn(()), torch.randn(())).requires_grad_()
        return Inputs((rand(3, 1, 1).transpose(-2, -1), x.clone()), leaves=(x,))
    return f, seeded(make)


@case("subclass", mode="training", tags=("mixed", "mutation", "casts"))
def twotensor_intermediate_written_into_bool_and_integer_tensors():
    """An intermediate TwoTensor (a sum of a leaf), written into a row of a bool tensor and
    into an integer one made from a plain argument; the sum is used afterwards with grad."""
    def f(x, w):
        y = x.sum()
        m = w.gt(0)
        m[:, 1] = y
        n = w.long()
        n[0] = y
        return (y * w).sum(), m.detach(), n.detach()
    def make():
        x = two(4, requires_grad=True)
        return Inputs((x, rand(2, 3) * 3), leaves=(x,))
    return f, seeded(make)


@case("subclass", mode="inference", call=CallMode.NO_GRAD, tags=("mixed", "mutation", "casts"))
def twotensor_written_into_a_bool_tensor_under_no_grad():
    """The same write inside no_grad: eager's bool tensor has no history; returned as it is,
    next to a use of the TwoTensor under grad mode."""
    def f(a0, a1):
        with torch.no_grad():
            v = a0.gt(0.5)
            v[:, 0] = a1
        return v, a1.detach() * 2
    def make():
        x = TwoTensor(torch.randn(()), torch.randn(())).requires_grad_()
        return Inputs((rand(2, 3), x), leaves=(x,))
    return f, seeded(make)


@case("subclass", mode="training", call=CallMode.NO_GRAD, tags=("region", "fuzz"))
def twotensor_enable_grad_region_of_a_no_grad_call():
    """Found by aotcheck fuzz --seed 1 (key variation grad_mode=no_grad, 08): called under
    no_grad, an enable_grad region writes a non-leaf TwoTensor argument that requires grad
    and computes an output from a leaf one; eager's autograd records both (the argument's
    grad_fn is the write's, the output requires grad), the rest of the call records nothing
    (NOTE [subclass enable_grad regions of a no_grad call])."""
    def f(a, b):
        v = b.view(-1)
        with torch.enable_grad():
            b.mul_(a)
            y = a.cos() + b
        return y, a * 2, v * 1
    def make():
        la, lb = two(3, requires_grad=True), two(3, requires_grad=True)
        return Inputs((la, lb * 1), leaves=(la, lb))
    return f, seeded(make)


@case("subclass", mode="training", tags=("imperative_autograd", "tensor_hook", "fuzz"))
def twotensor_call_with_a_hooked_plain_argument_the_outputs_do_not_reach():
    """Found by aotcheck fuzz --seed 5: a hook on a plain leaf argument that no output reaches,
    beside a TwoTensor argument and a write of one row of a non-leaf into the other: eager's
    backward never reaches the hooked leaf; the compiled function's edge handed its hook None
    (TypeError inside the hook)."""
    def f(a0, a1, a2, a3):
        a3.register_hook(lambda g: g * 2)
        a0.copy_(a1)
        return a2 * 2
    def make():
        l0 = leaf(2)
        b0 = l0.clone()
        t, s = two(2, 1, 4, requires_grad=True), leaf(())
        return Inputs((b0[0], b0[1], t, s), leaves=(l0, t, s))
    return f, seeded(make)


@case("subclass", mode="inference", tags=("data_assign", "parameter", "aliased", "fuzz"))
def twotensor_call_with_a_parameter_passed_twice_given_data():
    """Found by aotcheck fuzz --seed 5 (4 programs): a Parameter passed twice beside a
    TwoTensor, given ``.data =`` of a Parameter made under no_grad: the runtime moved the
    caller's Parameter through its first place, then its second place's alias, unmoved,
    moved it back (silently: the argument kept its old values and shape)."""
    def f(a0, a2, a3):
        with torch.no_grad():
            v1 = torch.nn.Parameter(torch.randn(()))
        with torch.no_grad():
            with torch.enable_grad():
                a0.data = v1
        return ()
    def make():
        p, t = torch.nn.Parameter(rand(2, 4)), two(2, 2, requires_grad=True)
        return Inputs((p, t, p), leaves=(p, t))
    return f, seeded(make)

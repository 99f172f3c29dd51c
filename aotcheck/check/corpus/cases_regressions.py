"""Regression cases: minimized reproducers of engine bugs that the fuzzer found.

Each case names the bug it pins. Input makers build the same tensors as the
reproducer that ``aotcheck fuzz`` wrote.
"""
import torch

from .registry import Inputs, case


def _randn(shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


@case("regressions", mode="inference", tags=("fuzz", "aliased_inputs", "alias_of_input"))
def fuzz_view_of_sibling_view_input():
    """Two arguments view one non-leaf base at different offsets; the output views the
    second. The engine copied a non-leaf argument with clone(), whose offset is 0, so the
    alias was rebuilt at the wrong element; and rebuilding from the *first* argument with
    as_strided dropped the gradient of elements outside it."""
    def f(a0, a1, a2):
        return (a2.view((1,)),)

    def make():
        l0 = _randn((2, 1)).requires_grad_()
        b0 = l0.clone()
        a1 = b0[1]
        return Inputs((b0[0], a1, a1), leaves=(l0,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "no_grad", "alias_of_input"))
def fuzz_view_of_no_grad_view():
    """A view of a view that was taken under no_grad: it requires grad, but eager's
    autograd chain ends nowhere, so no gradient reaches the argument. The engine rebuilt
    it as a plain view of the argument and sent the gradient through."""
    def f(a2):
        v2 = a2.transpose(0, 1)
        with torch.no_grad():
            v3 = v2.view((1,))
        return (v3.view((1,)),)

    def make():
        l2 = _randn((1, 1)).requires_grad_()
        return Inputs((l2.clone(),), leaves=(l2,))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "aliased_inputs", "metadata_mutation"))
def fuzz_t_then_zero_through_view_of_twice_passed():
    """One non-leaf passed twice; ``t_`` on it, then a view of it zeroed. The engine replayed
    the metadata change with strides from functionalization ((1, 1), where eager has (1, 2)
    for a size-1 dim); it now replays the user's own ``t_`` call."""
    def f(a0, a1, a2):
        a2.t_()
        v0 = a2.view((2,))
        v0.zero_()
        return ()

    def make():
        l0 = _randn((1, 2)).requires_grad_()
        b0 = l0.clone()
        return Inputs((b0, _randn((1, 1, 1)), b0), leaves=(l0,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "aliased_inputs", "metadata_mutation"))
def fuzz_t_of_argument_aliased_by_its_transpose():
    """``t_`` on an argument that another argument views (its transpose). The engine changed
    the metadata with ``as_strided_`` under no_grad, so autograd kept the old shape and the
    backward raised 'AsStridedBackward0 returned an invalid gradient'."""
    def f(a0, a1):
        a0.t_()
        return ()

    def make():
        l0 = _randn((1, 2)).requires_grad_()
        b0 = l0.clone()
        return Inputs((b0, b0.t()), leaves=(l0,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "no_grad", "multi_output_view"))
def fuzz_unbind_under_no_grad_returned():
    """An unbind output taken under no_grad is a leaf in eager; the engine rebuilt it as a
    multi-output view with grad mode on, which gave it a grad_fn."""
    def f(a0):
        with torch.no_grad():
            v0 = a0.unbind(0)[0]
        return (v0,)

    def make():
        l0 = _randn((1, 1)).requires_grad_()
        return Inputs((l0.clone(),), leaves=(l0,))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "aliased_inputs", "metadata_mutation"))
def fuzz_t_and_add_on_twice_passed_returned():
    """One non-leaf passed twice, ``t_`` and ``add_`` through the second name, the first
    returned: eager's stride after ``t_`` is (1, 2); the engine gave (1, 1)."""
    def f(a0, a1, a2):
        a2.t_()
        a2.add_(1.0)
        return (a0,)

    def make():
        l0 = _randn((1, 2)).requires_grad_()
        b0 = l0.clone()
        return Inputs((b0, _randn((1, 1, 1)), b0), leaves=(l0,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "input_mutation", "alias_of_input"))
def fuzz_mutated_view_of_strided_argument_returned():
    """A view of a strided slice argument, mutated and returned. Functionalization re-synced
    the view from the base's new (contiguous) value, so its recorded stride was (1,) where
    eager's is (2,), and the output was rebuilt at the wrong elements: a silently wrong
    result. Geometry now comes from an eager run on fake tensors (NOTE [eager geometry])."""
    def f(a0):
        v0 = a0.view((2,))
        v0.add_(1.0)
        return (v0,)
    return f, lambda: Inputs((_randn((4,))[::2],))


@case("regressions", mode="inference", tags=("fuzz", "input_mutation", "alias_of_input"))
def fuzz_view_taken_after_mutating_strided_argument():
    """A view of a strided argument taken after the argument is mutated in place inherited
    the functional value's contiguous layout."""
    def f(a0):
        v0 = a0.t()
        a0.add_(1)
        return v0, a0[0]
    return f, lambda: Inputs((_randn((3, 4))[:, ::2],))


@case("regressions", mode="training", tags=("fuzz", "metadata_mutation", "noncontiguous"))
def fuzz_unsqueeze_then_clamp_strided_nonleaf():
    """unsqueeze_ then clamp_ on a strided-slice non-leaf failed while tracing ('invalid
    gradient ... got [3, 3, 1, 1]'): the geometry-keeping copy of the argument was an
    as_strided view for autograd, which replays a view's creation (not its in-place metadata
    changes) under functionalization. Seen 13 times in 2,000 fuzzed programs."""
    def f(a0):
        a0.unsqueeze_(2)
        a0.clamp_(None, 0.0)
        return ()

    def make():
        l0 = _randn((6, 3, 1)).requires_grad_()
        return Inputs((l0.clone()[::2],), leaves=(l0,))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "aliased_inputs", "metadata_mutation"))
def fuzz_transpose_root_after_mutating_its_slice():
    """f(a, a[1:]): the slice is mutated, then the root argument is transposed in place. The
    runtime replayed the transpose before copying the group's new value back, whose layout is
    the root's original one ('size of tensor a (2) must match ... (4)')."""
    def f(a0, a3):
        a3.add_(1.0)
        a0.transpose_(0, 1)
        return (a0 * 2,)

    def make():
        l0 = _randn((2, 4)).requires_grad_()
        b0 = l0.clone()
        return Inputs((b0, b0[1:]), leaves=(l0,))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "aliased_inputs", "metadata_mutation"))
def fuzz_unsqueeze_then_setitem_aliased_argument():
    """unsqueeze_ on an aliased argument, then an indexed assignment through it: functionalization
    raised IndexError on the member's view chain, and the engine refused it. Now traced the
    second way (NOTE [plain trace, then functionalize]). Issue 11, class 10."""
    def f(a0, a1, a2):
        a1.unsqueeze_(1)
        a2.clamp_(None, 0.0)
        a1[:, :1:2] = 0.5
        return (a0,)

    def make():
        l0 = _randn((2, 4), ).double().requires_grad_()
        b0 = l0.clone()
        a0 = b0[0]
        return Inputs((a0, b0[1], a0[1:]), leaves=(l0,))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "mutation_autograd", "detach"))
def fuzz_detached_alias_mutated_with_grad_value_returned():
    """A detached alias of a grad leaf is mutated in place with a grad-requiring value and
    returned. Eager's output carries AddBackward into that value; the engine rebuilt it as a
    view of the argument, so the leaf's gradient differed (silently wrong). Such an output
    now gets its gradient from its own graph value."""
    def f(a0):
        v0 = a0.tanh()
        v1 = a0.detach()
        v1.add_(v0)
        return (v1,)

    def make():
        b0 = _randn(()).requires_grad_()
        return Inputs((b0,), leaves=(b0,))
    return f, make



@case("regressions", mode="training", tags=("fuzz", "alias_of_input", "noncontiguous"))
def fuzz_reshape_of_strided_nonleaf_is_a_copy():
    """reshape of a strided slice copies in eager. A compact copy of the argument inside the
    trace made it a view: wrong aliasing and wrong values. Found by the CI property test."""
    def f(a0):
        v0 = a0.view((2, 2))
        return (v0.reshape((4,)),)

    def make():
        l0 = _randn((4, 2)).requires_grad_()
        return Inputs((l0.clone()[::2],), leaves=(l0,))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "mutation_autograd", "detach", "alias_of_input"))
def detached_view_of_plain_argument_mutated_with_grad_value():
    """The same, through a view of a detached alias of an argument that does not require
    grad: the output requires grad through ``w`` only, and shares the argument's storage."""
    def f(a0, w):
        v1 = a0.detach()[0]
        v1.mul_(w)
        return v1, a0

    def make():
        w = _randn((4,), 1).requires_grad_()
        return Inputs((_randn((2, 4)), w), leaves=(w,))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "metadata_mutation", "noncontiguous"))
def fuzz_transpose_after_mutating_a_narrow_of_strided_nonleaf():
    """A narrow of a strided non-leaf is mutated, the argument is transposed in place, and
    the narrow is used again. Under functionalization autograd rebuilds the narrow's grad_fn
    by replaying narrow on the transposed argument ('invalid gradient ... got [4, 1] but
    expected [2, 1]'); the pipeline traces again with the argument copied as a view of fresh
    storage (see NOTE [non-leaf copies]). Found by the CI property test."""
    def f(a0):
        a0.mul_(2.0)
        v0 = a0.narrow(1, 0, 1)
        v0.clamp_(0.0, None)
        a0.transpose_(0, 1)
        v1 = v0.sin()
        v1.t_()
        v1.unsqueeze_(1)
        v1.add_(-1.0)
        return (a0, v1, v0)

    def make():
        l0 = _randn((8, 2)).double().requires_grad_()
        return Inputs((l0.clone()[::2],), leaves=(l0,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "alias_of_input", "noncontiguous"))
def fuzz_as_strided_outside_strided_nonleaf_gets_no_grad():
    """as_strided with a storage offset that points outside the argument (a strided slice of
    a non-leaf). Eager's AsStridedBackward drops the gradient of elements outside its input;
    the engine rebuilt the output from the argument's base and sent it through."""
    def f(a0):
        v0 = a0.view((1,))
        return (v0.as_strided((1,), (1,), 1),)

    def make():
        l0 = _randn((2, 1)).requires_grad_()
        return Inputs((l0.clone()[::2],), leaves=(l0,))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "alias_of_intermediate", "detach"))
def fuzz_detach_of_intermediate_returned_before_it():
    """An intermediate and its detach() are both returned, the detach first. The engine
    made the first one the fresh output and rebuilt the intermediate as an alias of it, so
    the intermediate lost its grad_fn (requires_grad False, no gradient). Outputs that own
    their storage and carry autograd history are now placed first."""
    def f(a0):
        v0 = a0 * 2
        v1 = v0.detach()
        return v1, v0

    def make():
        l0 = _randn((3,)).requires_grad_()
        return Inputs((l0,), leaves=(l0,))
    return f, make


@case("regressions", mode="training", tags=("metadata_mutation", "alias_of_input"))
def view_taken_before_base_transpose_then_mutated():
    """A view taken before its base is transposed in place, then mutated: autograd over
    functionalization replays select(0) on the transposed base (PyTorch's AOTAutograd is
    silently wrong, docs/findings.md row 21); the engine refused it, now it traces the
    second way. Issue 11, class 10."""
    def f(a):
        v = a[0]
        a.t_()
        v.mul_(torch.arange(3.0))
        return a

    def make():
        l0 = _randn((3, 3)).requires_grad_()
        return Inputs((l0.clone(),), leaves=(l0,))
    return f, make


@case("regressions", mode="training", tags=("metadata_mutation", "alias_of_intermediate"))
def view_of_intermediate_transposed_in_place_then_mutated():
    """A view of an intermediate transposed in place, then mutated: refused before (the view
    replay limit), traced the second way now. Issue 11, class 10."""
    def f(x):
        y = x * 2
        v = y[0:2, 0:2]
        v.t_()
        v.mul_(torch.arange(4.0).view(2, 2))
        return y

    def make():
        l0 = _randn((3, 3)).requires_grad_()
        return Inputs((l0,), leaves=(l0,))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "metadata_mutation", "alias_of_input"))
def fuzz_squeeze_argument_after_narrow_then_use_narrow():
    """A narrow of a non-leaf argument, then the argument squeeze_d in place, then the narrow
    used. Autograd over functionalization replays narrow(2) on the now 2-d argument
    (IndexError) while capturing; the capture now retries with the argument copied as a view
    of fresh storage (NOTE [non-leaf copies]). Found by aotcheck fuzz --seed 31."""
    def f(a0, a1):
        v0 = a1.narrow(2, 1, 2)
        a1[:, 0] = 0.5
        v0.mul_(1.0)
        a1.squeeze_(1)
        v1 = a1.amax(0, keepdim=False)
        v2 = v0.add(1.0)
        return (a1, a0)

    def make():
        b0 = _randn((4, 1)).requires_grad_()
        l1 = _randn((2, 1, 3)).requires_grad_()
        return Inputs((b0, l1.clone()), leaves=(b0, l1))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "alias_of_intermediate", "detach"))
def fuzz_detached_alias_of_intermediate_with_grad_and_a_view():
    """A detach() of an intermediate, given a grad_fn by copy_ from a grad-requiring value,
    returned with a view of the same intermediate. Eager's two outputs share storage; the
    engine made the detached one a fresh graph output (aliasing lost). Both are now rebuilt
    from the intermediate, the detached one with its own gradient. From aotcheck fuzz
    --seed 5 --max-statements 12 (not shrunk; smaller versions did not show it)."""
    def f(a0, a1, a2):
        v0 = a0.sin()
        v0.mul_(2.0)
        v0.copy_(a0)
        v1 = a2[::2]
        v0.fill_(1.0)
        v1.copy_(a0)
        v2 = v0.as_strided((1, 1), (1, 2), 0)
        v3 = v2.detach()
        v3.copy_(a0)
        v3.t_()
        return (v3, a2, a0, v2)

    def make():
        l0 = _randn((2,), 1).requires_grad_()
        l2 = _randn((1, 1, 1), 7).requires_grad_()
        return Inputs((l0.clone()[::2], _randn((1, 3, 2), 6), l2.clone()), leaves=(l0, l2))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "alias_of_intermediate", "detach"))
def fuzz_detach_of_intermediate_leaves_its_input_without_grad():
    """Only a detach() of tanh(a) is returned with an unrelated output: eager leaves a.grad
    None. Rebuilding the detached output from its intermediate made the intermediate a
    differentiable graph output, so a got a zero gradient. Found by aotcheck fuzz (seed 2026)
    while fixing the case above."""
    def f(a, b):
        v1 = a.tanh().detach()
        return v1, b * 2

    def make():
        a, b = _randn((3,)).requires_grad_(), _randn((3,), 1).requires_grad_()
        return Inputs((a, b), leaves=(a, b))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "set_", "alias_of_intermediate"))
def fuzz_view_of_intermediate_set_onto_another_intermediate():
    """A diagonal view of an intermediate is set_() onto another intermediate (a 0-dim sum) and
    returned: it was rebuilt as a view of its autograd base, whose storage it no longer shares,
    so it came back with a diagonal element instead of the sum (silently wrong). Found by
    aotcheck fuzz --extensions random,set_ --seed 2."""
    def f(a0):
        v0 = a0.sum(1, keepdim=False)
        v1 = a0.sum()
        v2 = v0.diagonal(0, 0, 1)
        v2.set_(v1)
        return (v2,)
    return f, lambda: Inputs((_randn((4, 3, 2), 1481).double(),))


@case("regressions", mode="training", tags=("fuzz", "aliased_inputs", "metadata_mutation"))
def fuzz_transpose_member_then_setitem_grad_value_into_root():
    """A transposed alias of a plain argument is transposed in place, then both are written
    with values that require grad. The first way refused it (synthetic-base replay); the
    second way traced it, and the runtime then replayed the member's transpose_ with grad on
    after the root had got a grad_fn ('a leaf Variable that requires grad is being used in
    an in-place operation'). A metadata call autograd did not record is replayed under
    no_grad. Found by aotcheck fuzz --seed 2026 (after issue 11, class 10)."""
    def f(a0, a1, a2, a3):
        with torch.no_grad():
            a2.fill_(1.0)
        a3.transpose_(1, 2)
        a3[:, 1] = a2
        a1[:, 0] = a0
        v0 = a3.sin()
        return (v0, v0)

    def make():
        b0 = _randn((2,)).requires_grad_()
        b1 = _randn((1, 4, 3))
        l2 = _randn((2,)).requires_grad_()
        b2 = l2.clone()
        return Inputs((b0[::2], b1, b2[::2], b1.transpose(-2, -1)), leaves=(b0, l2))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "metadata_mutation", "alias_of_intermediate"))
def fuzz_expand_of_intermediate_then_t_then_unbind():
    """An expand of an intermediate, the intermediate transposed in place, then the expand
    unbound: functionalization replays the expand on the transposed intermediate and fails
    ('The expanded size of the tensor (1) must match the existing size (3)'), and so does
    the fake-tensor run that would have told the engine what eager does; eager runs it. The
    engine now takes the second way whenever in-place metadata changes were seen. Found by
    aotcheck fuzz --seed 11 with the custom_function and set_ extensions (4 statements)."""
    def f(a0):
        v1 = a0.sin()
        v2 = v1.expand((2, 3, 1))
        v1.t_()
        return v2.unbind(0)[0]

    def make():
        b0 = _randn((3, 1)).requires_grad_()
        return Inputs((b0,), leaves=(b0,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "set_", "aliased_inputs"))
def fuzz_set_one_row_argument_onto_another():
    """Two arguments that are rows of one base, one set_ onto the other: the storage is the
    same, so no swap shows; the set_ argument now has the other row's offset. The runtime
    left it at its own offset. Found by aotcheck fuzz --seed 12 (set_ extension)."""
    def f(a0, a1):
        a0.set_(a1)
        a1.t_()
        return ()

    def make():
        b = _randn((2,))
        return Inputs((b[0], b[1]))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "requires_grad_"))
def fuzz_requires_grad_after_the_output_is_computed():
    """requires_grad_() on an argument after the output was computed from it: eager's output
    does not require grad; the runtime set the flag before running the (inference) graph with
    grad on, so the output came back requiring grad. Found by aotcheck fuzz --seed 13."""
    def f(a0):
        v0 = a0.mean()
        a0.requires_grad_()
        return (v0,)
    return f, lambda: Inputs((_randn((1,)),))


@case("regressions", mode="training", tags=("fuzz", "detach", "parameter"))
def fuzz_expand_of_a_detached_parameter_then_add_grad_value():
    """An expand of a detached Parameter, then an in-place add of a value that requires grad
    into the detached alias: the expand is returned, with a grad_fn through the add. The
    runtime gave the alias its gradient path by copying into it, which an expand (stride 0)
    refuses ('more than one element of the written-to tensor refers to a single memory
    location'). Found by aotcheck fuzz --seed 13 (parameter extension)."""
    def f(a0, a2):
        v2 = a2.detach()
        v3 = v2.expand((3, 3))
        v2.add_(a0)
        return (v3,)

    def make():
        b0 = _randn((2,)).requires_grad_()
        b1 = torch.nn.Parameter(_randn((3, 1), 1))
        return Inputs((b0[0], b1), leaves=(b0, b1))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "rng", "aliased_inputs", "metadata_mutation"))
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
        l0 = _randn((3, 2)).requires_grad_()
        l1 = _randn((2, 2, 3, 4), 1).requires_grad_()
        b1 = l1.clone()
        return Inputs((l0.clone(), b1[0], b1[1]), leaves=(l0, l1))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "requires_grad_", "detach", "non_contiguous"))
def fuzz_detach_of_a_mutated_strided_argument_made_a_grad_leaf():
    """A strided argument mutated in place, then its detach() made a leaf that requires grad
    and returned: eager's leaf has the argument's stride 2; the wrapper's geometry drifts to
    contiguous with the write, and the leaf was made with stride 1. Found by aotcheck fuzz
    --seed 22 (requires_grad_ extension)."""
    def f(a0):
        a0.add_(0.5)
        v0 = a0.detach()
        v0.requires_grad_()
        return (v0,)
    return f, lambda: Inputs((_randn((8,))[::2],))


@case("regressions", mode="inference", tags=("fuzz", "set_", "non_contiguous"))
def fuzz_strided_argument_written_then_set_onto_its_own_diagonal():
    """A strided argument (every second row of a bigger tensor) written, then set_() onto a
    diagonal view of itself: the runtime crashed with 'setStorage: ... out of bounds', since
    functionalization held the written argument as a compact value, not its storage. Now
    traced the second way. Found by aotcheck fuzz --seed 2 (set_ extension)."""
    def f(a0):
        v0 = a0.diagonal(-1, 0, 1)
        with torch.no_grad():
            a0.fill_(-1.0)
        a0.set_(v0)
        return (a0 * 2,)
    return f, lambda: Inputs((_randn((8, 3))[::2],))


@case("regressions", mode="inference", tags=("fuzz", "set_"))
def fuzz_argument_set_onto_an_element_of_an_intermediate():
    """An argument set_() onto one element of an intermediate (``a0.set_(v.select(0, 3))``):
    eager's argument has storage offset 3 into the intermediate's storage; the runtime set it
    to a compact copy of the element, offset 0. The graph now returns the whole storage and
    the runtime sets the final geometry on it. Found by aotcheck fuzz --seed 3."""
    def f(a0):
        with torch.no_grad():
            with torch.enable_grad():
                v0 = a0.exp()
        a0.set_(v0.select(0, 3))
        return (v0,)
    return f, lambda: Inputs((_randn((4,)),))


@case("regressions", mode="training", tags=("fuzz", "requires_grad_", "metadata_mutation"))
def fuzz_transpose_then_requires_grad_then_matmul():
    """transpose_() of an argument, then requires_grad_() on it, then a matmul: eager's leaf
    is the transposed argument, so its gradient has the new shape. The runtime set the flag
    on the caller's tensor before the call and replayed the transpose_ after, so autograd
    checked the gradient against the old shape ('invalid gradient ... got [4, 1] but expected
    shape compatible with [1, 4]'). The metadata calls are now replayed before the call.
    Found by aotcheck fuzz --seed 1."""
    def f(a0):
        a0.transpose_(0, 1)
        a0.requires_grad_()
        return (torch.matmul(a0, a0.mT),)

    def make():
        return Inputs((torch.randn((1, 4), dtype=torch.float64,
                                   generator=torch.Generator().manual_seed(27237)),))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "requires_grad_", "metadata_mutation",
                                            "no_grad", "non_contiguous"))
def fuzz_no_grad_squeeze_then_requires_grad_returned():
    """squeeze_() of an argument under no_grad, a write of another (strided) argument, then
    requires_grad_() on the squeezed one, which is returned: a gradient sent to it had the
    squeezed shape, checked against its shape at the call ('MulBackward0 returned an invalid
    gradient ... got [3] but expected shape compatible with [1, 3]'). Found by aotcheck fuzz
    --seed 1."""
    def f(a0, a2):
        with torch.no_grad():
            a2.squeeze_(0)
        a0.add_(0.5)
        a2.requires_grad_()
        return (a2,)

    def make():
        l0 = _randn((6, 3, 2), 7158).requires_grad_()
        return Inputs((l0.clone()[::2], _randn((1, 3), 2207)), leaves=(l0,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "requires_grad_", "aliased_inputs",
                                             "metadata_mutation"))
def fuzz_squeeze_of_a_view_argument_then_requires_grad_on_its_base():
    """Two arguments, a tensor and its transpose; squeeze_() of the transpose makes them an
    alias group with a synthetic base, then requires_grad_() on the first: eager's base and
    its view both require grad afterwards. In the trace the first is a view of the group's
    base, so the flag never reached the caller's tensor (silently wrong). The runtime now
    replays it in order with the members' metadata calls. Found by aotcheck fuzz --seed 1."""
    def f(a0, a1):
        a1.squeeze_(2)
        a0.requires_grad_()
        return ()

    def make():
        b0 = _randn((3, 3, 2), 14331)
        return Inputs((b0, b0.transpose(-2, -1)))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "requires_grad_", "aliased_inputs"))
def fuzz_row_written_then_requires_grad_on_its_sibling_row():
    """Two rows of one tensor; one is written, so they share a synthetic base, and the other
    gets requires_grad_(): eager's row is a leaf that requires grad afterwards, the caller's
    was left without the flag (companion of the case above)."""
    def f(a0, a1):
        a1.mul_(2)
        a0.requires_grad_()
        return (a1,)

    def make():
        b = _randn((3, 4), 5)
        return Inputs((b[0], b[1]))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "as_strided", "unbind", "alias_of_input"))
def fuzz_as_strided_of_an_unbind_row_reaching_outside_it():
    """``a0.unbind(0)[3].as_strided(...)`` reaching back into row 2, returned: eager's
    AsStridedBackward0 reads the gradient back in the row's geometry, so row 2 gets none;
    the runtime rebuilt the view with one as_strided on the argument and sent row 2 a
    gradient (silently wrong). The recorder now keeps the geometries an as_strided was cut
    from and the runtime cuts through them (NOTE [as_strided clips]). Found by aotcheck fuzz
    --seed 1."""
    def f(a0):
        with torch.no_grad():
            with torch.enable_grad():
                v1 = a0.unbind(0)[3]
        v3 = v1.as_strided((4, 4), (2, 3), 30)
        return (v3,)

    def make():
        b0 = _randn((4, 4, 3), 23877).requires_grad_()
        return Inputs((b0,), leaves=(b0,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "as_strided", "inference_mode",
                                             "non_contiguous", "alias_of_input"))
def fuzz_inference_mode_write_through_as_strided_reaching_outside_a_strided_argument():
    """``a0 = b0[::2]``; ``a0.as_strided((1, 2), (3, 1), 0)`` reaches b0[1], outside a0, and
    is multiplied in place under inference_mode, then returned. The graph held a0 alone, so
    the write to b0[1] was lost (silently wrong values); and eager regenerates the written
    view's grad_fn from the root base b0, so b0[1] gets a gradient. The argument is now
    planned as a synthetic base of one, its whole storage
    (NOTE [writes outside an argument]), and the view rebuilt from its root. Found by aotcheck fuzz --seed
    1."""
    def f(a0, a2):
        v0 = a0.as_strided((1, 2), (3, 1), 0)
        with torch.no_grad():
            with torch.enable_grad():
                v1 = v0[::3]
        v3 = a2.unsqueeze(0)
        with torch.inference_mode():
            v1.mul_(v3)
        return (v0,)

    def make():
        l0 = _randn((4,), 63237).requires_grad_()
        b1 = _randn((2,), 1357).double()
        return Inputs((l0.clone()[::2], b1[1]), leaves=(l0,))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "as_strided", "non_contiguous",
                                            "mutation", "alias_of_input"))
def fuzz_grad_write_through_as_strided_reaching_outside_a_strided_argument():
    """The grad-mode twin of the case above: ``a0.as_strided(...).mul_(w)`` writes b0[1],
    outside a0, and autograd records it on b0; the gradient of b0[1] flows through the write."""
    def f(a0, a2):
        v0 = a0.as_strided((1, 2), (3, 1), 0)
        v0.mul_(a2)
        return (v0, a0 * 2)

    def make():
        l0 = _randn((4,), 5).requires_grad_()
        return Inputs((l0.clone()[::2], _randn((2,), 6)[1]), leaves=(l0,))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "detach", "no_grad", "alias_of_output"))
def fuzz_no_grad_expand_of_a_detach_of_a_returned_intermediate():
    """``v4 = v1.detach()`` of a returned intermediate, then ``v4.expand(...)`` returned too:
    eager's expand shares v1's storage; the engine rebuilt it from a graph value of its own
    (the detach), so the two outputs no longer shared memory. A view without grad of an
    alias of an earlier output is now cut from that output. Found by aotcheck fuzz --seed 1."""
    def f(a0):
        v0 = a0.relu()
        v1 = a0.add(v0)
        v3 = v1.unsqueeze(0)
        v3.zero_()
        v4 = v1.detach()
        with torch.no_grad():
            with torch.enable_grad():
                v5 = v4.expand((2, 3, 3))
        return (v5, v1)

    def make():
        b0 = _randn((3, 3), 139).requires_grad_()
        return Inputs((b0,), leaves=(b0,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "no_grad", "unbind", "split",
                                             "alias_of_input"))
def fuzz_no_grad_split_view_made_after_the_write_that_poisons_an_unbind_view():
    """An unbind view of a leaf taken, the leaf written under no_grad, then a split view
    taken under no_grad, both returned: eager's unbind view is poisoned (reading its grad_fn
    raises), the split view, made after the write, is an ordinary leaf. The runtime made the
    split view first and then bumped the shared version counter for the poisoned one, which
    poisoned the split view too. Poisoned views are now made first. Found by aotcheck fuzz
    --seed 1."""
    def f(a0):
        v1 = a0.reshape((1,))
        v3 = v1.unbind(0)
        v4 = v1.t()
        with torch.no_grad():
            v4[:1] = 0.5
            v5 = v4.split(1, 0)[0]
        return (v5, v3)

    def make():
        b0 = _randn((), 104).requires_grad_()
        return Inputs((b0,), leaves=(b0,))
    return f, make


@case("regressions", mode="training", tags=("as_strided", "mutation", "alias_of_intermediate"))
def as_strided_of_a_row_reaching_outside_it_read_after_its_base_is_written():
    """``v = x[3].as_strided(...)`` reaching row 2 of an intermediate, then ``x`` written and
    ``v`` read: eager regenerates v's grad_fn as one as_strided of x, so row 2 gets a
    gradient; autograd over functional tensors replayed the chain, the row's clip included
    (silently wrong gradient). Such a view arms the view-replay hazard (the second way).
    Found while checking NOTE [as_strided clips]."""
    def f(a):
        x = a * 2
        v = x[3].as_strided((2, 3), (3, 1), 30)
        x.add_(1)
        return (v.sum(),)

    def make():
        b = _randn((4, 4, 3), 3).requires_grad_()
        return Inputs((b,), leaves=(b,))
    return f, make


@case("regressions", mode="inference", tags=("as_strided", "mutation", "non_contiguous"))
def as_strided_view_of_an_offset_argument_read_after_the_argument_is_written():
    """``a = l[1:]`` (offset 1), ``v = a.as_strided((1, 2), (2, 1), 3)``, then ``a`` written and
    ``v`` read: functionalization replayed the as_strided (absolute offset 3) on a's compact
    new value, one element off (silently wrong values). A written argument with an as_strided
    view that does not fill its storage from offset 0 is planned as its whole storage
    (NOTE [writes outside an argument])."""
    def f(a, w):
        v = a.as_strided((1, 2), (2, 1), 3)
        a.add_(w)
        return (v.sum() + a.sum(),)
    return f, lambda: Inputs((_randn((8,), 4)[1:], _randn((), 5)))


@case("regressions", mode="training", tags=("fuzz", "requires_grad_", "detach", "non_contiguous"))
def fuzz_detach_of_an_intermediate_made_a_grad_leaf_and_returned_with_it():
    """``v2 = v0.detach()`` of an intermediate, v0 written and squeezed in place, v2 made a leaf
    that requires grad, both returned: the runtime returned v2 as the empty tensor it made
    before the graph ran (uninitialised memory: silently wrong values), and v0 in storage of
    its own (eager: v0 and v2 share it). The leaf now gets its graph value, and v0 is moved
    into the leaf's memory. Found by aotcheck fuzz --seed 32 --extensions all."""
    def f(a0):
        v0 = a0.sin()
        v2 = v0.detach()
        v0.copy_(a0)
        v2.requires_grad_()
        v0.squeeze_(1)
        v4 = v2.sum()
        return (v4, v2, v2, v0)

    def make():
        l0 = _randn((6, 2), 2419).requires_grad_()
        return Inputs((l0.clone()[::2],), leaves=(l0,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "set_", "aliased_inputs"))
def fuzz_argument_clamped_then_set_onto_a_reduction_of_an_overlapping_view():
    """An argument clamped in place, then set_() onto a sum over an argument that views the
    same storage: eager clamps the memory the argument had at the call (the other argument
    sees it), then moves it. The runtime swapped the storage and dropped the write, silently
    (functionalization's wrapper reports the new storage's mutations only); the old storage's
    value is now read on an alias taken at the call and written back before the swap, and
    the write makes the pair a synthetic base. Found by aotcheck fuzz --seed 1."""
    def f(a1, a2):
        a1.clamp_(-0.5, 0.5)
        v1 = a2.sum(1, keepdim=False)
        a1.set_(v1)
        return ()

    def make():
        b1 = _randn((4, 2), 1608)
        return Inputs((b1, b1[1:]))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "set_", "aliased_inputs", "metadata_mutation"))
def fuzz_argument_set_onto_an_argument_that_shares_storage_after_t_():
    """set_() of an argument onto one that shares storage with a third, which is t_()'d (so
    the pair is a synthetic base): it was refused by name; the swap's final geometry is one
    on the group's storage at its absolute offset, which the runtime now sets. Found by
    aotcheck fuzz --seed 1."""
    def f(a1, a2, a3):
        a2.t_()
        a3.set_(a1)
        return ()

    def make():
        b1 = _randn((8, 1), 9243)
        a1 = b1[::2]
        return Inputs((a1, a1[1:], _randn((4, 1, 3), 436)[::2]))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "set_", "requires_grad_", "aliased_inputs"))
def fuzz_argument_set_onto_another_that_then_gets_requires_grad_():
    """``a2.set_(a3)``, then ``a3.requires_grad_()`` under no_grad (a3 is a1, a2 a transpose
    of it): the swap was refused because a3 requires grad at the end; it did not when set_()
    ran, so eager's a2 requires no grad, and the runtime replays the swap under no_grad after
    setting a3's flag. Found by aotcheck fuzz --seed 1."""
    def f(a1, a2, a3):
        a2.set_(a3)
        with torch.no_grad():
            a3.requires_grad_()
        return ()

    def make():
        b1 = torch.randn((3, 2, 1), dtype=torch.float64,
                         generator=torch.Generator().manual_seed(31461))
        return Inputs((b1, b1.transpose(-2, -1), b1))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "detach", "aliased_inputs", "as_strided"))
def fuzz_detach_of_an_as_strided_over_the_whole_storage_written_with_grad_value():
    """``a1.as_strided(...)`` onto the whole storage (beyond a1), detached under no_grad, then
    a slice of it assigned a value that requires grad, and returned: the runtime rebuilt the
    output as an autograd view of the argument, whose as_strided backward over the
    argument's geometry reached past it ('setStorage: ... out of bounds'). Eager's detach()
    is no view; neither is the runtime's where the output reaches outside the argument.
    Found by aotcheck fuzz --seed 1."""
    def f(a0, a1):
        v0 = a1.sum()
        v1 = a1.as_strided((2, 4), (4, 1), 0)
        with torch.no_grad():
            v5 = v1.detach()
        v5[:, 3] = v0
        return (v5,)

    def make():
        l0 = torch.randn((2, 1, 2, 2), dtype=torch.float64,
                         generator=torch.Generator().manual_seed(65535)).requires_grad_()
        b0 = l0.clone()
        return Inputs((b0[0], b0[1]), leaves=(l0,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "set_", "alias_of_input", "non_contiguous"))
def fuzz_view_of_a_written_argument_returned_after_set_onto_another():
    """An argument written, a view of it taken, then the argument set_() onto another one,
    and the view returned: the view was rebuilt from the owner of its memory, the argument,
    which set_() had moved (a crash: 'dimensionality of sizes (1) must match ... strides
    (2)', or reading the other argument's values). It is now rebuilt from the graph's value
    of the memory the argument had at the call. Found by aotcheck fuzz --seed 7."""
    def f(a1, a3):
        a3.mul_(a1)
        v0 = a3.permute((1, 0))
        with torch.no_grad():
            with torch.enable_grad():
                a3.set_(a1)
        return (v0,)

    def make():
        return Inputs((_randn((2, 2), 16915)[1], _randn((2, 2), 17607)[::2]))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "set_", "requires_grad_"))
def fuzz_argument_set_onto_another_then_given_requires_grad_():
    """``a2.set_(a3)``, then ``a2.requires_grad_()``: refused because a2 requires grad at the
    end; it did not when set_() ran, so eager's a2 is a leaf over a3's storage that requires
    grad. The runtime sets its flag before the call and replays the swap under no_grad
    (its shape is unchanged, so a gradient would fit the compiled function's input). Found
    by aotcheck fuzz --seed 5."""
    def f(a2, a3):
        with torch.no_grad():
            with torch.enable_grad():
                a2.set_(a3)
        a2.requires_grad_()
        return ()

    return f, lambda: Inputs((_randn((3,), 6276), _randn((4,), 55567)))


@case("regressions", mode="training", tags=("set_", "requires_grad_", "input_mutation"))
def argument_written_set_onto_another_then_given_requires_grad_and_used():
    """An argument written, set_() onto another argument of its shape, given requires_grad_()
    and used: the write reaches the memory it had at the call, the gradient reaches it."""
    def f(a, b):
        a.mul_(3)
        a.set_(b[1:])
        a.requires_grad_()
        return (a * a).sum()

    def make():
        a = _randn((3,), 1)
        return Inputs((a, _randn((4,), 2)), leaves=(a,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "set_", "alias_of_intermediate"))
def fuzz_view_of_an_intermediate_returned_after_set_moved_the_intermediate():
    """A view of an intermediate returned after the intermediate was set_() onto an
    argument: the view was rebuilt from the intermediate, which now holds the argument's
    values (silently wrong values). The first such output's own value is now the base of
    the views of that memory. Found by aotcheck fuzz --seed 13."""
    def f(a0, a1):
        v0 = torch.matmul(a0, a0.mT)
        v2 = v0.unsqueeze(0)
        with torch.no_grad():
            v0.set_(a1)
        return (v2,)

    def make():
        b0 = torch.randn((2, 3, 3), generator=torch.Generator().manual_seed(139))
        return Inputs((b0[0], b0[1]))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "set_", "metadata_mutation", "aliased_inputs"))
def fuzz_argument_transposed_in_place_then_set_onto_an_earlier_view_of_itself():
    """An argument (passed twice) transpose_()d, then set_() onto a transpose of itself taken
    before, then written through that view: set_() onto its own storage is told by a new
    geometry with no logged metadata call, and there was one (transpose_), so the runtime
    replayed transpose_ and copied the new value in the set_() geometry (a crash: 'The size
    of tensor a (2) must match ...'). A plain run now also compares the geometry the logged
    calls give with the final one. Found by aotcheck fuzz --seed 17."""
    def f(a0, a1):
        v0 = a1.transpose(0, 1)
        a1.transpose_(0, 2)
        a0.set_(v0)
        v0.add_(0.5)
        return ()

    def make():
        b0 = _randn((2, 2, 3), 10912)
        return Inputs((b0, b0))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "set_", "input_mutation", "noncontiguous"))
def fuzz_argument_set_onto_a_strided_argument_written_before():
    """An argument set_() onto another argument, a strided slice that the function wrote
    before: eager's ``a0`` takes ``a2``'s geometry (stride (4, 1, 1)). Functionalization lays
    ``a2``'s new value out contiguously and its ``set_()`` copies that layout, so the runtime
    set ``a0`` onto ``a2``'s storage with stride (2, 1, 1): the wrong elements (silently wrong
    values). A swap's final geometry is now the argument's geometry in the eager-geometry run
    (set_() reaches no TorchFunctionMode). Found by aotcheck fuzz --seed 1."""
    def f(a0, a2):
        a2.clamp_(0.0, None)
        a0.set_(a2)
        return ()

    def make():
        return Inputs((_randn((2, 4, 1), 17793), _randn((4, 2, 1), 65536)[::2]))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "requires_grad_", "alias_of_input", "detach"))
def fuzz_view_of_a_detached_parameter_given_requires_grad():
    """A view of a parameter's detach() that the function gave requires_grad_(): eager's
    output is a view of that new leaf (it shares the parameter's memory; in place on it
    raises 'a view of a leaf Variable that requires grad ...'; its gradient goes to the
    hidden leaf, not to the parameter). The engine rebuilt it as a detached alias of the
    parameter carrying its own graph value, which can be mutated in place. An output over an
    argument's memory whose grad_fn chain reaches such a leaf is now cut from the runtime's
    leaf. Found by aotcheck fuzz --seed 1."""
    def f(a0):
        v0 = a0.detach()
        v0.requires_grad_()
        return (v0.unsqueeze(0),)

    def make():
        p = torch.nn.Parameter(_randn((), 33697))
        return Inputs((p,), leaves=(p,))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "subclass", "multi_output_view", "mutation"))
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
        l0 = TwoTensor(_randn((4,), 1920), _randn((4,), 1921)).requires_grad_()
        l1, l2 = _randn((1, 2, 4), 101).requires_grad_(), _randn((4,), 947).requires_grad_()
        return Inputs((l0.clone(), l1.clone(), l2.clone()), leaves=(l0, l1, l2))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "set_", "metadata_mutation", "input_mutation"))
def fuzz_argument_written_squeezed_in_place_then_set_onto_another():
    """An argument written, squeeze_()d, then set_() onto another argument: eager's write
    lands in the memory it had at the call. The runtime replayed squeeze_ on it first and then
    copied the written value (in the geometry at the call, (1, 4, 1)) into the squeezed (4,)
    tensor: a crash ('output with shape [4] doesn't match the broadcast shape [1, 4, 4]'; the
    fuzzer's write was a custom Function's mark_dirty mul_). That write now goes through the
    argument's geometry at the call. Found by aotcheck fuzz --seed 1."""
    def f(a1, a2):
        a2.mul_(2)
        a2.squeeze_()
        a2.set_(a1)
        return ()

    def make():
        return Inputs((_randn((2, 4), 294)[1], _randn((1, 1, 4), 64).transpose(-2, -1)))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "subclass", "set_", "input_mutation"))
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
        l0 = _randn((4, 2, 3), 154).requires_grad_()
        b0 = l0.clone()
        a2 = TwoTensor(_randn((), 451), _randn((), 452))
        return Inputs((b0, a2, b0.transpose(-2, -1)), leaves=(l0,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "subclass", "inference_mode", "alias_of_input"))
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
        return Inputs((TwoTensor(_randn((2,), 75), _randn((2,), 76)),))
    return f, make


@case("regressions", mode="training", tags=("subclass", "no_grad", "multi_output_view", "mutation",
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
        l0 = TwoTensor(_randn((2, 3), 1), _randn((2, 3), 2)).requires_grad_()
        return Inputs((l0.clone(),), leaves=(l0,))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "requires_grad_", "aliased_inputs",
                                            "inference_mode", "rng"))
def fuzz_view_argument_of_a_base_given_requires_grad_inside():
    """``a1 = a0.transpose(-2, -1)`` taken before the call, then ``a0.requires_grad_()``
    (inside inference_mode; a normal tensor's flag may be set there): eager's ``a1`` now
    requires grad through its base, with no gradient edge, so ``v1.add_(a1)`` under
    enable_grad gives a ``v1`` that requires grad and sends no gradient to ``a0``. Each
    argument was its own placeholder in the trace, so ``a1`` did not, and aotcheck returned
    ``v1`` without requires_grad (NOTE [views of an argument given requires_grad_]). Found
    by aotcheck fuzz --seed 1."""
    def f(a0, a1):
        v1 = torch.rand(a1.shape, dtype=a1.dtype, generator=torch.Generator().manual_seed(0))
        with torch.inference_mode():
            a0.requires_grad_()
        with torch.no_grad():
            with torch.enable_grad():
                v1.add_(a1)
        return (v1,)

    def make():
        b0 = _randn((4, 1, 3), 16325)
        return Inputs((b0, b0.transpose(-2, -1)), leaves=(b0,))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "requires_grad_", "aliased_inputs",
                                            "alias_of_input"))
def fuzz_view_argument_given_its_own_requires_grad_after_its_base():
    """The view argument of the case above, used before and after its own
    ``a1.requires_grad_()``: eager's ``v0`` requires grad (through the base, no edge),
    and ``a1`` gets a gradient edge from then on only, so ``a1.grad`` gets the second
    product's gradient and ``a0.grad`` none. aotcheck returned ``v0`` without requires_grad;
    a fix that gave the view its base's flag alone sent ``a1`` the first product's gradient
    too. Pins that the trace gives the view eager's edges, not just its flag."""
    def f(a0, a1):
        a0.requires_grad_()
        v0 = a1 * 2
        a1.requires_grad_()
        return (v0, v0 + a1 * 3, a1.view(-1))

    def make():
        b0 = _randn((4, 1, 3), 16325)
        a1 = b0.transpose(-2, -1)
        return Inputs((b0, a1), leaves=(b0, a1))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "subclass", "requires_grad_", "no_grad",
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
        l0 = TwoTensor(_randn((1, 1), 397), _randn((1, 1), 398)).requires_grad_()
        a1 = _randn((3, 3), 2677)
        return Inputs((l0.clone(), a1, a1[1:]), leaves=(l0,))
    return f, make


@case("regressions", mode="training", tags=("subclass", "requires_grad_", "aliased_inputs"))
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
        l0 = TwoTensor(_randn((1, 1), 397), _randn((1, 1), 398)).requires_grad_()
        a1 = TwoTensor(_randn((3, 3), 5), _randn((3, 3), 6))
        a2 = a1[1:]
        return Inputs((l0.clone(), a1, a2), leaves=(l0, a1, a2))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "subclass", "set_", "requires_grad_", "alias_of_input"))
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
        return Inputs((TwoTensor(_randn((), 5196), _randn((), 5197)),))
    return f, make


@case("regressions", mode="training", tags=("subclass", "set_", "requires_grad_", "alias_of_input"))
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
        l0 = TwoTensor(_randn((3,), 11), _randn((3,), 12)).requires_grad_()
        return Inputs((l0,), leaves=(l0,))
    return f, make

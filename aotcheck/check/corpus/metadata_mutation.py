"""Corpus theme ``metadata_mutation``: the function changes an argument's metadata
(``transpose_``, ``unsqueeze_``, ``resize_``, ``as_strided_``, ``set_()`` onto another storage,
``.data =``); the compiled function leaves the argument with eager's sizes, strides, offset and
storage.

Where a case came from is a tag, not a module: ``regression`` (a minimized reproducer of a bug
aotcheck's engine had, most found by ``aotcheck fuzz``), ``fuzz`` (found by the fuzzer),
``torch_finding`` (a divergence of PyTorch's own AOTAutograd from eager that the fuzzer found;
docs/findings.md has a row per case, and ``xfail_engines`` names the torch engines that fail it),
``issue:N`` (restated from PyTorch's issue N).
"""
from __future__ import annotations

import torch
from .builders import leaf, rand, randn, seeded
from .custom_function import DoubleInPlace
from .registry import Inputs, case


# ---------------------------------------------------------------- from cases_mutation


@case("metadata_mutation", mode="inference")
def t_only():
    def f(x):
        x.t_()
        return ()
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("metadata_mutation", mode="inference", tags=("returned",))
def t_and_return_input():
    def f(x):
        x.t_()
        return x
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("metadata_mutation", mode="inference")
def transpose_in_place():
    def f(x):
        x.transpose_(0, 1)
        return x + 1
    return f, seeded(lambda: Inputs((rand(2, 3, 2),)))


@case("metadata_mutation", mode="inference")
def unsqueeze_in_place():
    def f(x):
        x.unsqueeze_(0)
        return x * 2
    return f, seeded(lambda: Inputs((rand(3, 2),)))


@case("metadata_mutation", mode="inference")
def squeeze_in_place():
    def f(x):
        x.squeeze_()
        return x.sum(0)
    return f, seeded(lambda: Inputs((rand(1, 3, 1, 4),)))


@case("metadata_mutation", mode="inference")
def squeeze_dim_in_place():
    def f(x):
        x.squeeze_(0)
        return x * 1.5
    return f, seeded(lambda: Inputs((rand(1, 4),)))


@case("metadata_mutation", mode="inference")
def as_strided_in_place():
    def f(x):
        x.as_strided_((2, 2), (1, 2))
        return x + 1
    return f, seeded(lambda: Inputs((rand(6),)))


@case("metadata_mutation", mode="inference", tags=("data",))
def t_then_mul():
    def f(x):
        x.t_()
        x.mul_(2)
        return x + 1
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("metadata_mutation", mode="inference", tags=("data",))
def add_then_unsqueeze():
    def f(x):
        x.add_(1)
        x.unsqueeze_(1)
        return x.sum()
    return f, seeded(lambda: Inputs((rand(4),)))


@case("metadata_mutation", mode="inference", tags=("data", "view"))
def transpose_then_mutate_row():
    def f(x):
        x.transpose_(0, 1)
        x[0].zero_()
        return x[1]
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("metadata_mutation", mode="training", tags=("saved",))
def t_then_mul_by_grad_input():
    def f(x, y):
        x.t_()
        return x * y
    def make():
        y = leaf(3, 2)
        return Inputs((rand(2, 3), y), leaves=(y,))
    return f, seeded(make)


@case("metadata_mutation", mode="training", tags=("saved",))
def t_then_matmul_by_grad_input():
    def f(x, w):
        x.t_()
        return x @ w
    def make():
        w = leaf(2, 4)
        return Inputs((rand(2, 3), w), leaves=(w,))
    return f, seeded(make)


@case("metadata_mutation", mode="training", tags=("grad",))
def t_of_grad_nonleaf():
    def f(a):
        a.t_()
        return a * 2
    def make():
        x = leaf(2, 3)
        return Inputs((x.clone(),), leaves=(x,))
    return f, seeded(make)


@case("metadata_mutation", mode="training", tags=("grad", "data"))
def unsqueeze_and_mul_grad_nonleaf():
    def f(a, b):
        a.unsqueeze_(0)
        a.mul_(b)
        return a.sum(1)
    def make():
        x, b = leaf(3), leaf(1, 3)
        return Inputs((x.clone(), b), leaves=(x, b))
    return f, seeded(make)


@case("metadata_mutation", mode="inference")
def two_inputs_metadata_mutated():
    def f(x, y):
        x.t_()
        y.unsqueeze_(-1)
        return x + y
    return f, seeded(lambda: Inputs((rand(2, 3), rand(3, 1).squeeze(1))))


@case("metadata_mutation", mode="training", tags=("grad",))
def as_strided_in_place_grad_nonleaf():
    def f(a):
        a.as_strided_((2, 2), (2, 1), 1)
        return a.exp()
    def make():
        x = leaf(6)
        return Inputs((x.clone(),), leaves=(x,))
    return f, seeded(make)


@case("metadata_mutation", mode="training", tags=("data", "grad"))
def t_then_mul_by_grad_value():
    def f(a, b):
        a.t_()
        a.mul_(b)
        return a.sum(0)
    def make():
        b = leaf(3, 2)
        return Inputs((rand(2, 3), b), leaves=(b,))
    return f, seeded(make)


@case("metadata_mutation", mode="inference", tags=("grad", "returned"))
def squeeze_grad_nonleaf_and_return_it():
    def f(a):
        a.squeeze_()
        return a
    def make():
        x = leaf(1, 3)
        return Inputs((x.clone(),), leaves=(x,))
    return f, seeded(make)


@case("metadata_mutation", mode="training", tags=("data", "grad", "returned"))
def unsqueeze_nongrad_then_mul_by_grad_value():
    def f(a, w):
        a.unsqueeze_(0)
        a.mul_(w)
        return a
    def make():
        w = leaf(1, 3)
        return Inputs((rand(3), w), leaves=(w,))
    return f, seeded(make)


@case("metadata_mutation", mode="inference", tags=("resize", "noncontiguous"))
def resize_input_same_size_keeps_strides():
    # a resize_ to the sizes a tensor has changes nothing in eager (a transposed argument
    # stays transposed); functionalization replays it as a contiguous view, which read the
    # argument's memory in another order
    def f(y):
        y.resize_(3, 2)
        y.add_(1)
        return y * 1
    return f, seeded(lambda: Inputs((rand(2, 3).t(),)))


@case("metadata_mutation", mode="training", tags=("set_", "requires_grad_"))
def tensor_made_inside_set_onto_a_slice_then_given_requires_grad():
    """A tensor made inside, ``set_()`` onto a slice of the argument, then ``requires_grad_()``:
    eager's leaf is the slice's (2,) at offset 1. The recorder kept the geometry the tensor had
    when it was made ((3,)), since set_ reaches no TorchFunctionMode, so the leaf came back of
    shape (3,), and the backward of an output computed from it raised ('invalid gradient')."""
    def f(a1):
        with torch.no_grad():
            v1 = a1 * 2
        v1.set_(a1[1:])
        v1.requires_grad_()
        return v1, v1 * 3
    return f, seeded(lambda: Inputs((rand(3),)))


# ---------------------------------------------------------------- from cases_regressions


@case("metadata_mutation", mode="training", tags=("regression", "fuzz", "metadata_mutation", "noncontiguous"))
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
        l0 = randn((6, 3, 1)).requires_grad_()
        return Inputs((l0.clone()[::2],), leaves=(l0,))
    return f, make


@case("metadata_mutation", mode="training", tags=("regression", "fuzz", "metadata_mutation", "noncontiguous"))
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
        l0 = randn((8, 2)).double().requires_grad_()
        return Inputs((l0.clone()[::2],), leaves=(l0,))
    return f, make


@case("metadata_mutation", mode="training", tags=("regression", "metadata_mutation", "alias_of_input"))
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
        l0 = randn((3, 3)).requires_grad_()
        return Inputs((l0.clone(),), leaves=(l0,))
    return f, make


@case("metadata_mutation", mode="training", tags=("regression", "metadata_mutation", "alias_of_intermediate"))
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
        l0 = randn((3, 3)).requires_grad_()
        return Inputs((l0,), leaves=(l0,))
    return f, make


@case("metadata_mutation", mode="training", tags=("regression", "fuzz", "metadata_mutation", "alias_of_input"))
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
        b0 = randn((4, 1)).requires_grad_()
        l1 = randn((2, 1, 3)).requires_grad_()
        return Inputs((b0, l1.clone()), leaves=(b0, l1))
    return f, make


@case("metadata_mutation", mode="training", tags=("regression", "fuzz", "metadata_mutation", "alias_of_intermediate"))
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
        b0 = randn((3, 1)).requires_grad_()
        return Inputs((b0,), leaves=(b0,))
    return f, make


@case("metadata_mutation", mode="inference", tags=("regression", "fuzz", "set_", "non_contiguous"))
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
    return f, lambda: Inputs((randn((8, 3))[::2],))


@case("metadata_mutation", mode="inference", tags=("regression", "fuzz", "set_"))
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
    return f, lambda: Inputs((randn((4,)),))


@case("metadata_mutation", mode="training", tags=("regression", "fuzz", "requires_grad_", "metadata_mutation"))
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


@case("metadata_mutation", mode="training", tags=("regression", "fuzz", "requires_grad_", "metadata_mutation",
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
        l0 = randn((6, 3, 2), 7158).requires_grad_()
        return Inputs((l0.clone()[::2], randn((1, 3), 2207)), leaves=(l0,))
    return f, make


@case("metadata_mutation", mode="inference", tags=("regression", "fuzz", "set_", "requires_grad_"))
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

    return f, lambda: Inputs((randn((3,), 6276), randn((4,), 55567)))


@case("metadata_mutation", mode="inference", tags=("regression", "fuzz", "set_", "metadata_mutation", "aliased_inputs"))
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
        b0 = randn((2, 2, 3), 10912)
        return Inputs((b0, b0))
    return f, make


@case("metadata_mutation", mode="inference", tags=("regression", "fuzz", "set_", "metadata_mutation", "input_mutation"))
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
        return Inputs((randn((2, 4), 294)[1], randn((1, 1, 4), 64).transpose(-2, -1)))
    return f, make


# ---------------------------------------------------------------- from cases_torch_findings


@case("metadata_mutation", mode="inference", tags=("fuzz", "torch_finding", "set_", "no_grad"),
      xfail_engines={"torch": "compile fails (BackendCompilerFailed): 'cannot mutate tensors with frozen "
                              "storage' after a view of an argument is set_ onto the argument and then "
                              "mutated under no_grad; found by aotcheck fuzz seed 7 (no upstream issue "
                              "found)"})
def fuzz_set_view_onto_its_base_then_mutate():
    """A view of an argument ``set_`` onto the argument itself, then mutated in place under
    no_grad: eager adds 2 to the argument; torch.compile's AOT autograd fails while tracing
    the mutation. ``a.set_(b)`` between two distinct arguments followed by ``a.add_(1)``
    compiles and runs right. aotcheck traces it the second way (storage_views.py)."""
    def f(a):
        v = a.view(1, 3)
        v.set_(a)
        with torch.no_grad():
            v.add_(2.0)
        return ()

    def make():
        return Inputs((randn((1, 3), 23),))
    return f, make


@case("metadata_mutation", mode="training", tags=("fuzz", "torch_finding", "metadata_mutation", "python_values"),
      xfail_engines={"torch": "the shape read after an in-place unsqueeze_ of an intermediate is the shape "
                              "before it (Dynamo, any backend): silently wrong, docs/findings.md row 42"})
def fuzz_shape_read_after_in_place_unsqueeze():
    """``v.unsqueeze_(0)`` on an intermediate, then ``v.shape``: under torch.compile the shape is
    the one from before the unsqueeze_ (``torch.Size([3, 2])``, eager ``[1, 3, 2]``), with any
    backend (``backend="eager"`` too), while the tensor itself has the new shape. A view of an
    input or a ``detach()`` of one gives the same. Found by ``aotcheck fuzz --engine torch
    --minutes 10 --seed 31`` (``v1 = a3.detach(); v1.unsqueeze_(0); return (v1.shape,)``)."""
    def f(x):
        v = x * 2
        v.unsqueeze_(0)
        return (v.shape, v + 1)

    def make():
        x = randn((3, 2)).requires_grad_()
        return Inputs((x,), leaves=(x,))
    return f, make


@case("metadata_mutation", mode="training", tags=("fuzz", "torch_finding", "metadata_mutation", "alias_of_intermediate"),
      xfail_engines={"torch": "the intermediate transposed in place comes back as a view created inside the "
                              "compiled Function: mutating it in place raises, docs/findings.md row 45"})
def fuzz_intermediate_transposed_in_place_then_returned():
    """An intermediate transposed in place (``t_``) and returned comes back under torch.compile
    as a view of the compiled Function's output; ``out.mul_(2)`` raises ("Output 0 of
    CompiledFunction is a view and is being modified inplace"), where eager's is an ordinary
    tensor. A custom Function that mutates it (``mark_dirty``) after the ``t_`` fails the same
    way inside the compiled call. The symptom of row 4, reached by a metadata change instead of
    a write through a view. Found by ``aotcheck fuzz --engine torch --minutes 10 --seed 41``
    (``v0 = a0.sum(); v0.t_(); _MulTwoInPlace.apply(v0)``)."""
    def f(x):
        v = x * 2
        v.t_()
        return (v,)

    def make():
        x = randn((2, 3)).requires_grad_()
        return Inputs((x,), leaves=(x,))
    return f, make


@case("metadata_mutation", mode="training", tags=("fuzz", "torch_finding", "metadata_mutation", "custom_function"),
      xfail_engines={"torch": "the custom Function's in-place write of the intermediate after its t_ raises "
                              "'Output 0 of CompiledFunction is a view and is being modified inplace', "
                              "docs/findings.md row 45"})
def fuzz_in_place_custom_function_after_t_of_intermediate():
    """Row 45 inside the compiled call: an intermediate transposed in place, then doubled in place
    by a custom Function (``mark_dirty``). Dynamo breaks the graph at the Function; the first
    graph returns the transposed intermediate as a view of its compiled Function, and the
    Function's in-place write raises. Found by ``aotcheck fuzz --engine torch --seed 41``
    (``v0 = a0.sum(); v0.t_(); _MulTwoInPlace.apply(v0)``)."""
    from .custom_function import DoubleInPlace

    def f(x):
        v = x * 2
        v.t_()
        return (DoubleInPlace.apply(v) + 1,)

    def make():
        x = randn((2, 3)).requires_grad_()
        return Inputs((x,), leaves=(x,))
    return f, make

"""Divergences of PyTorch (torch.compile aot_eager, functorch aot_function) from eager that
``aotcheck fuzz --engine torch`` found, minimized by hand from the fuzzer's reproducers.

aotcheck's engine gets each of them right; ``aotcheck.targets.known_failures`` marks the
PyTorch engines that do not as strict xfails (``xfail_engines`` here says the same per case),
so an upstream fix shows up as an unexpected pass. docs/findings.md has a row per case.
"""
import torch

from .registry import Inputs, case


def _randn(shape, seed=0, dtype=torch.float32):
    return torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def _one_parameter(shape):
    """Inputs of one ``nn.Parameter`` argument (its own leaf)."""
    def make():
        p = torch.nn.Parameter(_randn(shape))
        return Inputs((p,), leaves=(p,))
    return make


@case("regressions", mode="inference", tags=("fuzz", "torch_finding", "input_mutation", "dtypes"),
      xfail_engines={"torch": "the in-place mutation of a 0-dim float64 input is dropped: the input keeps "
                              "its old value and the function reads the stale value, found by aotcheck "
                              "fuzz seed 11 (no upstream issue found)",
                     "torch-aot-function": "returns a list where eager returns a tuple (it gets the "
                                           "mutation right)"})
def fuzz_zero_dim_float64_input_mutation_lost():
    """A 0-dim float64 CPU tensor argument mutated in place. Under torch.compile(aot_eager) the
    mutation is lost: the argument keeps its value and ``a + 1`` reads the old one (eager:
    a == 3, out == 4; compiled: a == 1.5, out == 2.5). float32, or float64 with one dimension,
    is right; backend="eager" and functorch's aot_function are right. The fuzzer's shrunk
    program was ``a0.zero_(); return ()``."""
    def f(a):
        a.mul_(2)
        return (a + 1,)

    def make():
        return Inputs((torch.tensor(1.5, dtype=torch.float64),))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "torch_finding", "aliased_inputs", "mutation", "no_grad"),
      xfail_engines={"torch": "compile fails (BackendCompilerFailed): 'outs_to_grad length (1) != tangents "
                              "length (2)', found by aotcheck fuzz seed 11 (PRIOR_ART lists the same message "
                              "for one tensor passed twice; no upstream issue found)",
                     "torch-aot-function": "returns a list where eager returns a tuple (it runs the "
                                           "function right)"})
def fuzz_transposed_alias_mutated_with_grad_leaf_mutated_under_no_grad():
    """Two aliasing arguments (``a`` and ``a.t()``, no grad) are both mutated, one of them by a
    grad-requiring leaf ``w`` that the function itself mutated under no_grad. torch.compile's
    AOT autograd fails to compile it; without the no_grad mutation of ``w``, or with ``a``
    passed twice instead of with its transpose, it compiles. functorch's aot_function runs it."""
    def f(w, a, b):
        b.zero_()
        with torch.no_grad():
            w.add_(0.5)
        a.mul_(w)
        return ()

    def make():
        w = _randn((), 1).requires_grad_()
        a = _randn((2, 2))
        return Inputs((w, a, a.t()), leaves=(w,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "torch_finding", "aliased_inputs", "alias_of_input"),
      xfail_engines={"torch": "raises 'incorrect out shape after application of ViewMeta sequence: (8,) "
                              "(actual) vs (4,) (expected)': the output view of the mutated argument is "
                              "regenerated from the other, aliasing argument, found by aotcheck fuzz seed 11 "
                              "(same family as pytorch/pytorch#198095, here without any offset)",
                     "torch-aot-function": "raises 'incorrect out shape after application of ViewMeta "
                                           "sequence' (see torch)"})
def fuzz_view_of_mutated_row_input_with_its_base():
    """``f(x[0], x)``: the row is mutated and a view of it returned, while the base is read.
    PyTorch regenerates the output from the base (8 elements) with the row's view sequence
    and fails an assertion; any row, column or diagonal of ``x`` does the same. The fuzzer's
    program reached it through ``a0.t_()`` and a graph break (Dynamo's second graph took the
    view and its transposed base as two inputs); passing them directly needs no break."""
    def f(a, b):
        a.add_(1.0)
        return (a.view(-1), b * 2)

    def make():
        x = _randn((2, 4))
        return Inputs((x[0], x))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "torch_finding", "no_grad", "requires_grad"),
      xfail_engines={"torch": "the output of an op on a no_grad view of a grad-requiring non-leaf argument "
                              "has requires_grad False (eager: True), found by aotcheck fuzz seed 12 (no "
                              "upstream issue found)",
                     "torch-aot-function": "returns a list where eager returns a tuple"})
def fuzz_op_on_no_grad_view_of_grad_nonleaf():
    """In eager, a view taken under no_grad of a grad-requiring *non-leaf* is a leaf that still
    requires grad, so ``v.relu()`` outside the block requires grad (with ReluBackward0; no
    gradient reaches the argument). torch.compile returns it with requires_grad False. With a
    leaf argument both say True. The fuzzer's program also had squeeze_/unsqueeze_ on the
    argument; they are not needed."""
    def f(a):
        with torch.no_grad():
            v = a.t()
        return (v.relu(),)

    def make():
        l0 = _randn((3,)).requires_grad_()
        return Inputs((l0.clone(),), leaves=(l0,))
    return f, make


# -- found by aotcheck fuzz --engine torch with the wider grammar (issue 13) ---------------------

@case("regressions", mode="inference", tags=("fuzz", "torch_finding", "detach", "aliased_inputs"),
      xfail_engines={"torch": "compiled raises 'a view of a leaf Variable that requires grad is being used "
                              "in an in-place operation' on a copy_ into detach() of a view of a "
                              "grad-requiring leaf, which eager allows; found by aotcheck fuzz seed 2026 "
                              "(no upstream issue found)"})
def fuzz_copy_into_detach_of_leaf_view():
    """``a.detach().copy_(b)`` where ``a`` is a row of a leaf that requires grad. The detached
    alias is not a view autograd tracks, so eager writes through it (and the leaf changes);
    torch.compile's traced program raises the leaf-view error. Found with ``a3 = a0`` passed
    twice; one argument and any source suffice."""
    def f(a, b):
        a.detach().copy_(b)
        return ()

    def make():
        x = _randn((2, 3), 21).requires_grad_()
        return Inputs((x[0], _randn((3,), 22)), leaves=(x,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "torch_finding", "set_", "no_grad"),
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
        return Inputs((_randn((1, 3), 23),))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "torch_finding", "custom_function", "cache"),
      xfail_engines={"torch": "(cached run only) AOTAutogradCache bypasses every graph with a custom autograd.Function "
                                "(bypasses=1, nothing saved): a warm start compiles again; found by "
                                "aotcheck fuzz seed 7 (no upstream issue found)"})
def fuzz_custom_function_graph_never_cached():
    """A graph that calls a custom ``autograd.Function`` is never saved by AOTAutogradCache
    (with ``force_autograd_cache`` and ``bundled_autograd_cache``): the cached run reports a
    bypass. Cold results match eager."""
    from .cases_custom_function import Double

    def f(x):
        return (Double.apply(x),)

    def make():
        x = _randn((3,), 25).requires_grad_()
        return Inputs((x,), leaves=(x,))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "torch_finding", "metadata_mutation", "python_values"),
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
        x = _randn((3, 2)).requires_grad_()
        return Inputs((x,), leaves=(x,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "torch_finding", "input_mutation", "as_strided"),
      xfail_engines={"torch": "compile fails (BackendCompilerFailed): 'as_strided_scatter: ... out of bounds "
                              "for storage of size 4', docs/findings.md row 43"})
def fuzz_as_strided_of_an_element_argument_mutated():
    """An argument that is one element of a base (``b[1]``, storage offset 1), viewed with
    ``as_strided`` at storage offset 0 so that the view covers the whole storage, then mutated
    through that view: eager doubles ``b[0]`` and ``b[1]``. AOT autograd writes the mutation back
    with ``as_strided_scatter`` onto the argument itself, whose one element is too small for the
    view, and compiling fails ("requiring a storage size of 8 are out of bounds for storage of
    size 4"); aot_function too. Found by ``aotcheck fuzz --engine torch --minutes 10 --seed 31``
    (``as_strided``, ``squeeze``, ``clamp_``)."""
    def f(x, b):
        x.as_strided((2,), (1,), 0).mul_(2)
        return (b + 0,)

    def make():
        b = torch.arange(2.0)
        return Inputs((b[1], b))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "torch_finding", "aliased_inputs", "no_grad"),
      xfail_engines={"torch": "compile fails (BackendCompilerFailed): 'any_leaf=True != all_leaf=False for "
                              "outer_indices=[0, 1]', docs/findings.md row 44"})
def fuzz_leaf_and_its_transpose_both_mutated_under_no_grad():
    """A grad-requiring leaf passed twice, as itself and as its transpose, both mutated under
    ``no_grad``: compiling fails on an internal assertion, ``any_leaf=True != all_leaf=False for
    outer_indices=[0, 1]`` (the synthetic base of the two aliases mixes a leaf and a view of it);
    aot_function too. Eager multiplies the leaf by 4. Found by ``aotcheck fuzz --engine torch
    --minutes 10 --seed 41`` (``clamp_`` under no_grad, ``a3[:] = a0`` under inference_mode)."""
    def f(a, at):
        with torch.no_grad():
            a.mul_(2)
            at.mul_(2)
        return (a + 0,)

    def make():
        a = _randn((3, 4)).requires_grad_()
        return Inputs((a, a.t()), leaves=(a,))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "torch_finding", "metadata_mutation", "alias_of_intermediate"),
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
        x = _randn((2, 3)).requires_grad_()
        return Inputs((x,), leaves=(x,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "torch_finding", "input_mutation", "as_strided"),
      xfail_engines={"torch": "compile refuses it: 'encountered a mutation on a view chain of length 2, where "
                              "view 1 was an as_strided() call' (pytorch/pytorch#104505), docs/findings.md row 46"})
def fuzz_as_strided_of_a_transpose_mutated():
    """``x.t().as_strided((2,), (1,), 0).add_(1)``: an as_strided of a view, mutated. torch.compile
    refuses it by name ("as_strided() is non-compositional, and therefore is not possible to
    functionalize properly today"), as PyTorch decided in #122502 after the wrong results of
    #104505; aot_function too. Eager adds 1 to the first two elements of the storage. Found by
    ``aotcheck fuzz --engine torch --minutes 10 --seed 41`` (``t``, ``as_strided``, a slice,
    ``add_``)."""
    def f(x):
        x.t().as_strided((2,), (1,), 0).add_(1)
        return (x * 1,)

    def make():
        return Inputs((_randn((2, 2)),))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "torch_finding", "metadata_mutation", "custom_function"),
      xfail_engines={"torch": "the custom Function's in-place write of the intermediate after its t_ raises "
                              "'Output 0 of CompiledFunction is a view and is being modified inplace', "
                              "docs/findings.md row 45"})
def fuzz_in_place_custom_function_after_t_of_intermediate():
    """Row 45 inside the compiled call: an intermediate transposed in place, then doubled in place
    by a custom Function (``mark_dirty``). Dynamo breaks the graph at the Function; the first
    graph returns the transposed intermediate as a view of its compiled Function, and the
    Function's in-place write raises. Found by ``aotcheck fuzz --engine torch --seed 41``
    (``v0 = a0.sum(); v0.t_(); _MulTwoInPlace.apply(v0)``)."""
    from .cases_custom_function import DoubleInPlace

    def f(x):
        v = x * 2
        v.t_()
        return (DoubleInPlace.apply(v) + 1,)

    def make():
        x = _randn((2, 3)).requires_grad_()
        return Inputs((x,), leaves=(x,))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "torch_finding", "aliased_inputs", "as_strided", "no_grad"),
      xfail_engines={"torch": "compile fails (BackendCompilerFailed): 'outs_to_grad length (2) != tangents "
                              "length (1)', docs/findings.md row 50"})
def fuzz_overlapping_view_of_grad_leaf_used_while_another_view_is_zeroed():
    """Two views of one grad-requiring leaf passed as arguments: an overlapping ``as_strided``
    view (a stride 0) that the function uses, and a row that it zeroes under ``no_grad``.
    Compiling fails on the internal assertion ``outs_to_grad length (2) != tangents length (1)``;
    with a graph break before the use (how the fuzzer found it: a custom Function broke the
    graph), the compiled call raises 'a leaf Variable that requires grad is being used in an
    in-place operation' instead. Eager zeroes the row and gives the leaf its gradient. Found by
    ``aotcheck fuzz --engine torch --minutes 10 --seed 51``."""
    def f(v0, a1):
        v1 = v0.relu()
        with torch.no_grad():
            a1.zero_()
        return (v1,)

    def make():
        b0 = _randn((2, 3, 1, 4), dtype=torch.float64).requires_grad_()
        return Inputs((b0.as_strided((3, 3), (2, 0), 12), b0[1]), leaves=(b0,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "torch_finding", "set_", "alias_of_input"),
      xfail_engines={"torch": "the intermediate set_ onto the argument comes back as the argument itself "
                              "(out is a), docs/findings.md row 51"})
def fuzz_intermediate_set_onto_argument_returned():
    """``v = a * 2; v.set_(a); return v``: eager's ``v`` is its own tensor object over ``a``'s
    storage; torch.compile returns ``a`` itself (``out is a``), so a later ``out.t_()`` would
    transpose the caller's argument. Found by ``aotcheck fuzz --engine torch --minutes 10
    --seed 51`` (``v0 = torch.rand_like(a1)``, ``v0.set_(a1)`` under no_grad; the dropped draw
    is row 32)."""
    def f(a):
        v = a * 2
        v.set_(a)
        return (v,)

    def make():
        return Inputs((_randn((2, 4)),))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "torch_finding", "no_grad", "graph_break"),
      xfail_engines={"torch": "silently wrong gradient: a no_grad view of a grad-requiring leaf that reaches a "
                              "graph after a graph break gets the leaf a gradient (eager: None), "
                              "docs/findings.md row 53"})
def fuzz_no_grad_view_of_a_leaf_used_after_a_graph_break():
    """``v = w[0]`` under ``no_grad`` (no gradient path to ``w``), a graph break, then ``x * v``:
    under torch.compile(aot_eager) ``w.grad`` is filled with ``x``'s values, where eager's stays
    None; ``backend="eager"`` is right, so the graph after the break (AOT autograd, given ``v``
    as an input) treats the view as differentiable. Found by ``aotcheck fuzz --engine torch
    --minutes 10 --seed 52`` (a custom Function broke the graph; ``diagonal`` under no_grad,
    then ``copy_``)."""
    def f(x, w):
        with torch.no_grad():
            v = w[0]
        torch._dynamo.graph_break()
        return (x * v,)

    def make():
        x, w = _randn((3,), 1).requires_grad_(), _randn((2, 3), 2).requires_grad_()
        return Inputs((x, w), leaves=(x, w))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "torch_finding", "multi_output_view", "no_grad",
                                               "parameter"),
      xfail_engines={"torch": "compile fails: 'Output 0 of Split is a view and its base ... has been "
                              "modified inplace' for chunk views returned after a no_grad write of "
                              "their base (docs/findings.md row 52)",
                     "torch-aot-function": "compile fails: 'Output 0 of Split is a view and its base "
                                           "... has been modified inplace' (docs/findings.md row 52)"})
def fuzz_chunks_of_a_parameter_mutated_under_no_grad_returned():
    """Row 52: ``chunk`` views of a parameter, the parameter written under no_grad, the views
    returned. Eager runs it; reading a view's ``grad_fn`` (or building a loss from it) raises
    afterwards, since autograd cannot rebuild a multi-output view whose base changed. Compile
    fails ('Output 0 of Split is a view and its base ... has been modified inplace'); so did
    aotcheck's tracer, until it returned the same kind of view (NOTE [poisoned views]). Found
    by ``aotcheck fuzz --engine torch --seed 41`` and 51; ``unbind`` is the same."""
    def f(p):
        v = p.chunk(2, 0)
        with torch.no_grad():
            p.add_(-1.0)
        return v

    return f, _one_parameter((2, 2))


@case("regressions", mode="inference", tags=("fuzz", "torch_finding", "multi_output_view", "no_grad",
                                               "parameter"),
      xfail_engines={"torch": "compile fails: 'Output 0 of Unbind is a view and its base ... has been "
                              "modified inplace' (docs/findings.md row 52, unbind)",
                     "torch-aot-function": "compile fails: 'Output 0 of Unbind is a view and its base "
                                           "... has been modified inplace' (docs/findings.md row 52)"})
def fuzz_unbind_of_a_parameter_mutated_under_no_grad_returned():
    """Row 52 with ``unbind``: the same cause, another multi-output view op."""
    def f(p):
        v = p.unbind(0)
        with torch.no_grad():
            p.add_(-1.0)
        return v

    return f, _one_parameter((2, 2))


@case("regressions", mode="training", tags=("fuzz", "multi_output_view", "inference_mode"),
      xfail_engines={"torch": "crashes the process (it may, so it is recorded, not run): compile fails "
                              "with 'Cannot set version_counter for inference tensor' (a view made in "
                              "inference_mode, docs/findings.md row 38), and after that failed compile "
                              "the process is broken (row 39)",
                     "torch-aot-function": "compile fails: 'Cannot set version_counter for inference "
                                           "tensor' for a view made inside inference_mode (docs/findings.md "
                                           "row 38)"})
def fuzz_views_made_in_inference_mode_returned_after_their_base_is_written():
    """A view made inside inference_mode of a tensor that requires grad, its base written
    afterwards in normal mode: eager returns it, and reading its grad_fn raises ('A view was
    created in inference mode and its base ... has been modified inplace in normal mode').
    Found by aotcheck fuzz --engine aotcheck --extensions all --seed 20."""
    def f(a):
        v = a.view(2)
        with torch.inference_mode():
            pieces = v.chunk(2, 0)
        v.fill_(1.0)
        return pieces, a * 2

    def make():
        w = _randn((2,)).requires_grad_()
        return Inputs((w.clone(),), leaves=(w,))
    return f, make


@case("regressions", mode="training", tags=("fuzz", "torch_finding", "aliased_inputs", "metadata_mutation",
                                             "graph_break"),
      xfail_engines={"torch": "Dynamo fails (any backend, backend='eager' too): 'AssertionError: False != "
                              "True' in the fake-tensor metadata check of an aliased argument whose "
                              "base came to require grad through its sibling (docs/findings.md row 54)",
                     "dynamo-aotcheck": "Dynamo fails before any backend runs: 'AssertionError: False "
                                        "!= True' (docs/findings.md row 54)",
                     "torch-aot-function": "backward: only compiled raises 'one of the variables needed "
                                           "for gradient computation has been modified by an inplace "
                                           "operation' (docs/findings.md row 54)"})
def fuzz_sibling_row_written_with_a_grad_value_after_squeeze_():
    """Two rows of one tensor, the first squeeze_d in place (a graph break), then a value that
    requires grad written into the second: their base now requires grad, and so does the
    first row; Dynamo fakes it as not requiring grad and its own check fails
    (``assert_metadata_eq``: ``False != True``). Found by ``aotcheck fuzz --engine torch
    --minutes 10 --seed 61`` (4 statements)."""
    def f(a0, a1, a2):
        v0 = torch.matmul(a2, a2)
        a0.squeeze_(2)
        a1[:, 0] = v0
        return torch.matmul(a1, a0.mT)

    def make():
        b0 = _randn((2, 4, 1, 4), 1, torch.float64)
        w = _randn((1,), 2, torch.float64).requires_grad_()
        return Inputs((b0[0], b0[1], w.clone()), leaves=(w,))
    return f, make


@case("regressions", mode="inference", tags=("fuzz", "torch_finding", "set_", "alias_of_intermediate"),
      xfail_engines={"torch": "compile fails: 'expand: attempting to expand a dimension of length 3 -> 1' "
                              "after a view of an intermediate is set_() onto the argument and written "
                              "through (docs/findings.md row 55)",
                     "torch-aot-function": "compile fails: 'expand: attempting to expand a dimension of "
                                           "length 3 -> 1' (docs/findings.md row 55)"})
def fuzz_view_of_intermediate_set_onto_argument_then_written():
    """``v = x.relu().diagonal(0, 0, 1)``, ``v.set_(x)``, then ``v[:] = ...``: eager writes
    the argument through ``v``. Compile fails in AOT autograd (``backend="eager"`` passes):
    functionalization replays ``v``'s ``diagonal`` on the swapped storage. Found by ``aotcheck
    fuzz --engine torch --minutes 10 --seed 61`` (the enable_grad region was not needed)."""
    def f(x):
        r = x.relu()
        v = r.diagonal(0, 0, 1)
        v.set_(x)
        v[:] = r
        return ()
    return f, lambda: Inputs((_randn((1, 1, 3), 3),))


@case("regressions", mode="training", tags=("fuzz", "multi_output_view", "no_grad"),
      xfail_engines={"torch": "compile fails: 'A view was created in no_grad mode and its base ... has "
                              "been modified inplace with grad mode enabled' (row 52's cause: "
                              "docs/findings.md row 52)",
                     "torch-aot-function": "compile fails: 'A view was created in no_grad mode and its "
                                           "base ... has been modified inplace with grad mode enabled' "
                                           "(docs/findings.md row 52)"})
def fuzz_views_made_under_no_grad_returned_after_their_base_is_written():
    """``chunk`` views of a tensor that requires grad, taken under no_grad, then the tensor
    written in place with grad mode on: eager returns the views, and reading their grad_fn
    raises ('A view was created in no_grad mode and its base ... has been modified inplace with
    grad mode enabled'; NOTE [poisoned views]). Found by the CI fuzz test's seed 5 with the
    whole wider grammar."""
    def f(a, w):
        with torch.no_grad():
            pieces = a.chunk(2, 0)
        a.mul_(w)
        return pieces

    def make():
        x, w = _randn((4, 2), 1).requires_grad_(), _randn((4, 2), 2)
        return Inputs((x.clone(), w), leaves=(x,))
    return f, make


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
        lx = TwoTensor(_randn((3,), 1), _randn((3,), 2)).requires_grad_()
        y = _randn((3,), 3).requires_grad_()
        return Inputs((lx.clone(), y), leaves=(lx, y))
    return f, make

"""Corpus theme ``alias_of_input``: outputs that are views of the arguments (made under grad,
``no_grad`` or ``inference_mode``, multi-output views such as ``unbind`` and ``chunk``,
``as_strided``): the compiled outputs share the argument's storage as eager's do, with eager's
grad_fn, version counter and view metadata.

Where a case came from is a tag, not a module: ``regression`` (a minimized reproducer of a bug
aotcheck's engine had, most found by ``aotcheck fuzz``), ``fuzz`` (found by the fuzzer),
``torch_finding`` (a divergence of PyTorch's own AOTAutograd from eager that the fuzzer found;
docs/findings.md has a row per case, and ``xfail_engines`` names the torch engines that fail it),
``issue:N`` (restated from PyTorch's issue N).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from .builders import leaf, one_leaf as _one_leaf, one_parameter, rand, randn, seeded
from .registry import Inputs, case


# ---------------------------------------------------------------- from cases_alias


@case("alias_of_input", mode="inference")
def view_of_input():
    return (lambda x: x.view(-1)), _one_leaf(2, 3)


@case("alias_of_input", mode="inference")
def t_of_input():
    return (lambda x: x.t()), _one_leaf(2, 3)


@case("alias_of_input", mode="inference")
def slice_of_input():
    return (lambda x: x[1:, ::2]), _one_leaf(3, 4)


@case("alias_of_input", mode="inference")
def select_of_input():
    return (lambda x: x[1]), _one_leaf(3, 4)


@case("alias_of_input", mode="inference")
def diagonal_of_input():
    return (lambda x: x.diagonal()), _one_leaf(3, 3)


@case("alias_of_input", mode="inference")
def expand_of_input():
    return (lambda x: x.expand(3, 4)), _one_leaf(1, 4)


@case("alias_of_input", mode="inference")
def as_strided_of_input():
    return (lambda x: x.as_strided((2, 2), (1, 2), 1)), _one_leaf(6)


@case("alias_of_input", mode="inference")
def permute_unsqueeze_chain():
    return (lambda x: x.permute(1, 0).unsqueeze(0)[:, 1:]), _one_leaf(2, 3)


@case("alias_of_input", mode="inference", tags=("several",))
def several_views_of_input():
    def f(x):
        return x.view(-1), x.t(), x[0]
    return f, _one_leaf(2, 3)


@case("alias_of_input", mode="inference", tags=("several",))
def views_of_two_inputs():
    def f(x, y):
        return y[0], x.t(), y.view(-1)
    def make():
        x, y = leaf(2, 2), leaf(3, 2)
        return Inputs((x, y), leaves=(x, y))
    return f, seeded(make)


@case("alias_of_input", mode="inference", tags=("mutation",))
def mutate_then_view():
    def f(x):
        x.mul_(2)
        return x.view(-1)
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("alias_of_input", mode="inference", tags=("mutation",))
def view_then_mutate_base():
    def f(x):
        v = x[0]
        x.add_(1)
        return v
    return f, seeded(lambda: Inputs((rand(2, 3),)))


@case("alias_of_input", mode="inference", tags=("multi_output_view",))
def unbind_of_input():
    return (lambda x: x.unbind(0)), _one_leaf(3, 2)


@case("alias_of_input", mode="inference", tags=("multi_output_view",))
def split_of_input():
    return (lambda x: x.split(2)), _one_leaf(5, 2)


@case("alias_of_input", mode="inference", tags=("multi_output_view",))
def chunk_of_input_dim1():
    return (lambda x: x.chunk(2, dim=1)), _one_leaf(2, 4)


@case("alias_of_input", mode="inference", tags=("is_input",))
def return_input_itself():
    return (lambda x: x), _one_leaf(3)


@case("alias_of_input", mode="inference", tags=("is_input",))
def return_input_twice_and_view():
    def f(x):
        return x, x, x[1:]
    return f, _one_leaf(3)


@case("alias_of_input", mode="inference", tags=("detach",))
def detach_returned():
    return (lambda x: x.detach()), _one_leaf(3)


@case("alias_of_input", mode="training", tags=("fresh",))
def view_and_fresh():
    def f(x):
        return x.view(-1), x * 2
    return f, _one_leaf(2, 2)


@case("alias_of_input", mode="inference", tags=("nonleaf",))
def view_of_grad_nonleaf():
    def f(a):
        return a.t()
    def make():
        x = leaf(2, 3)
        return Inputs((x * 1,), leaves=(x,))
    return f, seeded(make)


@case("alias_of_input", mode="inference", tags=("multi_output_view", "nonleaf"))
def rows_of_grad_nonleaf_returned_beside_its_flat_view():
    """The rows of an argument (one multi-output view, unbind) returned beside another view of
    it: every output must stay a view of the argument to autograd, so the flat view can be
    written in place as eager's can (torch hides only an argument's multi-output views that no
    other output aliases; found by the mutation harness, mutant meta-multi-output-view)."""
    def f(a):
        r0, r1 = a.unbind(0)
        return r0, r1, a.view(-1)
    def make():
        x = leaf(2, 3)
        return Inputs((x * 1,), leaves=(x,))
    return f, seeded(make)


@case("alias_of_input", mode="inference", tags=("is_input",))
def dropout_eval_returns_input():
    def f(x):
        return F.dropout(x, p=0.5, training=False)
    return f, _one_leaf(4)


@case("alias_of_input", mode="inference", tags=("no_grad",))
def view_under_no_grad_region():
    def f(x):
        with torch.no_grad():
            v = x.view(-1)
        return v
    return f, _one_leaf(2, 2)


@case("alias_of_input", mode="training", tags=("noncontiguous",))
def reshape_of_noncontiguous_copies():
    def f(x):
        return x.reshape(-1), x.reshape(x.shape)
    def make():
        b = leaf(3, 2)
        return Inputs((b.t(),), leaves=(b,))
    return f, seeded(make)


@case("alias_of_input", mode="inference", tags=("is_input",))
def ops_that_return_self():
    def f(x):
        return x.contiguous(), x.to(torch.float32), x.type_as(x)
    return f, _one_leaf(2, 2)


@case("alias_of_input", mode="inference", tags=("unsafe_view",))
def unsafe_split_of_input():
    """Issue 11, class 11: unsafe_split/unsafe_chunk return pieces of their input that
    autograd does not track as views; eager's outputs share the input's storage, the
    functional graph copied them (mutating one did not change the input)."""
    def f(x):
        a, b = x.unsafe_split(2)
        return a, b, x.unsafe_chunk(2, 1)[1]
    def make():
        x = leaf(4, 4)
        return Inputs((x.clone(),), leaves=(x,))
    return f, seeded(make)


@case("alias_of_input", mode="inference", tags=("unsafe_view",))
def unsafe_chunk_of_input_no_grad():
    return (lambda x: x.unsafe_chunk(3)), seeded(lambda: Inputs((rand(6, 2),)))


@case("alias_of_input", mode="inference", tags=("empty",))
def empty_slice_of_input():
    return (lambda x: (x[:0], x[1:])), _one_leaf(3)


@case("alias_of_input", mode="inference", tags=("noncontiguous",))
def views_of_transposed_grad_input():
    def f(x):
        return x[0], x.t()
    def make():
        b = leaf(3, 2)
        return Inputs((b.t(),), leaves=(b,))
    return f, seeded(make)


@case("alias_of_input", mode="inference", tags=("mutation",))
def mutate_then_expand():
    def f(x):
        x.add_(1)
        return x.expand(3, 4)
    return f, seeded(lambda: Inputs((rand(1, 4),)))


@case("alias_of_input", mode="inference")
def view_as_and_reshape_of_self():
    def f(x):
        return x.view_as(x), x.reshape(x.shape)
    return f, _one_leaf(3)


@case("alias_of_input", mode="training", tags=("as_strided", "non_contiguous", "nonleaf"))
def as_strided_of_a_strided_argument_reaches_outside_it():
    """``a = b[::2]`` (a non-leaf that requires grad), then ``a.as_strided(...)`` onto storage
    elements ``a`` does not reach (``b[3]``): eager reads them. The traced copy of ``a`` held
    only ``a``'s own elements, so the view read uninitialised memory (fuzz seed 21, all
    extensions); those elements get no gradient, in eager too."""
    def f(a):
        v = a.as_strided((1, 2), (9, 3), 0)
        with torch.no_grad():
            with torch.enable_grad():
                s = v.sigmoid()
        return s, a * 2
    def make():
        w = leaf(4)
        return Inputs((w.clone()[::2],), leaves=(w,))
    return f, seeded(make)


# ---------------------------------------------------------------- from cases_regressions


@case("alias_of_input", mode="inference", tags=("regression", "fuzz", "no_grad", "alias_of_input"))
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
        l2 = randn((1, 1)).requires_grad_()
        return Inputs((l2.clone(),), leaves=(l2,))
    return f, make


@case("alias_of_input", mode="inference", tags=("regression", "fuzz", "no_grad", "multi_output_view"))
def fuzz_unbind_under_no_grad_returned():
    """An unbind output taken under no_grad is a leaf in eager; the engine rebuilt it as a
    multi-output view with grad mode on, which gave it a grad_fn."""
    def f(a0):
        with torch.no_grad():
            v0 = a0.unbind(0)[0]
        return (v0,)

    def make():
        l0 = randn((1, 1)).requires_grad_()
        return Inputs((l0.clone(),), leaves=(l0,))
    return f, make


@case("alias_of_input", mode="training", tags=("regression", "fuzz", "alias_of_input", "noncontiguous"))
def fuzz_reshape_of_strided_nonleaf_is_a_copy():
    """reshape of a strided slice copies in eager. A compact copy of the argument inside the
    trace made it a view: wrong aliasing and wrong values. Found by the CI property test."""
    def f(a0):
        v0 = a0.view((2, 2))
        return (v0.reshape((4,)),)

    def make():
        l0 = randn((4, 2)).requires_grad_()
        return Inputs((l0.clone()[::2],), leaves=(l0,))
    return f, make


@case("alias_of_input", mode="inference", tags=("regression", "fuzz", "alias_of_input", "noncontiguous"))
def fuzz_as_strided_outside_strided_nonleaf_gets_no_grad():
    """as_strided with a storage offset that points outside the argument (a strided slice of
    a non-leaf). Eager's AsStridedBackward drops the gradient of elements outside its input;
    the engine rebuilt the output from the argument's base and sent it through."""
    def f(a0):
        v0 = a0.view((1,))
        return (v0.as_strided((1,), (1,), 1),)

    def make():
        l0 = randn((2, 1)).requires_grad_()
        return Inputs((l0.clone()[::2],), leaves=(l0,))
    return f, make


@case("alias_of_input", mode="inference", tags=("regression", "fuzz", "as_strided", "unbind", "alias_of_input"))
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
        b0 = randn((4, 4, 3), 23877).requires_grad_()
        return Inputs((b0,), leaves=(b0,))
    return f, make


@case("alias_of_input", mode="inference", tags=("regression", "fuzz", "as_strided", "inference_mode",
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
        l0 = randn((4,), 63237).requires_grad_()
        b1 = randn((2,), 1357).double()
        return Inputs((l0.clone()[::2], b1[1]), leaves=(l0,))
    return f, make


@case("alias_of_input", mode="training", tags=("regression", "fuzz", "as_strided", "non_contiguous",
                                            "mutation", "alias_of_input"))
def fuzz_grad_write_through_as_strided_reaching_outside_a_strided_argument():
    """The grad-mode twin of the case above: ``a0.as_strided(...).mul_(w)`` writes b0[1],
    outside a0, and autograd records it on b0; the gradient of b0[1] flows through the write."""
    def f(a0, a2):
        v0 = a0.as_strided((1, 2), (3, 1), 0)
        v0.mul_(a2)
        return (v0, a0 * 2)

    def make():
        l0 = randn((4,), 5).requires_grad_()
        return Inputs((l0.clone()[::2], randn((2,), 6)[1]), leaves=(l0,))
    return f, make


@case("alias_of_input", mode="inference", tags=("regression", "fuzz", "no_grad", "unbind", "split",
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
        b0 = randn((), 104).requires_grad_()
        return Inputs((b0,), leaves=(b0,))
    return f, make


@case("alias_of_input", mode="inference", tags=("regression", "fuzz", "set_", "alias_of_input", "non_contiguous"))
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
        return Inputs((randn((2, 2), 16915)[1], randn((2, 2), 17607)[::2]))
    return f, make


@case("alias_of_input", mode="inference", tags=("regression", "fuzz", "requires_grad_", "alias_of_input", "detach"))
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
        p = torch.nn.Parameter(randn((), 33697))
        return Inputs((p,), leaves=(p,))
    return f, make


# ---------------------------------------------------------------- from cases_torch_findings


@case("alias_of_input", mode="training", tags=("fuzz", "torch_finding", "no_grad", "requires_grad"),
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
        l0 = randn((3,)).requires_grad_()
        return Inputs((l0.clone(),), leaves=(l0,))
    return f, make


@case("alias_of_input", mode="inference", tags=("fuzz", "torch_finding", "set_", "alias_of_input"),
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
        return Inputs((randn((2, 4)),))
    return f, make


@case("alias_of_input", mode="training", tags=("fuzz", "torch_finding", "no_grad", "graph_break"),
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
        x, w = randn((3,), 1).requires_grad_(), randn((2, 3), 2).requires_grad_()
        return Inputs((x, w), leaves=(x, w))
    return f, make


@case("alias_of_input", mode="inference", tags=("fuzz", "torch_finding", "multi_output_view", "no_grad",
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

    return f, one_parameter((2, 2))


@case("alias_of_input", mode="inference", tags=("fuzz", "torch_finding", "multi_output_view", "no_grad",
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

    return f, one_parameter((2, 2))


@case("alias_of_input", mode="training", tags=("torch_finding", "fuzz", "multi_output_view", "inference_mode"),
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
        w = randn((2,)).requires_grad_()
        return Inputs((w.clone(),), leaves=(w,))
    return f, make


@case("alias_of_input", mode="training", tags=("torch_finding", "fuzz", "multi_output_view", "no_grad"),
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
        x, w = randn((4, 2), 1).requires_grad_(), randn((4, 2), 2)
        return Inputs((x.clone(), w), leaves=(x,))
    return f, make

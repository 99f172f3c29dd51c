"""Corpus theme ``real_world``: whole programs as real code writes them, several behaviours in one
function: a training step, a model with hooks, an optimizer-like update (issue 27).

Each case restates, in code of our own, the program of one issue or pull-request thread on
github.com/pytorch/pytorch (AOTAutograd, functionalization and torch.compile correctness
reports); the case's name starts with the thread's number and its tags hold ``issue:N``.
The classes are those issue 27 lists: imperative autograd inside the function or around the
call (``retain_grad``, tensor and module hooks, ``saved_tensors_hooks``,
``torch.autograd.grad``), ``.data`` assignment, leaves made inside, custom
``autograd.Function`` backwards that mutate, ``torch.func`` transforms inside,
``torch.library`` custom ops that mutate, ``out=`` that resizes, in-place ops on overlapping
memory, storage changes on views, and output strides.

Effects the oracle could not see before are made visible either by the oracle itself (the
``.grad`` of outputs and arguments that retain their grad is compared) or by the case returning
what a hook recorded. ``saved_tensors_hooks`` around the call is the call mode
``CallMode.SAVED_TENSORS_HOOKS`` (``harness.call_mode``): its unpack hook doubles every saved
tensor, so a compiled function that skips it gets other gradients.

A case that aotcheck's engine gets wrong today carries ``xfail`` with the failure named (silently
wrong / internal error TYPE / refusal).

Where a case came from is a tag, not a module: ``regression`` (a minimized reproducer of a bug
aotcheck's engine had, most found by ``aotcheck fuzz``), ``fuzz`` (found by the fuzzer),
``torch_finding`` (a divergence of PyTorch's own AOTAutograd from eager that the fuzzer found;
docs/findings.md has a row per case, and ``xfail_engines`` names the torch engines that fail it),
``issue:N`` (restated from PyTorch's issue N).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.func import grad
from .builders import leaf
from .registry import CallMode, Inputs, case


THEME = "real_world"


# Known failures of aotcheck's engine, by case name: "silently wrong: ...", "internal error
# (TYPE ...)", or "refusal: ERROR ..." (a named error, or a TraceError, for a program eager
# runs). Each is a strict xfail in every test that runs the engine on the case, so a fix
# shows up as an unexpected pass: remove the entry then.
AOTCHECK_FAILURES: dict[str, str] = {}


def _case(*, mode, tags, call=CallMode.GRAD):
    """``case`` in this theme, with the case's known aotcheck failure from the table above."""
    def deco(builder):
        return case(THEME, mode=mode, call=call, tags=tags,
                    xfail=AOTCHECK_FAILURES.get(builder.__name__))(builder)
    return deco


def _randn(shape, seed=0, dtype=torch.float32):
    return torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def _leaves(*shapes, seed=0):
    """Inputs of fresh leaves that require grad (each its own leaf)."""
    def make():
        ts = tuple(_randn(s, seed + k).requires_grad_() for k, s in enumerate(shapes))
        return Inputs(ts, leaves=ts)
    return make


def _plain(*shapes, seed=0):
    def make():
        return Inputs(tuple(_randn(s, seed + k) for k, s in enumerate(shapes)))
    return make


def _tags(issue: int, *cls):
    return ("real_world", f"issue:{issue}") + tuple(cls)


@torch.library.custom_op("aotcheck_rw::two_inplace", mutates_args={"x1", "x2"})
def _two_inplace(x1: torch.Tensor, x2: torch.Tensor) -> None:
    x1.add_(1)
    x2.add_(2)


@torch.library.custom_op("aotcheck_rw::sum_into", mutates_args={"out"})
def _sum_into(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    out.copy_(a + b + 2)


@torch.library.custom_op("aotcheck_rw::add_into", mutates_args=("d",))
def _add_into(d: torch.Tensor, x: torch.Tensor) -> None:
    d.add_(x)


@_add_into.register_fake
def _add_into_fake(d, x):
    return None


@torch.library.custom_op("aotcheck_rw::scale_list", mutates_args=("outs",),
                         schema="(Tensor x, Tensor(a!)[]? outs) -> Tensor")
def _scale_list(x, outs):
    if outs is not None:
        for o in outs:
            o.mul_(2)
    return x + 1


@_scale_list.register_fake
def _scale_list_fake(x, outs):
    return torch.empty_like(x)


@torch.library.custom_op("aotcheck_rw::set_data", mutates_args=["param"])
def _set_data(param: torch.Tensor, new_data: torch.Tensor) -> None:
    param.set_(new_data)


@_set_data.register_fake
def _set_data_fake(param, new_data):
    param.set_(new_data)
    return None


class _SinZeroBackward(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return torch.sin(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)
        ctx.save_for_forward(*inputs)

    @staticmethod
    def backward(ctx, grad):
        return torch.zeros_like(grad)

    @staticmethod
    def jvp(ctx, dx):
        return torch.zeros_like(dx)


class _MutateSavedInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, offsets):
        ctx.save_for_backward(offsets)
        return x * 2

    @staticmethod
    def backward(ctx, grad_out):
        offsets, = ctx.saved_tensors
        offsets.add_(grad_out)
        return grad_out.clone(), None


class _MutateBufInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, buf):
        ctx.save_for_backward(buf)
        return x * buf.mean()

    @staticmethod
    def backward(ctx, grad_output):
        buf, = ctx.saved_tensors
        buf.mul_(2.0)
        return grad_output * buf.mean(), None


class _InplaceAcrossForwardBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, dummy, inplace_tensor):
        inplace_tensor.add_(1)
        ctx.inplace_tensor = inplace_tensor
        return dummy.clone()

    @staticmethod
    def backward(ctx, grad_output):
        ctx.inplace_tensor.add_(grad_output * 0 + 1)
        return grad_output, None


class _CopyGradInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone(), x.clone()

    @staticmethod
    def backward(ctx, grad1, grad2):
        return grad1.copy_(grad2)


class _Bilinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b + a + b

    @staticmethod
    def backward(ctx, go):
        a, b = ctx.saved_tensors
        return go * (b + 1), go * (a + 1)


class _InplaceInForward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x * 2
        y += 1
        return y

    @staticmethod
    def backward(ctx, g):
        return g * 2


# ---------------------------------------------------------------- from cases_real_world


@_case(mode="training", tags=_tags(91468, "retain_grad"))
def i91468_retain_grad_on_returned_intermediates():
    """retain_grad() on two intermediates that are returned; their .grad after backward must
    be eager's (torch.compile and aotcheck leave them None)."""
    def f(x):
        y = x.clone()
        y.retain_grad()
        z = y.clone()
        z.retain_grad()
        return z, y
    def make():
        x = torch.tensor(0.75, requires_grad=True)
        return Inputs((x,), leaves=(x,))
    return f, make


@_case(mode="training", tags=_tags(146212, "retain_grad"))
def i146212_retain_grad_on_a_nonleaf_argument():
    """retain_grad() on a non-leaf argument inside the function: its .grad after backward."""
    def f(x, y):
        y.retain_grad()
        return torch.sin(y) + x
    def make():
        x0 = _randn(4, 1).requires_grad_()
        x = _randn(4, 2).requires_grad_()
        return Inputs((x, torch.cos(x0)), leaves=(x, x0))
    return f, make


@_case(mode="training", tags=_tags(172020, "tensor_hook"))
def i172020_hook_on_an_intermediate_adds_one():
    """A tensor hook on an intermediate changes the gradient that flows on (grad + 1)."""
    def f(x):
        y = x * 2
        y.register_hook(lambda g: g + 1)
        return y.sum()
    return f, _leaves((4,))


@_case(mode="inference", tags=_tags(91468, "tensor_hook", "autograd_grad"))
def i91468_hook_on_intermediate_then_autograd_grad():
    """issue 91468's second program: a hook scaling the gradient of an intermediate, then
    torch.autograd.grad inside the function; the result depends on the hook."""
    def f(x):
        y = x * x
        z = y * x * x * x
        y.register_hook(lambda g: 3.0 * g)
        r, = torch.autograd.grad(z, x)
        return r
    def make():
        x = torch.tensor(1.25, requires_grad=True)
        return Inputs((x,), leaves=(x,))
    return f, make


@_case(mode="training", tags=_tags(115750, "module_hook"))
def i115750_module_full_backward_hook():
    """A Linear layer with a full backward hook that doubles grad_input, called inside."""
    layer = torch.nn.Linear(3, 3, bias=False)
    with torch.no_grad():
        layer.weight.copy_(torch.eye(3))
    layer.weight.requires_grad_(False)
    layer.register_full_backward_hook(lambda m, gi, go: tuple(g * 2 for g in gi))

    def f(x):
        return layer(x)
    return f, _leaves((3,), seed=3)


@_case(mode="training", tags=_tags(117758, "module_hook"))
def i117758_forward_hook_records_the_output():
    """A module forward hook writes what it saw into a dict; the function returns it."""
    seen = {}
    lin = torch.nn.Linear(4, 2)
    with torch.no_grad():
        lin.weight.copy_(_randn((2, 4), 5))
        lin.bias.zero_()
    lin.requires_grad_(False)
    lin.register_forward_hook(lambda m, i, o: seen.__setitem__("v", o.sum() * 10))

    def f(x):
        out = lin(x)
        return out, seen["v"]
    return f, _leaves((3, 4), seed=6)


@_case(mode="training", call=CallMode.SAVED_TENSORS_HOOKS, tags=_tags(116221, "saved_tensors_hooks"))
def i116221_saved_tensors_hooks_around_the_call():
    """saved_tensors_hooks active around the call: the unpack hook doubles each saved tensor,
    so the gradients of a * b are doubled in eager."""
    def f(a, b):
        return a * b
    return f, _leaves((), (), seed=7)


@_case(mode="training", tags=_tags(148222, "saved_tensors_hooks"))
def i148222_saved_tensors_hooks_inside_the_function():
    """saved_tensors_hooks entered inside the function: ops in the block save through the
    hooks (unpack adds one), ops outside do not."""
    def f(x, w):
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t + 1):
            y = x * w
        return (y * x).sum()
    return f, _leaves((3,), (3,), seed=8)


@_case(mode="training", tags=_tags(133230, "autograd_grad"))
def i133230_autograd_grad_of_a_polynomial_inside():
    """torch.autograd.grad inside the function: F and dF/dx returned."""
    def f(x):
        F = x ** 3 - 2 * x ** 2 - 3
        dF, = torch.autograd.grad(F, x, grad_outputs=torch.ones_like(F))
        return F, dF
    return f, _leaves((5,), seed=9)


@_case(mode="training", tags=_tags(132929, "autograd_grad"))
def i132929_autograd_grad_wrt_an_intermediate_with_create_graph():
    """A gradient with respect to an intermediate, create_graph=True, used in the loss."""
    def f(x, w1, w2):
        z = x @ w1
        dec = torch.tanh(z @ w2)
        g, = torch.autograd.grad(dec.sum(), z, create_graph=True)
        return dec, g.mean()
    return f, _leaves((2, 3), (3, 4), (4, 3), seed=10)


@_case(mode="training", call=CallMode.NO_GRAD, tags=_tags(114338, "enable_grad"))
def i114338_enable_grad_inside_under_ambient_no_grad():
    """Called under no_grad, the function enables grad for one op: its output requires grad."""
    def f(x):
        with torch.enable_grad():
            out = x + 1
        return out
    return f, _leaves((4,), seed=11)


@_case(mode="inference", tags=_tags(113030, "data_assign"))
def i113030_data_swap_between_arguments():
    """x.data = y, then y.data = an empty tensor: x keeps y's old values."""
    def f(x, y):
        x.data = y
        y.data = torch.zeros(0)
        return x
    return f, _plain((6,), (6,), seed=12)


@_case(mode="inference", tags=_tags(94773, "data_assign"))
def i94773_view_taken_before_data_assignment():
    """A view x[:] taken before x.data = another tensor keeps x's old storage."""
    def f(x):
        xz = x[:]
        x.data = torch.ones(3, 4)
        return xz
    return f, _plain((2, 3), seed=13)


@_case(mode="training", tags=_tags(139152, "data_assign", "no_grad"))
def i139152_parameter_data_replaced_after_its_use():
    """p ** 2 saves p; p.data is then replaced under no_grad (DeepSpeed's gather). .data does
    not bump the version, so eager's backward reads the new data."""
    def f(p, x):
        y = p ** 2
        with torch.no_grad():
            r = torch.ones(p.shape, dtype=p.dtype).mul(3.0)
            p.data = r.data
        return y * x
    def make():
        p = torch.nn.Parameter(_randn((2, 2), 14))
        x = _randn((2, 2), 15)
        return Inputs((p, x), leaves=(p,))
    return f, make


@_case(mode="inference", tags=_tags(152162, "data_assign", "dtypes"))
def i152162_data_assignment_changes_dtype():
    """x.data = x.to(bfloat16) (FSDP's buffer cast): x becomes a bfloat16 tensor."""
    def f(x):
        x.data = x.to(dtype=torch.bfloat16)
        return x * 2
    def make():
        return Inputs((torch.tensor([1.0, 2.0, 3.0]),))
    return f, make


@_case(mode="inference", tags=_tags(191337, "data_assign", "rng"))
def i191337_data_assignment_to_a_transposed_argument_beside_normal_():
    """A transposed argument gets .data of a contiguous tensor; another argument is filled by
    normal_()."""
    def f(x, replacement, weight):
        x.data = replacement
        weight.normal_()
        return x
    def make():
        return Inputs((_randn((4, 3), 16).t(), _randn((3, 4), 17), torch.zeros(3, 4)))
    return f, make


@_case(mode="training", tags=_tags(99455, "leaf_inside", "no_tensor_args"))
def i99455_leaf_made_inside_with_no_arguments():
    """No arguments: a leaf made with requires_grad=True and a value computed from it."""
    def f():
        x = torch.randn(5, 5, requires_grad=True)
        return x, x + 2
    return f, lambda: Inputs(())


@_case(mode="training", tags=_tags(125284, "leaf_inside", "parameter", "no_grad"))
def i125284_parameter_made_inside_then_mutated():
    """nn.Parameter(y) shares y's storage; mutating it under no_grad changes y too."""
    def f(x):
        y = x + 1
        z = torch.nn.Parameter(y)
        with torch.no_grad():
            z.mul_(2)
        return y + z
    def make():
        x = torch.ones(2, requires_grad=True)
        return Inputs((x,), leaves=(x,))
    return f, make


@_case(mode="inference", tags=_tags(90844, "no_grad", "input_mutation"))
def i90844_leaf_argument_mutated_under_no_grad():
    """A leaf that requires grad, mutated in place under no_grad (allowed in eager)."""
    def f(x):
        with torch.no_grad():
            x.add_(1)
        return ()
    return f, _leaves((2,), seed=18)


@_case(mode="training", tags=_tags(128035, "detach", "input_mutation"))
def i128035_detach_then_mutate_a_grad_nonleaf():
    """tmp = a.detach() before a.mul_(2): tmp sees the mutation; a's gradient flows back."""
    def f(a):
        tmp = a.detach()
        a.mul_(2)
        return a, tmp
    def make():
        inp = torch.ones(3, requires_grad=True)
        return Inputs((inp.mul(2),), leaves=(inp,))
    return f, make


@_case(mode="inference", tags=_tags(94851, "torch_func"))
def i94851_torch_func_grad_of_a_quadratic():
    """torch.func.grad of a scalar function, called inside."""
    def f(x):
        return torch.func.grad(lambda t: (0.5 * t ** 2).sum())(x)
    return f, _plain((10,), seed=19)


@_case(mode="inference", tags=_tags(136662, "torch_func", "index_mutation"))
def i136662_torch_func_grad_over_in_place_index_adds():
    """torch.func.grad of a function that adds into a column twice (y[:, 0] += ...)."""
    def g(x):
        y = torch.zeros_like(x)
        y[:, 0] += x[:, 2].abs()
        y[:, 0] += x[:, 2].abs()
        return y.sum()

    def f(x):
        return torch.func.grad(g)(x)
    return f, _plain((2, 3), seed=20)


@_case(mode="inference", tags=_tags(193279, "torch_func", "custom_function"))
def i193279_torch_func_grad_over_a_custom_function():
    """torch.func.grad over a custom Function whose backward returns zeros: eager uses it."""
    def f(x):
        return torch.func.grad(lambda t: _SinZeroBackward.apply(t).sum())(x)
    return f, _plain((4,), seed=21)


@_case(mode="inference", tags=_tags(192985, "torch_func", "custom_function"))
def i192985_torch_func_jvp_over_a_custom_function():
    """torch.func.jvp over a custom Function whose jvp returns zeros: eager uses it."""
    def f(x, dx):
        return torch.func.jvp(_SinZeroBackward.apply, (x,), (dx,))[1]
    return f, _plain((4,), (4,), seed=22)


@_case(mode="inference", tags=_tags(97909, "torch_func", "functional_call"))
def i97909_functional_call_with_zeroed_parameters():
    """torch.func.functional_call of a module with parameters replaced by zeros."""
    lin = torch.nn.Linear(1, 3)

    def f(x):
        params = {k: torch.zeros_like(v) for k, v in lin.named_parameters()}
        return torch.func.functional_call(lin, params, (x,))
    return f, _plain((1, 1), seed=23)


@_case(mode="training", tags=_tags(172956, "custom_function", "backward_mutation"))
def i172956_backward_mutates_a_saved_intermediate_that_is_returned():
    """The backward adds the gradient into a tensor saved for it, which the function
    returned: the caller sees the change after .backward()."""
    def f(x):
        offsets = x.detach().clone()
        out = _MutateSavedInBackward.apply(x, offsets)
        return out.clone(), offsets
    return f, _leaves((6,), seed=24)


@_case(mode="training", tags=_tags(177213, "custom_function", "backward_mutation"))
def i177213_backward_mutates_a_saved_argument():
    """The backward doubles a saved argument (a leaf that requires grad) in place."""
    def f(x, buf):
        return _MutateBufInBackward.apply(x, buf)
    return f, _leaves((5,), (5,), seed=25)


@_case(mode="training", tags=_tags(154820, "custom_function", "backward_mutation"))
def i154820_forward_and_backward_each_add_into_an_argument():
    """The forward adds 1 to an argument, the backward adds 1 more (kept on ctx)."""
    def f(dummy, t):
        return _InplaceAcrossForwardBackward.apply(dummy, t)
    def make():
        d = _randn((2,), 26).requires_grad_()
        return Inputs((d, torch.zeros(2)), leaves=(d,))
    return f, make


@_case(mode="training", tags=_tags(141111, "custom_function", "backward_mutation"))
def i141111_backward_writes_into_its_incoming_gradient():
    """The backward copies one incoming gradient into the other and returns it."""
    def f(x):
        return _CopyGradInBackward.apply(x)
    return f, _leaves((3,), seed=27)


@_case(mode="training", tags=_tags(183604, "custom_function", "aliased_inputs"))
def i183604_custom_function_given_one_tensor_twice():
    """A custom Function applied to (x, x): both gradients accumulate into x."""
    def f(x):
        return _Bilinear.apply(x, x).sum()
    def make():
        x = torch.tensor([0.7, -1.3, 2.1, 0.05, -0.5], requires_grad=True)
        return Inputs((x,), leaves=(x,))
    return f, make


@_case(mode="training", tags=_tags(180642, "custom_function"))
def i180642_in_place_add_inside_a_custom_forward():
    """A custom Function whose forward updates its result in place (y += 1)."""
    def f(x):
        return _InplaceInForward.apply(x) * 3
    return f, _leaves((6,), seed=28)


@_case(mode="inference", tags=_tags(153389, "custom_op", "aliased_inputs"))
def i153389_custom_ops_mutating_rows_of_one_base():
    """Two rows of one tensor mutated by one custom op, then read (a row each) by a second
    op that writes an out argument."""
    def f(x1, x2, out):
        torch.ops.aotcheck_rw.two_inplace(x1, x2)
        torch.ops.aotcheck_rw.sum_into(x1[0], x2[0], out)
        return out
    def make():
        x = _randn((3, 3), 29)
        return Inputs((x[0], x[1], torch.zeros(3, 3)))
    return f, make


@_case(mode="inference", tags=_tags(186807, "custom_op", "input_mutation"))
def i186807_custom_op_adds_into_an_argument():
    """A custom op that adds into its first argument, then a read of it."""
    def f(d, x):
        torch.ops.aotcheck_rw.add_into(d, x)
        return d + 1.0
    return f, _plain((4,), (4,), seed=30)


@_case(mode="inference", tags=_tags(144072, "custom_op", "input_mutation"))
def i144072_custom_op_with_an_optional_mutable_tensor_list():
    """A custom op with an Optional[List[Tensor]] argument it mutates."""
    def f(x, a, b):
        y = torch.ops.aotcheck_rw.scale_list(x, [a, b])
        return y * 2
    return f, _plain((3,), (3,), (2,), seed=31)


@_case(mode="inference", call=CallMode.NO_GRAD, tags=_tags(139257, "custom_op", "set_"))
def i139257_custom_op_that_calls_set_on_a_parameter():
    """A custom op whose body is param.set_(new_data), called under no_grad on an empty
    parameter."""
    def f(param, x):
        x = x * 3
        torch.ops.aotcheck_rw.set_data(param, x)
        return param / 3
    def make():
        return Inputs((torch.nn.Parameter(torch.empty(0)), _randn((3, 3), 32)))
    return f, make


@_case(mode="inference", tags=_tags(98835, "out_resize"))
def i98835_out_argument_resized_from_empty():
    """torch.abs(x, out=y) with y of size 0: y is resized to x's shape."""
    def f(x, y):
        torch.abs(x, out=y)
        return ()
    def make():
        return Inputs((_randn((8, 8), 33), torch.empty(0)))
    return f, make


@_case(mode="inference", tags=_tags(122386, "out_resize"))
def i122386_histogram_into_empty_out_tensors():
    """torch.histogram(..., out=(hist, bin_edges)) with empty out tensors."""
    def f(x, hist, edges):
        torch.histogram(x, bins=4, out=(hist, edges))
        return hist * 1, edges * 1
    def make():
        return Inputs((_randn((20,), 34), torch.empty(0), torch.empty(0)))
    return f, make


@_case(mode="inference", tags=_tags(185984, "out_resize"))
def i185984_out_resize_of_a_tensor_made_inside():
    """torch.all(..., out=) into a boolean tensor made inside with size 0."""
    def f(x):
        out = torch.empty(0, dtype=torch.bool)
        torch.all(x > 0, dim=1, out=out)
        return out
    return f, _plain((3, 4), seed=35)


@_case(mode="inference", tags=_tags(98143, "overlap", "unfold"))
def i98143_abs_in_place_on_an_overlapping_unfold():
    """unfold with step < size gives overlapping windows; abs_ on them runs in eager."""
    def f(x):
        t1 = torch.add(x, x)
        t2 = t1.unfold(1, 3, 2)
        return t2.abs_()
    def make():
        return Inputs((torch.tensor([[-0.4, 0.3, -0.9, 0.2, -0.6]]),))
    return f, make


@_case(mode="inference", call=CallMode.NO_GRAD, tags=_tags(165409, "overlap", "unfold"))
def i165409_overlapping_unfold_written_under_no_grad():
    """The same in-place abs_ on an overlapping unfold, called under no_grad (eval)."""
    def f(x):
        return torch.add(x, x).unfold(1, 3, 2).abs_()
    return f, _plain((1, 5), seed=36)


@_case(mode="inference", tags=_tags(183888, "overlap", "unfold"))
def i183888_wider_overlapping_unfold_abs_():
    """unfold(1, 4, 2) of a (1, 7) tensor, abs_ in place."""
    def f(x):
        return torch.add(x, x).unfold(1, 4, 2).abs_()
    def make():
        return Inputs((torch.linspace(-3, 3, 7).reshape(1, 7),))
    return f, make


@_case(mode="inference", tags=_tags(77714, "resize", "view"))
def i77714_resize_of_a_view_of_an_intermediate():
    """resize_ of a view of an intermediate to a larger size (functionalization bans it;
    eager grows the shared storage)."""
    def f(x):
        a = x * 2
        b = a.view(4)
        b.resize_(6)
        b[4:].fill_(1.0)
        return a + 1, b[:4] * 1
    return f, _plain((4,), seed=37)


@_case(mode="inference", tags=_tags(198095, "aliased_inputs", "offset"))
def i198095_view_of_an_offset_alias_after_the_base_is_written():
    """f(t0, t0[1:]): t0 written, ta[0] returned (t0[1] after the write)."""
    def f(t0, ta):
        t0.add_(100)
        return ta[0]
    def make():
        base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
        return Inputs((base, base[1:]))
    return f, make


@_case(mode="inference", tags=_tags(106456, "input_mutation", "strided"))
def i106456_mutation_of_a_noncontiguous_argument():
    """A column of a tensor passed and mutated in place."""
    def f(x):
        x.mul_(2)
        return x + 1
    def make():
        return Inputs((torch.ones(2, 2)[:, 0],))
    return f, make


@_case(mode="inference", tags=_tags(136064, "input_mutation", "view"))
def i136064_copy_into_a_same_dtype_view_of_an_argument():
    """x.view(float32) of a float32 argument (a view to the same dtype), then copy_ into it."""
    def f(x, y):
        v = x.view(torch.float32)
        v.copy_(y)
        return ()
    return f, _plain((4,), (4,), seed=38)


@_case(mode="inference", tags=_tags(198364, "strides"))
def i198364_copysign_and_floor_divide_of_a_transposed_argument():
    """copysign and floor_divide of a transposed first argument keep its layout in eager."""
    def f(a, b):
        return torch.copysign(a, b - 1.5), torch.floor_divide(a, b)
    def make():
        return Inputs((torch.rand(6, 5, generator=torch.Generator().manual_seed(39)).mT,
                       torch.rand(5, 6, generator=torch.Generator().manual_seed(40)) + 1))
    return f, make


@_case(mode="inference", tags=_tags(157854, "strides", "broadcast"))
def i157854_broadcast_add_of_a_transposed_argument():
    """A transposed (2, 2) plus a (1, 2, 1): the output's strides follow eager's rule, on its
    size-1 dimension too (returned as a tuple, since the oracle skips size-1 strides)."""
    def f(x, y):
        out = x + y
        return out, tuple(out.stride())
    def make():
        return Inputs((_randn((2, 2), 41).T, _randn((1, 2, 1), 42)))
    return f, make


@_case(mode="inference", tags=_tags(183771, "strides"))
def i183771_nearest_interpolate_of_a_channels_last_like_input():
    """F.interpolate(nearest) of a non-contiguous 5-d input keeps eager's memory format."""
    def f(x):
        return torch.nn.functional.interpolate(x, size=(5, 6, 7), mode="nearest")
    def make():
        return Inputs((_randn((2, 5, 2, 3, 2), 43).permute(0, 4, 1, 2, 3),))
    return f, make


@_case(mode="inference", tags=_tags(110842, "set_"))
def i110842_set_onto_a_larger_tensor_then_back():
    """p.set_(cat([p, p])), a read, then p.set_(p.detach()) back: p ends as it began."""
    def f(p):
        p2 = p.detach()
        p.set_(torch.cat([p, p]))
        x = p * 2
        p.set_(p2)
        return x
    return f, _plain((8,), seed=44)


@_case(mode="training", tags=_tags(132197, "set_"))
def i132197_set_of_an_argument_read_afterwards():
    """x.set_(x + 1) on an argument, read afterwards, beside a value that requires grad: the
    caller's x must hold x + 1 (issue 132197 used FSDP's fsdp.set_ op; this is aten's)."""
    def f(x, w):
        z = x.sin()
        y = x + 1
        x.set_(y)
        z2 = x.sin()
        return z2 + z, w ** 2
    def make():
        w = _randn((3,), 46).requires_grad_()
        return Inputs((_randn((3,), 45), w), leaves=(w,))
    return f, make


@_case(mode="training", tags=_tags(122981, "set_", "no_grad", "fsdp"))
def i122981_set_under_no_grad_onto_another_shape_of_a_grad_parameter():
    """FSDP's pattern: a parameter that requires grad is set_() under no_grad onto the
    gathered data, of another shape, and then used; its .grad has the new shape."""
    def f(p, shard, inp):
        with torch.no_grad():
            full = torch.cat([shard, shard]).view(2, 2)
            p.set_(full)
        return p * inp
    def make():
        p = torch.nn.Parameter(torch.zeros(2))
        return Inputs((p, _randn((2,), 47), _randn((2, 2), 48)), leaves=(p,))
    return f, make


@_case(mode="inference", tags=("real_world", "issue:none", "set_", "aliased_inputs"))
def set_of_an_aliased_argument_after_slicing_it():
    """(No upstream thread: issue 27's own class.) f(a, a[1:], c): a slice of the second
    argument is taken, then that argument is set_() onto c; the slice keeps the old storage."""
    def f(a, b, c):
        s = b[0:2]
        b.set_(c)
        return s + 1, b * 2
    def make():
        a = _randn((4, 3), 49)
        return Inputs((a, a[1:], _randn((2, 3), 50)))
    return f, make


@_case(mode="inference", tags=_tags(152323, "input_mutation", "view"))
def i152323_row_of_an_argument_written_then_the_argument_returned():
    """x[0].add_(1.0); return x: the argument itself comes back, one row changed."""
    def f(x):
        x[0].add_(1.0)
        return x
    return f, _plain((4, 3), seed=51)


@_case(mode="training", tags=("real_world", "issue:none", "strides", "metadata_mutation"))
def transposed_argument_times_two_strides_of_size_one_dims():
    """(No upstream thread: TestAOTAutograd's test_output_all_alias_types, issue 27.) A
    (1, 2, 4) argument transposed in place, doubled, and the product's transpose returned:
    eager's stride on the size-1 dimension is returned as a tuple so that the oracle sees it."""
    def f(a):
        a.transpose_(1, 0)
        tmp = a.mul(2)
        return tmp.squeeze(), tmp.transpose(1, 0), a.unsqueeze(0), tuple(tmp.transpose(1, 0).stride())
    def make():
        leaf = torch.ones(1, 2, 4, requires_grad=True)
        return Inputs((leaf.clone(),), leaves=(leaf,))
    return f, make


@_case(mode="inference", tags=("real_world", "issue:none", "set_", "no_grad", "storage_resize"))
def set_after_resizing_storage_to_zero_under_no_grad():
    """(No upstream thread: TestAOTAutograd's test_input_mutation_storage_resize_before_set_,
    issue 27.) Under no_grad, an argument that requires grad has its storage resized to zero
    bytes and is then set_() onto a tensor of another shape: eager's argument ends as that
    tensor's data, still a leaf that requires grad."""
    def f(a):
        with torch.no_grad():
            torch.ops.inductor.resize_storage_bytes_(a, 0)
            a.set_(torch.ones(2))
        return ()
    def make():
        return Inputs((torch.zeros(8, requires_grad=True),))
    return f, make


@_case(mode="training", tags=("real_world", "issue:none", "set_", "no_grad"))
def set_under_no_grad_onto_another_shape_of_a_grad_leaf():
    """(No upstream thread: issue 27, the class of i122981 on a plain leaf.) A leaf that
    requires grad is set_() under no_grad onto a (2, 3) value made inside, then used: eager's
    set_() gives the leaf a new AccumulateGrad, and its .grad has the new shape."""
    def f(w, x, y):
        with torch.no_grad():
            w.set_(torch.stack([x, x + 1]))
        return (w * y).sum(1), y * 2
    def make():
        w = torch.zeros(5, requires_grad=True)
        y = _randn((2, 3), 61).requires_grad_()
        return Inputs((w, _randn((3,), 60), y), leaves=(w, y))
    return f, make


@_case(mode="training", tags=("real_world", "issue:none", "set_", "no_grad"))
def set_under_no_grad_onto_another_shape_not_used_after():
    """(No upstream thread: issue 27.) A parameter set_() under no_grad onto another shape
    and not used afterwards: it gets no gradient; another argument's does."""
    def f(p, shard):
        with torch.no_grad():
            p.set_(torch.cat([shard, shard]).view(2, -1))
        return shard.sin()
    def make():
        p = torch.nn.Parameter(torch.zeros(3))
        shard = _randn((3,), 62).requires_grad_()
        return Inputs((p, shard), leaves=(p, shard))
    return f, make


@_case(mode="training", tags=("real_world", "issue:none", "set_", "no_grad", "aliased_inputs"))
def set_under_no_grad_onto_a_view_of_another_argument_of_another_shape():
    """(No upstream thread: issue 27.) A parameter set_() under no_grad onto a (2, 2) view of
    another argument (that requires no grad), then used, and that argument written: the
    parameter shares its memory and sees the write."""
    def f(p, q, inp):
        with torch.no_grad():
            p.set_(q.view(2, 2))
        out = p * inp
        q.add_(1)
        return out, p + 0
    def make():
        p = torch.nn.Parameter(torch.zeros(2))
        return Inputs((p, _randn((4,), 63), _randn((2, 2), 64)), leaves=(p,))
    return f, make


@_case(mode="training", tags=("real_world", "issue:none", "data_assign", "no_grad"))
def data_of_a_grad_parameter_assigned_another_shape():
    """(No upstream thread: issue 27, fuzz class seed1 repro_05.) ``p.data =`` a tensor of
    another shape on a parameter that requires grad, then p used: eager's AccumulateGrad is
    made at the first use, after the assignment, so p.grad has the new shape."""
    def f(p, x):
        p.data = x.detach().t() * 2
        return (p * x.t()).exp()
    def make():
        p = torch.nn.Parameter(torch.zeros(3))
        return Inputs((p, _randn((3, 2), 65)), leaves=(p,))
    return f, make


@_case(mode="training", tags=("real_world", "issue:none", "set_", "no_grad", "non_leaf"))
def set_under_no_grad_onto_another_shape_of_a_grad_nonleaf():
    """(No upstream thread: issue 27.) A non-leaf argument that requires grad set_() under
    no_grad onto a (3, 2) value, then used: it keeps its grad_fn, whose input is of the old
    shape (2,), so eager sums the (3, 2) gradient down to it."""
    def f(x, y):
        with torch.no_grad():
            x.set_(y.detach().repeat(3, 1))
        return x * y
    def make():
        w = _randn((2,), 66).requires_grad_()
        y = _randn((2,), 67).requires_grad_()
        return Inputs((w * 3, y), leaves=(w, y))
    return f, make


@_case(mode="training", tags=("real_world", "issue:none", "set_", "no_grad", "fsdp"))
def set_under_no_grad_onto_another_shape_after_a_grad_use():
    """(No upstream thread: issue 27, the class of i122981.) A parameter used under grad mode,
    then set_() under no_grad onto another shape and used again: eager's uses before the swap
    keep the old AccumulateGrad, whose (2,) gradient is broadcast into the (2, 2) .grad that
    the new one's gradient is added to."""
    def f(p, shard, inp):
        y = (p * 2).sin()
        with torch.no_grad():
            p.set_(torch.cat([shard, shard]).view(2, 2))
        return p * inp, y
    def make():
        p = torch.nn.Parameter(_randn((2,), 68))
        return Inputs((p, _randn((2,), 69), _randn((2, 2), 70)), leaves=(p,))
    return f, make


@_case(mode="training", tags=("real_world", "issue:none", "set_", "no_grad"))
def set_under_no_grad_onto_another_shape_after_its_only_grad_use():
    """(No upstream thread: issue 27.) A leaf used under grad mode, then set_() under no_grad
    onto a (3, 2) value and not used again: its gradient, of the old shape (2,), is broadcast
    into a .grad of the new shape."""
    def f(w, x):
        y = w.exp() * x
        with torch.no_grad():
            w.set_(x.detach().expand(3, 2).clone())
        return y
    def make():
        w = _randn((2,), 71).requires_grad_()
        return Inputs((w, _randn((2,), 72)), leaves=(w,))
    return f, make


@_case(mode="training", tags=("real_world", "issue:none", "set_", "no_grad", "input_mutation"))
def set_under_no_grad_onto_another_shape_after_writing_the_old_memory():
    """(No upstream thread: issue 27.) A leaf that requires grad is zeroed under no_grad (its
    memory at the call, which a view of the caller's sees), then set_() onto another shape and
    used: the write reaches the old memory, the gradient the new shape."""
    def f(p, shard, inp):
        with torch.no_grad():
            p.mul_(0.5)
            p.set_(torch.cat([shard, shard]).view(2, 2))
        return p * inp
    def make():
        base = torch.nn.Parameter(_randn((2,), 73))
        return Inputs((base, _randn((2,), 74), _randn((2, 2), 75)), leaves=(base,))
    return f, make


@_case(mode="training", tags=("real_world", "issue:none", "data_assign", "no_grad"))
def data_of_a_grad_parameter_assigned_another_shape_after_a_use():
    """(No upstream thread: issue 27.) ``p.data =`` a tensor of another shape after p was used
    under grad mode: eager's leaf keeps the AccumulateGrad the use holds, of the old shape,
    so the later use's (2, 2) gradient is summed to (2,) and broadcast into .grad."""
    def f(p, inp):
        y = p * 2
        p.data = inp.detach() + 1
        return p * inp, y
    def make():
        p = torch.nn.Parameter(_randn((2,), 76))
        return Inputs((p, _randn((2, 2), 77)), leaves=(p,))
    return f, make

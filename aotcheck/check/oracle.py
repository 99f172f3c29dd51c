"""The oracle: run a function in eager and compiled, and list every difference.

One comparison, used by the corpus tests, the cache layer and the fuzzer.
Both runs get identical fresh inputs from ``make_inputs``. Compared:

- outputs: pytree structure, non-tensor values, and per tensor: type (a traceable
  wrapper subclass is compared by type and by its inner tensors), dtype,
  shape, stride (of dimensions larger than 1: a size-1 dimension's stride
  addresses no memory), values, requires_grad, is_leaf, grad_fn presence;
- alias structure: which argument (or earlier output) each output shares
  storage with, and every pair of tensors (outputs and arguments) that share a
  storage, whatever their strides;
- arguments after the call: values, shape, stride, offset, requires_grad;
- the default generator's state after the call (both runs start from seed 0);
- with ``backward``: leaf gradients after backpropagating seeded random
  cotangents from every output and every mutated argument that requires
  grad (or, by ``backward_pass``: twice with ``retain_graph``, from the first
  output only, or a double backward through ``create_graph``); None versus
  zeros must match exactly; so must the ``.grad`` of
  outputs that are leaves requiring grad (made inside the function), and of
  outputs and arguments that retain their grad (``retain_grad()``, in or
  before the function), whose ``retains_grad`` flag must match too;
- mutating each output in place afterwards (floating, complex, integer or
  bool) changes the arguments and other outputs as in eager (or raises in both).

``check`` returns a :class:`Report`: its divergences are records
(``divergence.Divergence``: the check, the output or argument, eager's and the
compiled side), each printing the sentence reports show::

    >>> r = check(lambda x: x * 2, lambda x: (x * 2).detach(),
    ...           lambda: Inputs((torch.ones(2, requires_grad=True),)))
    >>> print(r)
    output 0 requires_grad: eager True, compiled False
    >>> d = r.divergences[0]
    >>> d.check, str(d.subject), d.expected, d.actual
    (<Check.REQUIRES_GRAD: 'requires_grad'>, 'output 0', 'True', 'False')

A report's ``signature`` names the first difference's kind, so that duplicates collapse.
"""
from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from .divergence import APART, SHARED, Check, Divergence, Subject


@dataclass
class Inputs:
    args: tuple
    kwargs: dict = field(default_factory=dict)
    leaves: tuple = ()      # tensors whose .grad is compared after backward
    rng_after: object = field(default=None, repr=False, compare=False)   # set by run_once


@dataclass
class Report:
    divergences: list[Divergence]
    signature: str = ""

    @property
    def ok(self) -> bool:
        return not self.divergences

    @property
    def messages(self) -> list[str]:
        return [str(d) for d in self.divergences]

    def __str__(self) -> str:
        return "ok" if self.ok else "\n".join(self.messages)


def _tensors(x) -> list:
    return [t for t in pytree.tree_leaves(x) if isinstance(t, torch.Tensor)]


def _parts(t: torch.Tensor) -> list:
    """A tensor's plain tensors: itself, or a traceable wrapper subclass's inner tensors
    (recursively, by ``__tensor_flatten__``); subclasses are compared by type and by these."""
    if type(t) in (torch.Tensor, torch.nn.Parameter) or not is_traceable_wrapper_subclass(t):
        return [t]
    return [p for a in t.__tensor_flatten__()[0] for p in _parts(getattr(t, a))]


def _storage(t):
    t = _parts(t)[0]
    return t.untyped_storage().data_ptr() if t.untyped_storage().nbytes() else None


def _alias_map(outs: list, args: list) -> list:
    arg_st = {}
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor) and _storage(a) is not None:
            arg_st.setdefault(_storage(a), i)
    res, out_st = [], {}
    for k, o in enumerate(outs):
        if not isinstance(o, torch.Tensor):
            res.append(None)
            continue
        st = _storage(o)
        ident = next((f"arg{i}" for i, a in enumerate(args) if a is o), None)
        same = next((f"out{j}" for j in range(k) if outs[j] is o), None)
        res.append(ident or same or (f"view-of-arg{arg_st[st]}" if st in arg_st else
                                     f"view-of-out{out_st[st]}" if st in out_st else "fresh"))
        if st is not None:
            out_st.setdefault(st, k)
    return res


def _sharing(outs: list, args: list) -> set:
    """Every pair (output k, argument i or output j < k) whose tensors share one storage,
    decided on the storages alone (strides and offsets do not enter)."""
    named = [(f"out{k}", o) for k, o in enumerate(outs) if isinstance(o, torch.Tensor)]
    named += [(f"arg{i}", a) for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    pairs = set()
    for x, (n1, t1) in enumerate(named):
        s1 = _storage(t1)
        for n2, t2 in named[x + 1:]:
            if s1 is not None and n1.startswith("out") and s1 == _storage(t2):
                pairs.add((n1, n2))
    return pairs


def _close(a: torch.Tensor, b: torch.Tensor, rtol=None, atol=None) -> str | None:
    if type(a) is not type(b) and not {type(a), type(b)} <= {torch.Tensor, torch.nn.Parameter}:
        return f"type: eager {type(a).__name__}, compiled {type(b).__name__}"
    pa, pb = _parts(a), _parts(b)
    if len(pa) > 1 or pa[0] is not a:
        if len(pa) != len(pb):
            return f"inner tensors: eager {len(pa)}, compiled {len(pb)}"
        for k, (x, y) in enumerate(zip(pa, pb)):
            msg = _close(x, y, rtol, atol)
            if msg:
                return f"inner tensor {k}: {msg}"
        return None
    try:
        torch.testing.assert_close(b.detach(), a.detach(), rtol=rtol, atol=atol, equal_nan=True,
                                   check_stride=False, check_layout=False)
    except AssertionError as e:
        return str(e).split("\n\n")[0].replace("\n", " ")
    return None


def _cotangent(t: torch.Tensor, k: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(1000 + k)
    return torch.randn(t.shape, generator=g, dtype=torch.float64).to(t.dtype)


class BackwardPass(Enum):
    """How the backward is driven after a call that returned (``check(..., backward_pass=)``);
    each one ends with the leaves' ``.grad``, which the oracle compares."""
    ONCE = "once"                    # one backward from every differentiable output and written argument
    TWICE = "twice"                  # that backward twice, the first with retain_graph=True: grads accumulate
    FIRST_OUTPUT = "first_output"    # one backward from the first differentiable output only
    DOUBLE = "double"                # grads with create_graph=True (kept as .grad), then a backward from them


def run_once(fn, make_inputs, backward: bool, how: BackwardPass = BackwardPass.ONCE):
    """One seeded run of ``fn`` on fresh inputs: (inputs after, output, forward error, backward error)."""
    torch.manual_seed(0)
    inp = make_inputs()
    try:
        out = fn(*inp.args, **inp.kwargs)
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        return inp, None, e, None
    inp.rng_after = torch.random.get_rng_state()     # random ops advanced it as eager's do
    bw_err = None
    if backward:
        try:    # building the loss is autograd's work too: eager raises there for a view made
            terms = _loss_terms(out, pytree.tree_leaves((inp.args, inp.kwargs)), how)
            if terms:   # in inference mode whose base was written outside it
                _drive_backward(sum(terms), inp.leaves, how)
        except Exception as e:  # noqa: BLE001
            bw_err = e
    return inp, out, None, bw_err


def _loss_terms(out, flat_args, how: BackwardPass) -> list:
    """One term per differentiable output (seeded random cotangent), then per written argument
    that requires grad and is not a leaf; ``FIRST_OUTPUT``: the first output's term alone."""
    terms = [(t * _cotangent(t, k)).sum() for k, t in enumerate(_tensors(out))
             if t.requires_grad and t.is_floating_point()]
    if how is BackwardPass.FIRST_OUTPUT:
        return terms[:1]
    for k, a in enumerate(flat_args):
        if isinstance(a, torch.Tensor) and a.requires_grad and not a.is_leaf and a.is_floating_point():
            terms.append((a * _cotangent(a, 100 + k)).sum())
    return terms


def _drive_backward(loss: torch.Tensor, leaves: tuple, how: BackwardPass) -> None:
    if how is BackwardPass.TWICE:
        torch.autograd.backward(loss, retain_graph=True)
        torch.autograd.backward(loss)
        return
    wrt = [t for t in leaves if isinstance(t, torch.Tensor) and t.requires_grad]
    if how is not BackwardPass.DOUBLE or not wrt:
        torch.autograd.backward(loss)
        return
    grads = torch.autograd.grad(loss, wrt, create_graph=True, allow_unused=True)
    for t, g in zip(wrt, grads):      # the first-order grads are compared too, as .grad
        if g is not None:
            t.grad = g.detach().clone()
    second = [(g * _cotangent(g, 500 + j)).sum() for j, g in enumerate(grads)
              if g is not None and g.requires_grad]
    if second:
        torch.autograd.backward(sum(second))


def raised(fn: Callable, make_inputs: Callable[[], Inputs]) -> tuple:
    """What ``fn`` raises on fresh inputs, as ``check`` runs it: ``(call error, backward
    error)``, each an exception or None (the backward runs only after a call that returned)."""
    _, _, err, bw_err = run_once(fn, make_inputs, backward=True)
    return err, bw_err


# NOTE [what a compiled function needs in force]
# A compiled function may need settings in force beyond its calls: torch's cache compiles the
# backward and saves a training entry at the first ``.backward()``, after the call returned
# (NOTE [settings in force for the backward] in targets/engines.py). Such a function has an
# ``in_force()`` method, a context manager; ``check`` holds it over the compiled run, the call
# and the backward after it. A wrapper (the call mode's, a variation's condition) that sets
# ``__wrapped__`` (``functools.wraps``) passes it on.
def in_force(fn: Callable):
    """``fn.in_force()``, from ``fn`` or the first function it wraps (by ``__wrapped__``) that
    has one (NOTE [what a compiled function needs in force]); else a context that does nothing."""
    seen = 0
    while fn is not None and seen < 20:
        enter = getattr(type(fn), "in_force", None)
        if enter is not None:
            return fn.in_force()
        fn, seen = getattr(fn, "__wrapped__", None), seen + 1
    return contextlib.nullcontext()


def check(fn: Callable, compiled_fn: Callable, make_inputs: Callable[[], Inputs], *,
          backward: bool = True, mutate_outputs: bool = True, rtol=None, atol=None,
          backward_pass: BackwardPass = BackwardPass.ONCE) -> Report:
    """Compare ``compiled_fn`` against eager ``fn`` on identical inputs."""
    e_in, e_out, e_err, e_bw = run_once(fn, make_inputs, backward, backward_pass)
    with in_force(compiled_fn):
        c_in, c_out, c_err, c_bw = run_once(compiled_fn, make_inputs, backward, backward_pass)
    if e_err is not None or c_err is not None:      # both raising is a match
        d = _compare_raises(e_err, c_err)
        return Report(d, _signature(d))
    e_flat, e_spec = pytree.tree_flatten(e_out)
    c_flat, c_spec = pytree.tree_flatten(c_out)
    d = _compare_structure(e_spec, c_spec, c_flat)
    if d:       # another structure, or an escaped fake tensor: nothing more can be compared
        return Report(d, _signature(d))
    for k, (a, b) in enumerate(zip(e_flat, c_flat)):
        _compare_value(d, Subject.output(k), a, b, rtol, atol, grads=True)
    e_args = pytree.tree_leaves((e_in.args, e_in.kwargs))
    c_args = pytree.tree_leaves((c_in.args, c_in.kwargs))
    _compare_aliasing(d, e_flat, c_flat, e_args, c_args)
    for i, (a, b) in enumerate(zip(e_args, c_args)):
        _compare_value(d, Subject.argument(i), a, b, rtol, atol, grads=False)
    if not torch.equal(e_in.rng_after, c_in.rng_after):
        d.append(Divergence(Check.RANDOM_STATE))
    if (e_bw is None) != (c_bw is None):
        only = Check.BACKWARD_RAISED if c_bw is not None else Check.BACKWARD_EAGER_RAISED
        err = c_bw if c_bw is not None else e_bw
        d.append(Divergence(only, error=f"{type(err).__name__}: {_first_line(err)}"))
    elif backward and e_bw is None:
        _compare_grads(d, e_in.leaves, c_in.leaves, e_flat, c_flat, rtol, atol)
        _compare_retained(d, e_flat, c_flat, Subject.output, rtol, atol)
        _compare_retained(d, e_args, c_args, Subject.argument, rtol, atol)
    if mutate_outputs and not d:
        _check_output_mutation(d, e_flat, c_flat, e_args, c_args)
    return Report(d, _signature(d))


def _compare_raises(e_err, c_err) -> list[Divergence]:
    if e_err is None:
        return [Divergence(Check.COMPILED_RAISED, error=f"{type(c_err).__name__}: {_first_line(c_err)}")]
    return [] if c_err is not None else [Divergence(Check.EAGER_RAISED, error=type(e_err).__name__)]


def _compare_structure(e_spec, c_spec, c_flat) -> list[Divergence]:
    """Other output structures, or an output whose storage cannot be read (a fake tensor escaped)."""
    if str(e_spec) != str(c_spec):
        return [Divergence(Check.STRUCTURE, expected=str(e_spec), actual=str(c_spec))]
    return [Divergence(Check.UNREADABLE, Subject.output(k), detail=why) for k, b in enumerate(c_flat)
            if isinstance(b, torch.Tensor) and (why := _unreadable(b))]


def _compare_aliasing(d, e_flat, c_flat, e_args, c_args):
    """What each output is a view of; where that matches everywhere, every pair sharing a storage."""
    ea, ca = _alias_map(e_flat, e_args), _alias_map(c_flat, c_args)
    for k, (a, b) in enumerate(zip(ea, ca)):
        if a != b:
            d.append(Divergence(Check.ALIASING, Subject.output(k), expected=str(a), actual=str(b)))
    if any(x.check is Check.ALIASING for x in d):
        return
    es, cs = _sharing(e_flat, e_args), _sharing(c_flat, c_args)
    for pair in sorted(es ^ cs):
        first, second = (_named(n) for n in pair)
        sides = (SHARED, APART) if pair in es else (APART, SHARED)
        d.append(Divergence(Check.SHARING, first, other=second, expected=sides[0], actual=sides[1]))


def _named(name: str) -> Subject:
    """``out1`` -> output 1, ``arg0`` -> argument 0 (``_sharing``'s names)."""
    return (Subject.output if name.startswith("out") else Subject.argument)(int(name[3:]))


def _presence(t) -> str:
    return "None" if t is None else "a tensor"


def _compare_grads(d, e_leaves, c_leaves, e_flat, c_flat, rtol, atol):
    """The ``.grad`` of each leaf, and of each output that is a leaf requiring grad (made inside
    the function: it accumulates ``.grad`` too)."""
    for j, (a, b) in enumerate(zip(e_leaves, c_leaves)):
        _compare_grad(d, Subject.leaf(j), a.grad, b.grad, rtol, atol)
    for k, (a, b) in enumerate(zip(e_flat, c_flat)):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) \
                and _autograd_attr(a, "is_leaf") is True and a.requires_grad \
                and not any(a is x for x in e_leaves):
            # a compiled output that is not a leaf has no .grad (its is_leaf is reported)
            gb = b.grad if _autograd_attr(b, "is_leaf") is True else None
            _compare_grad(d, Subject.output(k), a.grad, gb, rtol, atol)


def _compare_grad(d, subject, ga, gb, rtol, atol, presence=Check.GRAD_PRESENCE, values=Check.GRAD_VALUES):
    if (ga is None) != (gb is None):
        d.append(Divergence(presence, subject, expected=_presence(ga), actual=_presence(gb)))
    elif ga is not None and (msg := _close(ga, gb, rtol, atol)):
        d.append(Divergence(values, subject, detail=msg))


def _compare_retained(d, eager, compiled, subject, rtol, atol):
    """The ``.grad`` of non-leaf tensors that retain it (``retain_grad()``): eager's ``retains_grad``
    flag and, where set, the gradient itself, for each output or argument (by flat position)."""
    for k, (a, b) in enumerate(zip(eager, compiled)):
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
            continue
        ra, rb = _autograd_attr(a, "retains_grad"), _autograd_attr(b, "retains_grad")
        if ra is not True and rb is not True:
            continue
        if ra != rb:
            d.append(Divergence(Check.RETAINS_GRAD, subject(k), expected=str(ra), actual=str(rb)))
            continue
        _compare_grad(d, subject(k), a.grad, b.grad, rtol, atol,
                      Check.RETAINED_GRAD_PRESENCE, Check.RETAINED_GRAD_VALUES)


def _unreadable(t: torch.Tensor) -> str | None:
    """Why a returned tensor's storage cannot be read (a FakeTensor or FunctionalTensor that
    escaped tracing), or None."""
    try:
        _storage(t)
    except (RuntimeError, NotImplementedError) as e:
        return f"{type(t).__name__}: {_first_line(e)[:80]}"
    return None


def _first_line(e: BaseException) -> str:
    """The first line of an error; for a wrapper whose first line ends in "raised:" (Dynamo's
    BackendCompilerFailed), also the wrapped error's line, which names the real cause."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    if not lines:
        return ""
    if lines[0].endswith("raised:") and len(lines) > 1:
        return f"{lines[0]} {lines[1]}"
    # Dynamo's fake-tensor failures say "RuntimeError when making fake tensor call" first and
    # the op's own error later ("... got RuntimeError('expand: ...')"): that names the cause
    inner = re.search(r"failed to run FX node with fake tensors: .*?: got (\w+)\((.*)", str(e))
    if inner:
        return f"{lines[0]}: {inner.group(1)}: {inner.group(2).strip(chr(39) + chr(34))[:200]}"
    return lines[0]


def _compare_value(d, subject: Subject, a, b, rtol, atol, grads: bool):
    """One output (``grads``: with its autograd metadata) or one argument after the call."""
    if isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor):
        d.append(Divergence(Check.VALUE, subject, expected=type(a).__name__, actual=type(b).__name__))
        return
    if not isinstance(a, torch.Tensor):
        if type(a) is not type(b) or (a != b and not (a != a and b != b)):
            d.append(Divergence(Check.VALUE, subject, expected=repr(a), actual=repr(b)))
        return
    for attr in ("dtype", "shape", "requires_grad"):
        if getattr(a, attr) != getattr(b, attr):
            d.append(_sides(Check(attr), subject, getattr(a, attr), getattr(b, attr)))
            return
    if _addressing_strides(a) != _addressing_strides(b) and a.numel() > 1:
        d.append(_sides(Check.STRIDE, subject, a.stride(), b.stride()))
    if not grads and a.storage_offset() != b.storage_offset():
        d.append(_sides(Check.STORAGE_OFFSET, subject, a.storage_offset(), b.storage_offset()))
    if grads:
        la, lb = _autograd_attr(a, "is_leaf"), _autograd_attr(b, "is_leaf")
        if la != lb:
            d.append(_sides(Check.IS_LEAF, subject, la, lb))
        fa, fb = _grad_fn_name(a), _grad_fn_name(b)
        if (fa == "NoneType") != (fb == "NoneType") or (fa == "raises") != (fb == "raises"):
            d.append(_sides(Check.GRAD_FN, subject, fa, fb))
    if type(a) is not type(b) and not {type(a), type(b)} <= {torch.Tensor, torch.nn.Parameter}:
        d.append(_sides(Check.TYPE, subject, type(a).__name__, type(b).__name__))
        return
    na, nb = _parts(a)[0].untyped_storage().nbytes(), _parts(b)[0].untyped_storage().nbytes()
    if (na == 0) != (nb == 0):      # a storage resized to or from zero bytes (FSDP's pattern)
        d.append(_sides(Check.STORAGE_BYTES, subject, na, nb))
        return
    if na == 0 and a.numel() > 0:   # no memory behind it: its values are not readable
        return
    msg = _close(a, b, rtol, atol)
    if msg:
        d.append(Divergence(Check.VALUES, subject, detail=msg))


def _sides(check: Check, subject: Subject, eager, compiled) -> Divergence:
    return Divergence(check, subject, expected=str(eager), actual=str(compiled))


def _autograd_attr(t: torch.Tensor, attr: str):
    """``t.<attr>`` (``is_leaf``, ``grad_fn``), or "raises" when reading it raises: eager raises
    for a view made in no_grad or inference mode whose base was then written outside it."""
    try:
        return getattr(t, attr)
    except RuntimeError:
        return "raises"


def _grad_fn_name(t: torch.Tensor) -> str:
    fn = _autograd_attr(t, "grad_fn")
    return fn if fn == "raises" else type(fn).__name__


def _addressing_strides(t: torch.Tensor) -> tuple:
    """Strides that address memory: a dimension of size 1 is never stepped along, so its
    stride is layout-irrelevant (PyTorch's own contiguity checks ignore it too)."""
    return tuple(st for sz, st in zip(t.shape, t.stride()) if sz != 1)


def _readable(t: torch.Tensor) -> bool:
    """Whether memory lies behind the tensor (not a storage resized to zero bytes)."""
    return t.numel() == 0 or _parts(t)[0].untyped_storage().nbytes() > 0


def _check_output_mutation(d, e_flat, c_flat, e_args, c_args):
    """Mutate each output in place; the effect on arguments and other outputs, or the
    error, must match eager's. Every dtype is mutated (a bool output is negated), so that
    outputs that should share one storage but were copied apart show up whatever their
    dtype or strides."""
    for k in range(len(e_flat)):
        a, b = e_flat[k], c_flat[k]
        if not isinstance(a, torch.Tensor) or a.numel() == 0 or a.layout != torch.strided \
                or not _readable(a) or not _readable(b):
            continue
        errs = []
        for t in (a, b):
            try:
                if t.dtype == torch.bool:
                    t.logical_not_()
                else:
                    t.add_(1)
                errs.append(None)
            except Exception as e:  # noqa: BLE001
                errs.append(type(e).__name__)
        if errs[0] != errs[1]:
            d.append(Divergence(Check.OUTPUT_MUTATION, Subject.output(k), expected=errs[0] or "ok",
                                actual=errs[1] or "ok"))
            return
        for i, (x, y) in enumerate(zip(e_args, c_args)):
            if isinstance(x, torch.Tensor) and _readable(x) and _readable(y) and _close(x, y):
                d.append(Divergence(Check.MUTATION_EFFECT, Subject.output(k), other=Subject.argument(i)))
                return
        for j, (x, y) in enumerate(zip(e_flat, c_flat)):
            if isinstance(x, torch.Tensor) and _readable(x) and _readable(y) and _close(x, y):
                d.append(Divergence(Check.MUTATION_EFFECT, Subject.output(k), other=Subject.output(j)))
                return


def _signature(d: list[Divergence]) -> str:
    """A short stem of the first difference, with numbers removed, for deduplication."""
    if not d:
        return ""
    text = str(d[0])
    first = text.split(":")[0] if d[0].check is not Check.COMPILED_RAISED else text[:80]
    return re.sub(r"\d+", "N", first)


def assert_matches(fn, compiled_fn, make_inputs, **kw) -> None:
    r = check(fn, compiled_fn, make_inputs, **kw)
    if not r.ok:
        raise AssertionError("compiled differs from eager:\n  " + "\n  ".join(r.messages))

"""values: a trace that reads tensor values, pinned by guards that the graph checks at run time.

# NOTE [value specialization]
Some programs that eager runs depend on tensor *values* while they run: ``.item()``,
``bool(t)`` and Python control flow on a tensor (``aten._local_scalar_dense``), and ops whose
output shape depends on the data (``masked_select``, ``nonzero``, ``linalg_lstsq``,
``_ctc_loss``: PyTorch tags them ``dynamic_output_shape``). Fake tensors have no values, so
the first trace stops there (``DataDependentError``). The trace is then run once more on
real copies of this call's arguments (``trace_functional(..., mode="values")``): every value
is concrete, so Python takes the branch eager takes and each shape is known. What the
graph was specialized on is pinned by a guard op right after the op that produced it:

- ``aotcheck::guard_value(t, v)`` after ``t.item()`` read ``v``;
- ``aotcheck::guard_shape(t, shape)`` after a dynamic-shape op made ``t``.

At run time a guard whose value differs raises :class:`GuardFailed` before any later op has
run: the forward graph is functional (the runtime writes argument mutations back only after
it), so the API puts the random generator back and compiles again for this call's values.
The guards are tagged like random ops (NOTE [every draw in the forward] in rng/draws.py):
impure, kept in the forward graph, in call order. A backward graph that meets a changed value
has nothing to retry: its guard names the value.

Before and after, for ``f(x) = x[x > 0] * 2`` on ``x = [1., -2., 3.]``::

    gt = aten.gt.Scalar(x, 0)                        # first trace: masked_select on fake
    index = aten.index.Tensor(x, [gt])               #   tensors has no shape: refused
                                                     # values trace:
    index = aten.index.Tensor(x, [gt])               #   f32[2]
    guard_shape = aotcheck.guard_shape.default(index, [2])
    mul = aten.mul.Tensor(index, 2)
"""
from __future__ import annotations

import math

import torch
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree

from ...errors import GuardFailed
from ..rng.seeding import SEEDED_TAGS as _TAGS     # impure, forward-only, in order (rng/seeding.py)

_lib = torch.library.Library("aotcheck", "FRAGMENT")
_lib.define("guard_value(Tensor t, Scalar expected) -> ()", tags=_TAGS)
_lib.define("guard_shape(Tensor t, int[] expected) -> ()", tags=_TAGS)
_lib.define("guard_call(str op, Tensor[] args, Scalar expected) -> ()", tags=_TAGS)


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b and type(a) is type(b)


def _guard_value(t: torch.Tensor, expected) -> None:
    got = t.item()
    if not _same(got, expected):
        raise GuardFailed(f"the graph was specialized on a tensor value {expected!r} "
                          f"(.item(), bool() or control flow); this call has {got!r}")


def _guard_shape(t: torch.Tensor, expected: list) -> None:
    if list(t.shape) != list(expected):
        raise GuardFailed(f"the graph was specialized on an output shape {list(expected)} of an op "
                          f"whose shape depends on the data; this call gives {list(t.shape)}")


def _guard_call(op: str, args: list, expected) -> None:
    got = _aten_op(op)(*args)
    if not _same(got, expected):
        raise GuardFailed(f"the graph was specialized on {op} of tensor values giving {expected!r}; "
                          f"this call gives {got!r}")


def _aten_op(name: str):
    packet, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, packet), overload or "default")


_lib.impl("guard_value", _guard_value, "CompositeExplicitAutograd")
_lib.impl("guard_call", _guard_call, "CompositeExplicitAutograd")
_lib.impl("guard_shape", _guard_shape, "CompositeExplicitAutograd")
torch.library.register_fake("aotcheck::guard_value", lambda t, expected: None, lib=_lib)
torch.library.register_fake("aotcheck::guard_shape", lambda t, expected: None, lib=_lib)
torch.library.register_fake("aotcheck::guard_call", lambda op, args, expected: None, lib=_lib)
GUARDS = (torch.ops.aotcheck.guard_value.default, torch.ops.aotcheck.guard_shape.default,
          torch.ops.aotcheck.guard_call.default,
          torch.ops.aotcheck.guard_initial_seed.default)     # rng/seeding.py: torch.initial_seed()
_PY_SCALARS = ("bool", "int", "float", "Scalar")


def reads_values(func) -> bool:
    """Whether ``func``'s result depends on tensor values in a way a fake tensor cannot give:
    a Python number read from a tensor (``.item()``; an aten op on tensors that returns a
    bool or number, such as ``equal``), or an output whose shape depends on the data."""
    if func is torch.ops.aten._local_scalar_dense.default:
        return True
    if not isinstance(func, torch._ops.OpOverload):
        return False
    if torch.Tag.dynamic_output_shape in func.tags:
        return True
    returns = func._schema.returns
    return func.namespace == "aten" and bool(returns) and not func.__name__.startswith("sym_") \
        and all(str(r.type) in _PY_SCALARS for r in returns) \
        and any(str(a.type) == "Tensor" for a in func._schema.arguments)


def reads_python_value(func) -> bool:
    """Whether ``func`` gives a Python number, read outside the trace's modes (the proxy mode
    refuses to read one from a traced tensor)."""
    return func is torch.ops.aten._local_scalar_dense.default or \
        torch.Tag.dynamic_output_shape not in func.tags


def pin(func, args, kwargs, out) -> None:
    """Called by the values trace right after ``func`` ran: record a guard for what it read.
    A Python number read some other way than ``.item()`` is pinned by replaying the op, which
    takes tensors only; anything else keeps the refusal."""
    from ...errors import DataDependentError
    if func is torch.ops.aten._local_scalar_dense.default:
        torch.ops.aotcheck.guard_value(args[0], out)
    elif torch.Tag.dynamic_output_shape in func.tags:
        for t in pytree.tree_leaves(out):
            if isinstance(t, torch.Tensor):
                torch.ops.aotcheck.guard_shape(t, list(t.shape))
    elif not kwargs and all(isinstance(a, torch.Tensor) for a in args):
        torch.ops.aotcheck.guard_call(f"{func._opname}.{func._overloadname}", list(args), out)
    else:
        raise DataDependentError(f"the function reads a value of {func} while being traced, "
                                 "with non-tensor arguments; aotcheck pins tensor reads only")


class ReadsThroughOps(TorchFunctionMode):
    """While tracing: ``Tensor.tolist()``, and ``tensor_split`` with a tensor of indices (or
    sections), read the values through ``item()``, as their C++ kernels do through the
    tensor's memory, which a traced tensor does not have. The reads are then ordinary value
    reads: refused on fake tensors, pinned by guards in the values trace."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in (torch.tensor_split, torch.Tensor.tensor_split):
            args = list(args)
            for name in ("tensor_indices_or_sections", "indices_or_sections", "indices", "sections"):
                if isinstance(kwargs.get(name), torch.Tensor):
                    args.insert(1, kwargs.pop(name))
            if len(args) > 1 and isinstance(args[1], torch.Tensor):
                args[1] = _to_list(args[1])
        elif func is torch.Tensor.tolist and not kwargs:
            return _to_list(args[0])
        elif func in LISTS_AS_TENSORS:
            args, kwargs = lists_as_tensors(func, list(args), kwargs)
        return func(*args, **kwargs)


# NOTE [integer lists written into a tensor's memory]
# A composite whose integer-list overload builds a tensor from the list by writing its memory
# (C++ ``at::tensor(list)``) cannot run on a traced tensor, which has none, where its tensor
# overload computes the same values traceably: ``ctc_loss`` with Python lists of lengths
# divides by ``at::tensor(target_lengths)`` for reduction "mean" ("data is not allocated
# yet"), while with tensors of lengths it divides by the tensor. While tracing, such a call
# (``F.ctc_loss`` too: its torch-function check is the one the modes see) is given the lists
# as int64 tensors (constants of the graph: the lists are Python values,
# part of the cache key), and the op's value-dependent shapes are pinned as any others.
_CTC_LENGTHS = (("input_lengths", 2), ("target_lengths", 3))
LISTS_AS_TENSORS = {torch.ctc_loss: _CTC_LENGTHS, torch.nn.functional.ctc_loss: _CTC_LENGTHS}


def lists_as_tensors(func, args: list, kwargs: dict) -> tuple[list, dict]:
    """``func``'s integer-list arguments of ``LISTS_AS_TENSORS`` as int64 tensors."""
    def tensor(v):
        if isinstance(v, (list, tuple)) and all(isinstance(x, int) for x in v):
            return torch.tensor(list(v), dtype=torch.int64)
        return v
    for name, pos in LISTS_AS_TENSORS[func]:
        if name in kwargs:
            kwargs[name] = tensor(kwargs[name])
        elif len(args) > pos:
            args[pos] = tensor(args[pos])
    return args, kwargs


def _to_list(t: torch.Tensor):
    """``t.tolist()`` through ``item()`` (C++'s ``tolist`` reads memory a traced tensor lacks)."""
    with torch._C.DisableTorchFunction():
        if t.dim() == 0:
            return t.item()
        return [_to_list(row) for row in t.unbind(0)]


def real_copies(placeholders: list) -> list:
    """Copies of the call's tensors to trace on, sharing storage as they do (values included:
    the values trace reads them), each with the original's requires_grad, and a non-leaf
    where the original is one."""
    storages: dict = {}
    out = []
    for p in placeholders:
        if not isinstance(p, torch.Tensor):
            out.append(p)
            continue
        st = p.untyped_storage()
        key = (st.data_ptr(), p.device, p.dtype)
        if key not in storages:
            n = st.nbytes() // p.element_size()
            with torch.no_grad():
                storages[key] = p.detach().as_strided((n,), (1,), 0).clone()
        flat = storages[key]
        copy = flat.as_strided(p.shape, p.stride(), p.storage_offset()).detach() \
            .requires_grad_(p.requires_grad)
        if p.requires_grad and not p.is_leaf:
            # a non-leaf stays one: the functional run copies a grad-requiring non-leaf before
            # it may be mutated, so that its gradient is taken before the mutation
            copy = copy.view_as(copy)
        out.append(copy)
    return out


def is_guarded(graph) -> bool:
    return any(n.op == "call_function" and n.target in GUARDS for n in graph.nodes)

"""The op choosers of ``aotcheck.fuzz.strategies``: for each op, may it act on a value, and
which arguments to draw for it (``APPLIES`` and ``ARGS``), plus the shape arithmetic they need.

A chooser sees ``x`` (the ``_Facts`` of the value the op acts on), the facts of every usable
value, and the drawing state; it reads tensors through the facts only.
"""
from __future__ import annotations

import itertools
import math

import hypothesis.strategies as st
import torch

from ..subclass.base import plain_part
from .programs import OP_KINDS, DType, Index

SCALARS = (1.0, 2.0, -1.0, 0.5)
CLAMP_BOUNDS = ((-0.5, 0.5), (0.0, None), (None, 0.0))
MAX_NDIM = 4


def _pick(draw, options):
    """One of ``options``, shrinking toward the first. (Like ``st.sampled_from``, whose strategy
    object, built anew for every new list, costs more than the draw.)"""
    return options[draw(st.integers(0, len(options) - 1))]




def storage_of(t: torch.Tensor) -> torch.UntypedStorage:
    """``t``'s storage; a wrapper subclass's is its first inner tensor's (``plain_part``)."""
    return plain_part(t).untyped_storage()


def _broadcast(a, b):
    """The broadcast of two shapes, or None. (``torch.broadcast_shapes`` is 50x slower.)"""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    if any(x != y and 1 not in (x, y) for x, y in zip(a, b)):
        return None
    return tuple(y if x == 1 else x for x, y in zip(a, b))


def _broadcasts_to(shape, target) -> bool:
    return _broadcast(shape, target) == tuple(target)


def _matmul_shape(a, b):
    """The shape of ``torch.matmul`` on these shapes, or None where it is an error."""
    if not a or not b:
        return None
    a2, b2 = ((1,) + a if len(a) == 1 else a), (b + (1,) if len(b) == 1 else b)
    if a2[-1] != b2[-2]:
        return None
    batch = _broadcast(a2[:-2], b2[:-2])
    if batch is None:
        return None
    return batch + ((a2[-2],) if len(a) > 1 else ()) + ((b2[-1],) if len(b) > 1 else ())


def _no_args(draw, x, facts, state):
    return ()


def _sources(x, facts, target_shape, saved=False):
    """Values that can be read into (a part of) ``x`` shaped ``target_shape``.

    ``saved``: the op saves this operand for backward, so writing ``x`` must not bump its version.
    """
    return [n for n, f in facts.items()
            if _broadcasts_to(f.shape, target_shape) and not f.shares_elements(x)
            and not (saved and f.shares_version(x))]


def _operand(draw, x, facts, target_shape, scalar_ok=True, saved=False):
    sources = _sources(x, facts, target_shape, saved)
    if sources and (not scalar_ok or draw(st.booleans())):
        return _pick(draw, sources)
    return _pick(draw, SCALARS)


def _binary_operands(x, facts, state):
    return [n for n, f in facts.items()
            if (s := _broadcast(x.shape, f.shape)) is not None and math.prod(s) <= state.max_numel]


def _matmul_operands(x, facts, state):
    options = []
    for name, f in facts.items():
        for transpose in (False, True) if f.ndim >= 2 else (False,):
            other = f.shape[:-2] + (f.shape[-1], f.shape[-2]) if transpose else f.shape
            out = _matmul_shape(x.shape, other)
            if (f.t.dtype == x.t.dtype and out is not None and math.prod(out) <= state.max_numel
                    and len(out) <= MAX_NDIM):
                options.append((name, transpose))
    return options


def _dim(draw, x):
    return draw(st.integers(0, x.ndim - 1))


def _two_dims(draw, x):
    return _pick(draw, list(itertools.combinations(range(x.ndim), 2)))


def _reshapes(shape):
    """Shapes with the same numel, simplest first: flat, merged pairs, split dims, 2-D."""
    n = math.prod(shape)
    out = [(n,)] + ([()] if n == 1 else [])
    out += [shape[:i] + (shape[i] * shape[i + 1],) + shape[i + 2:] for i in range(len(shape) - 1)]
    out += [shape[:i] + (d, s // d) + shape[i + 1:]
            for i, s in enumerate(shape) for d in range(2, s) if s % d == 0]
    out += [(n // d, d) for d in range(2, n) if n % d == 0]
    out += [shape, (1,) + shape]
    return [s for s in dict.fromkeys(out) if len(s) <= MAX_NDIM]


def _views(x):
    meta = torch.empty_strided(x.shape, x.t.stride(), dtype=x.t.dtype, device="meta")
    good = []
    for shape in _reshapes(x.shape):
        try:
            meta.view(shape)
            good.append(shape)
        except RuntimeError:
            pass
    return good


def _expands(x, state):
    options = [x.shape[:i] + (k,) + x.shape[i + 1:]
               for i, s in enumerate(x.shape) if s == 1 for k in (2, 3)]
    options += [(2,) + x.shape] if x.ndim < MAX_NDIM else []
    return [s for s in options if math.prod(s) <= state.max_numel] or [x.shape]


def _slice_item(draw, size):
    start = draw(st.integers(0, size - 1))
    stop = draw(st.integers(start + 1, size)) if draw(st.booleans()) else None
    step = _pick(draw, [1, 2, 3])
    return (start or None, stop, None if step == 1 else step)


def _index(draw, x):
    """A key for ``x[...]`` on one dim: an int or a slice, after ``:`` for the dims before."""
    d = _dim(draw, x)
    item = _slice_item(draw, x.shape[d]) if draw(st.booleans()) else draw(
        st.integers(0, x.shape[d] - 1))
    return Index(((None, None, None),) * d + (item,))


def _as_strided(draw, x, facts, state):
    storage_numel = storage_of(x.t).nbytes() // x.t.element_size()
    ndim = _pick(draw, [1, 2])
    size = [draw(st.integers(1, 4)) for _ in range(ndim)]
    stride = [_pick(draw, [1, 2, 3, 0]) for _ in range(ndim)]
    if ndim == 2 and draw(st.booleans()):
        stride[0] = size[1] * stride[1]  # a row-major layout
    while sum((s - 1) * st_ for s, st_ in zip(size, stride)) >= storage_numel:
        i = max(range(ndim), key=lambda i: (size[i] - 1) * stride[i])
        size[i] -= 1
    reach = sum((s - 1) * st_ for s, st_ in zip(size, stride))
    offset = draw(st.integers(0, storage_numel - 1 - reach))
    return (tuple(size), tuple(stride), offset)


def _reduction(draw, x, facts, state, full_ok=True):
    if x.ndim == 0 or (full_ok and draw(st.booleans())):
        return ()
    return (_dim(draw, x), draw(st.booleans()))


def _squeeze(draw, x, facts, state):
    return (_dim(draw, x),) if draw(st.booleans()) else ()


def _setitem(draw, x, facts, state):
    index = _index(draw, x)
    target = tuple(torch.empty(x.shape, device="meta")[index.key()].shape)
    return (index, _operand(draw, x, facts, target))


def _split(draw, x, facts, state):
    d = _dim(draw, x)
    size = draw(st.integers(1, x.shape[d]))
    return (size, d, draw(st.integers(0, math.ceil(x.shape[d] / size) - 1)))


def _narrow(draw, x, facts, state):
    d = _dim(draw, x)
    start = draw(st.integers(0, x.shape[d] - 1))
    return (d, start, draw(st.integers(1, x.shape[d] - start)))


def _diagonal(draw, x, facts, state):
    d1, d2 = _two_dims(draw, x)
    return (draw(st.integers(-(x.shape[d1] - 1), x.shape[d2] - 1)), d1, d2)


def _binary(draw, x, facts, state):
    operands = _binary_operands(x, facts, state)
    if operands and draw(st.booleans()):
        return (_pick(draw, operands),)
    return (_pick(draw, SCALARS),)


def _always(x, facts, state):
    return True


def _ndim_at_least(n):
    return lambda x, facts, state: x.ndim >= n


def _writable(x, facts, state):
    return x.writable


def _grows(x, facts, state):
    return x.ndim < MAX_NDIM


# op -> may it act on this value? (x, facts of every value, state) -> bool
APPLIES = {
    **{op: _always for op in OP_KINDS["pointwise"]},
    "exp": lambda x, facts, state: x.tame,
    "view": _always, "reshape": _always,
    "t": lambda x, facts, state: x.ndim <= 2,
    "transpose": _ndim_at_least(2), "permute": _ndim_at_least(2), "diagonal": _ndim_at_least(2),
    "slice": _ndim_at_least(1), "select": _ndim_at_least(1), "narrow": _ndim_at_least(1),
    "unbind": _ndim_at_least(1), "split": _ndim_at_least(1), "squeeze": _ndim_at_least(1),
    "unsqueeze": _grows, "expand": _always, "as_strided": _always,
    **{op: _writable for op in OP_KINDS["inplace"]},
    "copy_": lambda x, facts, state: x.writable and bool(_sources(x, facts, x.shape)),
    "setitem": lambda x, facts, state: x.writable and x.ndim >= 1,
    "sum": _always, "mean": _always, "amax": _ndim_at_least(1),
    "t_": lambda x, facts, state: x.reshapable and x.ndim <= 2,
    "transpose_": lambda x, facts, state: x.reshapable and x.ndim >= 2,
    "unsqueeze_": lambda x, facts, state: x.reshapable and x.ndim < MAX_NDIM,
    "squeeze_": lambda x, facts, state: x.reshapable and x.ndim >= 1,
    "matmul": lambda x, facts, state: bool(_matmul_operands(x, facts, state)),
    "detach": _always,
    # the wider grammar
    "to": _always, "gt": _always,
    "rand_like": lambda x, facts, state: x.floating,
    "dropout": lambda x, facts, state: x.floating,
    "reseeded_rand_like": lambda x, facts, state: x.floating,
    "generator_rand": lambda x, facts, state: x.floating,
    "double_fn": lambda x, facts, state: x.floating,
    "mul2_fn_": lambda x, facts, state: x.floating and x.writable,
    "requires_grad_": lambda x, facts, state: (x.floating and not x.t.requires_grad
                                               and not x.t._is_view()),
    "set_": lambda x, facts, state: x.mutable and not x.t.requires_grad and bool(_set_sources(x, facts)),
    "unbind_all": _ndim_at_least(1),
    "chunk": lambda x, facts, state: x.ndim >= 1 and max(x.shape) >= 2,
    "size": _always,
    # issue 27's classes; see the NOTE [issue 27's ops] below
    "retain_grad": lambda x, facts, state: _records_grad(x),
    "hook": lambda x, facts, state: _records_grad(x) and not x.t._is_view(),
    "data_set": lambda x, facts, state: bool(_data_sources(x, facts)),
    "data_swap": lambda x, facts, state: bool(_data_swaps(x, facts)),
    "data_mul_": lambda x, facts, state: (x.floating and x.plain and not x.saved
                                          and len(set(x.offsets)) == x.numel),
    "func_grad": lambda x, facts, state: x.floating and x.plain,
    "func_vjp": lambda x, facts, state: x.floating and x.plain,
    "func_grad_index": lambda x, facts, state: x.floating and x.plain and x.ndim >= 1,
    "lib_mul2_": lambda x, facts, state: _library_target(x),
    "lib_add_first_": lambda x, facts, state: _library_target(x),
    "sin_out": lambda x, facts, state: bool(_out_sources(x, facts)),
    "sin_out_fresh": lambda x, facts, state: x.floating and x.plain and (
        x.no_grad or not x.t.requires_grad),
}

# NOTE [issue 27's ops]
# Each is offered only where eager PyTorch runs it and gives a result that does not depend on
# autograd's blind spots:
# - ``retain_grad()`` and ``register_hook`` act on a tensor that requires grad and whose grad_fn
#   is built (never on a view that NOTE [views that gain requires_grad] keeps unlinked: reading
#   its grad_fn would link it, changing what later in-place ops may do). The hook doubles the
#   gradient, so its effect shows in every gradient upstream of it. Hooks go on non-views only:
#   eager PyTorch 2.13 crashes (SIGSEGV) in ``register_hook`` on a view of a leaf after ``set_()``
#   on a detached alias of that leaf (``b.detach().set_(t); b[0].register_hook(h)``).
# - ``x.data = y`` and the swap act on plain tensors that are not views, of one dtype, whose
#   storages autograd saved nothing from (a saved tensor would see the new data unversioned); a
#   non-leaf that requires grad keeps its shape (its grad_fn would hand back another shape).
#   ``x.data.mul_(2.0)`` writes memory autograd saved nothing from and that has no overlap.
# - the ``torch.library`` ops have no autograd formula, so they are called where autograd
#   records nothing: under no_grad, or on a tensor that requires no grad.
# - ``out=`` ops are not differentiable: with grad mode on, neither the out tensor nor the input
#   may require grad. An out tensor of another shape is resized, so it must be resizable: not a
#   view, not saved for backward, and not a tensor that requires grad under no_grad.


def _records_grad(x) -> bool:
    return x.floating and x.plain and x.t.requires_grad and not x.unlinked


def _data_target(x) -> bool:
    return x.plain and not x.t._is_view() and not x.saved


def _keeps_shape(x) -> bool:
    """Must ``x`` keep its shape when its data is replaced? (a non-leaf with a grad_fn)"""
    return x.t.requires_grad and x.t.grad_fn is not None


def _data_sources(x, facts):
    if not _data_target(x):
        return []
    return [n for n, f in facts.items() if f.t is not x.t and f.plain and f.t.dtype == x.t.dtype
            and not f.saved and (f.shape == x.shape or not _keeps_shape(x))]


def _data_swaps(x, facts):
    return [n for n in _data_sources(x, facts)
            if _data_target(facts[n]) and (facts[n].shape == x.shape or not _keeps_shape(facts[n]))]


def _library_target(x) -> bool:
    return x.floating and x.plain and x.writable and (x.no_grad or not x.t.requires_grad)


def _out_sources(o, facts):
    """Inputs ``x`` of ``torch.sin(x, out=o)``, where ``o`` may be written (and resized)."""
    if not (o.floating and o.plain and o.writable and (o.no_grad or not o.t.requires_grad)):
        return []
    resizable = not o.t._is_view() and not o.saved and o.reshapable
    return [n for n, f in facts.items()
            if f.plain and f.t.dtype == o.t.dtype and (o.no_grad or not f.t.requires_grad)
            and not f.shares_elements(o) and (f.shape == o.shape or resizable)]


def _new_leaf(draw, x, facts, state):
    """The shape and dtype of a leaf made inside the function."""
    ndim = _pick(draw, [1, 2, 0])
    shape = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    return (shape, DType("float64" if draw(st.integers(0, 4)) == 4 else "float32"))

def _set_sources(x, facts):
    return [n for n, f in facts.items() if f.t.dtype == x.t.dtype and f.t is not x.t
            and not f.t.requires_grad]


def _chunk(draw, x, facts, state):
    d = _pick(draw, [d for d in range(x.ndim) if x.shape[d] >= 2])
    return (2, d)


CAST_DTYPES = ("float64", "float32", "int64", "bool")

# op -> draw the args after the target value: (draw, x, facts, state) -> tuple
ARGS = {
    "add": _binary, "mul": _binary,
    "view": lambda draw, x, facts, state: (_pick(draw, _views(x)),),
    "reshape": lambda draw, x, facts, state: (_pick(draw, _reshapes(x.shape)),),
    "transpose": lambda draw, x, facts, state: _two_dims(draw, x),
    "permute": lambda draw, x, facts, state: (
        _pick(draw, list(itertools.permutations(range(x.ndim)))),),
    "slice": lambda draw, x, facts, state: (Index(((None, None, None),) * (d := _dim(draw, x))
                                                  + (_slice_item(draw, x.shape[d]),)),),
    "select": lambda draw, x, facts, state: (
        (d := _dim(draw, x)), draw(st.integers(0, x.shape[d] - 1))),
    "narrow": _narrow,
    "unsqueeze": lambda draw, x, facts, state: (draw(st.integers(0, x.ndim)),),
    "squeeze": _squeeze,
    "expand": lambda draw, x, facts, state: (_pick(draw, _expands(x, state)),),
    "diagonal": _diagonal,
    "unbind": lambda draw, x, facts, state: (
        (d := _dim(draw, x)), draw(st.integers(0, x.shape[d] - 1))),
    "split": _split,
    "as_strided": _as_strided,
    "add_": lambda draw, x, facts, state: (_operand(draw, x, facts, x.shape),),
    "mul_": lambda draw, x, facts, state: (_operand(draw, x, facts, x.shape, saved=True),),
    "copy_": lambda draw, x, facts, state: (_operand(draw, x, facts, x.shape, scalar_ok=False),),
    "fill_": lambda draw, x, facts, state: (_pick(draw, SCALARS),),
    "clamp_": lambda draw, x, facts, state: _pick(draw, CLAMP_BOUNDS),
    "setitem": _setitem,
    "sum": _reduction, "mean": _reduction,
    "amax": lambda draw, x, facts, state: _reduction(draw, x, facts, state, full_ok=False),
    "transpose_": lambda draw, x, facts, state: _two_dims(draw, x),
    "unsqueeze_": lambda draw, x, facts, state: (draw(st.integers(0, x.ndim)),),
    "squeeze_": _squeeze,
    "matmul": lambda draw, x, facts, state: draw(
        st.sampled_from(_matmul_operands(x, facts, state))),
    "to": lambda draw, x, facts, state: (DType(_pick(draw, CAST_DTYPES)),),
    "gt": lambda draw, x, facts, state: (_pick(draw, (0.0, 0.5)),),
    "dropout": lambda draw, x, facts, state: (0.5,),
    "reseeded_rand_like": lambda draw, x, facts, state: (draw(st.integers(0, 3)),),
    "generator_rand": lambda draw, x, facts, state: (draw(st.integers(0, 3)),),
    "set_": lambda draw, x, facts, state: (_pick(draw, _set_sources(x, facts)),),
    "unbind_all": lambda draw, x, facts, state: (_dim(draw, x),),
    "chunk": _chunk,
    "data_set": lambda draw, x, facts, state: (_pick(draw, _data_sources(x, facts)),),
    "data_swap": lambda draw, x, facts, state: (_pick(draw, _data_swaps(x, facts)),),
    "data_mul_": lambda draw, x, facts, state: (2.0,),
    "randn_leaf": _new_leaf, "new_parameter": _new_leaf,
    "lib_add_first_": lambda draw, x, facts, state: (_pick(draw, SCALARS),),
    "sin_out": lambda draw, x, facts, state: (_pick(draw, _out_sources(x, facts)),),
}

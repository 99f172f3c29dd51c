"""regenerate: the outputs the runtime rebuilds as real tensors rather than returning the
graph's values: views of an argument, an intermediate or another output, re-laid-out
copies, and inference tensors.

# NOTE [alias regeneration]
An output that shares storage with an argument, another output or an
intermediate is not returned by the graph as a copy. It is rebuilt with
``base.as_strided(size, stride, storage_offset)`` on the real base, after the
mutations, so that mutating it later changes the base exactly as in eager and
autograd gives it a view grad_fn. Where eager's output does not require grad
but its base does, the view is taken under no_grad.
"""
from __future__ import annotations

import contextlib

import torch

from ..capture.facts import MovedKind, Poison
from ..signature import storage_extent


def reinterpret(base: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The whole storage of ``base`` as a flat tensor of ``dtype`` (for outputs such as
    ``view_as_real`` or ``x.view(torch.int32)``, whose geometry is in units of ``dtype``)."""
    n = base.untyped_storage().nbytes() // base.element_size()
    flat = base.as_strided((n,), (1,), 0)
    if flat.is_complex() and dtype == flat.real.dtype:
        return torch.view_as_real(flat).view(-1)        # differentiable
    if dtype.is_complex and flat.dtype == torch.empty((), dtype=dtype).real.dtype:
        return torch.view_as_complex(flat.view(-1, 2))
    return flat.view(dtype)


def alias(base: torch.Tensor, o) -> torch.Tensor:
    clips = getattr(o, "clips", ())
    if getattr(o, "from_root", False):
        # eager regenerated the view's grad_fn as an as_strided of its root base, which the
        # argument shares (NOTE [as_strided clips] in recorder.py)
        from ..signature import root_of
        root = root_of(base)
        if root.requires_grad == base.requires_grad and root.dtype == base.dtype:
            base = root
    if str(base.dtype).replace("torch.", "") != o.dtype:
        base = reinterpret(base, getattr(torch, o.dtype))
        clips = ()
    if o.poisoned:
        return poisoned_view(base, o.poisoned, (o.shape, o.stride, o.offset))
    if base.requires_grad and not o.requires_grad:
        # eager's output is cut from autograd (a detach, or a view taken in no_grad of a base
        # that did not require grad then); a view under no_grad would still require grad
        base = base.detach()
        if (tuple(base.shape), base.stride(), base.storage_offset()) == (o.shape, o.stride, o.offset):
            return base
    # eager took this view in a no_grad region: it requires grad but has no grad_fn; or its
    # chain passes through such a view and ends nowhere (then one more view, with grad on)
    no_grad_view = base.requires_grad and torch.is_grad_enabled() and (o.is_leaf or o.grad_dead_end)
    with torch.no_grad() if no_grad_view else contextlib.nullcontext():
        if clips and base.requires_grad and not no_grad_view:
            # as in eager, each as_strided on the chain sends no gradient outside the tensor
            # it was called on (NOTE [as_strided clips] in recorder.py)
            for shape, stride, offset in clips:
                base = base.as_strided(shape, stride, offset)
        view = base.as_strided(o.shape, o.stride, o.offset)
        if o.multi_output_view:
            # unbind/split views may not be mutated in place; make ours the same kind of view
            view = multi_output_view(view)
    if o.grad_dead_end and no_grad_view:
        view = view.view_as(view)
    return view


def poisoned_view(base: torch.Tensor, kind: Poison, geometry: tuple) -> torch.Tensor:
    """A view of ``base`` in ``geometry`` (size, stride, offset) made the way eager made a
    view whose grad_fn now raises (``kind``),
    its version then bumped as eager's write of its base bumped it: reading its autograd
    facts, or writing it in place, raises as eager's does
    (NOTE [poisoned views] in outputs.py). Its values are ``base``'s memory."""
    mode = {Poison.INFERENCE_MODE: torch.inference_mode, Poison.NO_GRAD: torch.no_grad,
            Poison.MULTI_OUTPUT: torch.enable_grad}[kind]
    with mode():
        view = base.as_strided(*geometry)
        if kind is Poison.MULTI_OUTPUT:
            view = multi_output_view(view)
    torch.autograd.graph.increment_version(view)
    return view


def multi_output_view(t: torch.Tensor) -> torch.Tensor:
    """``t`` as one output of a multi-output view op (``unbind``, like ``split`` or ``chunk``):
    eager refuses to write such a view in place; its values and gradient are ``t``'s."""
    return t.unsqueeze(0).unbind(0)[0]


def detached_alias(base: torch.Tensor, o, value: torch.Tensor) -> torch.Tensor:
    """An output that shares ``base``'s storage without being an autograd view of it (eager:
    a detached alias, then an in-place op with a value that requires grad). Its data is
    already in place; copying its own graph value over it gives it eager's gradient path."""
    view = base.detach()
    if str(view.dtype).replace("torch.", "") != o.dtype:
        view = reinterpret(view, getattr(torch, o.dtype))
    root = view
    if (tuple(view.shape), view.stride(), view.storage_offset()) != (o.shape, o.stride, o.offset):
        view = view.as_strided(o.shape, o.stride, o.offset)
        if not _within(view, root):
            # it reaches memory the argument does not (``a.as_strided(...)`` onto the rest of
            # its storage, then detach()): autograd's as_strided backward over the argument's
            # geometry would reach outside it ("setStorage: ... out of bounds"), so, as eager's
            # detach() is, it is no autograd view of the argument
            view = view.detach()
    if value.requires_grad and torch.is_grad_enabled():
        if torch._debug_has_internal_overlap(view) == 1:      # 1: overlaps, as copy_ checks
            # an expand of the alias (stride 0): copy_ cannot write it, so the gradient path
            # goes through a Function that returns the view and hands its gradient to value
            return _CustomFunctionView.apply(root, value, o.shape, o.stride, o.offset)
        view.copy_(value)
    return view


def _within(view: torch.Tensor, root: torch.Tensor) -> bool:
    """Does ``view`` reach only storage elements within ``root``'s first-to-last extent?"""
    if view.numel() == 0:
        return True
    lo, hi = storage_extent(view)
    root_lo, root_hi = storage_extent(root)
    return root.numel() > 0 and root_lo <= lo and hi <= root_hi


def addressing(shape, stride) -> tuple:
    """The (size, stride) pairs that address memory: a size-1 dimension is never stepped."""
    return tuple((sz, st) for sz, st in zip(shape, stride) if sz != 1)


class _CustomFunctionView(torch.autograd.Function):
    """A view of ``base`` made inside a custom Function, whose gradient goes to ``value``
    (NOTE [custom Function views] in outputs.py)."""

    @staticmethod
    def forward(ctx, base, value, shape, stride, offset):
        return base.as_strided(shape, stride, offset)

    @staticmethod
    def backward(ctx, grad):
        return None, grad, None, None, None


def view_in_custom_function(base: torch.Tensor, o, value: torch.Tensor) -> torch.Tensor:
    if str(base.dtype).replace("torch.", "") != o.dtype:
        base = reinterpret(base.detach(), getattr(torch, o.dtype))
    if not (value.requires_grad and torch.is_grad_enabled()):
        return alias(base, o)
    return _CustomFunctionView.apply(base, value, o.shape, o.stride, o.offset)


def restride(t: torch.Tensor, shape, stride, offset, fill: bool = True) -> torch.Tensor:
    """A copy of ``t`` laid out exactly as eager laid it out (autograd records the copy);
    with ``fill=False`` only an empty tensor of that layout, of ``t``'s dtype and device."""
    if offset == 0:
        new = torch.empty_strided(shape, stride, dtype=t.dtype, device=t.device)
    else:
        need = offset + sum((s - 1) * st for s, st in zip(shape, stride)) + 1
        new = torch.empty(need, dtype=t.dtype, device=t.device).as_strided(shape, stride, offset)
    return new.copy_(t) if fill else new


# NOTE [inference outputs]
# A tensor made inside an ``inference_mode`` block is an inference tensor: outside the block,
# writing it in place raises, and so does using it in autograd. The graph computes ordinary
# tensors, so the runtime copies each such output, with the storage it shares with the other
# such outputs, into inference tensors (under inference_mode), in the same geometry: outputs
# that were views of one another in eager still share one storage. An output over an
# argument's storage (eager: an intermediate set_() onto it, made in the caller's inference
# mode) is an inference tensor over that same storage, not a copy: writes to the argument
# show through it as in eager.


def as_inference_tensors(out: list, indices, shared=frozenset()) -> None:
    copies: dict[int, torch.Tensor] = {}      # storage address -> its copy, as bytes
    made: dict[int, torch.Tensor] = {}        # id of an output -> its inference tensor
    with torch.inference_mode():
        for k in indices:
            t = out[k]
            if not isinstance(t, torch.Tensor) or t.is_inference():
                continue
            if id(t) in made:       # ``return v, v``: one tensor twice stays one tensor
                out[k] = made[id(t)]
                continue
            if k in shared:
                out[k] = made[id(t)] = torch.empty(0, dtype=t.dtype, device=t.device).set_(
                    t.untyped_storage(), t.storage_offset(), t.shape, t.stride())
                continue
            storage = t.untyped_storage()
            raw = copies.get(storage.data_ptr())
            if raw is None:
                raw = torch.empty(storage.nbytes(), dtype=torch.uint8, device=t.device)
                raw.copy_(torch.empty(0, dtype=torch.uint8, device=t.device).set_(storage))
                copies[storage.data_ptr()] = raw
            out[k] = made[id(t)] = raw.view(t.dtype).as_strided(t.shape, t.stride(),
                                                                t.storage_offset())


def as_ordinary_tensors(out: list, indices) -> None:
    """The outputs ``indices``, ordinary tensors in eager although the call is under
    inference_mode (NOTE [ordinary outputs of an inference call] in capture/outputs.py),
    copied out of inference mode in the same geometry; outputs that share a storage share
    their copy, and one tensor returned twice stays one tensor."""
    copies: dict[int, torch.Tensor] = {}
    made: dict[int, torch.Tensor] = {}
    with torch.inference_mode(False), torch.no_grad():
        for k in indices:
            t = out[k]
            if not isinstance(t, torch.Tensor) or not t.is_inference():
                continue
            if id(t) in made:
                out[k] = made[id(t)]
                continue
            storage = t.untyped_storage()
            raw = copies.get(storage.data_ptr())
            if raw is None:
                with torch.inference_mode():
                    whole = torch.empty(0, dtype=torch.uint8, device=t.device).set_(storage)
                raw = whole.clone()
                copies[storage.data_ptr()] = raw
            out[k] = made[id(t)] = raw.view(t.dtype).as_strided(t.shape, t.stride(),
                                                                t.storage_offset())


def as_moved_kind(out: list, outputs) -> None:
    """NOTE [inference state moved by .data =] (capture/storage/watch.py): each output
    ``.data =`` gave the other kind inside the inference call, as eager's: a shell made as
    the kind it was made as, given the output's value by ``.data =`` inside inference mode
    (an inference tensor with a version counter, or an ordinary one with none). One tensor
    returned twice stays one tensor."""
    made: dict[int, torch.Tensor] = {}
    for o in outputs:
        t = out[o.index]
        if not isinstance(t, torch.Tensor):
            continue
        key = id(t)
        if key not in made:
            final = o.moved_kind is MovedKind.INFERENCE
            if t.is_inference() != final:
                with torch.inference_mode(final):
                    t = t.clone()
            with torch.inference_mode(not final):     # made as the other kind
                shell = torch.empty(0, dtype=t.dtype, device=t.device)
            with torch.inference_mode():
                shell.data = t
            made[key] = shell
        out[o.index] = made[key]

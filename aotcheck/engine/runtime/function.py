"""function: the ``torch.autograd.Function`` a training artifact applies (artifact.py).

Its forward runs the forward graph (or takes the values a late swap replay computed first:
NOTE [set_ under no_grad onto another shape] in swap_grad.py); its backward runs the backward
graph on the saved values and the outputs' gradients, replays what the user's backward did
to saved arguments, and hands retained outputs their parts.
"""
from __future__ import annotations

import torch

from .imperative import add_retained
from .writeback import apply_backward_mutations, as_at_call
from ..joint import backward_error_type
from ..signature import storage_key
from ...errors import DoubleBackwardError


class _DoubleBackwardGuard(torch.autograd.Function):
    """Identity on gradients computed with create_graph=True; raises if they are
    differentiated again (the saved values carry no history, so a second-order gradient
    through them would be silently wrong)."""

    @staticmethod
    def forward(ctx, anchor, *grads):
        return tuple(g.clone() if g is not None else None for g in grads)

    @staticmethod
    def backward(ctx, *_):
        raise DoubleBackwardError(
            "a second-order gradient was requested through an aotcheck-compiled function; "
            "aotcheck compiles first-order gradients only (its backward graph is not differentiable)")


def returnable(fw, saved, primals) -> list:
    """The forward graph's values ``fw`` as the Function hands them back: none a view.

    # NOTE [views the forward returns]
    A Function may not hand back a view as a new value (autograd would mark it as made inside
    a custom Function: in place on it raises, where eager's output allows it). A view the
    graph returns is therefore replaced by a tensor that is no view: a ``detach()`` of it
    where it shares its memory with another value the graph returns (made by the graph, not
    an argument's), else a copy. The detach keeps that memory shared: the runtime cuts the
    outputs that share a storage in eager from the graph values over it
    (NOTE [one storage per intermediate] in artifact.py), so two values over one storage must still be over
    one after the Function. ``return y.detach().t(), y[0]`` needs both ``y`` and its detach as
    bases: torch 2.13 traces ``y.detach()`` as ``aten.detach`` (no view), torch 2.14 and
    later as ``aten.alias`` (a view), whose copy made output 0 a fresh tensor."""
    fw = list(fw)
    views = [k for k, t in enumerate(fw) if t._is_view()]
    if not views:
        return fw
    count: dict[int, int] = {}
    for t in (*fw, *saved):
        if isinstance(t, torch.Tensor):
            key = storage_key(t)
            count[key] = count.get(key, 0) + 1
    arguments = {storage_key(p) for p in primals if isinstance(p, torch.Tensor)}
    for k in views:
        key = storage_key(fw[k])
        shared = count[key] > 1 and key not in arguments
        fw[k] = fw[k].detach() if shared else fw[k].clone()
    return fw


def _first_requiring_grad(tensors):
    """The first tensor that requires grad, or None (a loop: a generator cost 0.3 us a call)."""
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.requires_grad:
            return t
    return None


class grad_mode_as_eager:
    """The training forward graph runs with grad mode on, below autograd.

    # NOTE [kernels that read grad mode]
    A few kernels decide by grad mode what they return: mkldnn's RNN layer (``nn.LSTM`` on
    CPU) makes its workspace, which its backward reads, only while grad mode is on (else the
    output is undefined, and the backward kernel refuses it). Eager runs the forward with
    grad mode on; the forward graph runs inside an ``autograd.Function``'s forward, where it
    is off. So the graph runs with grad mode on, below autograd (no history is recorded: the
    Function stays the graph's one autograd node), as the kernels ran in eager's forward."""

    def __enter__(self):
        self._grad = torch.enable_grad()
        self._below = torch._C._AutoDispatchBelowAutograd()
        self._grad.__enter__()
        self._below.__enter__()
        return self

    def __exit__(self, *exc):
        self._below.__exit__(*exc)
        self._grad.__exit__(*exc)
        return False


def make_function(art):
    """The autograd.Function of ``art`` (a training CompiledArtifact)."""
    n_fw = art.num_fw_outputs
    nondiff = art._nondiff
    diff = art.diff_outputs
    grad_inputs = art.grad_inputs
    n_primals = len(art.plan.placeholders)
    bw_mutations = art.backward_mutations
    n_grads = len(grad_inputs)
    n_new = len(art.meta.new_leaves)
    n_old = len(art._olds)
    retained = art.retained_diff            # NOTE [retained outputs] in joint.py
    n_ret = len(retained)
    reach = [frozenset(r) for r in art.grad_reach] if len(art.grad_reach) == n_grads + n_ret else None
    reach, ret_reach = (reach[:n_grads], reach[n_grads:]) if reach is not None else (None, None)
    diff_like = [(c.shape, c.dtype) for c in (art.meta.candidates[art.fw_candidates[k]] for k in diff)]

    class CompiledFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            # then the grad leaves made inside (not read), then the geometry at the call of
            # arguments whose metadata was replayed before it (see CompiledArtifact.__call__),
            # then the graph's values where it ran before the call and the leaves' gradient
            # nodes of before their swaps
            # (NOTE [set_ under no_grad onto another shape] in swap_grad.py; not read)
            primals = inputs[:n_primals]
            pre = inputs[n_primals + n_new + 1]
            if pre is not None:
                outs = pre
            else:
                with grad_mode_as_eager():      # NOTE [kernels that read grad mode]
                    outs = art.forward(*as_at_call(primals, inputs[n_primals + n_new]))
            ctx.set_materialize_grads(False)     # NOTE [per-output reach] in joint.py
            fw, saved = returnable(outs[:n_fw], outs[n_fw:], primals), outs[n_fw:]
            ctx.save_for_backward(*saved)
            # an input that requires grad, kept only as an autograd edge for the guard below
            ctx.anchor = _first_requiring_grad(primals)
            if nondiff:
                ctx.mark_non_differentiable(*[fw[k] for k in nondiff])
            if bw_mutations:
                # a negative index is forward output -index - 1
                # (NOTE [backward mutations of returned values] in joint.py): the very tensor the caller gets
                ctx.mutated_in_backward = [primals[m[0]] if m[0] >= 0 else fw[-m[0] - 1]
                                           for m in bw_mutations]
            ctx.retained_refs = {}      # filled by the runtime (NOTE [retained outputs])
            return tuple(fw)

        @staticmethod
        def backward(ctx, *grads):
            if art.meta.backward_error:
                err = art.meta.backward_error                        # where eager raises it
                raise backward_error_type(err)(err)
            create_graph = torch.is_grad_enabled()
            bw = art.backward_module()
            with torch.no_grad():
                device = next(g for g in grads if g is not None).device
                live = {pos for pos, k in enumerate(diff) if grads[k] is not None}
                tangents = [grads[k].contiguous() if grads[k] is not None else
                            torch.zeros(diff_like[pos][0], dtype=getattr(torch, diff_like[pos][1]),
                                        device=device)
                            for pos, k in enumerate(diff)]
                gin = bw(*ctx.saved_tensors, *tangents)
                if bw_mutations:
                    apply_backward_mutations(ctx.mutated_in_backward, bw_mutations,
                                             gin[n_grads + n_ret:])
                if n_ret:
                    add_retained(ctx.retained_refs, gin[n_grads:n_grads + n_ret], live, ret_reach)
                gin = gin[:n_grads]
            if create_graph and ctx.anchor is not None:
                # first-order gradients are fine; differentiating them again is not
                gin = _DoubleBackwardGuard.apply(ctx.anchor, *gin)
            result = [None] * (n_primals + n_new + 2 + n_old)
            for j, (p, g) in enumerate(zip(grad_inputs, gin)):
                if reach is None or reach[j] & live:
                    result[p] = g
            return tuple(result)

    return CompiledFunction

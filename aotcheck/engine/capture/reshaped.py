"""reshaped: set_() (or ``.data =``) under no_grad onto another shape of a leaf argument that
requires grad, as the recorder sees it (NOTE [set_ under no_grad onto another shape] in
runtime/swap_grad.py).

Mixed into recorder.py's ``MetadataRecorder``: set_() reaches no TorchFunctionMode, so a swap
is noticed at the next call that reads the argument's wrapper (``regrad_reshaped``), which gives
the wrapper a gradient node of the new shape, as eager's leaf gets a new AccumulateGrad.
"""
from __future__ import annotations

import inspect

import torch
from torch.utils import _pytree as pytree

from .functional import storage_ref


def _mirrored_leaf(t: torch.Tensor) -> bool:
    """Is ``t`` the functional wrapper of a leaf that requires grad, whose autograd metadata
    was mirrored onto it (its grad_fn an ``Error`` node with no edges)?"""
    fn = t.grad_fn
    return t.requires_grad and fn is not None and type(fn).__name__ == "Error" and \
        not fn.next_functions and hasattr(fn, "_input_metadata")


def lowers_data_assignment(fn) -> bool:
    """Is ``fn`` Dynamo's graph (a GraphModule's forward) of a function that assigned
    ``.data``? Dynamo lowers ``x.data = y`` to ``set_()`` under no_grad followed by a call of
    its own that lowers the version counter: the graph's swaps may then be ``.data =``, whose
    AccumulateGrad eager keeps (NOTE [set_ under no_grad onto another shape] in
    runtime/swap_grad.py)."""
    fn = inspect.unwrap(fn)                 # aotcheck's lifting wraps it (lift.py)
    graph = getattr(getattr(fn, "__self__", fn), "graph", None)
    return isinstance(graph, torch.fx.Graph) and any(
        n.op == "call_function" and getattr(n.target, "__name__", "") == "_lower_version_count_by_1"
        for n in graph.nodes)


class ReshapeWatch:
    """The recorder's part that follows leaf arguments swapped onto another shape. Its state
    (``grad_wrappers``, ``grad_used``, ``reshaped``, ``reshaped_after_use``, ``reshaped_twice``,
    ``old_edges``, ``data_sets``, ``data_lowered``) is set up by ``MetadataRecorder.__init__``."""

    def regraded(self, p: int, t: torch.Tensor) -> bool:
        """Is placeholder ``p``'s grad_fn (its wrapper ``t``'s) the gradient node of its new
        shape that ``regrad_reshaped`` gave it, which autograd did not record?"""
        return p in self.reshaped and _mirrored_leaf(t)

    def _note_grad_use(self, args, kwargs, out) -> None:
        """A call that autograd recorded on the wrapper of a leaf argument before any swap
        moved it onto another shape (NOTE [set_ under no_grad onto another shape]). Attribute
        setters are not looked at: autograd sets some while it holds a tensor's lock."""
        used = [self.grad_wrappers[id(t)][0] for t in pytree.tree_leaves((args, kwargs))
                if isinstance(t, torch.Tensor) and id(t) in self.grad_wrappers]
        if not used or not any(isinstance(o, torch.Tensor) and o.grad_fn is not None
                               for o in pytree.tree_leaves(out)):
            return
        self.grad_used.update(i for i in used if i not in self.reshaped)
        # used again after ``.data =`` onto another shape: which gradient node eager's use
        # gets depends on whether an earlier use still holds the old one (swaps.py refuses)
        self.reshaped_after_use.update(i for i in used if i in self.data_reshaped)

    def _note_new_leaf_use(self, args, kwargs, out) -> None:
        """A call that autograd recorded on a grad leaf made inside: the storage it was on.
        (Outputs' grad_fn is read only for such a call under grad mode: reading it regenerates
        a view's, which may assert after a write in inference mode.)"""
        if not self.new_leaves or not torch.is_grad_enabled() or \
                torch.is_inference_mode_enabled():
            return
        leaves = {id(t) for t in self.new_leaves if isinstance(t, torch.Tensor)}
        used = [t for t in pytree.tree_leaves((args, kwargs))
                if isinstance(t, torch.Tensor) and id(t) in leaves and t.layout == torch.strided]
        if used and any(isinstance(o, torch.Tensor) and o.grad_fn is not None
                        for o in pytree.tree_leaves(out)):
            self.new_leaf_uses.update(storage_ref(t) for t in used)

    def regrad_reshaped(self, args) -> None:
        """Before a call that reads the wrapper of a leaf argument (and once more on all of
        them when the function returns): if set_() (or ``.data =``) under no_grad moved it
        onto another storage of another shape since (set_() reaches no TorchFunctionMode, so
        it is seen here, at the next call), it gets a gradient node of the new shape, as
        eager's leaf gets a new AccumulateGrad (NOTE [set_ under no_grad onto another shape]
        in runtime/swap_grad.py). Used under grad mode before, its gradient node at the call
        is kept as a gradient target too (set_() left the uses before it there). Refused
        (swaps.py): ``.data =`` after a use (eager's leaf keeps its AccumulateGrad while a
        use holds it), and a second swap onto another shape."""
        for t in pytree.tree_leaves(args):
            if not isinstance(t, torch.Tensor) or id(t) not in self.grad_wrappers:
                continue
            index, start, edge = self.grad_wrappers[id(t)]
            fn = t.grad_fn
            if index in self.reshaped_after_use or not _mirrored_leaf(t) or \
                    (tuple(fn._input_metadata[0].shape), fn._input_metadata[0].dtype) == \
                    (tuple(t.shape), t.dtype) or \
                    (storage_ref(t) == start and index not in self.reshaped):
                continue
            if index in self.reshaped:
                # a second swap onto another shape: refused (swaps.py); the wrapper gets a
                # node of its shape so that the trace runs on
                self.reshaped_twice.add(index)
                torch._mirror_autograd_meta_to(t.detach().requires_grad_(), t)
                continue
            if index in self.grad_used:
                if index in self.data_sets or self.data_lowered:
                    # ``.data =``: eager's leaf keeps its gradient node of the old shape
                    # while a use holds it; a use under grad mode from here on is refused
                    # (``_note_grad_use``), so the uses before are the only ones that reach it
                    self.data_reshaped.add(index)
                self.old_edges[index] = edge
            torch._mirror_autograd_meta_to(t.detach().requires_grad_(), t)
            self.reshaped.add(index)

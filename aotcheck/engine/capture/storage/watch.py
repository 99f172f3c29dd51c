"""reshaped: set_() (or ``.data =``) under no_grad onto another shape of a leaf argument that
requires grad, as the recorder sees it
(NOTE [set_ under no_grad onto another shape] in runtime/swap_grad.py).

Mixed into recorder.py's ``MetadataRecorder``: set_() reaches no TorchFunctionMode, so a swap
is noticed at the next call that reads the argument's wrapper (``regrad_reshaped``), which gives
the wrapper a gradient node of the new shape, as eager's leaf gets a new AccumulateGrad.
"""
from __future__ import annotations

import inspect
import sys

import torch
from torch.utils import _pytree as pytree
from torch.utils.weak import WeakIdKeyDictionary

from ..functional import storage_ref


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
    AccumulateGrad eager keeps
    (NOTE [set_ under no_grad onto another shape] in runtime/swap_grad.py)."""
    fn = inspect.unwrap(fn)                 # aotcheck's lifting wraps it (lift.py)
    graph = getattr(getattr(fn, "__self__", fn), "graph", None)
    return isinstance(graph, torch.fx.Graph) and any(
        n.op == "call_function" and getattr(n.target, "__name__", "") == "_lower_version_count_by_1"
        for n in graph.nodes)


class ReshapeWatch:
    """The recorder's part that follows leaf arguments swapped onto another shape; its state is
    set up by ``_init_reshape_watch`` (``data_sets`` by data_assign.py)."""

    def _init_reshape_watch(self) -> None:
        # the wrappers of leaf arguments that require grad (by id: placeholder, storage and
        # gradient edge at the call), those used under grad mode before a swap onto another
        # shape, and those whose wrapper got a gradient node of its new shape
        self.grad_wrappers: dict[int, tuple] = {}
        self.grad_used: set[int] = set()
        self.reshaped: set[int] = set()
        self.old_edges: dict = {}           # placeholder -> its GradientEdge at the call, where
                                            # used before the swap
        self.reshaped_twice: set[int] = set()       # onto two other shapes: refused
        self.data_lowered = False   # Dynamo's graph of a ``.data =`` (lowers_data_assignment)
        # NOTE [.data = onto another shape while a use holds the node]: per tensor made by a
        # call autograd recorded, the placeholders whose gradient node at the call its graph
        # reaches (weakly: a tensor the function dropped holds nothing), and the placeholders
        # whose ``.data =`` kept that node
        self.node_holders = WeakIdKeyDictionary()
        self.kept_nodes: set[int] = set()

    def _old_node_held(self, index: int) -> bool:
        """Does a tensor the function still holds reach placeholder ``index``'s gradient node
        at the call?

        # NOTE [.data = onto another shape while a use holds the node]
        ``y = p * 2; p.data = inp + 1; return p * inp, y`` with p a leaf Parameter of shape
        (2,) and inp (2, 2): eager's ``.data =`` keeps the leaf's AccumulateGrad (it drops it
        only for another dtype or device), which autograd holds weakly. While a graph holds
        it (``y``'s, here), each later use gets that node, whose input metadata is the old
        shape: autograd sums the (2, 2) gradient down to (2,), and AccumulateGrad broadcasts
        it into ``.grad`` in the leaf's new shape. Once nothing holds it (``del y`` before
        the use, or a use whose result was dropped), the next use makes a new node of the new
        shape, as after a set_()
        (NOTE [set_ under no_grad onto another shape] in runtime/swap_grad.py).

        The trace runs the function's Python, so what it holds is what eager's function
        holds. The recorder notes, weakly, every tensor made by a call autograd recorded
        whose inputs reach the node (a use of the argument, or a tensor that holds it), and
        asks, at each call that reads the argument after such an assignment, whether one is
        still alive: if so the wrapper keeps its node of the call (``kept_nodes``), and the
        joint's gradient for the argument has its shape at the call; at the return, the
        outputs are what can hold it. The runtime then applies the compiled function to the
        argument as it is at the call and replays the assignment as ``.data =`` after, which
        keeps the node the compiled function's edge made, as eager's does. A graph held only
        through a node object (``g = y.grad_fn; del y``) is not seen.
        """
        tensors = [t for t, held in self.node_holders.items() if index in held]
        own = self._own_references(tensors)
        for t in tensors:
            # getrefcount's argument, ``tensors`` and ``t`` are not the function's
            if sys.getrefcount(t) - 3 > own.get(id(t), 0):
                return True
        return False

    def _own_references(self, tensors: list) -> dict:
        """Per tensor (by id), how many references the recorder's own state holds to it."""
        wanted = {id(t) for t in tensors}
        counts: dict[int, int] = {}
        seen: set[int] = set()
        stack = [v for v in vars(self).values() if isinstance(v, (list, tuple, dict, set))]
        while stack:
            c = stack.pop()
            if id(c) in seen:
                continue
            seen.add(id(c))
            items = list(c.keys()) + list(c.values()) if isinstance(c, dict) else list(c)
            for x in items:
                if id(x) in wanted:
                    counts[id(x)] = counts.get(id(x), 0) + 1
                elif isinstance(x, (list, tuple, dict, set)):
                    stack.append(x)
        return counts

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
        self._note_holders(args, kwargs, out, {i for i in used if i not in self.reshaped})
        if not used or not any(isinstance(o, torch.Tensor) and o.grad_fn is not None
                               for o in pytree.tree_leaves(out)):
            return
        self.grad_used.update(i for i in used if i not in self.reshaped)

    def _note_holders(self, args, kwargs, out, held: set) -> None:
        """The outputs of a call autograd recorded hold the gradient nodes at the call that
        its inputs reach (NOTE [.data = onto another shape while a use holds the node]).
        Under no_grad a call records nothing (an in-place one keeps its tensor's mark), and
        an output's grad_fn is not read there: reading it regenerates a view's, which may
        assert after a write in inference mode."""
        if not torch.is_grad_enabled() or torch.is_inference_mode_enabled():
            return
        if self.node_holders:
            for t in pytree.tree_leaves((args, kwargs)):
                if isinstance(t, torch.Tensor) and t in self.node_holders:
                    held = held | self.node_holders[t]
        if not held:
            return
        for o in pytree.tree_leaves(out):
            if isinstance(o, torch.Tensor) and o.grad_fn is not None:
                self.node_holders[o] = self.node_holders.get(o, frozenset()) | held

    def regrad_reshaped(self, args) -> None:
        """Before a call that reads the wrapper of a leaf argument (and once more on all of
        them when the function returns): if set_() (or ``.data =``) under no_grad moved it
        onto another storage of another shape since (set_() reaches no TorchFunctionMode, so
        it is seen here, at the next call), it gets a gradient node of the new shape, as
        eager's leaf gets a new AccumulateGrad (NOTE [set_ under no_grad onto another shape]
        in runtime/swap_grad.py). Used under grad mode before, its gradient node at the call
        is kept as a gradient target too (set_() left the uses before it there); after
        ``.data =``, while a use still holds that node, the wrapper keeps it
        (NOTE [.data = onto another shape while a use holds the node]). Refused (swaps.py): a second swap
        onto another shape."""
        for t in pytree.tree_leaves(args):
            if not isinstance(t, torch.Tensor) or id(t) not in self.grad_wrappers:
                continue
            index, start, edge = self.grad_wrappers[id(t)]
            fn = t.grad_fn
            if not _mirrored_leaf(t) or \
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
                    if self._old_node_held(index):
                        # see NOTE [.data = onto another shape while a use holds the node]
                        self.kept_nodes.add(index)
                        continue
                self.old_edges[index] = edge
            self.kept_nodes.discard(index)
            torch._mirror_autograd_meta_to(t.detach().requires_grad_(), t)
            self.reshaped.add(index)

"""storage_views: trace on plain tensors, then functionalize with views cut from storages.

The second way to trace (capture and joint alike), taken when functionalization
cannot follow the program (NOTE [plain trace, then functionalize]). Two steps:

1. ``trace_plain``: make_fx on real copies of the arguments, *without* functionalization. The user's
   function and ``torch.autograd.grad`` run as in eager, so autograd rebuilds views'
   grad_fns with ``as_strided`` on the view's own geometry, as eager does. The
   :class:`StorageTagger` tags each node with the storage (numbered) and geometry of its
   tensor output at the moment it ran, and records which storages ops wrote.
2. ``functionalize_plain``: the plain graph, replayed node by node under
   functionalization. Every tensor that aliases a storage seen before (a view, a
   transpose_d tensor, a detach, a split's piece) is re-read as one
   ``as_strided(root, size, stride, offset)`` of that storage's first tensor (an input or
   an op's fresh output); mutations then run on those views, which functionalization
   turns into ``as_strided_scatter`` of the root. No view chain is ever longer than one
   step, so nothing is replayed from a view's creation ops.

Before (plain graph of ``v = a[0]; a.t_(); v.mul_(w)``)::

    %select = aten.select.int(%a, 0, 0)
    %t_ = aten.t_.default(%a)
    %mul_ = aten.mul_.Tensor(%select, %w)

After::

    %as_strided = aten.as_strided.default(%a, [3], [1], 0)
    %mul = aten.mul.Tensor(%as_strided, %w)
    %as_strided_scatter = aten.as_strided_scatter.default(%a, %mul, [3], [1], 0)

# NOTE [plain trace, then functionalize]
Autograd over functional tensors (PyTorch's AOTAutograd and aotcheck's first way) cannot
give a view a grad_fn from its geometry: it replays the ops that made the view on its base
as the base is now, which misses in-place metadata changes (t_, unsqueeze_, ...) and fails
("invalid gradient") or is silently wrong (docs/findings.md row 21); functionalization
itself cannot replay an in-place metadata change on a view of a synthetic base, nor a
mutation through an as_strided of a view. Deriving the backward with eager autograd on
plain tensors and functionalizing the joint afterwards has none of these limits:
every view is known by its storage and geometry. The plain trace runs on *real* copies of
the arguments: on FakeTensors (a Python-dispatch subclass) autograd replays views' creation
ops just as on functional tensors (measured: the setitem-after-unsqueeze_ regression raised
the same IndexError on fakes, passes on real copies).

Measured on this machine (shared with other developers, so times are noisy): ``aotcheck
fuzz --engine aotcheck --examples 400 --seed 2026 --no-shrink`` went from 391 passed, 9
refused, 0 failed to 400 passed, 0 refused, 0 failed; the regressions corpus's three
view-replay refusals pass. The first way stays the default: its graphs keep view ops
(not as_strided everywhere) as the goldens, the cache and torch's AOTAutograd print them,
and it does not compute on real copies (the second way costs the arguments' memory once
more and runs every op for real while tracing). The pipeline takes the second way
when the first one meets one of the limits above.
"""
from __future__ import annotations

import operator

import torch
import torch.fx as fx
from torch.utils import _pytree as pytree

from ...errors import DataDependentError
from .functional import (TraceGuard, backward_phase, from_fun, geometry_of, storage_ref, to_fun,
                         trace_functional, without_autocast)

# in-place ops that change a tensor's geometry, not its data (their schema says "writes")
METADATA_OPS = frozenset({"t_", "transpose_", "swapdims_", "swapaxes_", "unsqueeze_", "squeeze_",
                          "as_strided_", "detach_"})


def _writes(func) -> list[int | str]:
    """Positions (or keyword names) of the arguments an op writes."""
    out = []
    for i, a in enumerate(func._schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            out.append(a.name if a.kwarg_only else i)
    return out


class StorageTagger:
    """Numbers the storages seen while tracing plainly; tags each node with
    ``(storage, dtype, geometry)`` of its tensor output when it ran; logs the storages
    that ops wrote (in-place data ops, ``out=``), in order."""

    def __init__(self):
        self.ids: dict = {}
        self.alive: list[torch.Tensor] = []      # keeps every numbered storage alive
        self.writes: list[int] = []
        self.nbytes: dict[int, int] = {}         # storage -> its size in bytes when last seen
        self.grown: set[int] = set()             # storages a resize_ grew
                                                 # (NOTE [a storage grown by resize_])

    def sid(self, t: torch.Tensor) -> int:
        ref = storage_ref(t)
        if ref not in self.ids:
            self.ids[ref] = len(self.ids)
            self.alive.append(t)
        return self.ids[ref]

    def _tag_node(self, t) -> None:
        from torch.fx.experimental.proxy_tensor import get_proxy_mode, get_proxy_slot
        mode = get_proxy_mode()
        if mode is None or not isinstance(t, torch.Tensor) or t.layout != torch.strided:
            return
        slot = get_proxy_slot(t, mode.tracer, None)
        if slot is not None:
            sid = self.sid(t)
            slot.proxy.node.meta["aot_storage"] = (sid, t.dtype, geometry_of(t))
            grown_from = self.nbytes.get(sid)
            self.nbytes[sid] = t.untyped_storage().nbytes()
            if grown_from is not None and grown_from < self.nbytes[sid]:
                self.grown.add(sid)
                # NOTE [a storage grown by resize_]: its size before and after, in elements of t
                slot.proxy.node.meta["aot_grown"] = (grown_from // t.element_size(),
                                                     self.nbytes[sid] // t.element_size())

    def grown_storages(self) -> frozenset:
        """The storages (weak references) a resize_ grew."""
        return frozenset(ref for ref, sid in self.ids.items() if sid in self.grown)

    def tag_inputs(self, tensors) -> None:
        for t in tensors:
            self._tag_node(t)

    def __call__(self, func, args, kwargs, out) -> None:
        if not isinstance(func, torch._ops.OpOverload):
            return
        if torch.Tag.dynamic_output_shape in func.tags or torch.Tag.data_dependent_output in func.tags:
            raise DataDependentError(
                f"op {func} has an output shape that depends on tensor values; aotcheck "
                "compiles static shapes only")
        if func._overloadpacket.__name__ not in METADATA_OPS:
            for w in _writes(func):
                t = kwargs.get(w) if isinstance(w, str) else (args[w] if w < len(args) else None)
                for x in pytree.tree_leaves(t):
                    if isinstance(x, torch.Tensor):
                        self.writes.append(self.sid(x))
        for t in pytree.tree_leaves(out):
            self._tag_node(t)


def trace_plain(body, placeholders: list, tagger: StorageTagger) -> fx.GraphModule:
    """make_fx of ``body`` on copies of the placeholders (real tensors, each over a storage
    of its own of the same size and layout), without functionalization, every node tagged.

    Real, not fake: autograd gives a view of a FakeTensor (a Python-dispatch subclass) a
    grad_fn that replays the view's creation ops, the very limit this way avoids; on plain
    tensors it uses as_strided, as eager does. The copies hold the arguments' values, so
    value-dependent kernels (cholesky, ...) fail where eager's would; the generator's state
    is restored afterwards."""
    guard = TraceGuard()
    guard.on_op = tagger

    def tagged(*args):
        tagger.tag_inputs(args)
        return body(*args)

    copies = [_copy(p) if isinstance(p, torch.Tensor) else p for p in placeholders]
    with torch.random.fork_rng(devices=[]):
        return trace_functional(tagged, copies, functionalize=False, guard=guard, mode="real")


def _copy(p: torch.Tensor) -> torch.Tensor:
    n = p.untyped_storage().nbytes() // p.element_size()
    with torch.no_grad():
        flat = p.detach().as_strided((n,), (1,), 0).clone()
    return flat.as_strided(p.shape, p.stride(), p.storage_offset()).detach().requires_grad_(
        p.requires_grad)


def functionalize_plain(gm: fx.GraphModule, placeholders: list) -> fx.GraphModule:
    """The plain graph ``gm`` as a functional graph over the same placeholders, with the
    same outputs (see the module docstring)."""
    def body(*ph):
        inputs = [to_fun(p.detach()) if isinstance(p, torch.Tensor) else p for p in ph]
        with without_autocast():    # NOTE [autocast in the backward] in functional.py
            out = _replay(gm, inputs)
        return [from_fun(o) if isinstance(o, torch.Tensor) else o for o in out]
    return trace_functional(body, placeholders, constants=True)


def _replay(gm: fx.GraphModule, inputs: list) -> list:
    env: dict = {}
    roots: dict[int, torch.Tensor] = {}

    def root_view(tag):
        sid, dtype, (shape, stride, offset) = tag
        r = roots.get(sid)
        if r is None or r.dtype != dtype:
            return None
        if (tuple(r.shape), tuple(r.stride()), r.storage_offset()) == (shape, stride, offset):
            return r
        return r.as_strided(shape, stride, offset)

    def register(tag, value) -> None:
        if tag is not None and isinstance(value, torch.Tensor):
            roots.setdefault(tag[0], value)

    feed = iter(inputs)
    phase = None
    for n in gm.graph.nodes:
        if phase is None and n.meta.get("backward"):
            phase = backward_phase().__enter__()    # the rest replays the plain backward
        tag = n.meta.get("aot_storage")
        if n.op == "placeholder":
            t = next(feed)
            v = root_view(tag) if tag is not None and tag[0] in roots else None
            if v is None:
                register(tag, t)
                v = t
            env[n] = v
            continue
        if n.op == "get_attr":
            env[n] = getattr(gm, n.target)
            continue
        if n.op == "output":
            out = [fx.node.map_arg(a, lambda m: env[m]) for a in n.args[0]]
            if phase is not None:
                phase.__exit__(None, None, None)
            return out
        args, kwargs = fx.node.map_arg((n.args, n.kwargs), lambda m: env[m])
        func = n.target
        with torch.set_grad_enabled(not n.meta.get("no_grad", False)):
            name = func._overloadpacket.__name__ if isinstance(func, torch._ops.OpOverload) else ""
            v = None
            if name == "resize_" and tag is not None and tag[0] in roots:
                if "aot_grown" in n.meta:           # NOTE [a storage grown by resize_]
                    roots[tag[0]] = _grown(roots[tag[0]], *n.meta["aot_grown"])
                    for m, old in list(env.items()):
                        mtag = m.meta.get("aot_storage")
                        if isinstance(old, torch.Tensor) and mtag is not None and mtag[0] == tag[0]:
                            env[m] = root_view(mtag)
                v = root_view(tag)              # within its storage: a view
            if v is not None:
                pass
            elif name in METADATA_OPS or name == "set_" or (func is not operator.getitem and not name.endswith("_")
                                        and tag is not None and tag[0] in roots
                                        and not _writes(func)) or \
                    (func is operator.getitem and tag is not None and tag[0] in roots):
                v = root_view(tag)            # an alias of a storage seen before
            if v is None:
                v = _call(func, args, kwargs)
                if isinstance(func, torch._ops.OpOverload) and _writes(func) and \
                        name not in METADATA_OPS:
                    pass                      # a mutation of a view: functionalization's job
                else:
                    register(tag, v)
        env[n] = v
    raise AssertionError("graph without output")


def _grown(root: torch.Tensor, before: int, after: int) -> torch.Tensor:
    """The storage of ``root`` (``before`` elements) grown to ``after`` elements, as a flat
    tensor over all of it: the storage's elements, then new ones.

    # NOTE [a storage grown by resize_]
    Eager's ``t.resize_(size)`` beyond its storage grows the storage itself: every tensor on
    it (``a`` of ``b = a.view(4); b.resize_(6)``) now sits on the larger storage with its
    geometry unchanged, and ``t`` becomes contiguous from its offset. Functionalization cannot
    grow a storage that views share (it refuses to grow a view, and a base it grows moves to
    a storage of its own, away from its views); the first way refuses, and capture takes this
    way. Here every tensor is an ``as_strided`` of its storage's root, so the growth is one
    new root: the old storage's elements, then uninitialised ones (as eager's), and every
    tensor on that storage is read from it again at its geometry. A resize_ within its
    storage changes no data: the tensor is a view at its new geometry (the op itself, on a
    root, would resize the root, and with it every tensor read from it)."""
    flat = root.as_strided((before,), (1,), 0)
    return torch.cat([flat, flat.new_empty((after - before,))])


def _call(func, args, kwargs):
    """Run one op under functionalization. An in-place aten op that functionalization has no
    kernel for ("... alias annotations", e.g. polygamma_, whose out-of-place twin takes its
    arguments in another order) runs as its out-of-place twin, matched by argument names,
    and a copy_ into ``self``."""
    try:
        return func(*args, **kwargs)
    except RuntimeError as e:
        twin = _out_of_place(func) if "alias annotations" in str(e) else None
        if twin is None:
            raise
    named = dict(kwargs)
    for a, v in zip(func._schema.arguments, args):
        named[a.name] = v
    result = twin(**{a.name: named[a.name] for a in twin._schema.arguments if a.name in named})
    return named["self"].copy_(result)


def _out_of_place(func):
    """The out-of-place overload with the same argument names as in-place ``func``, or None."""
    name = func._overloadpacket.__name__
    if not name.endswith("_") or "self" not in [a.name for a in func._schema.arguments]:
        return None
    packet = getattr(torch.ops.aten, name[:-1], None)
    want = {a.name for a in func._schema.arguments}
    for overload in (packet.overloads() if packet is not None else ()):
        op = getattr(packet, overload)
        have = {a.name for a in op._schema.arguments}
        if have == want and not _writes(op):
            return op
    return None

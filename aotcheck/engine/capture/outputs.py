"""outputs: what each returned tensor is, relative to the arguments and intermediates.

Runs inside the functional trace, on the values the function returned. Output
kinds (see analyze.py for the metadata they become): a fresh tensor; an argument
itself; an alias of an argument's storage (rebuilt from the argument whose memory
holds it); a view of an intermediate (whose base becomes an extra graph value);
a view of another output; the same tensor as an earlier output.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import torch

from ...errors import UnsupportedInputError
from .facts import MovedKind, OutputFacts, Poison
from .functional import geometry_of, storage_ref
from .nondiff import refuse_nondiff_output
from ..graph_walk import grad_nodes
from ..signature import Signature, whole_storage


@dataclass(frozen=True)
class RunFindings:
    """What the functional run knows that classifying its outputs reads: the signature, the
    user's argument leaves, and what the recorder and the run found about the tensors made.

    ``grown``: the storages (a plain run's) that resize_ grew while a tensor on them was
    kept (NOTE [a storage grown by resize_] in storage_views.py): no tensor on one holds all
    of it, so every output over one is rebuilt from a copy of the whole storage, flat."""

    sig: Signature
    user: list                      # the user's argument leaves
    geometry: dict                  # tensor id -> its geometry, as the recorder saw it
    eager_geometry: list | None     # per output leaf (NOTE [eager geometry] in capture/trace.py)
    owners: dict                    # storage -> the tensor that owns it
    work_ids: set                   # the works the function was given, and the leaves they view
    new_leaf_ids: dict = field(default_factory=dict)    # tensor id -> its new grad leaf index
    plain: bool = False             # a run on plain fake tensors (storage_views.py)
    clips_of: Callable | None = None
    old_bases: dict = field(default_factory=dict)   # storage before set_() moved it -> its alias
    made_in_call: set = frozenset()
    grown: frozenset = frozenset()
    ordinary: set = frozenset()
    moved_kind: set = frozenset()
    data_moved: frozenset = frozenset()     # the user leaves given ``.data =``


@dataclass(frozen=True)
class _Leaf:
    """One returned tensor, with what the branches of its classification read."""

    k: int                  # its output leaf index
    o: torch.Tensor
    st: object              # its storage (``storage_ref``)
    geometry: tuple         # (shape, stride, offset)
    eager: tuple | None     # its eager geometry, where the capture has one
    rg: bool                # requires grad (a poisoned view: its base's)
    poisoned: Poison | None
    custom: bool            # a view through a custom autograd.Function
    clips: tuple
    regenerated: bool       # eager regenerated its grad_fn (NOTE [as_strided clips] in recorder.py)


def classify_outputs(out_leaves: list, candidates: list, run: RunFindings):
    """Classify each returned leaf (fresh, an input, a view of an input, of an intermediate,
    of another output, ...) and append to ``candidates`` every graph value a later stage
    needs. Returns (output facts, intermediate-base candidate indices, new-leaf outputs,
    base geometry by tensor id)."""
    classifier = _Classifier(run, candidates)
    # Outputs that own their storage and carry autograd history go first, so that other
    # outputs over the same storage (a detach() of it, returned earlier) are rebuilt from
    # it rather than it from them: a detached alias cannot give it back its grad_fn.
    order = sorted(range(len(out_leaves)), key=lambda k: not (
        isinstance(out_leaves[k], torch.Tensor) and out_leaves[k]._base is None
        and out_leaves[k].requires_grad))
    outputs = [None] * len(out_leaves)
    for k in order:
        outputs[k] = classifier.leaf(k, out_leaves[k])
    classifier.point_at_later_outputs(outputs)
    return outputs, classifier.intermediates, classifier.new_leaves, classifier.base_geometry


class _Classifier:
    """One classification's working state: the graph values appended so far, and what the
    outputs classified so far are, by storage and by identity."""

    def __init__(self, run: RunFindings, candidates: list):
        self.run, self.candidates = run, candidates
        self.base_geometry: dict = {}
        self.flat_of: dict = {}
        self.tensor_user = {id(t): i for i, t in enumerate(run.user) if isinstance(t, torch.Tensor)}
        self.input_storages: dict = {}
        for i, t in enumerate(run.user):
            if isinstance(t, torch.Tensor):
                self.input_storages.setdefault(storage_ref(t), []).append(i)
        self.out_storage: dict = {}
        self.out_ids: dict = {}
        self.roots: dict[int, int] = {}
        self.moved: dict = {}       # storage an intermediate was set_() off -> the base of its views
        self.intermediates: list[int] = []
        self.new_leaves: list[int] = []

    def leaf(self, k: int, o) -> OutputFacts:
        """The facts of output leaf ``k``."""
        if isinstance(o, torch.Size):
            return OutputFacts(False, value=f"torch.Size({list(o)!r})")
        if not isinstance(o, torch.Tensor):
            if not isinstance(o, (bool, int, float, str, type(None))):
                raise UnsupportedInputError(
                    f"output leaf {k} has type {type(o).__name__}; aotcheck supports returning "
                    "tensors, torch.Size, int, float, bool, str and None, nested in tuples, "
                    "lists and dicts")
            return OutputFacts(False, value=repr(o))
        if o.layout != torch.strided:
            raise UnsupportedInputError(
                f"output leaf {k} has layout {o.layout}; aotcheck returns strided (dense) "
                "tensors only")
        leaf = self._tensor_leaf(k, o)
        facts = self._classify(leaf, self._common(leaf))
        self.out_storage.setdefault(leaf.st, k)
        self.out_ids.setdefault(id(o), k)
        return facts

    def _tensor_leaf(self, k: int, o: torch.Tensor) -> _Leaf:
        """Output leaf ``k``, a strided tensor, with its geometry and autograd kind read."""
        run = self.run
        eg = run.eager_geometry[k] if run.eager_geometry and k < len(run.eager_geometry) else None
        geometry = eg[0] if eg else run.geometry.get(id(o), geometry_of(o))
        if eg and eg[1] is not None and o._base is not None:
            self.base_geometry[id(o._base)] = eg[1]
        poisoned = poisoned_kind(o)
        # NOTE [poisoned views]: reading its autograd facts raises, as in eager
        rg = o._base.requires_grad if poisoned else o.requires_grad
        refuse_nondiff_output(k, o, rg)
        custom = not poisoned and o._is_view() and rg and _through_custom_function(o)
        clips, regenerated = run.clips_of(o) if run.clips_of is not None and not poisoned else ((), False)
        return _Leaf(k, o, storage_ref(o), geometry, eg, rg, poisoned, custom, clips, regenerated)

    def _common(self, leaf: _Leaf) -> dict:
        """The facts every tensor output has, whatever it aliases."""
        run, o = self.run, leaf.o
        shape, stride, offset = leaf.geometry
        made_in_call = run.made_in_call or ()
        common = dict(shape=shape, stride=stride, offset=offset,
                      dtype=str(o.dtype).replace("torch.", ""), requires_grad=leaf.rg,
                      # NOTE [inference tensors made in the call] in recorder.py: over an
                      # argument's storage the graph's value cannot say it (the rest are made
                      # by the graph, inside the caller's inference mode, as eager's are)
                      inference=o.is_inference() or (run.sig.inference_mode and id(o) in made_in_call
                                                     and leaf.st in self.input_storages),
                      ordinary=run.sig.inference_mode and id(o) in run.ordinary and not o.is_inference()
                      and leaf.st not in self.input_storages,
                      poisoned=leaf.poisoned)
        if leaf.poisoned:
            common["is_leaf"] = False
        else:
            common.update(is_leaf=o.is_leaf,
                          multi_output_view=o._is_view() and _multi_output_view(o, run.plain),
                          grad_dead_end=o._is_view() and _grad_dead_end(o)
                          and not _base_is_dead_end(o))
        common["custom_view"] = leaf.custom
        common["clips"] = leaf.clips
        common["new_leaf"] = (run.new_leaf_ids or {}).get(id(o))
        # NOTE [inference state moved by .data =] in storage/watch.py: the kind it ends as
        common["moved_kind"] = (MovedKind.INFERENCE if id(o) in made_in_call else MovedKind.ORDINARY) \
            if id(o) in run.moved_kind else None
        return common

    def _classify(self, leaf: _Leaf, common: dict) -> OutputFacts:
        """What a tensor output is: the same as an earlier output, an argument, an alias of an
        argument's memory, a view of an intermediate or an output, or a fresh graph value."""
        o, st = leaf.o, leaf.st
        if id(o) in self.out_ids:
            return OutputFacts(True, same_output=self.out_ids[id(o)], **common)
        if id(o) in self.tensor_user:
            return OutputFacts(True, is_input=self.tensor_user[id(o)], **common)
        if self._viewed_before_data_set(leaf, common):
            return OutputFacts(True, input_storage=self.tensor_user[id(o._base)], at_call=True,
                               **common)      # NOTE [views taken before .data =]
        if st in self.input_storages:
            return self._over_argument(leaf, common)
        if id(o) in self.roots:
            # the base of earlier view outputs, returned itself: it is the fresh one
            return OutputFacts(True, graph_output=self.intermediates[self.roots[id(o)]], **common)
        if (o._base is not None and storage_ref(o._base) == st) or self.run.owners.get(st, o) is not o \
                or st in self.run.grown or _old_base(self.run.old_bases, st, leaf.geometry) is not None:
            return self._view_of_intermediate(leaf, common)
        if st in self.out_storage:
            return OutputFacts(True, output_storage=self.out_storage[st], **common)
        eg = leaf.eager
        if eg and len(eg) > 2 and eg[2] and not self.run.plain:
            # eager's output shares an argument's storage where the functional graph made a
            # copy (unsafe_split, unsafe_chunk: views that autograd does not track as views);
            # rebuilt on the argument, so mutating it changes the argument as in eager
            source = _alias_source(self.run.sig, list(eg[2]), leaf.geometry, o.dtype, leaf.rg)
            return OutputFacts(True, input_storage=source, **common)
        if leaf.rg and not leaf.poisoned and o.is_leaf:
            self.new_leaves.append(leaf.k)
        return OutputFacts(True, graph_output=self._own_value(o), **common)

    def _own_value(self, t: torch.Tensor) -> int:
        """Append ``t`` as a graph value; its candidate index."""
        self.candidates.append(t)
        return len(self.candidates) - 1

    def _viewed_before_data_set(self, leaf: _Leaf, common: dict) -> bool:
        """Is the output an autograd view of an argument given ``.data =``, over the memory the
        argument had at the call (NOTE [views taken before .data =])?"""
        o = leaf.o
        return o._base is not None and self.tensor_user.get(id(o._base)) in self.run.data_moved and \
            storage_ref(o._base) != leaf.st and not leaf.poisoned and not leaf.custom and \
            common["new_leaf"] is None and _old_base(self.run.old_bases, leaf.st, leaf.geometry) is not None

    def _over_argument(self, leaf: _Leaf, common: dict) -> OutputFacts:
        """An output over an argument's storage: rebuilt from the argument whose memory holds it."""
        run, o = self.run, leaf.o
        grad_value = None
        leaf_base = None if leaf.poisoned or leaf.custom else _viewed_grad_leaf(o, run.new_leaf_ids or {})
        common["base_new_leaf"] = leaf_base
        if leaf_base is None and (leaf.custom or (leaf.rg and not leaf.poisoned and not (
                o._base is not None and id(o._base) in run.work_ids))):
            # It shares an argument's storage but is no autograd view of it: a detached
            # alias mutated in place with a value that requires grad (eager: its grad_fn
            # is that op's). Its gradient comes from its own graph value.
            grad_value = self._own_value(o)
        source = _alias_source(run.sig, self.input_storages[leaf.st], leaf.geometry,
                               o.dtype, leaf.rg, self.tensor_user.get(id(o._base)))
        # eager regenerated its grad_fn as an as_strided of the root base: where it reaches
        # outside the argument, the runtime cuts it from the argument's base
        # (NOTE [as_strided clips] in recorder.py)
        common["from_root"] = leaf.regenerated and leaf.rg and not _inside(
            leaf.geometry, run.sig.leaves[source], o.dtype)
        return OutputFacts(True, input_storage=source, graph_output=grad_value, **common)

    def _view_of_intermediate(self, leaf: _Leaf, common: dict) -> OutputFacts:
        """A view of an intermediate, or a detach() of one (no autograd view, but the same
        storage): rebuilt from the tensor that owns the storage. A detached one that an
        in-place op gave a grad_fn gets its gradient from its own value."""
        o, st = leaf.o, leaf.st
        root, on_base = self._intermediate_root(leaf)
        if on_base:     # a view of a leaf made inside (v.requires_grad_(); v.reshape(1))
            common["base_new_leaf"] = (self.run.new_leaf_ids or {}).get(id(root))
        grad_value = None
        if leaf.custom or (not on_base and leaf.rg and not leaf.poisoned):
            grad_value = self._own_value(o)
        if id(root) in self.out_ids:
            return OutputFacts(True, base_output=self.out_ids[id(root)], graph_output=grad_value,
                               **common)
        if st in self.out_storage and not leaf.rg and not leaf.custom and not leaf.poisoned \
                and common.get("base_new_leaf") is None:
            # a view (without grad) of an alias of an earlier output, such as its detach():
            # eager's shares that output's storage, so it is cut from that output
            return OutputFacts(True, output_storage=self.out_storage[st], **common)
        if id(root) not in self.roots:
            self.roots[id(root)] = len(self.intermediates)
            self.intermediates.append(self._own_value(root))
        return OutputFacts(True, base_intermediate=self.roots[id(root)], graph_output=grad_value,
                           **common)

    def _intermediate_root(self, leaf: _Leaf) -> tuple:
        """(the tensor a view of an intermediate is rebuilt from, whether that is its autograd
        base). A view that set_() moved onto another storage is rebuilt from that storage's
        owner. A view of an argument's memory taken before set_() moved the argument off it
        (``v = a.t(); a.set_(b); return v``) is rebuilt from the graph's value of that memory
        (the alias functional_run takes at the call), as an intermediate: the argument (its
        owner) no longer holds it."""
        run, o, st = self.run, leaf.o, leaf.st
        root = _old_base(run.old_bases, st, leaf.geometry)
        if st in run.grown:
            if st not in self.flat_of:
                # a copy: a view of the graph's value would share its version counter
                # with the values the backward saves from that storage, and the runtime's
                # write of an output's gradient path into the base (detached_alias) would
                # then fail the backward's version check
                self.flat_of[st] = whole_storage(o.detach()).clone()
            return self.flat_of[st], False
        if root is not None:
            return root, False
        on_base = o._base is not None and storage_ref(o._base) == st
        if on_base:
            return o._base, True
        root = run.owners[st]
        if storage_ref(root) != st and id(root) not in run.work_ids:
            return self._moved_intermediate(leaf), False
        if storage_ref(root) != st:
            # its owner was moved off it by set_(): an argument whose elements at the
            # call do not hold all of the view's
            raise UnsupportedInputError(
                f"output leaf {leaf.k} is a view of an argument's memory taken before set_() "
                "moved the argument off it, and reaches memory the argument did not "
                "(as_strided); aotcheck rebuilds such a view from the argument's own "
                "elements only")
        return root, False

    def _moved_intermediate(self, leaf: _Leaf) -> torch.Tensor:
        """The base of a view whose owner, an intermediate, was moved off its memory by set_()
        (``v = h.t(); h.set_(x); return v``): the first output over that memory, as its own
        value (a detach of it, so that it is no output itself)."""
        first = self.moved.get(leaf.st)
        if first is None:
            first = self.moved[leaf.st] = leaf.o.detach()
            self.base_geometry[id(first)] = leaf.geometry
        elif not _holds(first, self.base_geometry[id(first)], leaf.geometry):
            raise UnsupportedInputError(
                f"output leaf {leaf.k} is a view of an intermediate's memory taken before "
                "set_() moved the intermediate off it, and reaches elements that an "
                "earlier such output does not; aotcheck rebuilds those views from "
                "the first one")
        return first

    def point_at_later_outputs(self, outputs: list) -> None:
        """A view output whose root is a *later* output: point it at that output instead."""
        for k, f in enumerate(outputs):
            if f.base_intermediate is not None:
                root = self.candidates[self.intermediates[f.base_intermediate]]
                if id(root) in self.out_ids:
                    outputs[k] = replace(f, base_intermediate=None, base_output=self.out_ids[id(root)])


def _old_base(old_bases: dict | None, st, geometry: tuple):
    """The alias of the memory an argument had before set_() moved it (storage ``st``), if
    that memory holds all of ``geometry``'s elements; else None.

    # NOTE [views taken before .data =]
    ``v = a[:, :2]; a.data = torch.zeros(2, 2); return v``: eager's v is still an autograd
    view of a (``v._base is a``, its grad_fn reaches a's gradient node, an in-place op on it
    raises where a is a leaf that requires grad), over the memory a had. Rebuilt from the
    graph's value of that memory (as a view of an intermediate), the caller's v was a view
    of nothing of theirs, and in place on it ran where eager raises. So an autograd view of
    an argument given ``.data =`` (which keeps autograd identity), over its memory at the
    call, is an alias of the argument marked ``at_call``: the runtime cuts it from the
    caller's argument before it replays the swap (writes the function made to that memory
    land in it after, through the same storage). A set_() swap keeps the rebuild above."""
    old = (old_bases or {}).get(st)
    return old[0] if old is not None and _holds(old[0], old[1], geometry) else None


def _holds(t: torch.Tensor, at_call: tuple, geometry: tuple) -> bool:
    """Does ``t``'s memory, at the geometry ``at_call`` it had at the call, hold every element
    of ``geometry``'s?"""
    shape, stride, offset = geometry
    numel = t.untyped_storage().nbytes() // max(t.element_size(), 1)
    inner = _footprint(*at_call, numel)
    out = _footprint(shape, stride, offset, numel)
    return inner is not None and out is not None and out <= inner


def _alias_source(sig: Signature, candidates: list[int], geometry: tuple, dtype, requires_grad,
                  viewed: int | None = None) -> int:
    """Which of the arguments over one storage an output aliasing it is rebuilt from: one
    whose memory holds all of the output's (preferring one with the output's requires_grad),
    else the first. The runtime rebuilds it with ``as_strided`` on that argument, so, as in
    eager, an as_strided view that reaches outside it gets no gradient there.

    Arguments that did not share storage at the call and do now (``a1.data = a0``, or
    ``a1.set_(a0)``): an autograd view of one of them (``viewed``, taken after the swap) is
    rebuilt from that one, whose autograd history eager's view has
    (NOTE [.data assignment of an argument that requires grad] in storage/swaps.py: ``a1[1:]``'s gradient goes to
    a1's, though its memory is a0's)."""
    if len(candidates) == 1:
        return candidates[0]
    if viewed in candidates and len({sig.leaves[i].storage for i in candidates}) > 1:
        return viewed
    specs = [sig.leaves[i] for i in candidates]
    if any(getattr(torch, sp.dtype) != dtype for sp in specs):
        return candidates[0]
    out = _footprint(*geometry, specs[0].storage_numel)
    holding = [i for i, sp in zip(candidates, specs)
               if out is not None and out <= (_footprint(sp.shape, sp.stride, sp.offset,
                                                         sp.storage_numel) or set())]
    holding.sort(key=lambda i: sig.leaves[i].requires_grad != requires_grad)
    return holding[0] if holding else candidates[0]


_FOOTPRINT_LIMIT = 1 << 16


def _inside(geometry: tuple, spec, dtype) -> bool:
    """Does an argument (its spec) hold all the memory ``geometry`` addresses?"""
    if getattr(torch, spec.dtype) != dtype:
        return False
    return holds((spec.shape, spec.stride, spec.offset), geometry)


def holds(outer: tuple, inner: tuple) -> bool:
    """Does geometry ``outer`` (shape, stride, offset) address every storage element that
    ``inner`` does? Where there are too many elements to list: does ``inner``'s span lie
    within ``outer``'s, with ``outer`` dense over its span (else: no)."""
    a, b = _footprint(*outer, 0), _footprint(*inner, 0)
    if a is not None and b is not None:
        return b <= a
    (lo_a, hi_a), (lo_b, hi_b) = _span(*outer), _span(*inner)
    if hi_b < lo_b:
        return True                 # inner addresses nothing
    n = 1
    for sz in outer[0]:
        n *= sz
    return lo_a <= lo_b and hi_b <= hi_a and n == hi_a - lo_a + 1 and _no_overlap(*outer[:2])


def _span(shape, stride, offset) -> tuple[int, int]:
    if any(sz == 0 for sz in shape):
        return offset, offset - 1
    lo = offset + sum((sz - 1) * st for sz, st in zip(shape, stride) if st < 0)
    hi = offset + sum((sz - 1) * st for sz, st in zip(shape, stride) if st > 0)
    return lo, hi


def _no_overlap(shape, stride) -> bool:
    dims = sorted((abs(st), sz) for sz, st in zip(shape, stride) if sz != 1)
    reach = 1
    for st, sz in dims:
        if st < reach:
            return False
        reach = st * sz
    return True


def _footprint(shape, stride, offset, storage_numel) -> frozenset | None:
    """The storage elements a geometry addresses, or None when there are too many to list."""
    n = 1
    for sz in shape:
        n *= sz
    if n > _FOOTPRINT_LIMIT or storage_numel > (1 << 24):
        return None
    if n == 0:
        return frozenset()
    points = {offset}          # plain Python: this runs inside the fake, functional trace
    for size, st in zip(shape, stride):
        points = {x + k * st for x in points for k in range(size)}
    return frozenset(points)


# grad_fns of the views that unbind/split (and chunk, which is split) return
_MULTI_VIEW_FNS = frozenset({"UnbindBackward0", "SplitBackward0", "SplitWithSizesBackward0"})


# NOTE [ordinary outputs of an inference call]
# Called under ``inference_mode``, eager makes every tensor an inference tensor
# (NOTE [inference tensors made in the call] in recorder.py) except views of ordinary tensors and
# what a torch.func grad or jvp level computes: functorch runs those levels, and the function
# ``vjp`` returns, with inference mode off (``_disable_inference_mode``), so
# ``torch.func.grad(g)(p)``, ``torch.func.vjp(torch.sin, p)[1](t)[0]`` (a torch.autograd.grad
# result) and their views are ordinary tensors, while ``torch.func.vmap(torch.sin)(p)`` is an
# inference tensor. The recorder collects them (``MetadataRecorder.ordinary``: the tensor at
# the bottom of each wrapper an op makes inside a grad or jvp level, which the transform
# returns once unwrapped; torch.autograd.grad's results; views of either). The runtime runs
# the graph inside the caller's inference mode, so such an output would come back an
# inference tensor (writing it in place outside the block raises where eager's write works):
# flagged ``ordinary``, it is copied out of inference mode (``as_ordinary_tensors`` in
# regenerate.py). Outputs over an argument's storage are the argument's views, rebuilt as such.


# NOTE [poisoned views]
# ``v = a.chunk(2)`` (or any view made inside ``inference_mode``, or under ``no_grad`` of a
# tensor that requires grad), then ``a`` written in place,
# then ``v`` returned: eager runs the function, but reading ``v[0].grad_fn`` (or ``is_leaf``,
# or building a loss from it) raises, since autograd cannot rebuild such a view's history
# after its base changed. The runtime makes the same kind of view (an unbind piece, or one
# made under inference_mode or no_grad) and bumps its version counter, so reading it raises
# the same way.

def poisoned_kind(o: torch.Tensor) -> Poison | None:
    """Why reading ``o``'s grad_fn raises, if it does."""
    if not o._is_view():
        return None
    try:
        o.grad_fn
        return None
    except RuntimeError as e:
        msg = str(e)
        if "created in inference mode" in msg:
            return Poison.INFERENCE_MODE
        if "created in no_grad mode" in msg:
            return Poison.NO_GRAD
        if "returns multiple views" in msg:
            return Poison.MULTI_OUTPUT
        raise


def _multi_output_view(o: torch.Tensor, plain: bool) -> bool:
    """Is ``o`` one of several views one op returned? In-place on one that requires grad is
    an error in eager. A plain tensor (storage_views.py) says so through its grad_fn."""
    if not plain:
        return torch._functionalize_is_multi_output_view(o)
    return o.grad_fn is not None and type(o.grad_fn).__name__ in _MULTI_VIEW_FNS


def _through_custom_function(o: torch.Tensor) -> bool:
    """Does the autograd chain from view ``o`` back to its base pass a custom
    ``autograd.Function`` node?

    # NOTE [custom Function views]
    A custom Function whose forward returns an input as it is (or a view of it) gives
    an output that *is* an autograd view of that input, with the Function's backward as
    its grad_fn. Rebuilding it with ``as_strided`` on the base (NOTE [alias regeneration])
    would skip that backward (a backward scaling by 0.5 would be lost). Such an output,
    or any view of it, gets its own graph value, whose gradient the joint graph derives
    through the user's backward, and the runtime rebuilds it with a custom Function of its
    own (``regenerate.view_in_custom_function``): a view of the base that autograd marks as
    made inside a custom Function (so in-place ops on it raise, as in eager) and whose
    gradient flows to that graph value only."""
    from torch.autograd.function import BackwardCFunction
    base = o._base
    stop = base.grad_fn if base is not None else None
    return any(isinstance(fn, BackwardCFunction) for fn in grad_nodes([o.grad_fn], stop, 256))


def _base_is_dead_end(o: torch.Tensor) -> bool:
    """Does the chain end nowhere already at the view's base, an ordinary tensor (``v.sum()`` of a
    no_grad view ``v``)? Then the output is a plain view of a tensor that requires grad, and
    mutable in place, not a view chain through a no_grad view (fuzz seed 1)."""
    base = o._base
    return base is not None and base.grad_fn is not None and _grad_dead_end(base)


def _grad_dead_end(o: torch.Tensor) -> bool:
    """Does eager's autograd chain for this view end nowhere? A view taken under no_grad of a
    base that requires grad has no grad_fn; later views of it get a grad_fn whose next edge
    is empty, so their gradient reaches no input."""
    fn, steps = o.grad_fn, 0
    while fn is not None and steps < 256:
        nxt = [f for f, _ in fn.next_functions]
        if nxt and all(f is None for f in nxt):
            return True
        live = [f for f in nxt if f is not None]
        if len(live) != 1 or type(live[0]).__name__ == "AccumulateGrad":
            return False
        fn, steps = live[0], steps + 1
    return False


def _viewed_grad_leaf(o: torch.Tensor, new_leaf_ids: dict) -> int | None:
    """The grad leaf made inside the function (its index) that output ``o``, over an
    argument's memory, is an autograd view of, or None.

    ``v = a.detach(); v.requires_grad_(); return v.unsqueeze(0)``, or ``v = a.view(-1)`` (``a``
    requiring no grad) given requires_grad_(): eager's output is a view of the leaf ``v``
    (in place on it raises; its gradient goes to ``v``, not to ``a``), so the runtime cuts it
    from its own leaf ``v`` (NOTE [new grad leaves] in autograd_facts.py). Its grad_fn chain
    reaches the leaf's AccumulateGrad through one edge per node (its ``_base`` is ``a``
    itself when ``v`` was a view of ``a``)."""
    if o._base is not None and id(o._base) in new_leaf_ids:
        return new_leaf_ids[id(o._base)]
    fn, steps = o.grad_fn, 0
    while fn is not None and steps < 256:
        edges = fn.next_functions
        if len(edges) != 1:         # a view's node has one edge (mul_ by a leaf has two)
            return None
        fn, steps = edges[0][0], steps + 1
        if type(fn).__name__ == "AccumulateGrad":
            return new_leaf_ids.get(id(fn.variable))
    return None

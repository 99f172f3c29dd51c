"""functional_run: run the user's function once on functional wrappers of the placeholders.

Shared by capture (which returns every candidate value) and the joint trace (which
returns the needed values plus gradients). One run builds the user's arguments
from the placeholders (NOTE [non-leaf copies]), calls the function under the
metadata recorder, and reads the raw facts: per input, what was mutated; per
output, what it aliases (outputs.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch.utils import _pytree as pytree

from ...errors import AotcheckError, UnsupportedInputError
from .autograd_facts import custom_function_digests, imperative_facts, new_leaf_facts
from .facts import Candidate, InputFacts, MemberFacts, MetadataOp, RawFacts, StorageSource
from .functional import dense_layout, geometry_of, storage_ref, to_fun
from .mode import TraceMode
from .outputs import RunFindings, classify_outputs, holds
from .plan import InputPlan, groups_needing_synthetic_base
from .recorder import CallRules, MetadataRecorder
from .resize import grow as _grow, replayed_geometry, resized_storage_bytes as _resized_storage_bytes
from ..signature import Signature, unflatten_inputs, whole_storage
from .storage.data_assign import lowers_data_assignment, refuse_viewed_data_set
from .storage.swaps import (DataAssignSwap, SwapOf, data_assign_swap, fills_storage,
                            grad_written_after_swap, member_swap, old_storage_written,
                            recorded_by_autograd, storage_swap, unfilled_own_storage)
from .view_flags import _as_argument_view, argument_views, caller_view


@dataclass
class _RunState:
    """One run's working state, passed from step to step: what the function is given, what
    each placeholder's work was at the call, and what the run has found so far."""

    placeholders: list
    plain: bool                 # a run on plain fake tensors (storage_views.py)
    wrappers: list              # the functional wrappers (a plain run: the placeholders)
    nbytes: list                # each placeholder's storage bytes (NOTE [storage resizes])
    works: list                 # what the function gets, per placeholder
    all_views: dict = field(default_factory=dict)   # NOTE [views of an argument given requires_grad_]
    own_at_call: dict = field(default_factory=dict)
    view_bases: dict = field(default_factory=dict)
    user: list = field(default_factory=list)        # the user's argument leaves
    anchors: list = field(default_factory=list)     # the tensor that owns each work's storage
    start_refs: list = field(default_factory=list)      # NOTE [storage swaps]
    start_geometry: list = field(default_factory=list)
    start_writes: list = field(default_factory=list)
    old_storage: dict = field(default_factory=dict)     # NOTE [writes before a storage swap]
    before: list = field(default_factory=list)          # (grad_fn, requires_grad) at the call
    member_meta: dict = field(default_factory=dict)     # member leaf -> its geometry at the call
    member_refs: dict = field(default_factory=dict)
    recorder: MetadataRecorder | None = None
    written_from: int = 0       # a plain run: where its writes begin in the tagger's log
    written: set = field(default_factory=set)       # a plain run: storages the function wrote
    logged: set = field(default_factory=set)        # a plain run: placeholders with metadata calls
    candidates: list = field(default_factory=list)
    old_bases: dict = field(default_factory=dict)   # storage before set_() moved it -> its alias
    # NOTE [swaps in an alias group]: a refusal for a swap of an argument that shares
    # storage with another one waits for the facts: a capture that makes the group a
    # synthetic base replaces this one, and there the swap is a member's
    deferred: dict = field(default_factory=dict)    # placeholder -> its refusal
    swapped_views: list = field(default_factory=list)


@dataclass(frozen=True)
class PlainRun:
    """A run on plain fake tensors (storage_views.py): eager's own autograd, mutations read
    from the tagger's write log instead of functionalization."""

    tagger: object              # a storage_views.StorageTagger
    nonleaf: tuple = ()         # which placeholders are non-leaves (copies are leaves)


class FunctionalRun:
    """Runs the user's function on functional wrappers of the placeholders.

    Shared by capture (which returns every candidate value) and the joint
    trace (which returns the needed values plus gradients).
    """

    def __init__(self, fn, plan: InputPlan, sig: Signature, leaves: list, in_spec, geometry=None,
                 mode: TraceMode = TraceMode(), plain: PlainRun | None = None):
        self.fn, self.plan, self.sig, self.leaves, self.in_spec = fn, plan, sig, leaves, in_spec
        # capture.EagerGeometry (NOTE [eager geometry]): per output leaf, per argument leaf
        self.eager_geometry, self.eager_arguments = \
            (geometry.outputs, geometry.arguments) if geometry is not None else (None, None)
        self.nonleaf_views = mode.nonleaf_views    # the capture's way (mode.py)
        # a StorageTagger when the run is on plain fake tensors (PlainRun)
        self.tagger = plain.tagger if plain is not None else None
        self.nonleaf = plain.nonleaf if plain is not None else ()
        # NOTE [views of an argument given requires_grad_]: argument views made views in the
        # trace (a capture that saw their base's flag set runs again so)
        self.argument_views = mode.argument_views
        self.flips_viewed_base = False
        self.rules = CallRules.at_call(sig)       # before make_fx runs (inference_call.py)

    def run(self, placeholders: list[torch.Tensor]):
        """Returns (candidates, facts, out_spec, placeholder wrappers). Call with functionalization on."""
        st = self._works(placeholders)
        self._user_arguments(st)
        self._snapshot(st)
        args, kwargs = unflatten_inputs(list(st.user), self.in_spec)
        st.recorder = self._recorder(st)
        result = self._call(st, args, kwargs)
        # a swap onto another shape no later call read (NOTE [set_ under no_grad onto another shape])
        st.recorder.storage.regrad_reshaped(st.recorder, st.works)
        out_leaves, out_spec = pytree.tree_flatten(result, is_leaf=lambda x: isinstance(x, torch.Size))
        self._settle(st)
        inputs = [self._input_facts(st, p, w) for p, w in enumerate(st.works)]
        self._refuse_after_inputs(st, inputs)
        members = self._member_facts(st)
        facts = self._facts(st, inputs, members, out_leaves, out_spec)
        # the gradient targets: an argument view's own leaf is itself, not the leaf it views
        return st.candidates, facts, out_spec, [st.works[p] if p in st.own_at_call else w
                                                for p, w in enumerate(st.wrappers)]

    # ------------------------------------------------------------------ before the call

    def _works(self, placeholders: list) -> _RunState:
        """Step 1: each placeholder's wrapper, and the work the function is given for it."""
        plain = self.tagger is not None
        wrappers = list(placeholders) if plain else [to_fun(p) for p in placeholders]
        nbytes = [p.untyped_storage().nbytes() for p in placeholders]    # NOTE [storage resizes]
        works = []
        for k, (p, w) in enumerate(zip(placeholders, wrappers)):
            # A non-leaf that requires grad may be mutated in place; the wrapper is a leaf.
            # A plain run mutates a storage of its own that the tensor fills from offset 0
            # (storage_views.py rebuilds views with absolute geometry on it).
            nonleaf = self.nonleaf[k] if plain else not p.is_leaf
            copy = (p.requires_grad and nonleaf) or (
                plain and not p.requires_grad and not fills_storage(p))
            if copy:
                # NOTE [non-leaf copies under no_grad]
                # the copy stands for a tensor that
                # requires grad whatever mode the function is called in (the caller made it
                # with grad on): made under no_grad or inference_mode it would not, and views
                # of it would not either, where eager's views of the argument do
                with torch.inference_mode(False), torch.enable_grad():
                    works.append(_nonleaf_copy(p, w, self.nonleaf_views))
            else:
                works.append(w)
        st = _RunState(placeholders, plain, wrappers, nbytes, works)
        # see NOTE [views of an argument given requires_grad_]
        st.all_views, own_at_call = argument_views(self.sig, self.plan)
        views = st.all_views if self.argument_views else {}
        st.own_at_call = own_at_call if self.argument_views else {}
        st.view_bases = {q: _as_argument_view(works, q, works[p].requires_grad, st.own_at_call[q])
                         for p, qs in views.items() for q in qs}
        self.works = works                   # read by the joint (NOTE [backward mutations])
        return st

    def _user_arguments(self, st: _RunState) -> None:
        """Step 2: the user's argument leaves, built from the works as the plan says."""
        for i, src in enumerate(self.plan.sources):
            if src.kind == "value":
                st.user.append(self.leaves[i])
            elif src.kind == "same":
                st.user.append(st.user[src.index])
            elif src.kind == "placeholder":
                st.user.append(st.works[src.index])
            else:
                view = caller_view(st.works[src.index], src.shape, src.stride, src.offset)
                st.user.append(view.detach() if src.detached else view)

    def _snapshot(self, st: _RunState) -> None:
        """Step 3: each work's storage, geometry, writes and autograd state at the call, which
        the facts compare against after it."""
        plain, works = st.plain, st.works
        # Autograd regenerates a view's grad_fn when its version changes, so "did autograd see
        # the mutation" is read on the tensor that owns the storage (a non-leaf copy may be a
        # view of fresh storage; see _nonleaf_copy).
        st.anchors = [w._base if w._base is not None else w for w in works]
        st.start_refs = [storage_ref(w) for w in works]             # NOTE [storage swaps]
        st.start_geometry = [geometry_of(w) for w in works]
        # a strided non-leaf copy is written once as it is made (_nonleaf_copy): a write the
        # function did not do, so mutations count from here
        st.start_writes = [torch._functionalize_mutation_counter(w) if not plain else 0 for w in works]
        # NOTE [writes before a storage swap]: an alias of each argument's storage as it is at
        # the call, so that a write to it before set_() moved the argument elsewhere (or a write
        # through another alias of it afterwards) is still read (made under no_grad, never
        # written: it is only synced when the argument's storage was swapped)
        # (a detach(): no autograd view, so nothing autograd does to the argument reaches it.
        # Functionalization replays an as_strided view on the storage's new value, which is
        # compact: an offset would read past it; detach is replayed on it as it is. The plain
        # run rebuilds views at their absolute geometry: as_strided)
        for p, w in enumerate(works):
            if self.plan.placeholders[p][0] == "leaf":
                st.old_storage[p] = (w.detach().as_strided(*st.start_geometry[p]) if plain
                                     else w.detach(),
                                     self.tagger.sid(w) if plain
                                     else torch._functionalize_mutation_counter(w))
        st.before = [(a.grad_fn, a.requires_grad) for a in st.anchors]
        for q, own in st.own_at_call.items():      # an argument view: its own flag
            st.before[q] = (None, own)
        st.member_meta = {i: geometry_of(st.user[i]) for i, s in enumerate(self.plan.sources)
                          if s.kind == "member"}
        st.member_refs = {i: storage_ref(st.user[i]) for i in st.member_meta}

    def _recorder(self, st: _RunState) -> MetadataRecorder:
        """Step 4: the metadata recorder the function runs under, watching the works."""
        works, old_storage = st.works, st.old_storage
        watched = {id(works[p]): ("placeholder", p) for p in range(len(works))}
        watched.update({id(st.user[i]): ("leaf", i) for i in st.member_meta})
        recorder = MetadataRecorder(watched, self.rules)
        recorder.watch_tensors(works, lowers_data_assignment(self.fn))
        for i, spec in enumerate(self.sig.leaves):  # NOTE [an argument the caller retains]
            src = self.plan.sources[i]
            if getattr(spec, "retains_grad", False) and (i in st.member_meta or src.kind == "placeholder"):
                recorder.retained.append(("leaf", i, 0) if i in st.member_meta
                                         else ("placeholder", src.index, 0))
        views = st.all_views if self.argument_views else {}
        recorder.watch_argument_views(views, st.view_bases, works, st.own_at_call)
        # NOTE [resize_ of an argument] in resize.py: eager's storage sizes, and how a
        # functional run grows a tensor (a plain run's fake tensors grow as eager's do)
        recorder.storage_nbytes = dict(enumerate(st.nbytes))
        if not st.plain:
            recorder.grow = lambda t, size: _grow(t, size, watched, old_storage)
        # the arguments' geometry at the call is eager's; a data mutation can make the wrapper's
        # drift (NOTE [eager geometry]), and a detach() of it must get eager's
        recorder.start_geometry = {id(u): geometry_of(u) for u in st.user
                                   if isinstance(u, torch.Tensor) and u.layout == torch.strided}
        self.recorder = recorder             # read by capture() if the trace fails
        return recorder

    # ------------------------------------------------------------------ the call

    def _call(self, st: _RunState, args, kwargs):
        """Step 5: call the function under the recorder; a functionalization error that
        aotcheck knows the cause of becomes its named refusal."""
        recorder = st.recorder
        if st.plain:
            st.written_from = len(self.tagger.writes)
        try:
            with recorder:
                result = self.fn(*args, **kwargs)
        except (RuntimeError, ValueError, IndexError) as e:
            if st.plain or isinstance(e, AotcheckError):
                raise                        # eager's own error, or aotcheck's named refusal
            _refuse_functionalization_error(e, recorder)
            raise
        self.saw_inplace_metadata = recorder.inplace_metadata     # read by the joint on failure
        self.flips_viewed_base = any(p in recorder.flags_set for p in st.all_views)
        return result

    def _settle(self, st: _RunState) -> None:
        """Step 6: what the function wrote: a plain run reads the tagger's write log, a
        functional run syncs each work."""
        if st.plain:
            st.written = ({self.tagger.sid(w) for w in st.works}
                          | {o[1] for o in st.old_storage.values()}) \
                & set(self.tagger.writes[st.written_from:])
            st.logged = {idx for kind, idx, *_ in st.recorder.log if kind == "placeholder"}
        else:
            for w in st.works:
                torch._sync(w)

    # ------------------------------------------------------------------ after the call: inputs

    def _changes(self, st: _RunState, p: int, w) -> tuple[bool, bool, bool]:
        """Step 7a: whether placeholder ``p``'s data, metadata and storage changed."""
        plan, recorder, plain = self.plan, st.recorder, st.plain
        if plain:
            data = self.tagger.sid(w) in st.written
            meta = p in st.logged or geometry_of(w) != st.start_geometry[p]
            swapped = storage_ref(w) != st.start_refs[p]
        else:
            data = torch._functionalize_has_data_mutation(w) and \
                torch._functionalize_mutation_counter(w) != st.start_writes[p]
            meta = torch._functionalize_has_metadata_mutation(w)
            # NOTE [.data assignment]: set_data moves the wrapper's storage without the flag
            swapped = torch._functionalize_was_storage_changed(w) or \
                p in recorder.storage.changes.data_sets
        # set_() onto a view of itself keeps the storage, so neither way sees a swap (and
        # set_ never reaches a TorchFunctionMode, so the recorder does not log it); what
        # shows it is a new geometry of an argument with no logged metadata call: replayed
        # as a swap onto its own storage
        # (a plain run's geometry is eager's, so there a geometry its logged calls do not
        # give is one too: ``a.transpose_(0, 2); a.set_(v)``, also the one at the call)
        swapped = swapped or (meta and plan.placeholders[p][0] == "leaf"
                              and not any(op[0] == "leaf" and op[2] != "requires_grad_"
                                          for op in recorder.log)
                              and ((not any(op[:2] == ("placeholder", p) for op in recorder.log)
                                    and geometry_of(w) != st.start_geometry[p])
                                   or (plain and replayed_geometry(st.start_geometry[p],
                                                                   recorder.log, p)
                                       not in (None, geometry_of(w)))))
        if p in recorder.grown and not plain:
            # NOTE [resize_ of an argument] in resize.py: set_() onto its grown value is
            # no swap; the runtime replays the resize_ and writes the value back
            swapped, data, meta = False, True, True
        return data, meta, swapped

    def _swap(self, st: _RunState, p: int, w, data: bool):
        """Step 7b: placeholder ``p``'s storage was swapped (set_()): where it went, and what
        the graph returns for it. Returns (data, storage_source, regrad, value, new_storage)."""
        plan, recorder, works = self.plan, st.recorder, st.works
        value, new_storage = w, None
        # the flags that give gradient edges: an argument view's own
        # (NOTE [views of an argument given requires_grad_])
        flags = [recorder.own_flags[q] if q in st.own_at_call else works[q].requires_grad
                 for q in range(len(works))]
        # a leaf's new gradient node after a swap onto another shape is no record of autograd
        # (NOTE [set_ under no_grad onto another shape] in runtime/swap_grad.py)
        unrecorded = (st.anchors[p].grad_fn, flags[p]) == st.before[p] or (
            recorder.storage.regraded(p, st.anchors[p]) and flags[p] == st.before[p][1])
        assigned = data_assign_swap(recorder, p, st.anchors[p], w, st.plain)
        rewritten = assigned is DataAssignSwap.REWRITTEN
        regrad = grad_written_after_swap(w, st.before[p]) or rewritten
        verdict = storage_swap(SwapOf(p, w, plan.placeholders[p][0] == "leaf", self._grouped(p),
                                      unrecorded, regrad, assigned),
                               st.start_refs, st.before, flags, recorder)
        if verdict.deferred is not None:
            st.deferred[p] = verdict.deferred       # NOTE [swaps in an alias group]
        storage_source = verdict.source
        regrad = regrad and (not storage_source.onto(p) or rewritten)
        if storage_source.onto(p):
            # back on its own storage (x.set_(x.t()), or set_ away and back): the runtime
            # sets the final geometry, then writes the whole storage, which writes
            # through the old geometry reached too (NOTE [storage swaps])
            if data and unfilled_own_storage(st.plain, st.placeholders[p], st.works[p],
                                             st.start_geometry[p], st.nbytes[p], recorder.writes):
                # functionalization holds the written argument as a compact value,
                # not its storage: reading the whole storage would read past it
                raise UnsupportedInputError(
                    f"input placeholder {p} is written and then set_() onto its own "
                    "storage, which it does not fill; functionalization cannot express "
                    "that (its storage's other elements are not in the graph)")
            if data:
                value = whole_storage(w)
            return data, storage_source, regrad, value, new_storage
        # the runtime swaps the storage, never copies into the new one; what the
        # function wrote to the old one before (``a.clamp_(); a.set_(b)``) is
        # written back into it first (NOTE [writes before a storage swap])
        old_storage = st.old_storage
        if p not in old_storage:         # dropped when resize_() grew it
            raise UnsupportedInputError(
                f"input placeholder {p} is grown with resize_() and then set_() "
                "onto another storage; aotcheck does not replay that combination")
        data = old_storage_written(old_storage.get(p), st.written if st.plain else None)
        alias = recorder.storage.changes.data_set_alias     # its history (storage/swaps.py)
        value = (alias[p] if assigned is not None and st.before[p][1] else old_storage[p][0]) \
            if data else None
        # views of the memory it had (NOTE [writes before a storage swap]) are
        # rebuilt from the alias, whose eager geometry is the argument's at the call
        st.old_bases[st.start_refs[p]] = (old_storage[p][0], st.start_geometry[p])
        recorder.geometry[id(old_storage[p][0])] = st.start_geometry[p]
        if storage_source.new:
            # a storage made inside: the graph returns all of it, and the runtime
            # sets the final geometry on it (``a.set_(v.select(0, 3))`` keeps
            # offset 3)
            new_storage = whole_storage(w)
            if recorded_by_autograd(w):
                # the runtime replays autograd's record of set_() itself
                # (NOTE [set_ recorded by autograd] in swap_grad.py); no gradient
                # reaches the storage's value through that node
                new_storage = new_storage.detach()
        return data, storage_source, regrad, value, new_storage

    def _grouped(self, p: int) -> bool:
        """Whether placeholder ``p`` is an argument that shares storage with another."""
        kind, i = self.plan.placeholders[p]
        return kind == "leaf" and self.sig.leaves[i].storage in {g.storage for g in self.sig.groups}

    def _writes_outside(self, st: _RunState, p: int, w, data: bool, meta: bool,
                        swapped: bool) -> bool:
        """Step 7c: NOTE [writes outside an argument] in plan.py: written through a view
        reaching outside it, or written with an as_strided view of it that functionalization
        would replay on its compact new value (absolute offsets: the wrong elements unless the
        argument fills its storage from offset 0), or written and then shrunk by its own
        metadata calls (``a.add_(1); a.resize_(1)`` with ``a = b[:2]``: the runtime would
        write back only the final geometry's elements, and ``b[1]`` changed; so did ``a``'s
        storage when ``a`` owns it, which a later resize_ shows)."""
        recorder, ref0 = st.recorder, st.start_refs[p]
        final = recorder.geometry.get(id(w)) if meta and not swapped else None
        return data and self.plan.placeholders[p][0] == "leaf" and (any(
            ref == ref0 and not holds(st.start_geometry[p], g)
            for ref, g in recorder.writes + recorder.reaches) or (
            not st.plain and not fills_storage(st.placeholders[p])
            and any(ref == ref0 for ref, _ in recorder.reaches)) or (
            final is not None and any(
                ref == ref0 and not holds(final, g) for ref, g in recorder.writes)))

    def _input_facts(self, st: _RunState, p: int, w) -> InputFacts:
        """Step 7: what the function did to placeholder ``p``, and the candidate values the
        runtime writes back from."""
        plan, recorder, candidates = self.plan, st.recorder, st.candidates
        data, meta, swapped = self._changes(st, p, w)
        storage_source, regrad, value, new_storage = StorageSource(), False, w, None
        if swapped and p in st.own_at_call:
            st.swapped_views.append(p)
        if swapped:
            meta = False
            data, storage_source, regrad, value, new_storage = self._swap(st, p, w, data)
        storage_bytes = _resized_storage_bytes(st.nbytes[p], recorder.resizes.get(p), p)
        if storage_bytes == 0:
            data = False        # nothing to write into a storage resized to zero bytes
        # NOTE [requires_grad_ on an argument]
        # a leaf argument is still a leaf afterwards,
        # so requires_grad_() changed its flag, and no in-place op it had was recorded
        # by autograd (its mutations are replayed under no_grad). The runtime sets the
        # caller's flag: to True before the compiled function runs (so that it becomes
        # an input autograd sends a gradient to), to False after it. Its leaf is the
        # argument as it was when it joined the graph: metadata calls made before (t_,
        # squeeze_, ...) give the gradient their geometry, so the runtime replays those
        # before the call too, and the graph reads the argument through an alias in its
        # geometry at the call (CompiledArtifact.__call__).
        # an argument view's flag shows its base's
        # (NOTE [views of an argument given requires_grad_]): only its own is the function's to set
        anchor, before = st.anchors[p], st.before[p]
        flag = recorder.own_flags[p] if p in st.own_at_call else anchor.requires_grad
        rg_set = anchor.is_leaf and before[0] is None and flag != before[1]
        saw = (anchor.grad_fn, flag) != before and not rg_set and \
            not (recorder.storage.regraded(p, anchor) and flag == before[1])
        value_output = storage_output = None
        if data:
            value_output = len(candidates)
            candidates.append(value)
        outside = self._writes_outside(st, p, w, data, meta, swapped)
        if new_storage is not None:
            storage_output = len(candidates)
            candidates.append(new_storage)
        grad_value_output = None
        if regrad:                  # NOTE [grad writes after a swap] in swap_grad.py
            grad_value_output = len(candidates)
            candidates.append(w)
        # after a swap: the set_() source's eager geometry (NOTE [eager geometry])
        final = self.eager_arguments[plan.placeholders[p][1]] \
            if swapped and self.eager_arguments else None
        if not meta and not swapped:
            # NOTE [eager geometry]: an argument whose metadata nothing changed ends with
            # the geometry it had at the call; a written wrapper's own can drift (to the
            # compact layout of its new value, depending on when it was last synced: the
            # capture and the joint's second run disagreed for ``y[3:] = 2.0`` on
            # ``y = b[1:]``), and so would the value's
            final = st.start_geometry[p]
            if data:
                recorder.geometry.setdefault(id(value), final)
        return InputFacts(
            p, data, meta, saw, flag if p in st.own_at_call else w.requires_grad,
            *(final or geometry_of(w)), value_output, storage_bytes=storage_bytes,
            storage_source=storage_source, requires_grad_set=rg_set,
            writes_outside=outside, storage_output=storage_output,
            grad_value_output=grad_value_output,
            final_dtype=str(w.dtype).replace("torch.", "")
            if swapped and w.dtype != st.placeholders[p].dtype else "",
            old_grad_edge=swapped and p in recorder.storage.changes.old_edges,
            kept_grad_node=swapped and p in recorder.storage.changes.kept_grad_nodes,
            data_only=swapped and data_assign_swap(recorder, p, st.anchors[p], w, st.plain)
            is DataAssignSwap.DATA_ONLY)

    def _refuse_after_inputs(self, st: _RunState, inputs: list) -> None:
        """Step 8: the refusals that wait for every input's facts."""
        sig, plan, recorder = self.sig, self.plan, st.recorder
        if st.deferred:
            needs = groups_needing_synthetic_base(sig, plan, inputs)
            for p, refusal in st.deferred.items():
                if sig.leaves[plan.placeholders[p][1]].storage not in needs:
                    raise refusal
        member_ops = {idx for kind, idx, op, *_ in recorder.log
                      if kind == "leaf" and op != "requires_grad_"}
        if member_ops and recorder.data_aftergeometry_of() and not st.plain:
            raise UnsupportedInputError(
                f"argument leaf {min(member_ops)} shares storage with another argument, its "
                "metadata is changed in place (t_, transpose_, ...) and the shared storage is "
                "mutated afterwards; aotcheck's synthetic-base replay does not give eager's gradients for "
                "that combination, so it refuses it. Pass the arguments without aliasing")

    def _member_facts(self, st: _RunState) -> list:
        """Step 9: alias-group members whose storage or geometry the function changed."""
        members = []
        for i, m in st.member_meta.items():
            ref = storage_ref(st.user[i])
            if ref != st.member_refs[i]:
                members.append(member_swap(i, st.user[i], ref, st.start_refs, st.candidates, st.works))
            elif geometry_of(st.user[i]) != m:
                members.append(MemberFacts(i, *geometry_of(st.user[i])))
        return members

    # ------------------------------------------------------------------ after the call: outputs

    def _facts(self, st: _RunState, inputs: list, members: list, out_leaves, out_spec) -> RawFacts:
        """Step 10: what each output is (outputs.py), and the run's facts, all together."""
        sig, recorder, candidates = self.sig, st.recorder, st.candidates
        # an argument view's views are views of the leaf it views (whose own base, in eager,
        # is the base argument): autograd views of an argument, all the same
        self._work_ids = {id(w) for w in st.works} | {id(leaf) for leaf in st.view_bases.values()}
        self.new_leaf_tensors = recorder.new_leaves
        grad_leaves = new_leaf_facts(recorder.new_leaves, st.user, sig, recorder.geometry,
                                     {id(st.user[i]): i for i in st.member_meta}, set(st.start_refs))
        outputs, intermediates, new_leaves, self.base_geometry = classify_outputs(
            out_leaves, candidates, RunFindings(
                sig=sig, user=st.user, geometry=recorder.geometry,
                eager_geometry=self.eager_geometry, owners=recorder.owners, work_ids=self._work_ids,
                plain=st.plain, new_leaf_ids={id(t): j for j, t in enumerate(recorder.new_leaves)},
                clips_of=recorder.clips_of, old_bases=st.old_bases, made_in_call=recorder.made_in_call,
                ordinary=recorder.ordinary, moved_kind=recorder.storage.changes.moved_kind,
                grown=self.tagger.grown_storages() if st.plain else frozenset(),
                data_moved=_data_moved(self.plan, st.user, recorder.storage.changes.data_sets)))
        if st.swapped_views and any(c.requires_grad for c in candidates):
            # eager's set_() moved the view's version, so autograd regenerates its grad_fn as
            # a view of its base, over memory it no longer has: values computed from it get a
            # gradient path to the base that the trace does not have
            raise UnsupportedInputError(
                f"input placeholder {st.swapped_views[0]} is a view of another argument (taken "
                "before the call), the function calls set_() on it and a requires_grad setter "
                "on that argument, and returns values that require grad; eager regenerates the "
                "view's grad_fn onto its old base, which aotcheck does not replay "
                "(NOTE [views of an argument given requires_grad_])")
        cands = tuple(Candidate(tuple(c.shape), str(c.dtype).replace("torch.", ""), c.requires_grad,
                                *self.base_geometry.get(id(c), recorder.geometry.get(id(c), geometry_of(c)))[1:])
                      for c in candidates)
        retained, hooks, self.hook_fns = imperative_facts(recorder, self.plan, out_leaves)
        return RawFacts(tuple(inputs), tuple(members), tuple(outputs), str(out_spec),
                        tuple(intermediates), cands, tuple(new_leaves),
                        tuple(MetadataOp(*_freeze(op)) for op in recorder.log),
                        recorder.view_replay_hazard(),
                        grad_leaves, custom_function_digests(candidates),
                        retained=retained, hooks=hooks)


def _data_moved(plan, user: list, data_sets: list) -> frozenset:
    """The user leaves given ``.data =`` (a tensor passed twice, at each place)."""
    moved = {id(user[i]) for i, src in enumerate(plan.sources)
             if src.kind == "placeholder" and src.index in data_sets}
    return frozenset(i for i, u in enumerate(user) if id(u) in moved)


def _refuse_functionalization_error(e: Exception, recorder: MetadataRecorder) -> None:
    """A functionalization error (``e``) whose cause aotcheck knows from the recorder's log,
    as aotcheck's named refusal; returns for any other."""
    if "resize a view tensor to a larger size" in str(e):
        raise UnsupportedInputError(
            "the function grows a tensor with resize_() beyond its storage while "
            "another tensor views that storage (a view it took, or an argument sharing "
            "storage with another); functionalization cannot grow a storage that views "
            "share (a PyTorch limit)") from None
    if any(kind == "leaf" and op != "requires_grad_" for kind, _, op, *_ in recorder.log):
        raise UnsupportedInputError(
            "an argument that shares storage with another argument has its metadata "
            "changed in place (t_, transpose_, ...) and the shared storage is mutated "
            "afterwards; aotcheck's synthetic-base replay does not give eager's gradients "
            "for that combination, so it refuses it. Pass the arguments without aliasing "
            f"({type(e).__name__}: {str(e).splitlines()[0][:120]})") from None
    refuse_viewed_data_set(e, recorder)     # NOTE [.data assignment of a viewed tensor]
    if recorder.log and "view" in str(e):
        raise UnsupportedInputError(
            "the function changes an argument's metadata in place (t_, transpose_, ...) "
            "and then mutates a view of it taken before; functionalization cannot "
            "replay that view (a PyTorch limit). Take the view after the metadata "
            f"change. ({type(e).__name__}: {str(e).splitlines()[0][:120]})") from None


def _freeze(v):
    return tuple(_freeze(x) for x in v) if isinstance(v, (list, tuple)) else v


def _nonleaf_copy(p: torch.Tensor, w: torch.Tensor, as_view: bool) -> torch.Tensor:
    """A non-leaf copy of wrapper ``w`` with exactly ``p``'s storage geometry (size of the
    storage, offset, strides), so that offsets recorded for aliases of it are the real ones.

    # NOTE [non-leaf copies]
    A strided window must keep its geometry: reshape/contiguous decide view-or-copy from
    strides, so a compact copy would turn eager's copies into views (silently wrong).

    Under functionalization autograd cannot rebuild a view's grad_fn with as_strided, as eager
    does; it replays the view ops that made the view, on its base as the base is *now*. That
    goes wrong when in-place metadata changes (t_, unsqueeze_, ...) sit on the chain, in one of
    two ways, so there are two kinds of copy:

    - ``as_view=False`` (first choice): a plain tensor to autograd (a clone, or a detached
      window into fresh storage). Fails when the argument's metadata changes in place after a
      view of it was taken and that view's grad_fn is rebuilt ("narrow, then transpose_").
    - ``as_view=True``: an autograd view of fresh storage. Fails when the argument's own
      metadata changes and then its grad_fn is rebuilt ("unsqueeze_, then clamp_").

    Both fail loudly while the joint graph is traced ("invalid gradient"); the pipeline then
    traces again with the other kind (pipeline.run_stages). Gradients are the same either way.

    The fresh storage holds the whole of the argument's storage, not only its own elements:
    ``a.as_strided(...)`` reads storage elements that ``a`` does not reach (``b[::2]`` then an
    as_strided onto ``b[3]``), as in eager, where it read uninitialised memory (fuzz seed 21).
    Those elements carry no gradient, as eager's as_strided backward gives them none.
    """
    numel = p.untyped_storage().nbytes() // p.element_size()
    if not as_view and p.storage_offset() == 0 and dense_layout(p.shape, p.stride()) \
            and numel == p.numel():
        return w.clone()     # clone() keeps a dense tensor's strides: p's geometry exactly
    storage = w.new_empty((numel,))
    if numel != p.numel():
        with torch.no_grad():           # the elements outside the argument, as values
            storage.copy_(w.detach().as_strided((numel,), (1,), 0))
    view = storage.as_strided(p.shape, p.stride(), p.storage_offset())
    if not as_view:
        view = view.detach()
    view.copy_(w)
    return view


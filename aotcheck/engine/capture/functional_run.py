"""functional_run: run the user's function once on functional wrappers of the placeholders.

Shared by capture (which returns every candidate value) and the joint trace (which
returns the needed values plus gradients). One run builds the user's arguments
from the placeholders (NOTE [non-leaf copies]), calls the function under the
metadata recorder, and reads the raw facts: per input, what was mutated; per
output, what it aliases (outputs.py).
"""
from __future__ import annotations

import hashlib
import types

import torch
from torch.utils import _pytree as pytree

from ...errors import AotcheckError, UnsupportedInputError
from .facts import InputFacts, MemberFacts, RawFacts
from .functional import dense_layout, geometry_of, storage_ref, to_fun
from .outputs import classify_outputs, holds
from .plan import InputPlan, groups_needing_synthetic_base
from .recorder import MetadataRecorder, replayed_geometry
from ..signature import Signature, unflatten_inputs, whole_storage
from .swaps import (grad_written_after_swap, member_swap, old_storage_written,
                    recorded_by_autograd, storage_swap)


class FunctionalRun:
    """Runs the user's function on functional wrappers of the placeholders.

    Shared by capture (which returns every candidate value) and the joint
    trace (which returns the needed values plus gradients).
    """

    def __init__(self, fn, plan: InputPlan, sig: Signature, leaves: list, in_spec, geometry=None,
                 nonleaf_views: bool = False, tagger=None, nonleaf: tuple = (),
                 argument_views: bool = False):
        self.fn, self.plan, self.sig, self.leaves, self.in_spec = fn, plan, sig, leaves, in_spec
        # capture.EagerGeometry (NOTE [eager geometry]): per output leaf, per argument leaf
        self.eager_geometry, self.eager_arguments = \
            (geometry.outputs, geometry.arguments) if geometry is not None else (None, None)
        self.nonleaf_views = nonleaf_views
        # a StorageTagger when the run is on plain fake tensors (storage_views.py): eager's
        # own autograd, mutations read from the tagger's write log instead of functionalization
        self.tagger = tagger
        self.nonleaf = nonleaf      # plain runs: which placeholders are non-leaves (copies are leaves)
        # NOTE [views of an argument given requires_grad_]: argument views made views in the
        # trace (a capture that saw their base's flag set runs again so)
        self.argument_views = argument_views
        self.flips_viewed_base = False

    def run(self, placeholders: list[torch.Tensor]):
        """Returns (candidates, facts, out_spec, placeholder wrappers). Call with functionalization on."""
        plan, sig, plain = self.plan, self.sig, self.tagger is not None
        wrappers = list(placeholders) if plain else [to_fun(p) for p in placeholders]
        nbytes = [p.untyped_storage().nbytes() for p in placeholders]    # NOTE [storage resizes]
        works = []
        for k, (p, w) in enumerate(zip(placeholders, wrappers)):
            # A non-leaf that requires grad may be mutated in place; the wrapper is a leaf.
            # A plain run mutates a storage of its own that the tensor fills from offset 0
            # (storage_views.py rebuilds views with absolute geometry on it).
            nonleaf = self.nonleaf[k] if plain else not p.is_leaf
            copy = (p.requires_grad and nonleaf) or (
                plain and not p.requires_grad and not _fills_storage(p))
            works.append(_nonleaf_copy(p, w, self.nonleaf_views) if copy else w)
        # NOTE [views of an argument given requires_grad_]
        all_views, own_at_call = argument_views(sig, plan)
        views = all_views if self.argument_views else {}
        own_at_call = own_at_call if self.argument_views else {}
        view_bases = {q: _as_argument_view(works, q, works[p].requires_grad, own_at_call[q])
                      for p, qs in views.items() for q in qs}
        self.works = works                   # read by the joint (NOTE [backward mutations])
        user: list = []
        for i, src in enumerate(plan.sources):
            if src[0] == "value":
                user.append(self.leaves[i])
            elif src[0] == "same":
                user.append(user[src[1]])
            elif src[0] == "placeholder":
                user.append(works[src[1]])
            else:
                _, p, shape, stride, offset, detached = src
                view = works[p].as_strided(shape, stride, offset)
                user.append(view.detach() if detached else view)
        # Autograd regenerates a view's grad_fn when its version changes, so "did autograd see
        # the mutation" is read on the tensor that owns the storage (a non-leaf copy may be a
        # view of fresh storage; see _nonleaf_copy).
        anchors = [w._base if w._base is not None else w for w in works]
        start_refs = [storage_ref(w) for w in works]             # NOTE [storage swaps]
        start_geometry = [geometry_of(w) for w in works]
        # a strided non-leaf copy is written once as it is made (_nonleaf_copy): a write the
        # function did not do, so mutations count from here
        start_writes = [torch._functionalize_mutation_counter(w) if not plain else 0 for w in works]
        # NOTE [writes before a storage swap]: an alias of each argument's storage as it is at
        # the call, so that a write to it before set_() moved the argument elsewhere (or a write
        # through another alias of it afterwards) is still read (made under no_grad, never
        # written: it is only synced when the argument's storage was swapped)
        # (a detach(): no autograd view, so nothing autograd does to the argument reaches it.
        # Functionalization replays an as_strided view on the storage's new value, which is
        # compact: an offset would read past it; detach is replayed on it as it is. The plain
        # run rebuilds views at their absolute geometry: as_strided)
        old_storage = {}
        for p, w in enumerate(works):
            if plan.placeholders[p][0] == "leaf":
                old_storage[p] = (w.detach().as_strided(*start_geometry[p]) if plain
                                  else w.detach(),
                                  self.tagger.sid(w) if plain
                                  else torch._functionalize_mutation_counter(w))
        before = [(a.grad_fn, a.requires_grad) for a in anchors]
        for q, own in own_at_call.items():      # an argument view: its own flag
            before[q] = (None, own)
        member_meta = {i: geometry_of(user[i]) for i, s in enumerate(plan.sources) if s[0] == "member"}
        member_refs = {i: storage_ref(user[i]) for i in member_meta}
        args, kwargs = unflatten_inputs(list(user), self.in_spec)
        watched = {id(works[p]): ("placeholder", p) for p in range(len(works))}
        watched.update({id(user[i]): ("leaf", i) for i in member_meta})
        recorder = MetadataRecorder(watched)
        recorder.watch_tensors(works)
        recorder.watch_argument_views(views, view_bases, works, own_at_call)
        # NOTE [resize_ of an argument] in recorder.py: eager's storage sizes, and how a
        # functional run grows a tensor (a plain run's fake tensors grow as eager's do)
        recorder.storage_nbytes = dict(enumerate(nbytes))
        if not plain:
            recorder.grow = lambda t, size: _grow(t, size, watched, old_storage)
        # the arguments' geometry at the call is eager's; a data mutation can make the wrapper's
        # drift (NOTE [eager geometry]), and a detach() of it must get eager's
        recorder.start_geometry = {id(u): geometry_of(u) for u in user
                                   if isinstance(u, torch.Tensor) and u.layout == torch.strided}
        self.recorder = recorder             # read by capture() if the trace fails
        if plain:
            written_from = len(self.tagger.writes)
        try:
            with recorder:
                result = self.fn(*args, **kwargs)
        except (RuntimeError, ValueError, IndexError) as e:
            if plain or isinstance(e, AotcheckError):
                raise                        # eager's own error, or aotcheck's named refusal
            if "resize a view tensor to a larger size" in str(e):
                raise UnsupportedInputError(
                    "the function grows a tensor with resize_() beyond its storage while "
                    "another tensor views that storage (a view it took, or an argument sharing "
                    "storage with another); functionalization grows only a tensor that nothing "
                    "else views (a PyTorch limit). Resize before taking views, or pass the "
                    "arguments without aliasing") from None
            if any(kind == "leaf" and op != "requires_grad_" for kind, _, op, *_ in recorder.log):
                raise UnsupportedInputError(
                    "an argument that shares storage with another argument has its metadata "
                    "changed in place (t_, transpose_, ...) and the shared storage is mutated "
                    "afterwards; aotcheck's synthetic-base replay does not give eager's gradients "
                    "for that combination, so it refuses it. Pass the arguments without aliasing "
                    f"({type(e).__name__}: {str(e).splitlines()[0][:120]})") from None
            if recorder.log and "view" in str(e):
                raise UnsupportedInputError(
                    "the function changes an argument's metadata in place (t_, transpose_, ...) "
                    "and then mutates a view of it taken before; functionalization cannot "
                    "replay that view (a PyTorch limit). Take the view after the metadata "
                    f"change. ({type(e).__name__}: {str(e).splitlines()[0][:120]})") from None
            raise
        self.saw_inplace_metadata = recorder.inplace_metadata     # read by the joint on failure
        self.flips_viewed_base = any(p in recorder.flags_set for p in all_views)
        out_leaves, out_spec = pytree.tree_flatten(result, is_leaf=lambda x: isinstance(x, torch.Size))
        if plain:
            written = ({self.tagger.sid(w) for w in works} | {o[1] for o in old_storage.values()}) \
                & set(self.tagger.writes[written_from:])
            logged = {idx for kind, idx, *_ in recorder.log if kind == "placeholder"}
        else:
            for w in works:
                torch._sync(w)
        candidates: list[torch.Tensor] = []
        inputs = []
        old_bases: dict = {}        # storage an argument had before set_() moved it -> its alias
        # NOTE [swaps in an alias group]: a refusal for a swap of an argument that shares
        # storage with another one waits for the facts: a capture that makes the group a
        # synthetic base replaces this one, and there the swap is a member's
        deferred: dict = {}         # placeholder -> its refusal
        group_of = {g.storage for g in sig.groups}

        def grouped(p: int) -> bool:
            kind, i = plan.placeholders[p]
            return kind == "leaf" and sig.leaves[i].storage in group_of
        swapped_views = []
        for p, w in enumerate(works):
            if plain:
                data = self.tagger.sid(w) in written
                meta = p in logged or geometry_of(w) != start_geometry[p]
                swapped = storage_ref(w) != start_refs[p]
            else:
                data = torch._functionalize_has_data_mutation(w) and \
                    torch._functionalize_mutation_counter(w) != start_writes[p]
                meta = torch._functionalize_has_metadata_mutation(w)
                swapped = torch._functionalize_was_storage_changed(w)
            # set_() onto a view of itself keeps the storage, so neither way sees a swap (and
            # set_ never reaches a TorchFunctionMode, so the recorder does not log it); what
            # shows it is a new geometry of an argument with no logged metadata call: replayed
            # as a swap onto its own storage
            # (a plain run's geometry is eager's, so there a new geometry that its logged calls
            # do not give is one too: ``a.transpose_(0, 2); a.set_(v)``)
            swapped = swapped or (meta and plan.placeholders[p][0] == "leaf"
                                  and geometry_of(w) != start_geometry[p]
                                  and not any(op[0] == "leaf" and op[2] != "requires_grad_"
                                              for op in recorder.log)
                                  and (not any(op[:2] == ("placeholder", p) for op in recorder.log)
                                       or (plain and replayed_geometry(start_geometry[p],
                                                                       recorder.log, p)
                                           not in (None, geometry_of(w)))))
            if p in recorder.grown and not plain:
                # NOTE [resize_ of an argument] in recorder.py: set_() onto its grown value is
                # no swap; the runtime replays the resize_ and writes the value back
                swapped, data, meta = False, True, True
            storage_source = -1
            regrad = False
            value = w
            new_storage = None
            if swapped and p in own_at_call:
                swapped_views.append(p)
            if swapped:
                # the flags that give gradient edges: an argument view's own (NOTE [views of
                # an argument given requires_grad_])
                flags = [recorder.own_flags[q] if q in own_at_call else works[q].requires_grad
                         for q in range(len(works))]
                unrecorded = (anchors[p].grad_fn, flags[p]) == before[p]
                regrad = grad_written_after_swap(w, before[p])
                storage_source = storage_swap(plan, p, w, works, start_refs, start_geometry,
                                               recorder, before, flags,
                                               deferred if grouped(p) else None,
                                               unrecorded, regrad)
                regrad = regrad and storage_source != p
                if storage_source == p:
                    # back on its own storage (x.set_(x.t()), or set_ away and back): the runtime
                    # sets the final geometry, then writes the whole storage, which writes
                    # through the old geometry reached too (NOTE [storage swaps])
                    meta = False
                    if data and not plain and not _fills_storage(placeholders[p]):
                        # functionalization holds the written argument as a compact value,
                        # not its storage: reading the whole storage would read past it
                        raise UnsupportedInputError(
                            f"input placeholder {p} is written and then set_() onto its own "
                            "storage, which it does not fill; functionalization cannot express "
                            "that (its storage's other elements are not in the graph)")
                    if data:
                        value = whole_storage(w)
                else:
                    # the runtime swaps the storage, never copies into the new one; what the
                    # function wrote to the old one before (``a.clamp_(); a.set_(b)``) is
                    # written back into it first (NOTE [writes before a storage swap])
                    meta = False
                    if p not in old_storage:         # dropped when resize_() grew it
                        raise UnsupportedInputError(
                            f"input placeholder {p} is grown with resize_() and then set_() "
                            "onto another storage; aotcheck does not replay that combination")
                    data = old_storage_written(old_storage.get(p), written if plain else None)
                    value = old_storage[p][0] if data else None
                    # views of the memory it had (NOTE [writes before a storage swap]) are
                    # rebuilt from the alias, whose eager geometry is the argument's at the call
                    old_bases[start_refs[p]] = (old_storage[p][0], start_geometry[p])
                    recorder.geometry[id(old_storage[p][0])] = start_geometry[p]
                    if storage_source == -2:
                        # a storage made inside: the graph returns all of it, and the runtime
                        # sets the final geometry on it (``a.set_(v.select(0, 3))`` keeps
                        # offset 3)
                        new_storage = whole_storage(w)
                        if recorded_by_autograd(w):
                            # the runtime replays autograd's record of set_() itself (NOTE
                            # [set_ recorded by autograd] in swap_grad.py); no gradient
                            # reaches the storage's value through that node
                            new_storage = new_storage.detach()
            storage_bytes = _resized_storage_bytes(nbytes[p], recorder.resizes.get(p), p)
            if storage_bytes == 0:
                data = False        # nothing to write into a storage resized to zero bytes
            # NOTE [requires_grad_ on an argument]: a leaf argument is still a leaf afterwards,
            # so requires_grad_() changed its flag, and no in-place op it had was recorded
            # by autograd (its mutations are replayed under no_grad). The runtime sets the
            # caller's flag: to True before the compiled function runs (so that it becomes
            # an input autograd sends a gradient to), to False after it. Its leaf is the
            # argument as it was when it joined the graph: metadata calls made before (t_,
            # squeeze_, ...) give the gradient their geometry, so the runtime replays those
            # before the call too, and the graph reads the argument through an alias in its
            # geometry at the call (CompiledArtifact.__call__).
            # an argument view's flag shows its base's (NOTE [views of an argument given
            # requires_grad_]): only its own is the function's to set
            flag = recorder.own_flags[p] if p in own_at_call else anchors[p].requires_grad
            rg_set = anchors[p].is_leaf and before[p][0] is None and flag != before[p][1]
            saw = (anchors[p].grad_fn, flag) != before[p] and not rg_set
            value_output = storage_output = -1
            if data:
                value_output = len(candidates)
                candidates.append(value)
            # NOTE [writes outside an argument] in plan.py: written through a view reaching
            # outside it, or written with an as_strided view of it that functionalization
            # would replay on its compact new value (absolute offsets: the wrong elements
            # unless the argument fills its storage from offset 0), or written and then
            # shrunk by its own metadata calls (``a.add_(1); a.resize_(1)`` with ``a = b[:2]``:
            # the runtime would write back only the final geometry's elements, and ``b[1]``
            # changed; so did ``a``'s storage when ``a`` owns it, which a later resize_ shows)
            final = recorder.geometry.get(id(w)) if meta and not swapped else None
            outside = data and plan.placeholders[p][0] == "leaf" and (any(
                ref == start_refs[p] and not holds(start_geometry[p], g)
                for ref, g in recorder.writes + recorder.reaches) or (
                not plain and not _fills_storage(placeholders[p])
                and any(ref == start_refs[p] for ref, _ in recorder.reaches)) or (
                final is not None and any(
                    ref == start_refs[p] and not holds(final, g) for ref, g in recorder.writes)))
            if new_storage is not None:
                storage_output = len(candidates)
                candidates.append(new_storage)
            grad_value_output = -1
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
                final = start_geometry[p]
                if data:
                    recorder.geometry.setdefault(id(value), final)
            inputs.append(InputFacts(
                p, data, meta, saw, flag if p in own_at_call else w.requires_grad,
                *(final or geometry_of(w)), value_output, storage_bytes=storage_bytes,
                storage_source=storage_source, requires_grad_set=rg_set,
                writes_outside=outside, storage_output=storage_output,
                grad_value_output=grad_value_output))
        if deferred:
            needs = groups_needing_synthetic_base(sig, plan, inputs)
            for p, refusal in deferred.items():
                if sig.leaves[plan.placeholders[p][1]].storage not in needs:
                    raise refusal
        member_ops = {idx for kind, idx, op, *_ in recorder.log
                      if kind == "leaf" and op != "requires_grad_"}
        if member_ops and recorder.data_aftergeometry_of() and not plain:
            raise UnsupportedInputError(
                f"argument leaf {min(member_ops)} shares storage with another argument, its "
                "metadata is changed in place (t_, transpose_, ...) and the shared storage is "
                "mutated afterwards; aotcheck's synthetic-base replay does not give eager's gradients for "
                "that combination, so it refuses it. Pass the arguments without aliasing")
        members = []
        for i, m in member_meta.items():
            ref = storage_ref(user[i])
            if ref != member_refs[i]:
                members.append(member_swap(i, user[i], ref, start_refs, candidates, works))
            elif geometry_of(user[i]) != m:
                members.append(MemberFacts(i, *geometry_of(user[i])))
        # an argument view's views are views of the leaf it views (whose own base, in eager,
        # is the base argument): autograd views of an argument, all the same
        self._work_ids = {id(w) for w in works} | {id(leaf) for leaf in view_bases.values()}
        self.new_leaf_tensors = recorder.new_leaves
        grad_leaves = new_leaf_facts(recorder.new_leaves, user, sig, recorder.geometry,
                                     {id(user[i]): i for i in member_meta})
        outputs, intermediates, new_leaves, self.base_geometry = classify_outputs(
            out_leaves, user, candidates, sig=sig, geometry=recorder.geometry,
            eager_geometry=self.eager_geometry, owners=recorder.owners, work_ids=self._work_ids,
            plain=plain, new_leaf_ids={id(t): j for j, t in enumerate(recorder.new_leaves)},
            clips_of=recorder.clips_of, old_bases=old_bases)
        if swapped_views and any(c.requires_grad for c in candidates):
            # eager's set_() moved the view's version, so autograd regenerates its grad_fn as
            # a view of its base, over memory it no longer has: values computed from it get a
            # gradient path to the base that the trace does not have
            raise UnsupportedInputError(
                f"input placeholder {swapped_views[0]} is a view of another argument (taken "
                "before the call), the function calls set_() on it and a requires_grad setter "
                "on that argument, and returns values that require grad; eager regenerates the "
                "view's grad_fn onto its old base, which aotcheck does not replay (NOTE [views "
                "of an argument given requires_grad_])")
        cands = tuple((tuple(c.shape), str(c.dtype).replace("torch.", ""), c.requires_grad,
                       *self.base_geometry.get(id(c), recorder.geometry.get(id(c), geometry_of(c)))[1:])
                      for c in candidates)
        facts = RawFacts(tuple(inputs), tuple(members), tuple(outputs), str(out_spec),
                         tuple(intermediates), cands, tuple(new_leaves),
                         tuple(_freeze(op) for op in recorder.log), recorder.view_replay_hazard(),
                         grad_leaves, custom_function_digests(candidates))
        # the gradient targets: an argument view's own leaf is itself, not the leaf it views
        return candidates, facts, out_spec, [works[p] if p in own_at_call else w
                                             for p, w in enumerate(wrappers)]


def argument_views(sig: Signature, plan: InputPlan) -> tuple[dict[int, list[int]], dict[int, bool]]:
    """The placeholders whose flag reads through another placeholder's, per base
    placeholder, and each one's own flag at the call.

    # NOTE [views of an argument given requires_grad_]
    ``f(a0, a1)`` with ``a1 = a0.t()`` taken before the call, neither requiring grad: after
    ``a0.requires_grad_()`` inside the function eager's ``a1`` requires grad too (a view
    reads ``requires_grad`` through its ``._base``), yet it has no grad_fn and no gradient
    edge (autograd regenerates a view's grad_fn only when its version moves), so
    ``v.add_(a1)`` gives a ``v`` that requires grad and sends no gradient anywhere;
    ``a0.requires_grad_(False)`` turns it back off, and ``a1.requires_grad_()`` gives it an
    edge of its own, for the uses that follow. A view made under no_grad or inference_mode
    reads through its base alike; a detach() is no view of the argument.

    In the trace each argument is a placeholder of its own, so when a capture sees a
    requires_grad setter called on such a base, it runs again with each such argument's
    work made a view of a leaf holding its value (``_as_argument_view``; only then, as the
    other facts, set_() among them, read arguments as non-views), and the recorder gives
    that leaf the flag the base's work gets: autograd then gives the view eager's flag and
    edges. Its own flag alone is the function's to set (NOTE [requires_grad_ on an
    argument]); the joint takes a gradient for it only where that is on, with the view as
    the target. Which argument is whose ``._base`` is in the signature (``GroupSpec.bases``).
    A mutated alias group's members are views of its synthetic base in the trace, outside
    this path.
    """
    views: dict[int, list[int]] = {}
    own: dict[int, bool] = {}
    for g in sig.groups:
        for j, i in zip(g.members, g.bases):
            if i < 0 or not sig.leaves[j].is_leaf or plan.sources[j][0] != "placeholder" \
                    or plan.sources[i][0] != "placeholder":
                continue
            q, p = plan.sources[j][1], plan.sources[i][1]
            views.setdefault(p, []).append(q)
            # a leaf view requiring grad while its base does not sets its own flag
            own[q] = sig.leaves[j].requires_grad and not sig.leaves[i].requires_grad
    return views, own


def _as_argument_view(works: list, q: int, base_flag: bool, own: bool) -> torch.Tensor:
    """Make ``works[q]`` a view, taken before the function runs, of a leaf that holds its
    value and has its caller's base's flag; the view has its caller's own flag. Returns
    that leaf (NOTE [views of an argument given requires_grad_])."""
    leaf = works[q].detach()
    view = leaf.view(leaf.shape)
    leaf.requires_grad_(base_flag)
    if own:
        view.requires_grad_()
    works[q] = view
    return leaf


def check_member_flags(graph, facts: RawFacts, plan: InputPlan) -> None:
    """NOTE [requires_grad_ on an aliased argument]
    ``a0.requires_grad_()`` where ``a0`` shares storage with another argument that the
    function mutates (in data or metadata): in the trace ``a0`` is a view of the group's
    synthetic base, not the caller's tensor. The runtime replays the flag on the caller's
    tensor, in order with the members' metadata calls, so the caller's ``a0`` and the
    arguments that view it require grad afterwards, as in eager, and outputs that are those
    arguments, or views of them rebuilt after the call, have eager's autograd. A value the
    graph computes from the group's base would need its gradient sent to the caller's tensor
    (and, through eager's view rules, from the other members viewing it), which the joint
    does not model: refused, rather than returned without a gradient. Values computed from
    other arguments only are unaffected."""
    flipped = {plan.sources[leaf][1] for kind, leaf, op, args, *_ in facts.metadata_ops
               if kind == "leaf" and op == "requires_grad_" and args[0]}
    if not flipped:
        return
    nodes = list(graph.nodes)
    ph = [n for n in nodes if n.op == "placeholder"]
    bases = {ph[p] for p in flipped if p < len(ph)}
    out = next(n for n in nodes if n.op == "output").args[0]
    depends: dict = {}
    for n in nodes:                      # topological order
        depends[n] = n in bases or any(depends.get(a, False) for a in n.all_input_nodes)

    def reads_group(c: int) -> bool:
        v = out[c] if 0 <= c < len(out) else None
        return not isinstance(v, torch.fx.Node) or depends.get(v, True)

    for k, o in enumerate(facts.outputs):
        if not o.is_tensor or o.is_input >= 0 or o.same_output >= 0 or \
                (o.input_storage >= 0 and o.graph_output < 0):
            continue
        used = [c for c in (o.graph_output,) if c >= 0]
        if o.base_intermediate >= 0:
            used.append(facts.intermediate_outputs[o.base_intermediate])
        if any(reads_group(c) for c in used):
            raise UnsupportedInputError(
                f"output leaf {k} is computed from an argument that shares storage with another "
                "argument the function mutates, and the function calls requires_grad_() on one "
                "of them; aotcheck sets that argument's flag after the call but does not send "
                "gradients computed inside the function to it (or to the arguments that view "
                "it). Call requires_grad_() before passing it, or pass the arguments without "
                "aliasing")


def _grow(t: torch.Tensor, size: tuple, watched: dict, old_storage: dict) -> None:
    """Grow functional tensor ``t`` to ``size`` as eager's resize_ does (NOTE [resize_ of an
    argument] in recorder.py): its value becomes ``aten.resize`` of it, set_() onto it."""
    kind, p = watched.get(id(t), (None, None))
    if kind == "placeholder":
        old_storage.pop(p, None)        # aotcheck's own alias (NOTE [writes before a storage swap])
    storage = t.untyped_storage()
    # the tensor itself and the storage's Python object; any more is another tensor on it
    shared = torch._C._storage_Use_Count(storage._cdata) > 2 or \
        torch._C._functionalization.get_view_meta_sequence(t)
    del storage
    if shared:
        raise UnsupportedInputError(
            "the function grows a tensor with resize_() beyond its storage while another tensor "
            "views that storage (or it is itself a view); functionalization cannot grow a tensor "
            "that another one views (a PyTorch limit). Resize before taking views")
    t.set_(torch.ops.aten.resize.default(t, list(size)))


def _resized_storage_bytes(before: int, after: int | None, p: int) -> int:
    """The size in bytes of placeholder ``p``'s storage after the call if the function resized
    it (``torch.ops.inductor.resize_storage_bytes_``, FSDP's pattern), else -1.

    # NOTE [storage resizes]
    Functionalization does not put a resize in the graph (it resizes the fake storage and
    moves on), so the recorder sees the user's call and the runtime replays it on the
    argument before writing the argument's new value back (a write into a zero-byte storage
    would corrupt memory). As in PyTorch's AOTAutograd, a resize must start or end at zero
    bytes: from zero it is an allocation whose contents the function then writes, to zero it
    frees the storage (and nothing is written back).
    """
    if after is None or (after == before and after != 0):
        return -1
    if before != 0 and after != 0:
        raise UnsupportedInputError(
            f"the function resizes the storage of input placeholder {p} from {before} to {after} "
            "bytes; aotcheck (like PyTorch's AOTAutograd) replays storage resizes of arguments "
            "that start or end at zero bytes only")
    return after


def new_leaf_facts(tensors: list, user: list, sig: Signature, geometry: dict,
                   members: dict | None = None) -> tuple:
    """Per tensor that became a leaf requiring grad inside the function:
    ``(kind, source, shape, stride, offset, dtype)``.

    # NOTE [new grad leaves]
    ``v = x.view(-1); v.requires_grad_()`` (x an argument that does not require grad), or
    ``h = x * 2; h.requires_grad_()``, or ``torch.zeros(3, requires_grad=True)``: eager makes
    a leaf that requires grad inside the function; what is computed from it requires grad,
    and backward accumulates its ``.grad``. The compiled graph computes every value itself,
    so the runtime makes each such leaf before the graph runs (kind ``"view"``: an
    ``as_strided`` view of argument ``source`` taken under no_grad, as eager's is a view of
    it; kind ``"fresh"``: an empty tensor, filled from its graph value when it is returned)
    and passes them to the compiled autograd.Function as extra inputs that the forward graph
    does not read: the joint graph differentiates with respect to them too, so outputs get
    eager's requires_grad and the leaves get eager's ``.grad``.

    An argument that is a member of an alias group (a view of the synthetic base inside the
    graph) given requires_grad_() is kind ``"argument"``, source its leaf index: the caller's
    own tensor is that leaf, so the runtime sets its flag and passes it (the flag of an
    argument that is its own placeholder is set as NOTE [requires_grad_ on an argument] says).
    """
    members = members or {}
    storages = {}
    for i, t in enumerate(user):
        if isinstance(t, torch.Tensor):
            storages.setdefault(storage_ref(t), i)
    out = []
    for t in tensors:
        shape, stride, offset = geometry.get(id(t), geometry_of(t))
        src = storages.get(storage_ref(t), -1)
        kind = "view" if src >= 0 else "fresh"
        if id(t) in members:
            kind, src = "argument", members[id(t)]
            shape, stride, offset = geometry_of(t)
        out.append((kind, src, tuple(shape), tuple(stride), offset,
                    str(t.dtype).replace("torch.", "")))
    return tuple(out)


def custom_function_digests(tensors: list) -> tuple[str, ...]:
    """One digest per custom ``autograd.Function`` whose backward node the candidates'
    autograd graphs reach, in a fixed order.

    # NOTE [custom Function backward in the key]
    The captured graph is the forward only; a custom Function's backward shows up in the
    joint graph, which the cache key does not see. Two Functions with the same forward and
    different backwards would share a key, and a hit would run the wrong backward. So the
    raw facts (a key component) carry, per reached Function, its qualified name and a digest
    of its backward's code (bytecode, constants, names, nested code) and of its closure's
    plain values. A helper the backward calls, or a global it reads, is not in the digest.
    """
    from torch.autograd.function import BackwardCFunction
    found: dict[str, str] = {}
    seen: dict = {}
    stack = [t.grad_fn for t in tensors if isinstance(t, torch.Tensor)]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen[id(fn)] = fn                       # kept alive: ids stay unique
        if isinstance(fn, BackwardCFunction):
            cls = getattr(fn, "_forward_cls", type(fn))
            name = f"{cls.__module__}.{cls.__qualname__}"
            found.setdefault(name, _function_digest(cls.backward))
        stack.extend(f for f, _ in fn.next_functions)
    return tuple(f"{n}:{d}" for n, d in sorted(found.items()))


def _function_digest(fn) -> str:
    h = hashlib.sha256()
    fn = getattr(fn, "__wrapped__", fn)          # once_differentiable wraps the backward
    code = getattr(fn, "__code__", None)

    def add(c):
        h.update(c.co_code)
        h.update(repr(c.co_names).encode())
        for k in c.co_consts:
            add(k) if isinstance(k, types.CodeType) else h.update(repr(k).encode())
    if code is None:
        h.update(repr(fn).encode())
        return h.hexdigest()[:16]
    add(code)
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        h.update((repr(v) if isinstance(v, (bool, int, float, str, type(None))) else
                  type(v).__qualname__).encode())
    return h.hexdigest()[:16]


def _freeze(v):
    return tuple(_freeze(x) for x in v) if isinstance(v, (list, tuple)) else v


def _fills_storage(t: torch.Tensor) -> bool:
    """Dense, from offset 0, over its whole storage."""
    return t.storage_offset() == 0 and dense_layout(t.shape, t.stride()) and \
        t.numel() * t.element_size() == t.untyped_storage().nbytes()


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


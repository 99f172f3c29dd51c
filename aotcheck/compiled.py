"""compiled: a function compiled per input signature, the one path every compiled call takes.

One call's path, on one screen (:class:`CompiledFunction`)::

    arguments -> Python state (fingerprint, or its guard) -> lifted tensors
              -> call record (inputs read once) -> in-memory key -> hit: run the artifact
              miss: signature -> [capture, for a traced key] -> [cache key -> lookup]
                    -> the pipeline -> artifact -> [save]

Both the plain path (:class:`aotcheck.api.AotFunction`, which adds only the dispatch of
tensor-subclass calls) and the subclass path (one ``CompiledFunction`` per desugared plain
graph, :mod:`aotcheck.subclass`) compile through it. It is the only place that knows both
the engine and the cache.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import torch

from . import flags
from . import lift as _lift
from .cache import bypass, cache_key, lookup, needs_capture, resolve, save
from .cache.ambient import call_state
from .cache.fingerprint import Unfingerprintable, fingerprint_of, fingerprint_walk
from .cache.guard import state_guard
from .cache import registrations
from .engine.capture.custom_ops import recording
from .engine.capture.functional import outside_saved_tensors_hooks
from .engine.capture.trace import capture
from .engine.partition.cut import STRATEGIES
from .engine.pipeline import build_artifact, run_stages
from .engine.signature import call_key, fast_call_key, flatten_inputs, signature
from .errors import AotcheckError, GuardFailed


@dataclass(frozen=True)
class CallRecord:
    """One call's inputs, read once (NOTE [one read of the inputs]): what the in-memory key,
    the persistent key, the lookup and the pipeline share."""
    state: str                  # digest of the Python state (NOTE [python state])
    fp: tuple | Unfingerprintable   # its (text, digest), or why it has none
    leaves: list                # the flattened arguments, lifted tensors included
    spec: Any                   # their tree spec (an int: a flat tuple)
    key: tuple                  # the in-memory key: (state, "flat" | "tree", ambient, call key)


# NOTE [one read of the inputs]
# A call reads its inputs once. A flat tuple of plain strided tensors over distinct
# storages (the common call) is read by ``fast_call_key``, whose key decides equal
# signatures alone; any other call is flattened and read by ``call_key``. Either key, with
# the state digest, a tag that keeps the two kinds apart and the ambient torch settings
# (``ambient.call_state``: NOTE [the per-call read]), indexes one table of artifacts; a hit
# runs the artifact on the arguments read. The full ``signature`` (a
# third encoding, JSON-able) is built only on a miss, once, for the pipeline and the
# persistent key.


def flat_key(state, args: tuple, kwargs: dict):
    """The in-memory key of a call of plain tensors (NOTE [one read of the inputs]), or None."""
    if kwargs:
        return None
    key = fast_call_key(args)
    return None if key is None else (state, "flat", call_state(), key)


class CompiledFunction:
    """A compiled callable: compiles per input signature on first use, then reuses.

    Calls with an equal signature (shapes, strides, offsets, dtypes, devices,
    requires_grad, argument aliasing, scalar values, grad mode) under equal ambient
    torch settings (``cache/ambient.py``) share one compiled artifact; any
    difference compiles again.
    """

    def __init__(self, fn, partitioner: str | None = None, cache=None, remote=None):
        partitioner = resolve_partitioner(partitioner)
        self.fn = fn
        self.call_fn = _lift.wrap(fn)    # fn taking the tensors it reads as arguments (lift.py)
        self.partitioner = partitioner
        self.cache = cache
        self.remote = remote
        self._artifacts: dict = {}   # CallRecord.key -> artifact
        self._last_state = None      # (fingerprint data, (digest, fp, lifted)) of the last walk
        self._guard = None           # StateGuard of the last walk, or None (NOTE [skipping the state walk])
        functools.update_wrapper(self, fn)

    def derived(self, fn) -> CompiledFunction:
        """``fn`` compiled with this function's partitioner and caches (the subclass path's
        desugared graphs)."""
        return CompiledFunction(fn, self.partitioner, cache=self.cache, remote=self.remote)

    def _state(self):
        """The fingerprint of the Python state ``fn`` reads (NOTE [python state]): the digest
        that keys the in-memory reuse, and what the persistent key is built from. The walk
        is skipped while the last walk's guard holds
        (NOTE [skipping the state walk] in cache/guard.py); its canonical text and digest are computed only
        when the walked data differs from the last walk's (equal data gives equal text)."""
        guard = self._guard
        if guard is not None and guard.holds():
            return self._last_state[1]
        guard = state_guard(self.fn)
        try:
            (data, lifted), err = fingerprint_walk(self.fn), None
        except Unfingerprintable as u:
            (data, lifted), err = fingerprint_walk(self.fn, identity_fallback=True), u
        lifted = _lift.liftable(lifted)             # once per walk, not per call
        last = self._last_state
        if last is not None and last[0] == data:     # equal data; the tensors may be others
            state = (*last[1][:2], lifted)
        else:
            fp = fingerprint_of(data)
            state = (fp[1], fp if err is None else err, lifted)
        self._last_state = (data, state)
        self._guard = guard if err is None and guard is not None and guard.holds() else None
        return state

    def state_and_lift(self, kwargs: dict):
        """(state digest, fingerprint, kwargs with the lifted tensors) for one call.

        # NOTE [python state]
        a compiled graph depends on more than the tensors: closure and
        global values, defaults, helpers, module.training. Every call fingerprints that
        state (no trace; or checks the last fingerprint's guard), and artifacts are reused
        only under an equal fingerprint, so model.eval() after a train-mode compile compiles
        again (torch's guards do the same)."""
        state, fp, lifted = self._state()
        self._lifted_now = lifted       # the traces of this call's compile read them (lift.wrap)
        if lifted:                      # NOTE [lifted tensors] (lift.py)
            kwargs = {**kwargs, _lift.LIFTED: lifted}
        return state, fp, kwargs

    def __call__(self, *args, **kwargs):
        state, fp, kwargs = self.state_and_lift(kwargs)
        key = flat_key(state, args, kwargs)
        if key is not None:
            art = self._artifacts.get(key)      # a hit that runs without a guard: run it
            if art is not None and not art.guarded:
                return art.call(list(args))
        return self.call_record(self.record(state, fp, args, kwargs, key))

    def record(self, state, fp, args: tuple, kwargs: dict, key=None) -> CallRecord:
        """The call's record; ``key``: its flat key, when :func:`flat_key` gave one."""
        if key is not None:
            return CallRecord(state, fp, list(args), len(args), key)
        leaves, spec = flatten_inputs(args, kwargs)
        return CallRecord(state, fp, leaves, spec, (state, "tree", call_state(), call_key(leaves, spec)))

    def call_record(self, rec: CallRecord):
        """The call through its record: the artifact under its key, compiled on a miss."""
        art = self._artifacts.get(rec.key)
        if art is None:
            art = self._new_artifact(rec)
        if not art.guarded:
            return art.call(rec.leaves)
        return self._call_guarded(art, rec)

    def _new_artifact(self, rec: CallRecord, fresh: bool = False):
        art = self._compile(rec, fresh=fresh)
        art.set_grad_facts(any(isinstance(t, torch.Tensor) and t.requires_grad for t in rec.leaves),
                           torch.is_grad_enabled() and not torch.is_inference_mode_enabled())
        self._artifacts[rec.key] = art
        return art

    def _call_guarded(self, art, rec: CallRecord):
        """NOTE [value specialization] (engine/capture/values.py): a graph specialized on tensor values
        whose guard fails at this call is compiled again for this call's values (the generator
        is put back first: draws before the guard ran for nothing)."""
        rng = torch.random.get_rng_state()
        try:
            return art.call(rec.leaves)
        except GuardFailed:
            if not art.retryable:
                raise
        torch.random.set_rng_state(rng)
        return self._new_artifact(rec, fresh=True).call(rec.leaves)

    def _compile(self, rec: CallRecord, fresh: bool = False):
        """``fresh``: a stored entry was specialized on other tensor values (its guard failed
        at this call): trace again, and store the new specialization in its place. Traced
        without the caller's saved_tensors_hooks (NOTE [saved tensors hooks around the call]),
        reading the call's own lifted tensors (lift.wrap)."""
        self.call_fn.reals = getattr(self, "_lifted_now", None)
        try:   # NOTE [a registration changed in-process]: torch's lazy registrations while tracing
            with outside_saved_tensors_hooks(), registrations.quiet():
                return self._compile_outside_hooks(rec, fresh)
        finally:
            self.call_fn.reals = None

    def _compile_outside_hooks(self, rec: CallRecord, fresh: bool = False):
        leaves, spec = rec.leaves, rec.spec
        sig = signature(leaves, spec)
        if self.cache is None and not self.remote:
            return build_artifact(run_stages(self.call_fn, leaves, spec, sig, self.partitioner))
        cache = resolve(True if self.cache is None else self.cache, remote=self.remote)
        # NOTE [one capture per call] (cache/key.py): a traced key's capture, made once here
        with recording() as touched:
            captured = capture(self.call_fn, leaves, spec, sig) if needs_capture(rec.fp) else None
        key = cache_key(sig, self.partitioner, fn_print=rec.fp, captured=captured)
        if key.uncacheable is not None:
            bypass(cache, key.uncacheable)
        elif not fresh:
            art = lookup(cache, key, self.call_fn, leaves, spec, sig, self.partitioner, captured)
            if art is not None:
                return art
        with recording() as traced:
            stages = run_stages(self.call_fn, leaves, spec, sig, self.partitioner, captured=captured)
        art = build_artifact(stages)
        if key.uncacheable is None:
            save(cache, key, stages, art, touched | traced)
        return art

    @property
    def num_compiled(self) -> int:
        return len(self._artifacts)


def resolve_partitioner(partitioner: str | None) -> str:
    """The partitioner's name: the one given, else ``AOTCHECK_PARTITIONER`` (which the pytest
    plugin's and the CLI's ``--partitioner`` set), checked against the known strategies."""
    name = flags.get(flags.PARTITIONER) if partitioner is None else partitioner
    if name not in STRATEGIES:
        raise AotcheckError(f"unknown partitioner {name!r}; supported: {sorted(STRATEGIES)}")
    return name

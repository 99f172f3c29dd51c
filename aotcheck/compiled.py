"""compiled: a function compiled per input signature, the one path every compiled call takes.

One call's path, on one screen (:class:`CompiledFunction`)::

    arguments -> Python state (fingerprint) -> lifted tensors -> signature (once)
              -> [cache key -> lookup] -> on a miss: the pipeline -> artifact -> [save]

Both the plain path (:class:`aotcheck.api.AotFunction`, which adds only the dispatch of
tensor-subclass calls) and the subclass path (one ``CompiledFunction`` per desugared plain
graph, :mod:`aotcheck.subclass`) compile through it. It is the only place that knows both
the engine and the cache.
"""
from __future__ import annotations

import functools

import torch

from . import flags
from . import lift as _lift
from .cache import bypass, cache_key, lookup, resolve, save
from .cache.fingerprint import Unfingerprintable, fingerprint_of, fingerprint_walk
from .engine.capture.functional import outside_saved_tensors_hooks
from .engine.partition.cut import STRATEGIES
from .engine.pipeline import build_artifact, run_stages
from .engine.signature import call_key, fast_call_key, flatten_inputs, signature
from .errors import AotcheckError, GuardFailed


class CompiledFunction:
    """A compiled callable: compiles per input signature on first use, then reuses.

    Calls with an equal signature (shapes, strides, offsets, dtypes, devices,
    requires_grad, argument aliasing, scalar values, grad mode) share one
    compiled artifact; any difference compiles again.
    """

    def __init__(self, fn, partitioner: str | None = None, cache=None, remote=None):
        partitioner = resolve_partitioner(partitioner)
        self.fn = fn
        self.call_fn = _lift.wrap(fn)    # fn taking the tensors it reads as arguments (lift.py)
        self.partitioner = partitioner
        self.cache = cache
        self.remote = remote
        self._artifacts: dict = {}
        self._fast: dict = {}        # fast_call_key -> artifact, for flat non-aliased tensors
        self._last_state = None      # (fingerprint data, _state()) of the last call
        functools.update_wrapper(self, fn)

    def derived(self, fn) -> CompiledFunction:
        """``fn`` compiled with this function's partitioner and caches (the subclass path's
        desugared graphs)."""
        return CompiledFunction(fn, self.partitioner, cache=self.cache, remote=self.remote)

    def _state(self):
        """The fingerprint of the Python state ``fn`` reads (NOTE [python state]): the digest
        that keys the in-memory reuse, and what the persistent key is built from. The walk
        runs on every call; its canonical text and digest only when the walked data differs
        from the last call's (equal data gives equal text)."""
        try:
            (data, lifted), err = fingerprint_walk(self.fn), None
        except Unfingerprintable as u:
            (data, lifted), err = fingerprint_walk(self.fn, identity_fallback=True), u
        last = self._last_state
        if last is not None and last[0] == data:
            return (*last[1], lifted)
        fp = fingerprint_of(data)
        state = (fp[1], fp if err is None else err)
        self._last_state = (data, state)
        return (*state, lifted)

    def state_and_lift(self, kwargs: dict):
        """(state digest, fingerprint, kwargs with the lifted tensors) for one call.

        NOTE [python state]: a compiled graph depends on more than the tensors: closure and
        global values, defaults, helpers, module.training. Every call fingerprints that
        state (no trace), and artifacts are reused only under an equal fingerprint, so
        model.eval() after a train-mode compile compiles again (torch's guards do the same)."""
        state, fp, lifted = self._state()
        lifted = _lift.liftable(lifted)
        self._lifted_now = lifted       # the traces of this call's compile read them (lift.wrap)
        if lifted:                      # NOTE [lifted tensors] (lift.py)
            kwargs = {**kwargs, _lift.LIFTED: lifted}
        return state, fp, kwargs

    def fast_artifact(self, state, args: tuple, kwargs: dict):
        """The artifact of an earlier call with flat, non-aliased plain tensors and an equal
        fast key (no guard to run), or None."""
        if kwargs:
            return None
        key = fast_call_key(args)
        if key is None:
            return None
        art = self._fast.get((state, key))
        return art if art is not None and not art.guarded else None

    def __call__(self, *args, **kwargs):
        state, fp, kwargs = self.state_and_lift(kwargs)
        art = self.fast_artifact(state, args, kwargs)
        if art is not None:
            return art.call(list(args))
        return self.call_plain(state, fp, args, kwargs)

    def call_plain(self, state, fp, args: tuple, kwargs: dict):
        """The call through the general key: signature -> artifact (compiled on a miss)."""
        leaves, spec = flatten_inputs(args, kwargs)
        key = (state, call_key(leaves, spec))
        art = self._artifacts.get(key)
        if art is None:
            art = self._new_artifact(key, leaves, spec, fp)
        if not kwargs:
            fast = fast_call_key(args)
            if fast is not None:
                self._fast[(state, fast)] = art
        if not art.guarded:
            return art.call(leaves)
        return self._call_guarded(art, key, leaves, spec, fp)

    def _new_artifact(self, key, leaves: list, spec, fp, fresh: bool = False):
        art = self._compile(leaves, spec, fp, fresh=fresh)
        art.set_grad_facts(any(isinstance(t, torch.Tensor) and t.requires_grad for t in leaves),
                           torch.is_grad_enabled() and not torch.is_inference_mode_enabled())
        self._artifacts[key] = art
        return art

    def _call_guarded(self, art, key, leaves: list, spec, fp):
        """NOTE [value specialization] (engine/capture/values.py): a graph specialized on tensor values
        whose guard fails at this call is compiled again for this call's values (the generator
        is put back first: draws before the guard ran for nothing)."""
        rng = torch.random.get_rng_state()
        try:
            return art.call(leaves)
        except GuardFailed:
            if not art.retryable:
                raise
        torch.random.set_rng_state(rng)
        self._fast = {k: a for k, a in self._fast.items() if a is not art}
        return self._new_artifact(key, leaves, spec, fp, fresh=True).call(leaves)

    def _compile(self, leaves: list, spec, fp=None, fresh: bool = False):
        """``fresh``: a stored entry was specialized on other tensor values (its guard failed
        at this call): trace again, and store the new specialization in its place. Traced
        without the caller's saved_tensors_hooks (NOTE [saved tensors hooks around the call])."""
        self.call_fn.reals = getattr(self, "_lifted_now", None)
        try:
            with outside_saved_tensors_hooks():
                return self._compile_outside_hooks(leaves, spec, fp, fresh)
        finally:
            self.call_fn.reals = None

    def _compile_outside_hooks(self, leaves: list, spec, fp=None, fresh: bool = False):
        sig = signature(leaves, spec)
        if self.cache is None and not self.remote:
            return build_artifact(run_stages(self.call_fn, leaves, spec, sig, self.partitioner))
        cache = resolve(True if self.cache is None else self.cache, remote=self.remote)
        key = cache_key(self.call_fn, leaves, spec, sig, self.partitioner, fn_print=fp)
        if key.uncacheable is not None:
            bypass(cache, key.uncacheable)
        elif not fresh:
            art = lookup(cache, key, self.call_fn, leaves, spec, sig, self.partitioner)
            if art is not None:
                return art
        stages = run_stages(self.call_fn, leaves, spec, sig, self.partitioner, captured=key.captured)
        art = build_artifact(stages)
        if key.uncacheable is None:
            save(cache, key, stages, art)
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

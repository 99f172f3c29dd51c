"""The public entry points: ``aot_function`` and ``explain``.

One call's path, on one screen (``AotFunction._compile``)::

    arguments -> signature (once) -> [cache key -> lookup] -> on a miss: the pipeline
              -> artifact -> [save]

The API is the only place that knows both the engine and the cache.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import torch

from . import flags
from . import lift as _lift
from . import subclass as _subclass
from .cache import bypass, cache_key, lookup, resolve, save
from .cache.fingerprint import Unfingerprintable, fingerprint_of, fingerprint_walk
from .engine.decide import Decision
from .engine.partition.cut import STRATEGIES
from .engine.pipeline import Stages, build_artifact, run_stages
from .engine.printer import format_graph
from .engine.signature import (
    TensorSpec,
    call_key,
    fast_call_key,
    flatten_inputs,
    signature,
)
from .errors import AotcheckError, GuardFailed, UnsupportedInputError


class AotFunction:
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
        self._subclass: dict = {}    # subclass calls: key -> (compiled plain graph, out meta)
        self._last_state = None      # (fingerprint data, _state()) of the last call
        functools.update_wrapper(self, fn)

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

    def __call__(self, *args, **kwargs):
        # NOTE [python state]: a compiled graph depends on more than the tensors: closure and
        # global values, defaults, helpers, module.training. Every call fingerprints that
        # state (no trace), and artifacts are reused only under an equal fingerprint, so
        # model.eval() after a train-mode compile compiles again (torch's guards do the same).
        state, fp, lifted = self._state()
        lifted = _lift.liftable(lifted)
        if lifted:                      # NOTE [lifted tensors] (lift.py)
            kwargs = {**kwargs, _lift.LIFTED: lifted}
        if not kwargs:
            key = fast_call_key(args)
            if key is not None:
                art = self._fast.get((state, key))
                if art is not None and not art.guarded:
                    return art.call(list(args))
        if _subclass.has_subclass(args, kwargs):
            return _subclass.call(self, args, kwargs)
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
        """NOTE [value specialization] (engine/values.py): a graph specialized on tensor values
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
        at this call): trace again, and store the new specialization in its place."""
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


def aot_function(fn, *, partitioner: str | None = None, cache=None, remote=None) -> AotFunction:
    """Compile ``fn`` ahead of time into forward and backward aten graphs.

    ``fn`` takes tensors, Python scalars (int, float, bool, str), None, and
    tuples, lists and dicts of these, and may return any such structure. Tensors may be
    traceable wrapper subclasses (``__tensor_flatten__``, e.g. TwoTensor): see
    :mod:`aotcheck.subclass`. The
    compiled callable reproduces eager semantics: values, gradients, input
    mutations, aliasing and requires_grad. ``cache`` is a directory path or a
    :class:`aotcheck.cache.Cache` (None: no persistent cache). ``partitioner`` is
    ``"default"`` (save what the backward reads) or ``"mincut"`` (save the fewest bytes,
    recompute cheap ops in the backward); None: the ``AOTCHECK_PARTITIONER`` flag.
    ``remote`` is a Redis URL (``redis://host:port/db``) shared with other machines, looked
    up after the local directory and written with it (default: ``AOTCHECK_REMOTE_CACHE`` for any persistent
    cache; a remote without ``cache`` uses the default directory).
    """
    return AotFunction(fn, partitioner=partitioner, cache=cache, remote=remote)


@dataclass
class Explanation:
    stages: Stages

    def __str__(self) -> str:
        s = self.stages
        parts = [
            "== signature ==", _format_signature(s.signature),
            "== captured graph ==", format_graph(s.captured.graph, "captured"),
            "== view/mutation metadata ==", s.meta.format(),
            "== decision ==", f"{s.decision.mode}: {s.decision.reason}",
            "== forward graph ==", format_graph(s.partitioned.forward, "forward"),
        ]
        if s.partitioned.backward is not None:
            parts += ["== backward graph ==", format_graph(s.partitioned.backward, "backward"),
                      "== saved values ==", ", ".join(s.partitioned.saved) or "(none)"]
            if s.partitioned.reasons:
                parts += ["== saved and recomputed, and why ==", "\n".join(s.partitioned.reasons)]
        return "\n".join(parts)


def _format_signature(sig) -> str:
    lines = []
    for i, l in enumerate(sig.leaves):
        if isinstance(l, TensorSpec):
            extra = []
            if l.requires_grad:
                extra.append("requires_grad")
            if not l.is_leaf:
                extra.append("non-leaf")
            if l.same_as >= 0:
                extra.append(f"same tensor as {l.same_as}")
            lines.append(f"arg {i}: {l.dtype}{list(l.shape)} stride={list(l.stride)} "
                         f"offset={l.offset} storage={l.storage} {' '.join(extra)}".rstrip())
        else:
            lines.append(f"arg {i}: {l.kind} {l.value}")
    lines.append(f"grad_enabled={sig.grad_enabled} inference_mode={sig.inference_mode}")
    return "\n".join(lines)


def explain(fn, *args, partitioner: str | None = None, print_result: bool = True,
            **kwargs) -> Explanation:
    """Run every stage for these inputs and return (and print) the results; with the
    min-cut partitioner, also which values were saved or recomputed and why. With a tensor
    subclass argument: the stages of the desugared plain-tensor forward graph."""
    outer = fallback = False
    lifted = _lift.reachable_tensors(fn)       # NOTE [lifted tensors] (lift.py)
    if lifted:
        fn, kwargs = _lift.wrap(fn), {**kwargs, _lift.LIFTED: lifted}
    if _subclass.has_subclass(args, kwargs):
        fn, args, outer, fallback = _subclass.desugared(AotFunction(fn, partitioner), args, kwargs)
        kwargs = {}
    leaves, spec = flatten_inputs(args, kwargs)
    try:
        stages = run_stages(fn, leaves, spec, signature(leaves, spec),
                            resolve_partitioner(partitioner))
    except UnsupportedInputError:
        if not fallback:
            raise
        # the graph with grad-requiring inner tensors is refused; the call runs it detached
        leaves, spec = flatten_inputs(tuple(fallback[0]), {})
        stages = run_stages(fn, leaves, spec, signature(leaves, spec),
                            resolve_partitioner(partitioner))
        outer = outer or fallback[1]
    if outer:
        stages = dataclasses.replace(stages, decision=Decision(*outer))
    ex = Explanation(stages)
    if print_result:
        print(ex)
    return ex

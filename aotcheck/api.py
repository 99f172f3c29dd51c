"""The public entry points: ``aot_function`` and ``explain``.

The API only dispatches; one call's path, on one screen (``AotFunction.__call__``)::

    arguments -> Python state -> lifted tensors -> a tensor-subclass argument?
              yes: subclass.call (desugared plain graphs, each a CompiledFunction)
              no:  CompiledFunction: signature -> [key -> lookup] -> pipeline -> [save]

Compiling lives in :mod:`aotcheck.compiled`, the subclass path in :mod:`aotcheck.subclass`;
neither imports this module.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from . import lift as _lift
from . import subclass as _subclass
from .compiled import CompiledFunction, flat_key, resolve_partitioner
from .engine.decide import Decision
from .engine.pipeline import Stages, run_stages
from .engine.printer import format_graph
from .engine.signature import TensorSpec, flatten_inputs, signature
from .errors import UnsupportedInputError


class AotFunction(CompiledFunction):
    """A compiled callable: compiles per input signature on first use, then reuses.

    Calls with an equal signature (shapes, strides, offsets, dtypes, devices,
    requires_grad, argument aliasing, scalar values, grad mode) share one
    compiled artifact; any difference compiles again. A call with a tensor-subclass
    argument goes to :mod:`aotcheck.subclass`.
    """

    def __init__(self, fn, partitioner: str | None = None, cache=None, remote=None):
        super().__init__(fn, partitioner, cache=cache, remote=remote)
        self._subclass: dict = {}    # subclass calls: key -> (compiled plain graph, out meta)

    def __call__(self, *args, **kwargs):
        state, fp, kwargs = self.state_and_lift(kwargs)   # NOTE [python state], NOTE [lifted tensors]
        key = flat_key(state, args, kwargs)               # NOTE [one read of the inputs]
        if key is not None:
            art = self._artifacts.get(key)                # a hit that runs without a guard
            if art is not None and not art.guarded:
                return art.call(list(args))
        elif _subclass.has_subclass(args, kwargs):
            return _subclass.call(self, state, self._subclass, args, kwargs)
        return self.call_record(self.record(state, fp, args, kwargs, key))


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
            "== captured graph ==", s.meta.trace_mode.format(),
            format_graph(s.captured.graph, "captured"),
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
            if l.same_as is not None:
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
        # the walk's tensors, as CompiledFunction gives them: a walk inside the trace may see
        # others (functional_call swaps an RNN module's parameters and its _flat_weights)
        fn.reals = lifted
    if _subclass.has_subclass(args, kwargs):
        fn, args, outer, fallback = _subclass.desugared(CompiledFunction(fn, partitioner), args, kwargs)
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

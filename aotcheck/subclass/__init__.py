"""Traceable wrapper tensor subclasses (``__tensor_flatten__``/``__tensor_unflatten__``, e.g.
``TwoTensor``) as arguments and outputs, handled at the API boundary; the engine stays
plain-tensor only.

A call with a subclass argument is rewritten into a call over plain tensors::

    f(x: TwoTensor, y)  ->  inner(meta: str, x.a, x.b, y)

``inner`` rebuilds ``x`` with ``__tensor_unflatten__(inner_tensors, ctx, outer_size,
outer_stride)`` from ``meta``, calls ``f``, and returns ``(out_meta: str, flat_outputs)``
where subclass outputs are flattened into their inner tensors. ``inner`` is compiled by an
ordinary :class:`~aotcheck.compiled.CompiledFunction`.

# NOTE [subclass keys]
``meta`` (the argument tree, and per subclass argument its type,
flatten ctx, inner attribute names, outer size and stride) is a *str argument*, and the
signature records str arguments by exact value, so the in-memory and the persistent keys
both change with the subclass type or ctx. ``out_meta`` is a str *output* (a constant of
the traced graph), so it is cached with the artifact and a cache hit can rebuild the
subclass outputs without tracing.

# NOTE [subclass autograd]
eager autograd records at the OUTER level (``x.grad`` of a
TwoTensor leaf is a TwoTensor; the inner tensors do not require grad). When grad is
needed, :class:`Outer` (an ``autograd.Function`` over the outer tensors) runs ``inner`` on
detached inner tensors that require grad where the outer one does; its backward flattens
the subclass tangents, backpropagates through the compiled graph and unflattens the
gradients with each argument's ctx.

# NOTE [subclass limits]
ctx must be plain data (None, bool, int, float, str, tuples, lists,
str-keyed dicts, torch.dtype) and the class importable by module and qualified name. Refused
by name: a call that returns a leaf it made with ``requires_grad_()`` together with an output
computed from it, ``requires_grad_()`` on an argument whose shape it changed or that shares a
storage with another argument, together with an output (or a written argument) computed from
it (NOTE [requires_grad_ on a subclass argument] in autograd.py), random draws with
grad on a non-CPU device, and arguments that share a storage, are written, and require grad
without being views of one dense base (NOTE [subclass alias groups]). Anything else raises a
named error, never a wrong result. Eager's outer-level semantics (outputs that are arguments or
views of them, writes, reshapes) follow NOTE [outer-level facts] (facts.py) and
NOTE [subclass non-leaf writes].

This package may import the base (errors, flags), engine/, cache/, lift and compiled, never
api (which imports it). Its modules, one line each, in the order a call flows through them:
the map in README.md, "Layout".
"""
from .base import has_subclass
from .desugar import desugared
from .outer import call

__all__ = ["has_subclass", "call", "desugared"]

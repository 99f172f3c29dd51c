"""rng.layout: a random op draws into memory laid out as eager's draw was.

# NOTE [a draw in eager's layout]
A CPU random kernel fills its output in memory order, so the values at each index depend on
the strides of the tensor drawn into. Functionalization turns an in-place draw
``t.bernoulli_(p)`` into the functional variant ``bernoulli.p(t, p)``, whose kernel draws
into a fresh *contiguous* buffer (``uniform``/``exponential``/... into a clone, which is
contiguous for non-dense ``t``). Eager drew into ``t``'s own strides. The generated code
therefore runs every functional variant of an in-place random op as that in-place op on a
buffer with the strides of its input (:func:`runtime_kernel`). The out-of-place
``torch.bernoulli(x, p)`` lands on the same ``bernoulli.p`` node, but eager draws it
contiguous: while tracing, :class:`DrawLikeEager` rewrites that call into the in-place draw
into a contiguous buffer, which is what eager's kernel does, so that every ``bernoulli.p``
node means "an in-place draw into its input's layout".
"""
from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

aten = torch.ops.aten


# functional variant (what functionalization puts in the graph) -> eager's in-place draw
def _mapping() -> dict:
    m = {
        aten.bernoulli.p: aten.bernoulli_.float,
        aten.bernoulli.Tensor: aten.bernoulli_.Tensor,
        aten.normal_functional.default: aten.normal_.default,
        aten.uniform.default: aten.uniform_.default,
        aten.exponential.default: aten.exponential_.default,
        aten.geometric.default: aten.geometric_.default,
        aten.log_normal.default: aten.log_normal_.default,
        aten.cauchy.default: aten.cauchy_.default,
        aten.random.default: aten.random_.default,
        aten.random.to: aten.random_.to,
    }
    # the overload named "from" is a Python keyword: reach it by name
    m[getattr(aten.random, "from")] = getattr(aten.random_, "from")
    return m


FUNCTIONAL_TO_INPLACE = _mapping()



def runtime_kernel(target):
    """What the generated code calls for ``target``: for a functional variant of an
    in-place draw, that in-place draw on a buffer laid out like its input (see the module docstring);
    otherwise None (the op itself)."""
    inplace = FUNCTIONAL_TO_INPLACE.get(target)
    if inplace is None:
        return None
    op = inplace._op

    def draw_like_input(self, *args, **kwargs):
        buf = torch.empty_strided(self.size(), self.stride(), dtype=self.dtype, device=self.device)
        return op(buf, *args, **kwargs)

    draw_like_input.__name__ = f"draw_like_input_{inplace.__name__.replace('.', '_')}"
    return draw_like_input


class DrawLikeEager(TorchFunctionMode):
    """While tracing: ``torch.bernoulli(x, p)`` (out-of-place, float or tensor ``p``) becomes
    the in-place draw into a contiguous buffer, as eager's kernel draws it (see the module docstring)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.bernoulli, torch.Tensor.bernoulli) and (len(args) > 1 or "p" in kwargs):
            x = args[0]
            p = args[1] if len(args) > 1 else kwargs["p"]
            gen = kwargs.get("generator")
            with torch._C.DisableTorchFunction():
                buf = torch.empty_like(x, memory_format=torch.contiguous_format)
                return buf.bernoulli_(p, generator=gen) if gen is not None else buf.bernoulli_(p)
        if func is torch.Tensor.random_ and (bounds := _from_to(args, kwargs)) is not None:
            return _random_from_to(args[0], *bounds, kwargs.get("generator"))
        return func(*args, **kwargs)


def _from_to(args, kwargs):
    """(from, to) of ``x.random_(from, to)``, or None for the other overloads."""
    values = list(args[1:3])
    values += [kwargs[k] for k in ("from", "to")[len(values):] if k in kwargs]
    if len(values) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return values[0], values[1]
    return None


def _random_from_to(x: torch.Tensor, low: int, high: int, gen) -> torch.Tensor:
    """``x.random_(low, high)`` as ``x.copy_(low + buf.random_(high - low))``, with ``buf`` an
    int64 tensor in ``x``'s layout. Both overloads run one kernel (a draw modulo the range, plus
    the base), so the values and the generator's state are eager's; the overload ``random_.from``
    cannot be traced: FX writes it as ``aten.random_.from``, a syntax error (``from`` is a
    Python keyword), which is why functorch's aot_function fails on it (docs/findings.md)."""
    with torch._C.DisableTorchFunction():
        buf = torch.empty_like(x, dtype=torch.int64).random_(high - low, generator=gen)
        return x.copy_(buf + low)

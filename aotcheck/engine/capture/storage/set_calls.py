"""set_calls: ``set_()`` and ``.data =`` as the recorder sees them: the geometry they give.

Mixed into recorder.py's ``MetadataRecorder`` (``SetCallWatch``). The recorder keeps each
tensor's eager geometry (NOTE [eager geometry] in trace.py) and reads it where a wrapper's own
may have drifted: the result shapes and strides of an ``out=`` op (NOTE [out= resizes]), the
memory a write reaches, a ``view``'s legality. ``set_()`` changes a tensor's geometry as the
in-place metadata calls do, but reaches no TorchFunctionMode (its Python binding does not ask
for one); see NOTE [set_ in the recorder].
"""
from __future__ import annotations

import torch

from ..functional import geometry_of

# NOTE [set_ in the recorder]
# ``v0 = a.t(); a.unsqueeze_(1); a.set_(v0); torch.sin(a, out=torch.empty(0))`` (fuzz seed 1):
# eager's ``a`` is [2] again after the set_(), so sin's out tensor is resized to [2]. The
# recorder saw the unsqueeze_ (a [2, 1] geometry for ``a``) but not the set_(), whose Python
# method reaches no TorchFunctionMode: it resized the out tensor to [2, 1] (wrongly), and sin
# then wrote a [2] value into it (functionalization: "expected src to have a size equal to the
# slice of self"). While a recorder is entered, ``Tensor.set_`` is therefore a Python method
# that runs the original and then tells the innermost recorder; the aten op called directly
# (``torch.ops.aten.set_.source_Tensor``, as a desugared subclass graph calls it) reaches the
# recorder's ``__torch_function__``, which tells it likewise, as does ``x.data = y``. After
# ``t.set_(src)`` (or ``t.data = src``) ``t`` has ``src``'s eager geometry; after a set_() onto
# a storage (explicit size, stride and offset) or onto nothing, the geometry the call gave.

_ACTIVE: list = []              # the recorders entered, innermost last
_OWN = torch.Tensor.__dict__.get("set_")     # Tensor's own set_, if it has one (not TensorBase's)


def _traced_set_(self, *args, **kwargs):
    out = torch._C.TensorBase.set_(self, *args, **kwargs) if _OWN is None \
        else _OWN(self, *args, **kwargs)
    if _ACTIVE:
        _ACTIVE[-1].took_geometry(self, (self, *args))
    return out


class SetCallWatch:
    """The recorder's part that follows ``set_()`` (NOTE [set_ in the recorder])."""

    def __enter__(self):
        if not _ACTIVE:
            torch.Tensor.set_ = _traced_set_
        _ACTIVE.append(self)
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            for i in range(len(_ACTIVE) - 1, -1, -1):
                if _ACTIVE[i] is self:
                    del _ACTIVE[i]
                    break
            if not _ACTIVE:
                if _OWN is None:
                    del torch.Tensor.set_
                else:
                    torch.Tensor.set_ = _OWN

    def took_geometry(self, target: torch.Tensor, args: tuple) -> None:
        """``target`` was just given ``args[1]``'s memory and geometry (``set_(src)``,
        ``target.data = src``), or a storage's at explicit ones, or none (``set_()``)."""
        if not isinstance(target, torch.Tensor) or target.layout != torch.strided:
            return
        src = args[1] if len(args) > 1 else None
        if isinstance(src, torch.Tensor) and src.layout == torch.strided:
            self.geometry[id(target)] = self.geometry.get(id(src)) or \
                self.start_geometry.get(id(src)) or geometry_of(src)
        else:
            self.geometry[id(target)] = geometry_of(target)
        self._alive.append(target)

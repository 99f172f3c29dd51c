"""registrations: a counter that moves whenever an operator registration changes in this process.

# NOTE [a registration changed in-process]
aotcheck traces a custom operator's autograd formula (``register_autograd``) into the backward
graph and its fake kernel into the forward's shapes, so a graph compiled before
``op.register_autograd(new_formula)`` computes the old gradients. Eager calls the new formula at
once. The in-memory reuse key (``ambient.call_state``) holds ``EPOCH[0]``, which every
registration method of ``torch.library`` moves: the ``CustomOpDef`` methods (autograd, fake,
kernel, torch_dispatch, vmap, autocast), ``Library.impl`` and ``Library._register_fake``. A
registration then compiles again at the next call, like any other change of state the graph
depends on; reading one integer costs nothing per call. The persistent cache never holds a
graph that calls an operator outside aten and prims (``serialize.target_name``: uncacheable),
so a registration made in another process cannot be served stale.
"""
from __future__ import annotations

import functools

EPOCH = [0]
_METHODS = {"torch._library.custom_ops.CustomOpDef": ("register_autograd", "register_fake", "register_kernel",
                                                      "register_torch_dispatch", "register_vmap",
                                                      "register_autocast"),
            "torch.library.Library": ("impl", "_register_fake")}
_MARK = "_aotcheck_moves_epoch"


def _moving(method):
    @functools.wraps(method)
    def registered(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        finally:
            EPOCH[0] += 1
    setattr(registered, _MARK, True)
    return registered


def install() -> None:
    """Wrap each registration method once (idempotent); a method this torch lacks is skipped."""
    import importlib
    for path, names in _METHODS.items():
        module, _, cls_name = path.rpartition(".")
        cls = getattr(importlib.import_module(module), cls_name, None)
        for name in names:
            method = getattr(cls, name, None) if cls is not None else None
            if method is not None and not getattr(method, _MARK, False):
                setattr(cls, name, _moving(method))

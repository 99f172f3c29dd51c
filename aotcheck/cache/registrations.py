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
so a registration made in another process cannot be served stale. A registration made while
aotcheck compiles (:func:`quiet`) does not move it: tracing imports parts of torch lazily, and
those register kernels (about 200 on the first compile of a fresh process); counted, they made
the first compile's key stale at once, so the next call with the same arguments compiled again.

# NOTE [custom ops an entry was traced with]
A ``custom_op`` that writes its arguments is traced through: its Python kernel's aten ops are
recorded in the graph (NOTE [mutating custom ops] in engine/capture/custom_ops.py), so a stored
graph depends on the kernel's code and on the schema's ``mutates_args`` (which decides whether
the kernel is traced at all), and its fake kernel and autograd formula shape the rest; the
function's own fingerprint sees none of them (it reaches the op as ``torch.ops.ns.name``).
The trace records the custom ops it called (``custom_ops.recording``), and the entry stores,
per op, its schema and the fingerprint of each Python function registered for it (kernels per
device, fake kernel, autograd formula and setup_context, torch_dispatch rules, vmap:
:func:`ops_print`). A lookup whose process registers any of them otherwise is a miss
(:func:`changed`), and the new compile's entry replaces the old. They are not in the key: the
custom ops a process has registered depend on what it imported, and a key holding all of them
missed in a second process that imported one module more. A function without a stable
fingerprint (NOTE [python state] in compiled.py) is named by its identity, which no other
process shares: a miss, never a stale hit. Found by ``aotcheck keydiff --census --target
aotcheck`` (an op whose schema changed from ``mutates_args=()`` to ``("out",)`` between two
processes was served the first process's graph).
"""
from __future__ import annotations

import contextlib
import functools
import json
import threading

EPOCH = [0]
_QUIET = threading.local()
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
            if not getattr(_QUIET, "depth", 0):
                EPOCH[0] += 1
    setattr(registered, _MARK, True)
    return registered


@contextlib.contextmanager
def quiet():
    """Registrations made inside (aotcheck's own compile) leave ``EPOCH`` as it was."""
    _QUIET.depth = getattr(_QUIET, "depth", 0) + 1
    try:
        yield
    finally:
        _QUIET.depth -= 1


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


def ops_print(names) -> dict:
    """Per custom op named (``ns::name``), what the entry was traced with
    (NOTE [custom ops an entry was traced with]); an op no longer registered is None."""
    from torch._library.custom_ops import OPDEFS
    return {n: (_op_print(OPDEFS[n]) if n in OPDEFS else None) for n in sorted(names)}


def changed(stored: dict) -> list[str]:
    """The ops of ``stored`` (an entry's ``ops_print``) registered otherwise in this process."""
    now = ops_print(stored)
    return [n for n in sorted(stored) if now[n] != stored[n]]


def _op_print(opdef) -> dict:
    fns = {f"kernel[{k}]": f for k, f in sorted(opdef._backend_fns.items(), key=lambda kv: str(kv[0]))}
    fns.update({"fake": opdef._abstract_fn, "backward": opdef._backward_fn,
                "setup_context": opdef._setup_context_fn, "vmap": getattr(opdef, "_vmap_fn", None)})
    fns.update({f"torch_dispatch[{getattr(k, '__qualname__', k)}]": f
                for k, f in getattr(opdef, "_torch_dispatch_fns", {}).items()})
    return {"schema": str(opdef._schema),
            **{name: _function_print(f) for name, f in fns.items() if f is not None}}


def _user_function(fn):
    """The user's function under torch's registration wrappers (``register_kernel`` wraps it in
    closures of ``torch._library`` that hold it as ``fn``)."""
    for _ in range(8):
        if not (getattr(fn, "__module__", "") or "").startswith("torch._library"):
            break
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        if "fn" not in cells:
            break
        fn = cells["fn"].cell_contents
    return fn


def _function_print(fn) -> str:
    """The fingerprint of the user's function under torch's registration wrappers."""
    from .fingerprint import Unfingerprintable, fingerprint
    try:
        return fingerprint(_user_function(fn))[1]
    except Unfingerprintable:
        return f"identity:{id(fn)}"

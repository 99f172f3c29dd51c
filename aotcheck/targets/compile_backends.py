"""Any ``torch.compile`` backend, named on the command line, as something the OpInfo suite can run.

    resolve_backend("inductor")            a name torch.compile knows (inductor, aot_eager, ...)
    resolve_backend("aotcheck")            aotcheck's own backend (targets/backend.py)
    resolve_backend("my_backend")          an entry point in the ``torch_dynamo_backends`` group
    resolve_backend("pkg.mod:compile_fn")  a callable ``(gm, example_inputs) -> callable``

``CompileBackend.compile(fn)`` resets Dynamo and returns ``torch.compile(fn, backend=...,
dynamic=False)``; ``not_compiled()`` then says why the calls since ran eagerly, if they did.

# NOTE [One Dynamo reset per case]
Every OpInfo case is the same Python function (``opinfo._case``'s closure) over different cells,
so Dynamo would cache them all on one code object: each new op is a guard failure and a
recompile, and after ``torch._dynamo.config.recompile_limit`` of them Dynamo silently runs the
function eagerly, which would score as a pass. ``compile`` therefore calls
``torch._dynamo.reset()`` (cheap next to a compile) and passes ``dynamic=False``, so a case's
later calls with other values but the same shapes reuse its graphs instead of recompiling with
symbolic shapes. What survives the reset is torch's on-disk caches (the FX graph cache and
AOTAutogradCache under ``TORCHINDUCTOR_CACHE_DIR``): ``use_inductor_cache_dir`` points them at
a persistent directory, so a second sweep finds every inductor artifact compiled.

# NOTE [A case Dynamo did not compile]
A graph break leaves the broken part to eager, and a function with no graph at all is eager
through and through: comparing it with eager proves nothing about the backend. The adapter
counts Dynamo's ``stats.unique_graphs`` around the case; when no graph was compiled the suite
reports the case as an engine error (naming Dynamo's reason), not as a pass.
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AotcheckError

ENTRY_POINT_GROUP = "torch_dynamo_backends"


class BackendNotFoundError(AotcheckError, ValueError):
    """``--backend`` named nothing torch.compile, the entry points or an import can resolve."""


@dataclass
class CompileBackend:
    """One resolved backend: ``label`` names its column; ``backend`` is what torch.compile gets."""
    label: str
    backend: Any                        # a registered name (str) or a callable
    source: str                         # how it was resolved, for the report header
    _graphs_at_compile: int = 0
    _breaks_at_compile: dict = field(default_factory=dict)

    def compile(self, fn):
        import torch
        torch._dynamo.reset()            # NOTE [One Dynamo reset per case]
        self._graphs_at_compile, self._breaks_at_compile = _graph_counts()
        return torch.compile(fn, backend=self.backend, dynamic=False)

    def not_compiled(self) -> str | None:
        """Why the calls since ``compile`` compiled no graph, else None (NOTE [A case Dynamo did not compile])."""
        graphs, breaks = _graph_counts()
        if graphs > self._graphs_at_compile:
            return None
        new = [msg for msg, n in breaks.items() if n > self._breaks_at_compile.get(msg, 0)]
        why = "; ".join(new[:2]) or "no graph break was recorded"
        return f"NotCompiled: Dynamo compiled no graph for backend {self.label}, the op ran eagerly ({why})"


def _graph_counts() -> tuple[int, dict]:
    from torch._dynamo.utils import counters
    breaks = dict(counters["graph_break"])
    breaks.update(counters["unimplemented"])
    return counters["stats"]["unique_graphs"], breaks


def resolve_backend(spec: str) -> CompileBackend:
    """The backend ``spec`` names (see the module docstring), or BackendNotFoundError."""
    import torch
    if ":" in spec:
        mod_name, _, attr = spec.partition(":")
        try:
            obj = getattr(importlib.import_module(mod_name), attr)
        except (ImportError, AttributeError) as e:
            raise BackendNotFoundError(f"--backend {spec}: cannot import {attr!r} from {mod_name!r} "
                                       f"({type(e).__name__}: {e})") from None
        if not callable(obj):
            raise BackendNotFoundError(f"--backend {spec}: {spec} is a {type(obj).__name__}, not a "
                                       "callable (gm, example_inputs) -> callable")
        return CompileBackend(spec, obj, f"callable {spec}")
    if spec == "aotcheck":
        from .backend import aotcheck_backend
        return CompileBackend(spec, aotcheck_backend, "aotcheck.targets.backend.aotcheck_backend")
    known = torch._dynamo.list_backends(exclude_tags=())
    if spec in known:
        return CompileBackend(spec, spec, f"torch.compile backend {spec!r}")
    from importlib.metadata import entry_points
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == spec:
            return CompileBackend(spec, ep.load(), f"entry point {ep.value}")
    raise BackendNotFoundError(
        f"--backend {spec}: unknown backend; give a torch.compile backend ({', '.join(sorted(known))}), "
        f"aotcheck, an entry point of the {ENTRY_POINT_GROUP!r} group, or module:function")


def use_inductor_cache_dir(path: str | os.PathLike) -> Path:
    """Point torch's on-disk compile caches (FX graph cache, AOTAutogradCache, compiled C++) at
    ``path`` for the rest of the process (NOTE [One Dynamo reset per case]); returns it."""
    p = Path(path).resolve()
    p.mkdir(parents=True, exist_ok=True)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(p)  # read by torch/_inductor/runtime/cache_dir_utils.py
    return p

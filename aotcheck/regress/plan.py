"""What ``aotcheck check --engine NAME`` runs: the engines, and the stages each one runs.

    aotcheck             aotcheck's own engine: cold, cached
    torch                torch.compile(backend="aot_eager") + AOTAutogradCache: cold, cached
    torch-aot-function   functorch.compile.aot_function, no Dynamo in front (duplicate and
                         aliased arguments, synthetic bases, inference-graph replays reach
                         AOT autograd as the caller passed them): cold
    torch-inductor       torch.compile(backend="inductor"), C++ kernels: cold, cached (slow)
    torch-inductor-lite  Inductor with every op an aten fallback: cold, cached
    all-torch            torch, torch-aot-function, torch-inductor-lite
    dynamo-aotcheck      torch.compile(fn, backend="aotcheck"): Dynamo's graphs through aotcheck's
                         engine and cache (not in all-torch; tests/test_backend.py runs it, and
                         ``aotcheck baseline save --builtin --engine dynamo-aotcheck`` records its
                         failures for a new torch release)

Every engine with a persistent cache also runs the key-variation phase (``variations``).

# NOTE [the cold run is the cache fill]
For the torch engines a cold compile is a compile into an empty private cache directory, which
is exactly the first half of the cache round trip. So ``run.py`` runs each case's cold run into
the case's cache directory and its cached run from it: two compiles per case instead of three,
with no change to what either run checks. aotcheck's engine compiles its cold run without a
cache (``aot_function(fn)``), a different path from a compile that saves, so it keeps the
separate fill (``SHARES_FILL``).
"""
from __future__ import annotations

from dataclasses import dataclass

ENGINE_SETS: dict[str, tuple[str, ...]] = {
    "all-torch": ("torch", "torch-aot-function", "torch-inductor-lite"),
}
SINGLE = ("aotcheck", "torch", "torch-aot-function", "torch-inductor", "torch-inductor-lite",
          "dynamo-aotcheck")
CHOICES = SINGLE + tuple(ENGINE_SETS)
SHARES_FILL = frozenset({"torch", "torch-inductor", "torch-inductor-lite"})


@dataclass(frozen=True)
class Plan:
    engines: tuple[str, ...]
    cached: bool = True              # run the cached stage where the engine has a cache
    variations: bool = True          # run the key-variation phase where it is available
    backward: bool = True

    def stage_kinds(self, variations_available: bool = True) -> frozenset[str]:
        """The kinds of stage this plan runs on an engine with a cache (``record.stage_kind``):
        a recorded entry of another kind is out of its reach, whatever the run gives."""
        return frozenset(("cold",) + (("cached",) if self.cached else ())
                         + (("variation",) if self.variations and variations_available else ()))


def engines_of(name: str) -> tuple[str, ...]:
    """``all-torch`` -> its engines; a single engine -> itself; a comma list -> each."""
    out: list[str] = []
    for part in (p.strip() for p in name.split(",") if p.strip()):
        if part in ENGINE_SETS:
            out += ENGINE_SETS[part]
        elif part in SINGLE:
            out.append(part)
        else:
            from ..errors import AotcheckError
            raise AotcheckError(f"--engine: unknown engine {part!r}; choose from {', '.join(CHOICES)}")
    return tuple(dict.fromkeys(out))

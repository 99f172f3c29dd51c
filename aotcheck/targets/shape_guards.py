"""shape_guards: the ``dynamic_shape`` variation -- an entry compiled with dynamic shapes,
looked up for sizes its shape guards exclude.

A static-shape entry is keyed by its inputs' sizes: the ``shape`` variation misses by the key
alone. An entry compiled with ``dynamic=True`` serves every size that its *shape guards* allow
(``5 <= x.size()[1]`` for ``x[:, :5]``); AOTAutogradCache keeps the guards beside the entry and
evaluates them on each lookup, so a lookup for sizes outside them must miss. A lookup that
skips that check (mutant ``lookup-ignores-guards``) serves a graph traced for other sizes: under
aot_eager it often still computes eager's values (aten clamps the slice), under Inductor its
size asserts fail -- and no other variation compiles with dynamic shapes at all. For one
subject, on a torch engine (``dynamic_shape_engine``):

1. **A, dynamic**: compile with ``dynamic=True`` into a fresh directory and check under A
   (every graph saved, the backward included);
2. **outside?** call that same compiled function on B's inputs with Dynamo's
   ``error_on_recompile``: a ``RecompileError`` says B's sizes fail a shape guard of A's graphs
   (nothing is compiled; the error names the guard);
3. **B**: ``dynamo.reset()``, compile with ``dynamic=True`` through the directory, check under
   B against eager.

B's inputs are A's cut to smaller sizes (``smaller_sizes``; ``vary_inputs`` keeps each
dimension's first entries): the distinct sizes over 2, in order, become 3, 4, 5, ..., so that
sizes equal in A stay equal and sizes that differ stay apart (Dynamo gives equal sizes one
symbol: a B that merged two would change the graph's key and miss by the key alone), and none
becomes 0 or 1 (which Dynamo specializes). ``x`` of 3x8 becomes 3x4. The verdict is ``variations.judge``'s; where B is
outside A's guards and every graph hit, it is UNKEYED HIT (NOTE [an unkeyed hit]) even where
the values equal eager's: a guard that failed cannot have let the entry through. Where A itself
cannot be compiled with dynamic shapes (a data-dependent op, a Dynamo limit), or differs from
eager that way, the variation does not apply: ``refused under B``, with the reason.
"""
from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

DYNAMIC_ENGINES = ("torch", "torch-inductor", "torch-inductor-lite")


def smaller_sizes(shapes) -> dict[int, int]:
    """The sizes of ``shapes`` that B changes: {size in A: size in B} (module docstring)."""
    over = sorted({s for shape in shapes for s in shape if s > 2})
    return {s: 3 + k for k, s in enumerate(over) if s != 3 + k}


def dynamic_shape_engine(name: str) -> bool:
    """Whether ``name`` compiles with dynamic shapes through a persistent cache."""
    return name in DYNAMIC_ENGINES


@contextlib.contextmanager
def _error_on_recompile():
    import torch._dynamo.config as dynamo_config
    old = dynamo_config.error_on_recompile
    dynamo_config.error_on_recompile = True
    try:
        yield
    finally:
        dynamo_config.error_on_recompile = old


def outside_guards(subject, compiled, v) -> str:
    """The guard failure that B's call of ``compiled`` (compiled and run under A) meets, as
    Dynamo words it; "" where B passes every guard (or B's call raised something else)."""
    from torch._dynamo.exc import RecompileError

    from .conditions import call_context, vary_inputs, wrapped
    inputs = vary_inputs(v, subject.make_inputs)()
    call = wrapped(compiled, call_context(subject, v), "outside-guards")
    kept = compiled.cache_dir       # a frame first reached under B compiles here: not into B's cache
    try:
        with _error_on_recompile(), tempfile.TemporaryDirectory(prefix="aotcheck-guards-") as aside:
            compiled.cache_dir = aside
            call(*inputs.args, **inputs.kwargs)
    except RecompileError as e:
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip().startswith("- ")]
        return (lines[0][2:].split("  #")[0] if lines else str(e).splitlines()[0])[:200]
    except Exception:  # noqa: BLE001 - B's own error (eager raises too): the oracle judges it
        return ""
    finally:
        compiled.cache_dir = kept
    return ""


def run_dynamic(engine, subject, v, dir_b: Path):
    """Steps 1-3 of the module docstring: (A's refusal reason or "", the guard B fails or "",
    B's cache events, B's oracle report)."""
    from .conditions import compile_and_check, state_context
    shutil.rmtree(dir_b, ignore_errors=True)
    try:
        events, report, compiled = compile_and_check(engine, subject, None, dir_b, dynamic=True)
        if not report.ok:
            return f"A compiled with dynamic shapes differs from eager: {report.divergences[0]}", \
                "", None, None
        if events.saves == 0:
            return "A compiled with dynamic shapes wrote no cache entry", "", None, None
        with state_context(subject, v):
            guard = outside_guards(subject, compiled, v)
    except Exception as e:  # noqa: BLE001 - recorded as the reason the variation does not apply
        return f"A compiled with dynamic shapes raised {type(e).__name__}: {e}"[:300], "", None, None
    events, report, _ = compile_and_check(engine, subject, v, dir_b, dynamic=True)
    return "", guard, events, report

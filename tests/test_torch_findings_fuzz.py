"""PyTorch divergences found by ``aotcheck fuzz --engine torch`` (issue 13) that cannot be corpus
cases, pinned as strict xfails against the torch engine: an upstream fix shows up as an
unexpected pass. docs/findings.md rows 24-26.

- row 24 (random numbers): aotcheck's own engine diverges the same way today (random ops are
  issue 11's work), and a corpus case's strict xfail would also cover its decision test, which
  passes.
- rows 25-26 (inference_mode): the failing compile leaves the process in a state where the next
  garbage collection breaks every torch op, so they run in a subprocess, never in a test worker.
"""
import subprocess
import sys
import textwrap

import pytest
import torch

from aotcheck.check.oracle import Inputs, check
from aotcheck.targets.engines import get_engine


@pytest.mark.xfail(strict=True, reason="row 24: the unused dropout is dropped from the compiled graph, "
                                       "so rand_like after it draws other numbers than eager under the "
                                       "same seed (found by aotcheck fuzz --engine torch --seed 7)")
def test_unused_random_op_keeps_the_random_stream():
    def f(x):
        torch.nn.functional.dropout(x, 0.5)
        return (torch.rand_like(x),)

    def make():
        return Inputs((torch.randn(4, generator=torch.Generator().manual_seed(24)),))
    report = check(f, get_engine("torch").compile(f), make)     # both runs under manual_seed(0)
    assert report.ok, report.divergences


_PRELUDE = """
import gc, torch
def attempt(fn, *args):
    try:
        fn(*args)
        return "ok"
    except Exception as e:
        return type(e).__name__ + ": " + str(e).replace(chr(10), " ")[:200]
"""


def _run(body: str) -> str:
    code = _PRELUDE + textwrap.dedent(body)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr[-500:]


@pytest.mark.xfail(strict=True, reason="row 25: compile fails with 'Cannot set version_counter for "
                                       "inference tensor' (found by aotcheck fuzz --engine torch "
                                       "--seed 2026)")
def test_view_of_input_under_inference_mode_compiles():
    last = _run("""
        def f(x):
            with torch.inference_mode():
                v = x[0]
            return (v * 2,)
        print(attempt(torch.compile(f, backend="aot_eager"), torch.randn(2, 3)))
    """)
    assert last == "ok", last


@pytest.mark.xfail(strict=True, reason="row 26: after that failed compile, the next gc.collect() "
                                       "breaks every torch op ('Hit PythonDispatcher dispatch key but "
                                       "PythonDispatcherTLS was not set'); found by aotcheck fuzz "
                                       "--engine torch --seed 2026 and 7 as a global state leak")
def test_failed_compile_under_inference_mode_leaves_the_process_usable():
    last = _run("""
        def f(x):
            with torch.inference_mode():
                x[0] = 1.0
            return ()
        attempt(torch.compile(f, backend="aot_eager"), torch.randn(2, 3))
        gc.collect()
        print(attempt(torch.randn, 2))
    """)
    assert last == "ok", last


def test_the_subprocess_runner_reports_ok():
    """The subprocess helper itself: a plain op is 'ok' (so the xfails above fail for the bug)."""
    assert _run("print(attempt(torch.randn, 2))") == "ok"

"""aotcheck: a regression suite and compact reference engine for AOT autograd.

The packages, in the order data flows through them; each imports only those above it
(``tests/test_layering.py`` enforces this):

    errors, flags, version  what every layer shares: named errors, the flags table
    engine/        the reference engine, one module per stage (signature -> capture ->
                   analyze -> decide -> joint -> partition -> codegen -> runtime)
    cache/         the persistent store: key, entry, lazy backward, serialization
    lift           tensors the function reads (closures, globals, module parameters) become
                   arguments of the graph
    compiled       CompiledFunction, the one compiled call: Python state -> lifted tensors ->
                   signature -> key -> lookup -> pipeline -> store
    subclass/      tensor-subclass calls (TwoTensor, ...) desugared to plain graphs, each a
                   CompiledFunction (base: flatten/unflatten; wrapper_set; autograd and facts:
                   the outer-level facts; replay; groups; desugar: the graphs; outer: the call)
    api            aot_function and explain; AotFunction only dispatches (subclass or plain)
    check/         the oracle (one comparison with eager), the corpus, the test harness
                   (xfail_inherited) and the pytest plugin
    targets/       the engines under test (aotcheck, torch.compile, aot_function), their
                   known failures (data), the torch.compile backend, the report
    fuzz/          generated programs: strategies, programs, the runner
    strategies     the public alias of fuzz.strategies (``aotcheck.strategies``)
    grad/          the numerical gradient checker and the OpInfo suite
    keydiff/       the key-completeness differential for torch's caches: every input of
                   compilation compiled under A and B, what was produced against the keys
    cli/           one module per ``aotcheck`` subcommand
"""
from .version import __version__  # noqa: E402

from .api import AotFunction, aot_function, explain  # noqa: E402
from .cache.store import counters, reset_counters  # noqa: E402
from .errors import (AotcheckError, DataDependentError, DoubleBackwardError,  # noqa: E402
                     TraceError, UnsupportedInputError)

__all__ = ["aot_function", "explain", "AotFunction", "counters", "reset_counters", "AotcheckError", "DataDependentError",
           "DoubleBackwardError", "TraceError", "UnsupportedInputError"]

"""aotcheck: a regression suite and compact reference engine for AOT autograd.

The engine's stages, in the order data flows through them (one module each):

    signature  -> what about the inputs can change the compiled result
    capture    -> a functional aten graph, traced on fake tensors, plus raw facts
    analyze    -> view/mutation metadata (plain frozen data, JSON round-trip)
    decide     -> inference or training, with the reason
    joint      -> forward and backward traced together (training only)
    partition  -> forward graph, backward graph, saved values
    runtime    -> an autograd.Function that replays mutations and regenerates aliases

``pipeline.py`` calls them in order; ``api.py`` holds ``aot_function`` and ``explain``.
"""
__version__ = "0.1.0"

from .api import AotFunction, aot_function, explain  # noqa: E402
from .cache import counters, reset_counters  # noqa: E402
from .errors import (AotcheckError, DataDependentError, DoubleBackwardError,  # noqa: E402
                     TraceError, UnsupportedInputError)

__all__ = ["aot_function", "explain", "AotFunction", "counters", "reset_counters", "AotcheckError", "DataDependentError",
           "DoubleBackwardError", "TraceError", "UnsupportedInputError"]

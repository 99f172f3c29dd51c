"""The exceptions aotcheck raises on bad input.

Every error names what was wrong and what is supported. They all derive from
:class:`AotcheckError`, which is a ``RuntimeError`` so that code written
against eager PyTorch's errors keeps catching them.
"""


class AotcheckError(RuntimeError):
    """Base class of every error aotcheck raises on purpose."""


class UnsupportedInputError(AotcheckError, TypeError):
    """An argument (or returned value) of a type or layout the engine does not support."""


class DataDependentError(AotcheckError):
    """The function branches on, or reads, tensor *values* while being traced."""


class TraceError(AotcheckError):
    """The function raised while being traced, or uses an op the tracer cannot represent."""


class GuardFailed(AotcheckError):
    """A value a compiled graph was specialized on differs at this call
    (NOTE [value specialization]); the API compiles again for the call, so users see it only from a
    backward."""


class DoubleBackwardError(AotcheckError):
    """A second-order gradient was requested through a compiled function."""


class CacheError(AotcheckError):
    """A cache entry could not be used (raised only in strict mode; otherwise a miss)."""


# Phrases of the refusals that aotcheck documents for programs that are valid in eager: limits
# of functionalization, not wrong results. The fuzzer counts these apart from failures. Empty:
# the engine's second way of tracing (engine/capture/storage_views.py) lifts each of the limits below,
# which the first way still meets (the pipeline then switches; see VIEW_LIMITS).
DOCUMENTED_LIMITS: tuple[str, ...] = ()

# Phrases of the first way's refusals that make the engine trace the second way instead.
VIEW_LIMITS = (
    "functionalization cannot express that",
    "functionalization cannot replay that view",
    "synthetic-base replay does not give eager's gradients",
    "autograd cannot rebuild that view's grad_fn under functionalization",
    "functionalization cannot grow a storage that views share",
    "functionalization cannot write back through an unfold that leaves gaps",
)

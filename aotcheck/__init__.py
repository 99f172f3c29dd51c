"""aotcheck: a regression suite and compact reference engine for AOT autograd.

The packages, in the order data flows through them; each imports only those before it
(``tests/test_layering.py`` enforces this)::

    base (errors, flags, version) < engine < cache < lift < compiled < subclass < api
        < check < targets < {fuzz, grad, keydiff} < regress < cli

The engine compiles a function (signature -> capture -> analyze -> decide -> joint ->
partition -> runtime); ``compiled.CompiledFunction`` is the one compiled call (Python state
-> lifted tensors -> signature -> key -> lookup -> pipeline -> save); everything after the
API judges compiled functions against eager. Every module, one line each: the map in
README.md, "Layout". This file only re-exports the public names.
"""
from .version import __version__  # noqa: E402

from .api import AotFunction, aot_function, explain  # noqa: E402
from .cache.store import counters, reset_counters  # noqa: E402
from .errors import (AotcheckError, DataDependentError, DoubleBackwardError,  # noqa: E402
                     TraceError, UnsupportedInputError)

__all__ = ["aot_function", "explain", "AotFunction", "counters", "reset_counters", "AotcheckError", "DataDependentError",
           "DoubleBackwardError", "TraceError", "UnsupportedInputError"]

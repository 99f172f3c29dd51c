"""Which exceptions may escape a compiled function (issue 27, item 2).

An exception that leaves ``aotcheck.aot_function(fn)`` (its call, or the backward of what it
returned) is either eager's own, raised in the same place (the call or the backward) and of the
same type as eager raises there, or a named ``aotcheck.AotcheckError``. Anything else (an
``IndexError``, ``KeyError``, ``TypeError`` or ``AssertionError`` from inside aotcheck or from
torch's internals) is an internal error: ``escaped`` names it, with the innermost frame it came
from, so that one stem per defect collapses many programs.

    >>> import torch
    >>> from aotcheck.check.oracle import Inputs
    >>> def fn(x):
    ...     return x.sin()
    >>> def broken(x):
    ...     return [][0]
    >>> make = lambda: Inputs(args=(torch.ones(2),))
    >>> escaped(fn, fn, make) is None
    True
    >>> escaped(fn, broken, make).split(" (")[0]
    'call: IndexError: list index out of range'
"""
from __future__ import annotations

import traceback
from typing import Callable

from ..check.oracle import Inputs, raised
from ..errors import AotcheckError


def escaped(fn: Callable, compiled_fn: Callable, make_inputs: Callable[[], Inputs]) -> str | None:
    """The internal error ``compiled_fn`` lets escape where eager ``fn`` runs, or None:
    ``"<call|backward>: <Type>: <first line> (<innermost file>:<line>)"``."""
    eager = raised(fn, make_inputs)
    compiled = raised(compiled_fn, make_inputs)
    for phase, e, c in zip(("call", "backward"), eager, compiled):
        if c is None or isinstance(c, AotcheckError):
            continue
        if e is not None and type(e) is type(c):
            continue                     # eager's own error, raised where eager raises it
        return f"{phase}: {type(c).__name__}: {_first_line(c)} ({_innermost(c)})"
    return None


def _first_line(e: BaseException) -> str:
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[0][:200] if lines else ""


def _innermost(e: BaseException) -> str:
    """The innermost frame of ``e``'s traceback, as ``path:line`` from ``site-packages/`` or
    from ``aotcheck/`` on."""
    frames = traceback.extract_tb(e.__traceback__)
    if not frames:
        return "?"
    f = frames[-1]
    path = f.filename
    for marker in ("site-packages/", "/aotcheck/"):
        if marker in path:
            path = path.split(marker, 1)[1] if marker == "site-packages/" else "aotcheck/" + path.split(marker, 1)[1]
            break
    return f"{path}:{f.lineno}"

"""aotcheck.engine: the reference engine, one stage per module or subpackage.

The stages, in the order data flows through them::

    signature   -> what about the inputs can change the compiled result
    capture/    -> a functional aten graph, traced on fake tensors, plus raw facts
    analyze     -> view/mutation metadata (plain frozen data, JSON round-trip)
    decide      -> inference or training, with the reason
    joint       -> forward and backward traced together (training only)
    partition/  -> forward graph, backward graph, saved values
    runtime/    -> an autograd.Function that replays mutations and regenerates aliases

``rng/`` makes random ops draw as eager draws, for capture, partition and runtime alike.
``pipeline.py`` calls the stages in order. ``lint.py`` checks each representation (on
with ``AOTCHECK_CHECK_GRAPHS``); ``printer.py`` prints graphs hermetically. Every module,
one line each: the map in README.md, "Layout". No subpackage's ``__init__`` imports its
modules, so importing one module never loads its siblings. No import cycle within the engine.

What it may import: torch, ``aotcheck.errors`` and ``aotcheck.flags``. Nothing
from the cache, the API, check, fuzz, grad, targets or cli: the engine knows
nothing of who calls it.
"""

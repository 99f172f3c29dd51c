"""aotcheck.engine: the reference engine, one module per stage.

The stages, in the order data flows through them::

    signature  -> what about the inputs can change the compiled result
    capture    -> a functional aten graph, traced on fake tensors, plus raw facts
                  (with plan, functional, recorder, functional_run, outputs, facts;
                  rng: random ops and seeding as graph ops; values: a trace on the
                  call's values, pinned by guards, where the function reads them)
    analyze    -> view/mutation metadata (plain frozen data, JSON round-trip)
    decide     -> inference or training, with the reason
    joint      -> forward and backward traced together (training only)
    partition  -> forward graph, backward graph, saved values
                  (mincut: the saved values of least bytes, by max-flow)
    codegen    -> each graph as straight-line Python over aten ops
    runtime    -> an autograd.Function that replays mutations and regenerates aliases

``pipeline.py`` calls them in order. ``lint.py`` checks each representation (on
with ``AOTCHECK_CHECK_GRAPHS``); ``printer.py`` prints graphs hermetically.

What it may import: torch, ``aotcheck.errors`` and ``aotcheck.flags``. Nothing
from the cache, the API, check, fuzz, grad, targets or cli: the engine knows
nothing of who calls it.
"""

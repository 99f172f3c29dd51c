"""aotcheck.engine: the reference engine, one stage per module or subpackage.

The stages, in the order data flows through them::

    signature       -> what about the inputs can change the compiled result
    capture/        -> a functional aten graph, traced on fake tensors, plus raw facts
                       (trace: the entry; plan, functional, functional_run, view_flags,
                       recorder, swaps, outputs, autograd_facts, facts; values: a trace on
                       the call's values, pinned by guards; storage_views: the plain-tensor
                       way, where functionalization cannot follow the program)
    rng/            -> random ops draw as eager draws (layout, draws, seeding; used by
                       capture, partition and runtime alike)
    analyze         -> view/mutation metadata (plain frozen data, JSON round-trip)
    decide          -> inference or training, with the reason
    joint           -> forward and backward traced together (training only)
    partition/      -> forward graph, backward graph, saved values
                       (cut: the strategies; mincut: the saved values of least bytes, by
                       max-flow)
    runtime/        -> an autograd.Function that replays mutations and regenerates aliases
                       (artifact, codegen: each graph as straight-line Python over aten ops,
                       writeback, swap_grad, regenerate)

``pipeline.py`` calls them in order. ``lint.py`` checks each representation (on
with ``AOTCHECK_CHECK_GRAPHS``); ``printer.py`` prints graphs hermetically. Each
subpackage's ``__init__`` names its modules in flow order; none imports them, so
importing one module never loads its siblings. No import cycle within the engine.

What it may import: torch, ``aotcheck.errors`` and ``aotcheck.flags``. Nothing
from the cache, the API, check, fuzz, grad, targets or cli: the engine knows
nothing of who calls it.
"""

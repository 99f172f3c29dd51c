"""aotcheck.engine.rng: random ops in a compiled graph draw from the generator exactly as eager draws.

The graphs call random ops at run time, on the real default generator, in the order the
function called them, so the values and the generator's state after the call are eager's,
cold and from the cache. Three things make that hold, one module each, in the order a draw
meets them (traced, partitioned, run with the function's own seeding): a draw fills a buffer
laid out as eager's; every draw runs, in the forward graph, in eager's order; seeding and
restoring a generator inside the function are graph ops. Its modules, one line each: the
map in README.md, "Layout".

What it may import: torch and ``aotcheck.errors``; nothing else from aotcheck (the
capture, partition and runtime stages import it, never the reverse).
"""

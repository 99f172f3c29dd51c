"""aotcheck.engine.capture: a function traced into a functional aten graph, plus raw facts.

``trace.capture()`` is the stage's entry: it traces on fake tensors under functionalization
(one run of the function on functional wrappers, with a recorder watching the user's
Python-level tensor calls) and returns a ``Captured``: the graph, the raw facts as frozen
data (what analyze reads) and the way it traced (NOTE [synthetic bases]). Where that way
cannot follow the program it retries two others: a trace on this call's values, pinned by
guard ops (NOTE [value specialization]), and a trace on plain tensors, functionalized with
every alias re-read from its storage. The joint trace (``engine/joint.py``) reuses the
tracing machinery. Its modules, one line each, in the order a capture uses them: the map in
README.md, "Layout".

What it may import: torch, ``aotcheck.errors``, ``aotcheck.flags``, and from the engine
``signature`` and ``rng`` (no later stage: analyze, joint, partition and runtime import
capture, never the reverse).
"""

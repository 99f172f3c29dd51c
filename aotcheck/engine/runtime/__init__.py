"""aotcheck.engine.runtime: the compiled graphs run with eager semantics.

A ``CompiledArtifact`` runs the forward graph inside an ``autograd.Function`` (training) or
under no_grad (inference), writes mutations back to the caller's tensors (NOTE [mutation replay])
and rebuilds the outputs that are views (NOTE [alias regeneration]); each graph becomes
straight-line Python over aten ops, the backward's at the first ``.backward()``. Its
modules, one line each, in the order a call meets them: the map in README.md, "Layout".

What it may import: torch, ``aotcheck.errors``, and from the engine ``signature``,
``analyze``, ``decide``, ``rng`` and ``capture.plan``/``capture.values`` (what the
artifact's metadata is made of); nothing that calls it.
"""

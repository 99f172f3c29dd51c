"""aotcheck.engine.runtime: the compiled graphs run with eager semantics.

Its modules, in the order a call meets them::

    artifact    -> ``CompiledArtifact`` (built from an ``ArtifactParts`` record): gathers the
                   placeholders, runs the forward graph inside an ``autograd.Function``
                   (training) or under no_grad (inference), builds the outputs
    imperative  -> retain_grad() and hooks the function called, made on the caller's tensors
    codegen     -> each graph as straight-line Python over aten ops (the backward's at the
                   first ``.backward()``)
    writeback   -> the caller's tensors after the graph ran: mutations written back, storages
                   resized and swapped (NOTE [mutation replay])
    swap_grad   -> the replay of a ``set_()`` that autograd recorded, and gradient writes
                   after a swap
    regenerate  -> the outputs that are views, re-laid-out copies or inference tensors,
                   rebuilt as eager returns them (NOTE [alias regeneration])

What it may import: torch, ``aotcheck.errors``, and from the engine ``signature``,
``analyze``, ``decide``, ``rng`` and ``capture.plan``/``capture.values`` (what the
artifact's metadata is made of); nothing that calls it.
"""

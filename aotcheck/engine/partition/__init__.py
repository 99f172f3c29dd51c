"""aotcheck.engine.partition: a joint graph cut into a forward graph, a backward graph and
the saved values.

Its modules, in flow order::

    cut     -> ``partition(joint, strategy)``: the stage's entry and ``STRATEGIES``;
               ``default`` saves every forward value the backward uses, and both strategies
               build their graphs (``_build``) from the set of saved values; also
               ``inference_forward`` (no joint: the capture's graph, cut to its outputs)
    mincut  -> the ``mincut`` strategy's choice: the saved values of fewest bytes, by
               max-flow, recomputing cheap ops in the backward

What it may import: torch, networkx, ``aotcheck.errors``, and from the engine ``joint`` and
``rng`` (the pipeline imports partition, never the reverse).
"""

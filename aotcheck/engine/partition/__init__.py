"""aotcheck.engine.partition: a joint graph cut into a forward graph, a backward graph and
the saved values.

``cut.partition(joint, strategy)`` is the stage's entry: ``default`` saves every forward
value the backward uses; ``mincut`` saves the values of fewest bytes, by max-flow,
recomputing cheap ops in the backward. Its modules, one line each: the map in README.md,
"Layout".

What it may import: torch, networkx, ``aotcheck.errors``, and from the engine ``joint`` and
``rng`` (the pipeline imports partition, never the reverse).
"""

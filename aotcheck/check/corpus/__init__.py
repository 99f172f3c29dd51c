"""The corpus: hand-written cases, as data.

A case is a record: name, function, input maker, theme, tags, the expected
inference-or-training mode, and (rarely) a known failure with its reason.
Tests cross the corpus with the modes (cold or cached; forward, or forward
plus backward) and compare every run with eager through the oracle.

Add a case with the decorator, in the module named for its theme (``input_mutation.py``
for ``input_mutation``; shared builders in ``builders.py``); where it came from is a tag::

    @case("input_mutation", mode="inference")
    def mutate_simple():
        def f(a):
            a.mul_(2)
            return a + 1
        return f, lambda: Inputs((torch.randn(3),))

The record and the decorator live in ``registry.py``, which the case modules import; this
package imports them in ``all_cases``, so nothing imports in a circle.
"""
from __future__ import annotations

from .registry import CASES, THEMES, BackwardPass, CallMode, Case, Inputs, case  # noqa: F401  (the corpus's public names)


def all_cases() -> list[Case]:
    from . import (  # noqa: F401  (each module registers its theme's cases)
        basics, input_mutation, mutation_autograd, metadata_mutation, alias_of_input,
        alias_of_intermediate, aliased_inputs, requires_grad_modes, non_differentiable, layers,
        dtypes, custom_function, rng, subclass, python_state, real_world, autocast, higher_order_ops,
        checkpointing,
    )
    return list(CASES)

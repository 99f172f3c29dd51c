"""The corpus: hand-written cases, as data.

A case is a record: name, function, input maker, theme, tags, the expected
inference-or-training mode, and (rarely) a known failure with its reason.
Tests cross the corpus with the modes (cold or cached; forward, or forward
plus backward) and compare every run with eager through the oracle.

Add a case with the decorator, in the module of its theme::

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

from .registry import CASES, THEMES, Case, Inputs, case  # noqa: F401  (the corpus's public names)


def all_cases() -> list[Case]:
    from . import cases_basic, cases_mutation, cases_alias, cases_grad, cases_regressions  # noqa: F401
    from . import cases_torch_findings  # noqa: F401
    from . import cases_custom_function, cases_rng, cases_subclass, cases_python_state  # noqa: F401
    from . import cases_real_world, cases_memory, cases_transforms  # noqa: F401
    return list(CASES)

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
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..oracle import Inputs  # noqa: F401  (re-exported for case modules)

THEMES = (
    "basics", "input_mutation", "mutation_autograd", "metadata_mutation", "alias_of_input",
    "alias_of_intermediate", "aliased_inputs", "requires_grad_modes", "non_differentiable",
    "layers", "dtypes", "regressions", "custom_function", "rng", "subclass", "python_state",
)


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable
    make_inputs: Callable[[], Inputs]
    theme: str
    mode: str                      # expected decision: "inference" | "training"
    tags: tuple[str, ...] = ()
    xfail: str | None = None       # reason, for a known aotcheck failure
    backward: bool = True          # run forward plus backward (else forward only)
    xfail_engines: dict = field(default_factory=dict)   # engine name -> reason
    # Python state the function reads (theme python_state): each callable *sets* one state
    # (``model.eval()``, a closure value); the harness runs the case in each state in turn
    # with ONE compiled function, comparing every call with eager, then restores the first.
    states: tuple = ()

    @property
    def id(self) -> str:
        return f"{self.theme}.{self.name}"


CASES: list[Case] = []


def case(theme: str, *, mode: str, tags=(), xfail=None, backward=True, xfail_engines=None):
    """Register a case: the decorated function returns ``(fn, make_inputs)``, or
    ``(fn, make_inputs, states)`` (see ``Case.states``)."""
    if theme not in THEMES:
        raise ValueError(f"unknown theme {theme!r}; themes: {THEMES}")

    def deco(builder):
        fn, make, *states = builder()
        CASES.append(Case(builder.__name__, fn, make, theme, mode, tuple(tags), xfail, backward,
                          dict(xfail_engines or {}), tuple(states[0]) if states else ()))
        return builder
    return deco


def all_cases() -> list[Case]:
    from . import cases_basic, cases_mutation, cases_alias, cases_grad, cases_regressions  # noqa: F401
    from . import cases_torch_findings  # noqa: F401
    from . import cases_custom_function, cases_rng, cases_subclass, cases_python_state  # noqa: F401
    return list(CASES)

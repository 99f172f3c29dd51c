"""The corpus's record and registry: ``Case``, the ``case`` decorator that registers one, the
themes. The case modules import it (not the package, whose ``all_cases`` imports them)."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Callable

from ...engine.decide import CompileMode
from ..oracle import BackwardPass, Inputs  # noqa: F401  (BackwardPass: for the theme modules)

THEMES = (
    "basics", "input_mutation", "mutation_autograd", "metadata_mutation", "alias_of_input",
    "alias_of_intermediate", "aliased_inputs", "requires_grad_modes", "non_differentiable",
    "layers", "dtypes", "custom_function", "rng", "subclass", "python_state",
    "real_world", "autocast", "higher_order_ops", "checkpointing",
)


class CallMode(Enum):
    """What the test puts around the call of eager and of the compiled function alike
    (``harness.call_mode``)."""
    GRAD = "grad"                                  # nothing: grad mode on
    NO_GRAD = "no_grad"                            # torch.no_grad()
    INFERENCE_MODE = "inference_mode"              # torch.inference_mode()
    SAVED_TENSORS_HOOKS = "saved_tensors_hooks"    # hooks whose unpack doubles every saved tensor
    AUTOCAST = "autocast"                          # torch.autocast("cpu", dtype=torch.bfloat16)


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable
    make_inputs: Callable[[], Inputs]
    theme: str
    mode: CompileMode              # the engine's expected decision
    tags: tuple[str, ...] = ()
    xfail: str | None = None       # reason, for a known aotcheck failure
    backward: bool = True          # run forward plus backward (else forward only)
    xfail_engines: dict = field(default_factory=dict)   # engine name -> reason
    # Python state the function reads (theme python_state): each callable *sets* one state
    # (``model.eval()``, a closure value); the harness runs the case in each state in turn
    # with ONE compiled function, comparing every call with eager, then restores the first.
    states: tuple = ()
    call: CallMode = CallMode.GRAD
    backward_pass: BackwardPass = BackwardPass.ONCE     # how the oracle drives the backward

    @property
    def id(self) -> str:
        return f"{self.theme}.{self.name}"


CASES: list[Case] = []


def case(theme: str, *, mode: str | CompileMode, tags=(), xfail=None, backward=True, xfail_engines=None,
         call: CallMode = CallMode.GRAD, backward_pass: BackwardPass = BackwardPass.ONCE):
    """Register a case: the decorated function returns ``(fn, make_inputs)``, or
    ``(fn, make_inputs, states)`` (see ``Case.states``)."""
    if theme not in THEMES:
        raise ValueError(f"unknown theme {theme!r}; themes: {THEMES}")
    if not isinstance(tags, tuple) or any(t.endswith("_call") and t != "functional_call" for t in tags):
        raise ValueError(f"tags must be a tuple of names, and a call mode is the ``call`` field "
                         f"({', '.join(m.name for m in CallMode)}), not a tag: {tags!r}")

    def deco(builder):
        fn, make, *states = builder()
        CASES.append(Case(builder.__name__, fn, make, theme, CompileMode(mode), tuple(tags), xfail, backward,
                          dict(xfail_engines or {}), tuple(states[0]) if states else (), call,
                          backward_pass))
        return builder
    return deco

"""No internal errors escape ``aotcheck.aot_function`` (issue 27, item 2).

Programs from the fuzzer's whole grammar, issue 27's classes included (retain_grad, hooks,
``.data`` assignment, leaves made inside, torch.func, torch.library mutating ops, ``out=``),
compiled by aotcheck's engine: an exception that leaves the call or the backward must be eager's
own (raised where eager raises it) or a named ``AotcheckError`` (``aotcheck.fuzz.escapes``).
Wrong results are the property tests' business (tests/test_fuzz.py); this one only asks that
nothing breaks inside.
"""
import doctest

import torch
from hypothesis import HealthCheck, given, seed, settings

import aotcheck
from aotcheck.check.oracle import Inputs
from aotcheck.errors import TraceError
from aotcheck.fuzz import escapes, library_ops
from aotcheck.fuzz.strategies import AOTCHECK_EXTENSIONS, IMPERATIVE_EXTENSIONS, programs

# small on purpose (CI's time); `aotcheck fuzz --engine aotcheck` runs the long version
EXAMPLES = 40


def _make():
    return Inputs((torch.ones(2, 3, requires_grad=True),))


def _fn(x):
    return x.sin()


def test_escaped_names_internal_errors_only():
    """The classifier: eager's own error where eager raises it, and named errors, pass; an
    internal error in the call or in the backward is named with its innermost frame."""
    assert escapes.escaped(_fn, _fn, _make) is None

    def named(x):
        raise TraceError("refused, by name")
    assert escapes.escaped(_fn, named, _make) is None

    def internal(x):
        return {}["missing"]
    msg = escapes.escaped(_fn, internal, _make)
    assert msg.startswith("call: KeyError: 'missing' (") and "test_fuzz_escapes.py:" in msg

    class _BadBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise IndexError("tangent 3 of 1")
    msg = escapes.escaped(_fn, lambda x: _BadBackward.apply(x), _make)
    assert msg.startswith("backward: IndexError: tangent 3 of 1"), msg

    def eager_raises(x):
        return x.view(5)               # RuntimeError in eager too: eager's own
    assert escapes.escaped(eager_raises, eager_raises, _make) is None
    # a different type than eager's, where eager raises, is not eager's own
    assert escapes.escaped(eager_raises, internal, _make).startswith("call: KeyError")


def test_doctests_of_the_new_modules():
    for module in (escapes, library_ops):
        failures, tried = doctest.testmod(module)
        assert tried and not failures, module.__name__


def test_the_wider_grammar_is_on_by_default_against_aotcheck():
    from aotcheck.fuzz.runner import default_extensions
    assert set(IMPERATIVE_EXTENSIONS) <= set(default_extensions("aotcheck"))
    assert set(AOTCHECK_EXTENSIONS) == set(default_extensions("aotcheck"))
    assert not set(IMPERATIVE_EXTENSIONS) & set(default_extensions("torch"))


def test_no_internal_error_escapes_aot_function_on_the_wider_grammar():
    found: dict[str, str] = {}

    @seed(27)
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(programs(extensions=AOTCHECK_EXTENSIONS, min_statements=1))
    def prop(program):
        fn = program.to_function()
        msg = escapes.escaped(fn, aotcheck.aot_function(fn), program.make_inputs)
        if msg is not None:
            found.setdefault(msg, program.function_source())   # every distinct one, no shrink

    prop()
    assert not found, "\n\n".join(f"{msg}\n{src}" for msg, src in found.items())

"""``aotcheck.check.harness.xfail_inherited``: class-level expected failures for inherited tests.

One pytest subprocess runs a generated test file with a base class, a child
that marks an inherited test, a grandchild that inherits the mark, and a child
whose mark is wrong (an unexpected pass, which must fail), in both pytest and
unittest flavours.
"""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import unittest

import pytest

from aotcheck.check.harness import xfail_inherited

SUITE = textwrap.dedent('''
    import unittest
    from aotcheck.check.harness import xfail_inherited

    class TestBase:
        def test_a(self):
            pass
        def test_b(self):
            assert type(self).__name__ == "TestBase", "fails in every subclass"

    @xfail_inherited({"test_b": "fails in subclasses"})
    class TestChild(TestBase):
        pass

    class TestGrandChild(TestChild):
        pass

    @xfail_inherited({"test_a": "wrongly marked"})
    class TestWrong(TestBase):
        pass

    class UBase(unittest.TestCase):
        def test_a(self):
            pass
        def test_b(self):
            assert type(self).__name__ == "UBase", "fails in every subclass"

    @xfail_inherited({"test_b": "fails in subclasses"})
    class UChild(UBase):
        pass

    class UGrandChild(UChild):
        pass

    @xfail_inherited({"test_a": "wrongly marked"})
    class UWrong(UBase):
        pass
''')

EXPECTED = {
    "TestBase::test_a": "PASSED", "TestBase::test_b": "PASSED",
    "TestChild::test_a": "PASSED", "TestChild::test_b": "XFAIL",
    "TestGrandChild::test_a": "PASSED", "TestGrandChild::test_b": "XFAIL",
    "TestWrong::test_a": "FAILED", "TestWrong::test_b": "FAILED",
    "UBase::test_a": "PASSED", "UBase::test_b": "PASSED",
    "UChild::test_a": "PASSED", "UChild::test_b": "XFAIL",
    "UGrandChild::test_a": "PASSED", "UGrandChild::test_b": "XFAIL",
    "UWrong::test_a": "FAILED", "UWrong::test_b": "FAILED",
}


def test_outcomes_down_the_class_chain(tmp_path):
    path = tmp_path / "test_suite.py"
    path.write_text(SUITE)
    r = subprocess.run([sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "-p", "no:xdist",
                        "-o", "addopts=", str(path)], capture_output=True, text=True, cwd=tmp_path,
                       timeout=120)
    outcomes = {}
    for line in r.stdout.splitlines():
        m = re.match(r"^(PASSED|FAILED|XFAIL|XPASS|ERROR)\s+\S*?::(\w+::\w+)", line)
        if m:
            outcomes[m.group(2)] = m.group(1)
    assert outcomes == EXPECTED, r.stdout[-4000:]


class _Base:
    def test_x(self):
        pass


class _UBase(unittest.TestCase):
    __test__ = False            # a fixture of these tests, not a test

    def test_x(self):
        pass


def test_base_is_untouched_and_the_function_is_copied():
    @xfail_inherited({"test_x": "r"})
    class Child(_Base):
        pass

    @xfail_inherited({"test_x": "r"})
    class UChild(_UBase):
        pass

    assert Child.__dict__["test_x"] is not _Base.__dict__["test_x"]
    assert not hasattr(_Base.test_x, "pytestmark") and not hasattr(_Base.test_x, "__aotcheck_xfail__")
    assert [m.name for m in Child.test_x.pytestmark] == ["xfail"]
    assert getattr(UChild.test_x, "__unittest_expecting_failure__", False)
    assert not getattr(_UBase.test_x, "__unittest_expecting_failure__", False)
    assert Child.__aotcheck_xfails__ == {"test_x": "r"}


def test_unknown_test_name_is_an_error():
    with pytest.raises(AttributeError, match="no test method 'test_typo'"):
        @xfail_inherited({"test_typo": "r"})
        class Child(_Base):
            pass

"""tools/torch_coverage.py's counting: which statements of a file count (every one, or only those
in function bodies) and which of them a run reached, on small synthetic sources whose answer is
written out by hand; and one region counted over a synthetic directory."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
pytest.importorskip("coverage")

import torch_coverage as tc  # noqa: E402

SOURCE = '''\
import os                      # 1  import time
X = (1 +                       # 2  import time (one statement, two lines)
     2)


def f(a):                      # 6  import time (the def line)
    """A docstring: no statement."""
    b = a + 1                  # 8  body
    if b:                      # 9  body
        return b               # 10 body
    return None                # 11 body


class C:                       # 14 import time
    y = 3                      # 15 import time (class body)

    @staticmethod              # 17 import time
    def g():                   # 18 import time
        def inner():           # 19 body of g
            return 1           # 20 body of inner
        return inner()         # 21 body of g
'''


def test_every_statement_counts_without_bodies_only():
    assert tc.statements(SOURCE, bodies_only=False) == {1, 2, 6, 8, 9, 10, 11, 14, 15, 17, 18, 19, 20, 21}


def test_bodies_only_keeps_function_and_method_bodies_and_nested_ones():
    assert tc.statements(SOURCE, bodies_only=True) == {8, 9, 10, 11, 19, 20, 21}


def test_a_run_counts_by_statement_first_line():
    # coverage reports line 3 for the second line of X's statement on some Pythons; it is X's
    assert tc.executed(SOURCE, {1, 3, 8, 9, 11}) == {1, 2, 8, 9, 11}


def test_an_empty_module_has_no_statement():
    assert tc.statements("", bodies_only=True) == set() == tc.executed("", {1})


def test_a_region_is_counted_over_its_files(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "a.py").write_text(SOURCE)
    (tmp_path / "pkg" / "sub" / "b.py").write_text("def h():\n    return 2\n")
    (tmp_path / "pkg" / "__init__.py").write_text("")
    region = tc.Region("pkg bodies", ("pkg/**/*.py",), bodies_only=True)
    row = tc.count(tmp_path, region, {"pkg/a.py": [1, 2, 6, 8, 9, 10], "pkg/sub/b.py": []})
    assert (row.files, row.statements, row.run) == (3, 8, 3)      # 7 + 1 body statements; 8, 9, 10 ran
    assert "37.5%" in tc.table([row], "t")

"""tools/mutate_torch.py: the apply/restore/sha256 machinery on a temp tree (fast), and (``-m slow``)
one mutant judged end to end against a private copy of the installed torch."""
from __future__ import annotations

import os
import sys

import pytest

TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools")
sys.path.insert(0, TOOLS)

import mutate_torch  # noqa: E402
from torch_mutants import (  # noqa: E402
    AREAS, MUTANTS, WRITTEN_FOR, Mutant, MutantError, apply_mutant, check_snippet, restore,
    sha256_file, tree_digest,
)


def _fake_torch(tmp_path):
    """A torch-shaped tree: _functorch/ with a file to mutate, and a sibling package."""
    torch_dir = tmp_path / "real" / "torch"
    (torch_dir / "_functorch" / "_aot_autograd").mkdir(parents=True)
    (torch_dir / "_functorch" / "_aot_autograd" / "cache.py").write_text(
        "def key(x):\n    grad = is_grad_enabled()\n    return (x, grad)\n")
    (torch_dir / "_functorch" / "__init__.py").write_text("")
    (torch_dir / "_functorch" / "__pycache__").mkdir()
    (torch_dir / "_functorch" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (torch_dir / "_dynamo").mkdir()
    (torch_dir / "_dynamo" / "__init__.py").write_text("X = 1\n")
    (torch_dir / "__init__.py").write_text("")
    return torch_dir


M = Mutant("drop-grad", "cache", "_aot_autograd/cache.py", "    grad = is_grad_enabled()\n",
           "    grad = True\n", "grad mode dropped from the key")


def test_apply_restore_checked_by_sha256(tmp_path):
    torch_dir = _fake_torch(tmp_path)
    root = str(torch_dir / "_functorch")
    before = tree_digest(root)
    assert set(before) == {"__init__.py", "_aot_autograd/cache.py"}     # no __pycache__
    original = apply_mutant(root, M)
    mutated = tree_digest(root)
    assert mutated != before and mutated["__init__.py"] == before["__init__.py"]
    assert "grad = True" in (torch_dir / "_functorch/_aot_autograd/cache.py").read_text()
    restore(root, M, original, before[M.file])
    assert tree_digest(root) == before
    with pytest.raises(MutantError, match="not restored"):
        restore(root, M, original + "# drift\n", before[M.file])


def test_snippet_must_occur_exactly_once(tmp_path):
    root = str(_fake_torch(tmp_path) / "_functorch")
    missing = Mutant("m", "cache", M.file, "nope\n", "x\n", "d")
    twice = Mutant("t", "cache", M.file, "x", "y", "d")
    for m, n in ((missing, 0), (twice, 2)):
        with pytest.raises(MutantError, match=f"occurs {n} times"):
            check_snippet(root, m)
        with pytest.raises(MutantError):
            apply_mutant(root, m)
    assert "grad = is_grad_enabled()" in open(os.path.join(root, M.file)).read()


def test_scratch_links_everything_but_a_copy_of_functorch(tmp_path):
    real = _fake_torch(tmp_path)
    s = mutate_torch.Scratch.create(str(tmp_path / "scratch"), str(real))
    torch_dir = os.path.join(s.site, "torch")
    assert os.path.islink(os.path.join(torch_dir, "_dynamo"))
    assert os.path.islink(os.path.join(torch_dir, "__init__.py"))
    assert not os.path.islink(s.functorch) and os.path.isdir(s.functorch)
    assert not os.path.exists(os.path.join(s.functorch, "__pycache__"))
    real_before = tree_digest(str(real / "_functorch"))
    assert tree_digest(s.functorch) == real_before
    original = apply_mutant(s.functorch, M)
    assert tree_digest(str(real / "_functorch")) == real_before       # only the copy changed
    stale = os.path.join(s.pycache, "x", "_functorch")
    os.makedirs(stale)
    s.clear_bytecode()
    assert not os.path.exists(stale)
    restore(s.functorch, M, original, real_before[M.file])
    assert tree_digest(s.functorch) == real_before
    env = s.env(str(tmp_path / "t"))
    assert env["PYTHONPATH"].split(os.pathsep)[0] == s.site
    assert env["PYTHONPYCACHEPREFIX"] == s.pycache
    assert env["TORCHINDUCTOR_CACHE_DIR"].startswith(str(tmp_path / "t"))


def test_mutants_are_well_formed_and_apply_to_installed_torch():
    """Every snippet occurs exactly once in the source of the torch it was copied from
    (``WRITTEN_FOR``). Another torch rewrote some of those lines: there the snippets that
    still apply must apply exactly once, and the rest are an expected failure that names
    them (porting them is the mutants' author's work, not a regression of aotcheck)."""
    import torch
    real_ft = os.path.join(mutate_torch.real_torch_dir(), "_functorch")
    ids = [m.id for m in MUTANTS]
    assert len(ids) == len(set(ids)) and len(MUTANTS) >= 24
    assert sum(m.area == "cache" for m in MUTANTS) >= 6
    assert {m.area for m in MUTANTS} == set(AREAS)
    missing = []
    for m in MUTANTS:
        assert m.old != m.new and len(m.description) > 20
        try:
            check_snippet(real_ft, m)
        except MutantError as e:
            if "occurs 0 times" not in str(e) or torch.__version__.split("+")[0] == WRITTEN_FOR:
                raise
            missing.append(m.id)
    if missing:
        pytest.xfail(f"written for torch {WRITTEN_FOR}'s source; torch {torch.__version__} "
                     f"rewrote the lines of {missing}")


def test_verdicts_and_score():
    Run, JR, MR = mutate_torch.Run, mutate_torch.JudgeResult, mutate_torch.MutantResult
    v = mutate_torch.judge_verdict
    assert v(Run(0, 1.0, "")) == "pass"
    assert v(Run(None, 9.0, "")) == "timeout"
    assert v(Run(1, 1.0, "....F\n1 failed, 3 passed in 2s")) == "found"
    assert v(Run(1, 1.0, "Traceback (most recent call last):\n  x\nImportError: y")) == "error"
    assert v(Run(2, 1.0, "ERROR collecting")) == "error"

    def r(i, area, status):
        return MR(i, area, "f", "d", status, True, "differs", (), (), 1.0)
    rs = [r("a", "cache", "caught"), r("b", "cache", "survived"), r("c", "runtime", "equivalent"),
          r("d", "runtime", "crash")]
    s = mutate_torch.score(rs)
    assert (s["caught"], s["non_equivalent"], s["equivalent"], s["score"]) == (2, 3, 1, 0.667)
    assert mutate_torch.score(rs, "cache")["survived"] == ["b"]


def test_probe_diff_tells_hits_only_from_wrong_results():
    stock = {"cache:g": {"a": 1, "b_hits": 0, "b_misses": 1}, "dyn:p": {"out": 1}}
    hits = {"cache:g": {"a": 1, "b_hits": 1, "b_misses": 0}, "dyn:p": {"out": 1}}
    wrong = {"cache:g": {"a": 2, "b_hits": 1, "b_misses": 0}, "dyn:p": {"out": 1}}
    assert mutate_torch.probe_diff(stock, stock) == ([], False)
    assert mutate_torch.probe_diff(stock, hits) == (["cache:g"], True)
    assert mutate_torch.probe_diff(stock, wrong) == (["cache:g"], False)


@pytest.mark.slow
def test_one_mutant_end_to_end_leaves_torch_untouched(tmp_path):
    """A real mutant against a scratch copy of the installed torch, judged by a tiny corpus
    slice; the user's torch is hashed before and after, the scratch copy after the mutant."""
    real_ft = os.path.join(mutate_torch.real_torch_dir(), "_functorch")
    before = tree_digest(real_ft)
    m = next(x for x in MUTANTS if x.id == "rt-dedupe-index")
    judge = ("dup={pytest} tests/test_engines.py --engine torch-aot-function "
             "-k 'TestTorchAotFunction and test_cold and aliased_inputs' -q -p no:cacheprovider")
    opts = mutate_torch.Options([mutate_torch.parse_judge(judge, 0)], timeout=600,
                                use_probe=False)
    report = mutate_torch.run_all([m], opts, workdir=str(tmp_path / "w"), keep=True)
    (res,) = report["_results"]
    assert res.status == "caught" and res.caught_by == ("dup",), res
    scratch_ft = tmp_path / "w" / "scratch0" / "site" / "torch" / "_functorch"
    assert tree_digest(str(scratch_ft)) == before
    assert tree_digest(real_ft) == before
    assert sha256_file(os.path.join(real_ft, m.file)) == before[m.file]


def test_show_merges_result_files_the_last_row_of_a_mutant_wins(tmp_path):
    import json
    def row(i, status, judge):
        return {"id": i, "area": "cache", "file": "f", "description": "d", "status": status,
                "imports": True, "probe": "not-run", "probe_diff": [], "seconds": 1.0,
                "judges": [{"judge": judge, "verdict": "found" if status == "caught" else "pass",
                            "rc": 1, "seconds": 1.0, "tail": ""}]}
    first, again = tmp_path / "a.partial.jsonl", tmp_path / "b.partial.jsonl"
    first.write_text(json.dumps(row("key-grad-mode", "survived", "check")) + "\n"
                     + json.dumps(row("key-strides", "caught", "check")) + "\n")
    again.write_text(json.dumps(row("key-grad-mode", "caught", "fuzz")) + "\n")
    report = mutate_torch.load_results([str(first), str(again)])
    got = {r.id: (r.status, r.caught_by) for r in report["_results"]}
    assert got == {"key-grad-mode": ("caught", ("fuzz",)), "key-strides": ("caught", ("check",))}
    assert report["score"]["caught"] == 2 and sorted(report["judges"]) == ["check", "fuzz"]

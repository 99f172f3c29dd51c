"""The torch engines' known failures name the torch build they were recorded on; any other
build is told so once, plainly (issue: aotcheck installed beside a user's own torch)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from aotcheck.targets import known_failures

ROOT = Path(__file__).resolve().parent.parent


def test_the_table_names_the_build_it_was_recorded_on():
    data = json.loads((ROOT / "aotcheck/targets/known_failures.json").read_text())
    assert data["recorded_on"]["torch"] == known_failures.RECORDED_ON_TORCH
    pins = [line.split("==")[1].strip() for line in (ROOT / "constraints.txt").read_text().splitlines()
            if line.startswith("torch==")]
    assert pins == [known_failures.RECORDED_ON_TORCH], "constraints.txt pins the recorded build"


def test_no_note_on_the_recorded_build_whatever_its_local_tag():
    v = known_failures.RECORDED_ON_TORCH
    assert known_failures.version_note(v) is None
    assert known_failures.version_note(v + "+cpu") is None


def test_another_build_is_named_with_what_it_means_for_strict_xfails():
    note = known_failures.version_note("2.15.0.dev20261201+cu130")
    assert note is not None
    assert f"recorded on torch {known_failures.RECORDED_ON_TORCH}" in note
    assert "this is torch 2.15.0.dev20261201+cu130" in note
    assert "strict xfail" in note and "XPASS" in note


def test_note_version_once_writes_at_most_once(monkeypatch):
    monkeypatch.setattr(torch, "__version__", "2.14.1")
    monkeypatch.setattr(known_failures, "_NOTED", [])
    written = []
    known_failures.note_version_once(written.append)
    known_failures.note_version_once(written.append)
    assert len(written) == 1 and "this is torch 2.14.1" in written[0]


def test_the_cli_says_it_once_on_a_simulated_version(tmp_path):
    """``aotcheck triage`` (a subcommand whose verdicts lean on the record) under a torch that
    reports another version: the note comes once on stderr, then triage's own clear error for a
    missing reproducer (exit 2, no traceback)."""
    script = ("import sys, torch; torch.__version__ = '2.99.0'\n"
              "from aotcheck.cli import main\n"
              f"sys.exit(main(['triage', {str(tmp_path / 'missing.py')!r}]))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("this is torch 2.99.0") == 1
    assert "no reproducer file" in out.stderr and "Traceback" not in out.stderr


def test_torch_is_a_range_in_the_dependencies_and_a_pin_only_in_the_constraints():
    """Installing aotcheck keeps the user's torch build: the dependency admits 2.13 and later
    releases; only the constraints file (the README's commands, CI) pins the recorded build."""
    tomllib = pytest.importorskip("tomllib")   # Python 3.11+

    from packaging.requirements import Requirement
    from packaging.version import Version

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (torch_req,) = [Requirement(d) for d in deps if Requirement(d).name == "torch"]
    assert not any(s.operator in ("==", "===", "~=") for s in torch_req.specifier), torch_req
    for v in ("2.13.0", "2.14.1", "2.15.0"):
        assert torch_req.specifier.contains(Version(v), prereleases=True), (v, torch_req)
    assert not torch_req.specifier.contains(Version("2.12.1"))
    readme = (ROOT / "README.md").read_text()
    assert readme.count("-c constraints.txt") >= 2, "both README commands install through the pin"

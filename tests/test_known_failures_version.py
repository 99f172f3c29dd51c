"""The torch engines' known failures: one record per torch release, the installed release's
chosen automatically; a release with no record is told once, plainly, which one stands in
(NOTE [one record per torch release] in aotcheck/targets/known_failures.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from aotcheck.targets import known_failures

ROOT = Path(__file__).resolve().parent.parent


def test_each_record_names_the_release_of_its_file():
    for v in known_failures.recorded_releases():
        data = json.loads((known_failures.RECORDS / f"torch-{v}.json").read_text())
        assert data["recorded_on"]["torch"] == v


def test_the_pinned_build_has_a_record_of_its_own():
    pins = [line.split("==")[1].strip() for line in (ROOT / "constraints.txt").read_text().splitlines()
            if line.startswith("torch==")]
    assert len(pins) == 1 and pins[0] in known_failures.recorded_releases(), \
        "constraints.txt pins a recorded build"


def test_the_installed_release_reads_its_own_record_when_there_is_one():
    installed = known_failures.release(torch.__version__)
    if installed in known_failures.recorded_releases():
        assert known_failures.RECORDED_ON_TORCH == installed
        assert known_failures.record_path() == known_failures.RECORDS / f"torch-{installed}.json"


def _releases(monkeypatch, *names):
    monkeypatch.setattr(known_failures, "recorded_releases", lambda: list(names))


def test_a_release_picks_its_own_record_whatever_its_local_tag(monkeypatch):
    _releases(monkeypatch, "2.13.0", "2.14.1", "2.15.0")
    assert known_failures.record_path("2.14.1+cu130").name == "torch-2.14.1.json"
    assert known_failures.record_path("2.13.0+cpu").name == "torch-2.13.0.json"
    assert known_failures.version_note("2.15.0+cu132") is None
    assert known_failures.version_note("2.13.0+cpu") is None


def test_an_unrecorded_release_reads_the_newest_recorded_one_at_or_below_it(monkeypatch):
    _releases(monkeypatch, "2.13.0", "2.14.1", "2.15.0")
    assert known_failures.record_path("2.14.2").name == "torch-2.14.1.json"
    assert known_failures.record_path("2.16.0.dev20261201+cu130").name == "torch-2.15.0.json"
    assert known_failures.record_path("2.15.0a0+git1234").name == "torch-2.15.0.json"
    assert known_failures.record_path("2.12.1").name == "torch-2.13.0.json"     # older: the oldest


def test_an_unrecorded_release_is_named_with_the_record_that_stands_in(monkeypatch):
    _releases(monkeypatch, "2.13.0", "2.14.1")
    note = known_failures.version_note("2.15.0.dev20261201+cu130")
    assert note is not None
    assert "torch 2.15.0.dev20261201+cu130 has no known-failures record of its own" in note
    assert "judged against torch 2.14.1's" in note and "recorded: 2.13.0, 2.14.1" in note
    assert "strict xfail" in note and "XPASS" in note


def test_baseline_save_builtin_writes_the_installed_release_s_own_file():
    assert known_failures.own_record_path("2.99.0+cpu") == known_failures.RECORDS / "torch-2.99.0.json"


def test_note_version_once_writes_at_most_once(monkeypatch):
    monkeypatch.setattr(torch, "__version__", "2.99.1")
    monkeypatch.setattr(known_failures, "_NOTED", [])
    written = []
    known_failures.note_version_once(written.append)
    known_failures.note_version_once(written.append)
    assert len(written) == 1 and "torch 2.99.1 has no known-failures record" in written[0]


def test_the_cli_says_it_once_on_a_simulated_version(tmp_path):
    """``aotcheck triage`` (a subcommand whose verdicts lean on the record) under a torch that
    reports another version: the note comes once on stderr, then triage's own clear error for a
    missing reproducer (exit 2, no traceback)."""
    script = ("import sys, torch; torch.__version__ = '2.99.0'\n"
              "from aotcheck.cli import main\n"
              f"sys.exit(main(['triage', {str(tmp_path / 'missing.py')!r}]))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("torch 2.99.0 has no known-failures record") == 1
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

"""The torch releases aotcheck keeps a record for: prepare a venv for each, then check or
regenerate every record (NOTE [one record per torch release] in aotcheck/targets/known_failures.py).

    python tools/torch_versions.py prepare                 # a venv per release (pip's wheel cache kept)
    python tools/torch_versions.py check                   # the regression command in every venv
    python tools/torch_versions.py record --only 2.15.0    # regenerate one release's record
    python tools/torch_versions.py list                    # the releases, how each installs, its venv
    python tools/torch_versions.py diff 2.13.0 2.15.0      # the torch verdicts that changed between two records
    python tools/torch_versions.py explain-new 2.15.0      # placeholder reasons -> what the release before did

Each release installs its own way (``RELEASES``): 2.13.0 is the CPU wheel on this machine's disk
(the constraints file's pin), 2.14.1 comes from the local index, 2.15.0 from PyPI with
``PIP_CONFIG_FILE=/dev/null`` (the machine's pip config caps torch at 2.14.1, and ``--isolated``
does not lift it). The newer releases are CUDA builds of several GB: every venv installs through
one wheel cache (``--root``/pip-cache), so a venv made again downloads nothing.

``check`` runs, in each venv, ``aotcheck check --engine all-torch --strict`` (NEW, CHANGED and
FIXED against that release's own record all fail) and ``aotcheck check`` (aotcheck's engine),
and prints one row per release: exit codes, NEW / CHANGED / FIXED, wall time. ``record`` runs
``aotcheck baseline save --builtin`` for the torch engines (with their key variations) and for
``dynamo-aotcheck`` (cold and cached: what tests/test_backend.py reads), which writes
``aotcheck/targets/records/torch-<release>.json`` of this checkout. A release whose verdicts
changed from the one before it deserves a findings row (docs/findings.md): a crash that became
a silently wrong result is a torch regression. ``diff`` lists those changes between two
records, worst first: a recorded crash or refusal that became a silently wrong result, a pass
that became a failure, then the rest (reads the records only; runs nothing).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Release:
    version: str
    how: str                      # one line: where the wheel comes from
    lift_pip_config: bool = False  # PIP_CONFIG_FILE=/dev/null: past the machine's cap on torch
    constraints: bool = False      # install through constraints.txt (the README's pin)


RELEASES = (
    Release("2.13.0", "the CPU wheel on this machine's disk, through constraints.txt", constraints=True),
    Release("2.14.1", "the local index (a CUDA build)"),
    Release("2.15.0", "PyPI, with PIP_CONFIG_FILE=/dev/null (a CUDA build)", lift_pip_config=True),
)


def venv_of(root: Path, r: Release) -> Path:
    return root / f"torch-{r.version}"


def _env(root: Path, r: Release) -> dict:
    env = dict(os.environ, PIP_CACHE_DIR=str(root / "pip-cache"))
    if r.lift_pip_config:
        env["PIP_CONFIG_FILE"] = os.devnull
    return env


def _run(cmd, env=None, log=None) -> tuple[int, str, float]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    if log is not None:
        log.write_text(out)
    return proc.returncode, out, time.perf_counter() - t0


def prepare(root: Path, r: Release) -> int:
    """Make ``root/torch-<version>`` (if missing) with torch and this checkout's test extra."""
    venv = venv_of(root, r)
    env = _env(root, r)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    steps = []
    if not (venv / "bin" / "python").exists():
        steps.append([sys.executable, "-m", "venv", str(venv)])
    steps.append(pip + [f"torch=={r.version}"] + (["-c", "constraints.txt"] if r.constraints else []))
    steps.append(pip + ["-e", ".[test]"] + (["-c", "constraints.txt"] if r.constraints else []))
    for cmd in steps:
        code, out, secs = _run(cmd, env)
        print(f"[{r.version}] {' '.join(cmd[-3:])}: exit {code} ({secs:.0f}s)")
        if code:
            print(out[-3000:])
            return code
    code, out, _ = _run([str(venv / "bin" / "python"), "-c", "import torch; print(torch.__version__)"], env)
    print(f"[{r.version}] venv {venv}: torch {out.strip()}")
    return code


_COUNT = re.compile(r"^(NEW|CHANGED|FIXED): (\d+)$", re.M)


def _counts(out: str) -> str:
    found = dict(_COUNT.findall(out))
    return " / ".join(f"{k} {found.get(k, '?')}" for k in ("NEW", "CHANGED", "FIXED"))


def check(root: Path, r: Release, logs: Path) -> int:
    """The regression command and aotcheck's own check in ``r``'s venv; one printed row."""
    bin_ = venv_of(root, r) / "bin"
    worst = 0
    for label, args in (("all-torch", ["--engine", "all-torch", "--strict"]), ("aotcheck", [])):
        code, out, secs = _run([str(bin_ / "aotcheck"), "check", *args], _env(root, r),
                               logs / f"check-{r.version}-{label}.log")
        print(f"torch {r.version}  {label:9}  exit {code}  {_counts(out)}  wall {secs:.1f}s")
        worst = worst or code
    return worst


def record(root: Path, r: Release, logs: Path) -> int:
    """Regenerate ``records/torch-<version>.json``: the torch engines, then dynamo-aotcheck."""
    bin_ = venv_of(root, r) / "bin"
    for label, args in (("all-torch", ["--engine", "all-torch"]),
                        ("dynamo-aotcheck", ["--engine", "dynamo-aotcheck", "--no-variations"])):
        code, out, secs = _run([str(bin_ / "aotcheck"), "baseline", "save", "--builtin", *args],
                               _env(root, r), logs / f"record-{r.version}-{label}.log")
        last = out.strip().splitlines()[-1] if out.strip() else ""
        print(f"torch {r.version}  {label:15}  exit {code}  ({secs:.0f}s)  {last}")
        if code:
            return code
    return 0


# The checks a failure fingerprint can name that mean "silently wrong" (a result differs from
# eager with no exception), as opposed to a crash, a graph break or a cache miss.
SILENT = ("values", "grad values", "aliasing", "requires_grad", "autograd metadata", "mutation",
          "output mutation", "grad presence", "retained grad presence", "layout", "structure",
          "non-tensor output", "missing error", "random state", "stale hit")


def _silent(fp) -> bool:
    return fp is not None and any(fp.check == c or fp.check.startswith(c + " ") for c in SILENT)


def _change(old, new) -> tuple[int, str]:
    """(rank, words) for one entry's change between two records; lower rank is worse. An
    unpinned entry (no fingerprint: any failure) says nothing of how it failed."""
    if old is not None and new is not None and old.fingerprint is None:
        return 2, "fails (unpinned before)"
    if old is not None and not _silent(old.fingerprint) and new is not None and _silent(new.fingerprint):
        return 0, "crash or refusal -> SILENTLY WRONG"
    if old is None:
        return 1, "passed -> fails"
    if new is None:
        return 3, "failed -> passes"
    return 2, "fails differently"


def diff(a: str, b: str) -> int:
    """Print every torch-engine entry whose verdict differs between records ``a`` and ``b``."""
    sys.path.insert(0, str(ROOT))
    from aotcheck.regress import record as records
    from aotcheck.targets.known_failures import RECORDS
    ra, rb = (records.load(RECORDS / f"torch-{v}.json") for v in (a, b))
    rows = []
    for engine in sorted(set(ra.engines) | set(rb.engines)):
        ta, tb = ra.engines.get(engine, {}), rb.engines.get(engine, {})
        for key in sorted(set(ta) | set(tb)):
            old, new = ta.get(key), tb.get(key)
            if old is not None and new is not None and old.fingerprint == new.fingerprint:
                continue
            rank, words = _change(old, new)
            rows.append((rank, engine, key, words, old, new))
    for rank, engine, key, words, old, new in sorted(rows, key=lambda r: r[:3]):
        fa = old.fingerprint if old is not None else "pass"
        fb = new.fingerprint if new is not None else "pass"
        print(f"{words:36} {engine:20} {key}\n{'':36} {a}: {fa}\n{'':36} {b}: {fb}")
    counts = {}
    for r in rows:
        counts[r[3]] = counts.get(r[3], 0) + 1
    print(f"{len(rows)} changed entries between torch {a} and {b}: "
          + ", ".join(f"{n} {w}" for w, n in sorted(counts.items())))
    return 0


def _flat(x) -> str:
    return " ".join(str(x).split())


PLACEHOLDER = "recorded by aotcheck baseline save; no reason written yet"


def explain_new(version: str) -> int:
    """Replace the placeholder reason of each entry in ``version``'s record that the previous
    recorded release does not have in the same form by a sentence saying what the previous
    release did (a starting point for the person who reads the case; the fingerprint says how
    it fails now)."""
    sys.path.insert(0, str(ROOT))
    from dataclasses import replace

    from aotcheck.regress import record as records
    from aotcheck.targets.known_failures import RECORDS, recorded_releases
    older = [r for r in recorded_releases() if r != version and recorded_releases().index(r) <
             recorded_releases().index(version)]
    if not older:
        return 0
    path = RECORDS / f"torch-{version}.json"
    rec, prev = records.load(path), records.load(RECORDS / f"torch-{older[-1]}.json")
    tables, n = {}, 0
    for engine, table in rec.engines.items():
        tables[engine] = dict(table)
        for key, e in table.items():
            if e.reason != PLACEHOLDER:
                continue
            was = prev.engines.get(engine, {}).get(key)
            then = "passed" if was is None else f"failed otherwise ({_flat(was.fingerprint)})"
            tables[engine][key] = replace(e, reason=f"new on torch {version}: {_flat(e.fingerprint)}, "
                                          f"where eager runs; torch {older[-1]} {then} (not yet read by hand)")
            n += 1
    replace(rec, engines=tables).save(path)
    print(f"torch {version}: {n} placeholder reason(s) replaced, against torch {older[-1]}'s record")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("action", choices=("list", "prepare", "check", "record", "diff", "explain-new"))
    ap.add_argument("releases", nargs="*", help="diff: the two releases whose records to compare")
    ap.add_argument("--root", type=Path, default=ROOT / ".venvs",
                    help="where the venvs and the wheel cache live (default .venvs/)")
    ap.add_argument("--only", action="append", help="only this release (repeatable)")
    ap.add_argument("--logs", type=Path, default=None, help="where each run's output goes "
                    "(default ROOT/logs under --root)")
    args = ap.parse_args(argv)
    if args.action == "diff":
        if len(args.releases) != 2:
            print("diff: name two recorded releases, e.g. `diff 2.13.0 2.15.0`", file=sys.stderr)
            return 2
        return diff(*args.releases)
    if args.action == "explain-new":
        return max([explain_new(v) for v in args.releases or [r.version for r in RELEASES]] + [0])
    chosen = [r for r in RELEASES if not args.only or r.version in args.only]
    if args.only and len(chosen) != len(set(args.only)):
        print(f"--only: choose from {', '.join(r.version for r in RELEASES)}", file=sys.stderr)
        return 2
    logs = args.logs or args.root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    worst = 0
    for r in chosen:
        if args.action == "list":
            print(f"{r.version:8} {venv_of(args.root, r)}  ({r.how})")
            continue
        if args.action != "prepare" and not (venv_of(args.root, r) / "bin" / "aotcheck").exists():
            print(f"torch {r.version}: no venv at {venv_of(args.root, r)}; run `prepare` first", file=sys.stderr)
            worst = worst or 2
            continue
        act = {"prepare": lambda r: prepare(args.root, r), "check": lambda r: check(args.root, r, logs),
               "record": lambda r: record(args.root, r, logs)}[args.action]
        worst = act(r) or worst
    return worst


if __name__ == "__main__":
    sys.exit(main())

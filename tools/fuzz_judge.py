"""A fuzz run as a regression judge: exit 1 only on a failure stock torch did not have.

``aotcheck fuzz`` exits 1 whenever it has findings, known ones included, and stock torch 2.13
has some (a 30-program run with seed 0 has four), so its exit status cannot tell a regression
from the known state. This wrapper runs the fuzzer with the given arguments into ``--out DIR``,
reads ``DIR/findings.json`` and compares the set of root-cause fingerprints (stage, check,
skeleton) with a baseline file:

    python tools/fuzz_judge.py BASELINE.json -- --engine torch --examples 15 --seed 0 --no-shrink

When BASELINE.json does not exist the run is recorded there and the exit status is 0 (the
mutation harness runs every judge on stock torch first). Afterwards: 1 when a fingerprint is
not in the baseline (printed), 2 when the fuzzer itself broke (no findings.json), else 0.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile


def fingerprints(findings_json: str) -> set[str]:
    with open(findings_json) as f:
        data = json.load(f)
    return {json.dumps(x["fingerprint"], sort_keys=True) for x in data["findings"]}


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[1] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    baseline, fuzz_args = argv[0], argv[2:]
    out = tempfile.mkdtemp(prefix="fuzz-judge-")
    cmd = [sys.executable, "-c", "import sys; from aotcheck.cli import main; sys.exit(main())",
           "fuzz", *fuzz_args, "--out", out]
    rc = subprocess.call(cmd)
    path = os.path.join(out, "findings.json")
    if rc not in (0, 1) or (rc == 1 and not os.path.exists(path)):
        print(f"fuzz_judge: the fuzzer broke (rc {rc})", file=sys.stderr)
        return 2
    got = fingerprints(path) if os.path.exists(path) else set()
    if not os.path.exists(baseline):
        with open(baseline, "w") as f:
            json.dump(sorted(got), f, indent=1)
        print(f"fuzz_judge: baseline recorded ({len(got)} fingerprints) in {baseline}")
        return 0
    with open(baseline) as f:
        known = set(json.load(f))
    extra = sorted(got - known)
    for e in extra:
        print(f"fuzz_judge: not in the baseline: {e}")
    print(f"fuzz_judge: {len(got)} fingerprints, {len(extra)} not in the baseline, "
          f"{len(known - got)} of the baseline's not seen")
    return 1 if extra else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

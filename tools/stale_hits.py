"""Seven stale-hit reproducers restated from open PyTorch reports, through `aotcheck keydiff` as a
user runs it (one program file each, `tools/stale_hits/sh_*.py`), on torch's caches and on
aotcheck's own.

    python tools/stale_hits.py                    # torch's caches: is each stale hit reported?
    python tools/stale_hits.py --target aotcheck  # aotcheck's cache: no key gap expected
    python tools/stale_hits.py --json OUT.json

Each program is run with ``aotcheck keydiff FILE --json ...`` in a new process (exactly the
command a user types) and counts as *reported* when the command confirms at least one STALE HIT
(A writes, a new process under B is served A's entry and differs from eager, B cold equals
eager). The programs are not the census's probes (``aotcheck/keydiff/programs/``): each is a
different program in one of issue 36's classes (state reached from the function through a
helper or a higher-order op's body, ambient state, custom-op registrations, storage relations,
a config field outside the key, an entry point), written from the upstream report it names.
Prints one row per program and the score; a benchmark-style tool, it asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent / "stale_hits"


def run_one(path: Path, target: str, jobs: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="aotcheck-stale-hits-") as tmp:
        out = Path(tmp) / "result.json"
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "aotcheck.cli", "keydiff", str(path), "--json", str(out),
                               "--jobs", str(jobs), "--target", target], capture_output=True, text=True, cwd=tmp)
        wall = time.perf_counter() - t0
        if not out.exists():
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            return {"program": path.stem, "error": tail, "wall": wall}
        data = json.loads(out.read_text())
    comps = [c for p in data["programs"] for c in p["comparisons"]]
    gaps = [c for c in comps if c["verdict"]["finding"] == "KEY GAP"]
    stale = [c for c in gaps if any(x["outcome"] == "STALE HIT" for x in c["confirmations"])]
    upstream = data["programs"][0]["upstream"] if data["programs"] else ""
    tally: dict[str, int] = {}
    for c in comps:
        tally[c["verdict"]["finding"]] = tally.get(c["verdict"]["finding"], 0) + 1
    return {"program": path.stem, "upstream": upstream, "comparisons": len(comps), "key_gaps": len(gaps),
            "stale_hits": len(stale), "verdicts": ", ".join(f"{n} {k}" for k, n in sorted(tally.items())),
            "first": stale[0]["component"] if stale else "", "wall": round(wall, 1),
            "exit": proc.returncode}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", choices=("torch", "aotcheck"), default="torch")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    import torch
    from rich.console import Console
    from rich.table import Table
    rows = [run_one(p, args.target, args.jobs) for p in sorted(HERE.glob("sh_*.py"))]
    table = Table(title=f"stale-hit reproducers through `aotcheck keydiff --target {args.target}` "
                        f"(torch {torch.__version__})")
    for col in ("program", "upstream", "verdicts", "key gaps", "stale hits", "first stale hit", "wall s"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["program"], r.get("upstream", ""), r.get("verdicts", ""), str(r.get("key_gaps", "-")),
                      str(r.get("stale_hits", "-")), r.get("first") or r.get("error", ""), str(r["wall"]))
    Console(width=160).print(table)
    reported = sum(1 for r in rows if r.get("stale_hits"))
    gaps = sum(r.get("key_gaps", 0) for r in rows)
    print(f"reported: {reported} of {len(rows)} programs with a confirmed stale hit; key gaps: {gaps}; "
          f"wall {sum(r['wall'] for r in rows):.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

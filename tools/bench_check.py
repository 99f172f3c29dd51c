"""Time the regression command: ``aotcheck check --engine all-torch`` (or --engine ENGINE),
in a child process, and print wall time, CPU time (the command and its workers), the time each
engine took in the workers, the exit code and the load average before and after.

    python tools/bench_check.py                          # all-torch, 2 workers
    python tools/bench_check.py --quick                  # all-torch --quick (the quick set)
    python tools/bench_check.py --engine torch -- -k basics.

The budget is 3 minutes of wall time on 2 cores (issue 26), 30 seconds with ``--quick`` (issue
35). On a shared machine the wall time depends on the load: read it with the load average and
the CPU time, which does not."""
from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUDGET_S, QUICK_BUDGET_S = 180.0, 30.0        # issue 26; issue 35 (--quick)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engine", default="all-torch")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="time aotcheck check --quick")
    ap.add_argument("rest", nargs="*", help="more arguments for aotcheck check (after --)")
    args = ap.parse_args(argv)
    rest = [*(["--quick"] if args.quick else []), *args.rest]
    cmd = [sys.executable, "-c", "import sys; from aotcheck.cli import main; sys.exit(main(sys.argv[1:]))",
           "check", "--engine", args.engine, "--jobs", str(args.jobs), *rest]
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    load0 = os.getloadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    load1 = os.getloadavg()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = proc.stdout
    per_engine = re.search(r"worker CPU per engine: (.*)", out)
    verdicts = {k: re.search(rf"^{k}: (\d+)", out, re.M) for k in ("NEW", "CHANGED", "FIXED")}
    total = re.search(r"^│ total +│(.*)│$", out, re.M)
    quick = re.search(r"^quick: (\d+) of (\d+) corpus cases", out, re.M)
    budget = QUICK_BUDGET_S if "--quick" in rest else BUDGET_S
    print(f"command      aotcheck check --engine {args.engine} --jobs {args.jobs} {' '.join(rest)}")
    print(f"exit code    {proc.returncode}")
    print(f"wall time    {wall:.1f} s ({'within' if wall <= budget else 'OVER'} the {budget:.0f} s budget)")
    if quick:
        print(f"cases        {quick.group(1)} of {quick.group(2)} (the quick set)")
    print(f"CPU time     {cpu:.1f} s (user+sys of the command and its workers; {os.cpu_count()} cores here)")
    print(f"per engine   {per_engine.group(1) if per_engine else '?'} (worker CPU)")
    print("verdicts     " + ", ".join(f"{k} {m.group(1) if m else '?'}" for k, m in verdicts.items()))
    if total:
        print(f"totals       {' | '.join(x.strip() for x in total.group(1).split('│'))}")
    print(f"load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} before; "
          f"{load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f} after (1, 5, 15 min)")
    if proc.returncode not in (0, 1):
        sys.stderr.write(proc.stderr[-3000:])
    return 0


if __name__ == "__main__":
    sys.exit(main())

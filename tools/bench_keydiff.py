"""Time the two commands of issue 36's budget, each in a child process, and print their wall
time, CPU time (the command and every process it started), exit code, and the load average
before and after:

    aotcheck check --engine all-torch     the regular regression command (budget ~3 minutes);
                                          keydiff adds nothing to it
    aotcheck keydiff --census             the full key-completeness census, the second command
                                          (budget 10 minutes on 2 cores)

    python tools/bench_keydiff.py                  # both
    python tools/bench_keydiff.py --only census    # one of them (check | census)

On a shared machine the wall time depends on the load: read it with the load average and the
CPU time, which does not."""
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
COMMANDS = {"check": ["check", "--engine", "all-torch", "--jobs", "2"],
            "census": ["keydiff", "--census", "--jobs", "2"]}


def timed(args: list[str]) -> dict:
    cmd = [sys.executable, "-c", "import sys; from aotcheck.cli import main; sys.exit(main(sys.argv[1:]))", *args]
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    load0, before = os.getloadavg(), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after, load1 = resource.getrusage(resource.RUSAGE_CHILDREN), os.getloadavg()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"args": args, "code": proc.returncode, "wall": wall, "cpu": cpu, "load0": load0, "load1": load1,
            "out": proc.stdout, "err": proc.stderr}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=sorted(COMMANDS), default=None)
    ap.add_argument("--census-json", default=None, metavar="OUT.json", help="keep the census's result")
    args = ap.parse_args(argv)
    for name in ([args.only] if args.only else list(COMMANDS)):
        extra = ["--json", args.census_json] if name == "census" and args.census_json else []
        r = timed(COMMANDS[name] + extra)
        summary = re.search(r"^summary: .*$", r["out"], re.M)
        print(f"command      aotcheck {' '.join(r['args'])}")
        print(f"exit code    {r['code']}")
        print(f"wall time    {r['wall']:.1f} s ({r['wall'] / 60:.1f} min)")
        print(f"CPU time     {r['cpu']:.1f} s (user+sys of the command and its processes; "
              f"{os.cpu_count()} cores here)")
        if summary:
            print(f"result       {summary.group(0)}")
        print(f"load average {' '.join(f'{x:.2f}' for x in r['load0'])} before; "
              f"{' '.join(f'{x:.2f}' for x in r['load1'])} after (1, 5, 15 min)")
        if r["code"] not in (0, 1):
            sys.stderr.write(r["err"][-3000:])
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How much of torch's AOT autograd the regression command runs: statement coverage of
``aotcheck check --engine all-torch``, its worker processes included, as a table.

    python tools/torch_coverage.py                   # measure (10-20 min on 2 cores), save, print
    python tools/torch_coverage.py --from FILE       # print a saved measurement again
    python tools/torch_coverage.py -k basics --jobs 1    # a trial on some cases

The run is the regression command's own work: every corpus case through the torch engines in
``--jobs`` warm workers, every stage (cold, cached, the key variations), by
``aotcheck.regress.run.work_pair`` (``tools/cover_workers.py``, shared with
``tools/quick_cover.py``), each worker under ``coverage`` from before it imports torch
(NOTE [coverage starts before torch] in ``tools/cover_workers.py``). The command's own process
compiles nothing (it hands every case to the workers), so the workers are all of it.

The regions (``REGIONS``), relative to the installed torch:

    AOT-autograd core    _functorch/_aot_autograd/*.py and _functorch/partitioners.py, every statement
    partitioners.py      _functorch/partitioners.py alone
    HOP bodies           _higher_order_ops/**/*.py, statements inside function bodies only
    AC bodies            _functorch/_activation_checkpointing/*.py, function bodies only

# NOTE [function bodies only]
A module's ``def`` lines, class bodies and constants run when it is imported, and the workers
import every higher-order op that torch imports at start-up: counted in full, a directory the
corpus never calls into would look a third covered. For the HOP and activation-checkpointing
regions only the statements inside a function's (or method's) body count: what some call ran.
A nested ``def`` inside a body counts as a statement of the outer body (it runs when the outer
function does). The AOT-autograd core is counted in full, as the issue that set its figures did.

The measurement (per file, the statement lines run) is saved as JSON (``--save``, default
``cache/torch_coverage/torch-<release>.json``); ``--from`` prints it again, counted against the
installed torch's sources (the release must match the measurement's).
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import cover_workers  # noqa: E402 - stdlib only at module level (NOTE [coverage starts before torch])

ENGINES = "all-torch"


@dataclass(frozen=True)
class Region:
    name: str
    globs: tuple[str, ...]        # relative to torch/, pathlib globs
    bodies_only: bool             # NOTE [function bodies only]


REGIONS = (
    Region("AOT-autograd core", ("_functorch/_aot_autograd/*.py", "_functorch/partitioners.py"), False),
    Region("partitioners.py", ("_functorch/partitioners.py",), False),
    Region("HOP bodies", ("_higher_order_ops/**/*.py",), True),
    Region("AC bodies", ("_functorch/_activation_checkpointing/*.py",), True),
)
# what the workers trace (coverage's include patterns, relative to torch/)
TRACED = ["_functorch/_aot_autograd/*", "_functorch/partitioners.py", "_higher_order_ops/*",
          "_functorch/_activation_checkpointing/*"]


# ---------------------------------------------------------------- counting


def statements(source: str, bodies_only: bool) -> set[int]:
    """The statement lines of a Python source, as coverage counts them (a multi-line statement
    by its first line; docstrings not counted); ``bodies_only``: only those inside a function's
    body (NOTE [function bodies only])."""
    if not source.strip():
        return set()
    from coverage.parser import PythonParser
    parser = PythonParser(text=source)
    parser.parse_source()
    lines = set(parser.statements)
    return lines & body_lines(source) if bodies_only else lines


def body_lines(source: str) -> set[int]:
    """The lines inside the body of any function or method (nested ones included), from its first
    body statement to its end; a ``def`` line itself is not in its own body."""
    keep: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            keep.update(range(node.body[0].lineno, node.end_lineno + 1))
    return keep


def executed(source: str, ran: set[int]) -> set[int]:
    """The statements of ``source`` that ran, from coverage's lines (each mapped to the first line
    of its statement)."""
    if not source.strip():
        return set()
    from coverage.parser import PythonParser
    parser = PythonParser(text=source)
    parser.parse_source()
    return parser.first_lines(ran) & set(parser.statements)


@dataclass(frozen=True)
class Row:
    region: str
    files: int
    statements: int
    run: int

    @property
    def pct(self) -> float:
        return 100 * self.run / self.statements if self.statements else 0.0


def region_files(top: Path, region: Region) -> list[str]:
    return sorted({str(p.relative_to(top)) for g in region.globs for p in top.glob(g)
                   if "__pycache__" not in p.parts})


def count(top: Path, region: Region, lines: dict[str, list[int]]) -> Row:
    """One region's row: its statements under ``top`` and how many of them ``lines`` ran."""
    total = ran = 0
    files = region_files(top, region)
    for rel in files:
        source = (top / rel).read_text()
        stmts = statements(source, region.bodies_only)
        total += len(stmts)
        ran += len(executed(source, set(lines.get(rel, ()))) & stmts)
    return Row(region.name, len(files), total, ran)


def table(rows: list[Row], title: str) -> str:
    out = [title, f"  {'region':20} {'files':>5} {'statements':>10} {'run':>7} {'coverage':>8}"]
    out += [f"  {r.region:20} {r.files:5d} {r.statements:10d} {r.run:7d} {r.pct:7.1f}%" for r in rows]
    return "\n".join(out)


# ---------------------------------------------------------------- measuring


def _cover_chunk(case_ids: list[str]) -> tuple[dict[str, list[int]], dict[str, int]]:
    """In a worker: the chunk's pairs, every stage; the lines they ran (the first chunk of a worker
    also holds its start-up and imports) and a count of the stages' statuses."""
    statuses: dict[str, int] = {}
    for cid in case_ids:
        for eng in cover_workers.engines():
            outcomes, _ = cover_workers.work_pair(cid, eng)
            for o in outcomes:
                statuses[o.status] = statuses.get(o.status, 0) + 1
    lines, _ = cover_workers.take()
    return lines, statuses


def measure(jobs: int, pattern: str = "") -> dict:
    import torch
    t0, c0 = time.perf_counter(), _cpu()
    lines: dict[str, set[int]] = {}
    statuses: dict[str, int] = {}
    with cover_workers.pool(jobs, ENGINES, TRACED, pattern=pattern) as pool:
        chunks = cover_workers.chunks(pattern)
        futures = [pool.submit(_cover_chunk, ch) for ch in chunks]
        for got, st in cover_workers.results(futures, "coverage"):
            for f, ls in got.items():
                lines.setdefault(f, set()).update(ls)
            for k, v in st.items():
                statuses[k] = statuses.get(k, 0) + v
    return {"torch": torch.__version__.split("+")[0], "engines": ENGINES, "pattern": pattern,
            "cases": sum(len(ch) for ch in chunks), "stages": statuses,
            "wall_s": round(time.perf_counter() - t0, 1), "cpu_s": round(_cpu() - c0, 1),
            "lines": {f: sorted(ls) for f, ls in sorted(lines.items())}}


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def save(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def report(data: dict) -> str:
    import torch
    installed = torch.__version__.split("+")[0]
    if installed != data["torch"]:
        raise SystemExit(f"the measurement is of torch {data['torch']}; this is torch {installed}: "
                         "its line numbers would be counted against other sources")
    top = Path(cover_workers.torch_dir())
    rows = [count(top, r, data["lines"]) for r in REGIONS]
    scope = f", cases matching {data['pattern']!r}" if data.get("pattern") else ""
    head = (f"statement coverage of aotcheck check --engine {data['engines']} on torch {data['torch']} "
            f"({data['cases']} cases{scope}; stages {json.dumps(data['stages'], sort_keys=True)}; "
            f"{data['wall_s']:.0f} s wall, {data['cpu_s']:.0f} s CPU under coverage)")
    return table(rows, head)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("-k", dest="pattern", default="", help="only cases whose id contains this text")
    ap.add_argument("--from", dest="source", type=Path, default=None,
                    help="print this saved measurement instead of measuring")
    ap.add_argument("--save", type=Path, default=None,
                    help="where the measurement is saved (default cache/torch_coverage/torch-<release>.json)")
    args = ap.parse_args(argv)
    if args.source is not None:
        print(report(json.loads(args.source.read_text())))
        return 0
    data = measure(args.jobs, args.pattern)
    out = args.save or ROOT / "cache" / "torch_coverage" / f"torch-{data['torch']}.json"
    save(out, data)
    print(f"measurement saved in {out}", file=sys.stderr)
    print(report(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())

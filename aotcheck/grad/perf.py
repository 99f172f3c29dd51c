"""perf: BackendBench's performance score and perf@p over the OpInfo suite's results.

    forward_seconds(fn, args)   median seconds of one forward call (fresh argument copies per call,
                                made outside the timed region; grad mode on, as the checks call it)
    performance_score(rows)     geomean over ops of each op's speedup against eager (an op's
                                speedup: the geomean over its samples); a sample whose forward did
                                not pass counts as speedup 1.0, as in BackendBench
    perf_at_p(rows, p)          the fraction of ops that are correct (every counted check passes on
                                every sample) *and* faster than eager by more than ``p``

# NOTE [Timing on a shared machine]
Each sample's timing is the median of at least ``min_reps`` calls after one warm-up call,
repeated until ``budget`` seconds have passed (at most ``max_reps`` calls). Compiled calls go
through Dynamo's guards, so tiny ops show the dispatch overhead of torch.compile, which is
what a user pays. Figures from a loaded machine are noisy: compare two runs' ratios, not times.
"""
from __future__ import annotations

import math
import time
from collections import defaultdict
from typing import Any, Callable, Sequence

import torch

from .gradcheck import PASS, _clone_arg, _clone_strided, _is_differentiable
from .results import CHECKS, COUNTED, XPASS


def forward_seconds(fn: Callable[..., Any], args: Sequence[Any], *, min_reps: int = 5,
                    max_reps: int = 50, budget: float = 0.02) -> float:
    """Median seconds of ``fn(*copies of args)`` (NOTE [Timing on a shared machine])."""
    times: list[float] = []
    spent = 0.0
    for k in range(max_reps + 1):
        with torch.enable_grad():
            call = [_clone_strided(x.detach().requires_grad_()) if _is_differentiable(x) else _clone_arg(x)
                    for x in args]
            t0 = time.perf_counter()
            fn(*call)
            dt = time.perf_counter() - t0
        if k == 0:
            continue        # warm-up
        times.append(dt)
        spent += dt
        if len(times) >= min_reps and spent >= budget:
            break
    times.sort()
    return times[len(times) // 2]


def geomean(xs: Sequence[float]) -> float | None:
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def per_op_speedup(rows: Sequence) -> dict[str, float]:
    """op -> geomean over its samples (first seed) of eager seconds / compiled seconds."""
    per_op = defaultdict(list)
    first = min((r.seed for r in rows), default=0)
    for r in rows:
        if r.seed != first:
            continue
        per_op[r.op].append(r.speedup if r.forward == PASS and r.speedup else 1.0)
    return {op: geomean(v) or 1.0 for op, v in per_op.items()}


def performance_score(rows: Sequence) -> float | None:
    """Geomean over ops of their speedups; None when no sample was timed."""
    if not any(r.speedup for r in rows):
        return None
    return geomean(list(per_op_speedup(rows).values()))


def correct_ops(rows: Sequence) -> dict[str, bool]:
    """op -> every counted check of every sample passed (an op with nothing counted is not correct)."""
    out: dict[str, bool] = {}
    counted: dict[str, bool] = defaultdict(bool)
    for r in rows:
        for c in CHECKS:
            st = r.status(c)
            if st in COUNTED:
                counted[r.op] = True
                out[r.op] = out.get(r.op, True) and st in (PASS, XPASS)
            else:
                out.setdefault(r.op, True)
    return {op: ok and counted[op] for op, ok in out.items()}


def perf_at_p(rows: Sequence, p: float = 1.0) -> float | None:
    """BackendBench's fast_p: the fraction of ops that are correct and have speedup > ``p``."""
    if not any(r.speedup for r in rows):
        return None
    speed, ok = per_op_speedup(rows), correct_ops(rows)
    return sum(ok.get(op, False) and s > p for op, s in speed.items()) / len(speed) if speed else None

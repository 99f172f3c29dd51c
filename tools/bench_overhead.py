"""Per-call overhead and cold compile time of aotcheck against eager and torch's aot_function.

Prints figures and ratios; it is a benchmark, not a test (timings on shared machines are
noisy, so nothing here asserts). Usage: python tools/bench_overhead.py [--quick] [--batches K]
[--cpu-time]

``--cpu-time`` (for a machine loaded for minutes on end): the per-call figures count this
thread's CPU time (``time.thread_time``), not wall time, so the time the scheduler gives
other processes is left out; compare them only with other ``--cpu-time`` figures.

``--batches K`` (for a loaded machine): the per-call figures are each the best of K batches
of n/K calls, the batches of eager, aotcheck and aot_function interleaved, so a burst of
load from other processes lands on all three alike and the best batch shows the cost.

- per-call cost, forward and forward+backward, of a 3-op function on 8 elements;
- cold compile time of a small MLP and a 200-op pointwise chain.
Targets (issue 2): per-call at most 3x eager forward and 2x forward+backward; cold compile
no slower than functorch.compile.aot_function with a no-op compiler.
"""
from __future__ import annotations

import sys
import time

import torch

import aotcheck


# the per-call clock: wall time, or this thread's CPU time with --cpu-time
_clock = time.thread_time if "--cpu-time" in sys.argv else time.perf_counter


def small(x, y):
    return (x * y).sin() + y


def mlp(x, w1, b1, w2, b2):
    return torch.nn.functional.linear(torch.relu(torch.nn.functional.linear(x, w1, b1)), w2, b2).sum()


def chain(x):
    for i in range(200):
        x = x.sin() if i % 2 else x * 1.01
    return x.sum()


def per_call(fn, args, backward: bool, n: int) -> float:
    for _ in range(20):
        out = fn(*args)
        if backward:
            out.sum().backward()
    t0 = _clock()
    for _ in range(n):
        out = fn(*args)
        if backward:
            out.sum().backward()
    return (_clock() - t0) / n * 1e6


def side_by_side(fns, args, backward: bool, n: int, batches: int) -> list[float]:
    """Per-call microseconds of each of ``fns``: the best of ``batches`` interleaved batches."""
    per = max(1, n // batches)
    best = [float("inf")] * len(fns)
    for f in fns:
        per_call(f, args, backward, 1)         # warm
    for _ in range(batches):
        for i, f in enumerate(fns):
            t0 = _clock()
            for _ in range(per):
                out = f(*args)
                if backward:
                    out.sum().backward()
            best[i] = min(best[i], (_clock() - t0) / per * 1e6)
    return best


def noop_aot(fn):
    from functorch.compile import aot_function, nop
    return aot_function(fn, fw_compiler=nop, bw_compiler=nop)


def cold(make, args, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        f = make()
        t0 = time.perf_counter()
        out = f(*args)
        out.backward() if out.requires_grad else None
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def main() -> None:
    quick = "--quick" in sys.argv
    n = 2000 if quick else 20000
    batches = int(sys.argv[sys.argv.index("--batches") + 1]) if "--batches" in sys.argv else 1
    torch.manual_seed(0)
    x = torch.randn(8, requires_grad=True)
    y = torch.randn(8, requires_grad=True)
    xs, ys = x.detach(), y.detach()
    how = (f", best of {batches} interleaved batches" if batches > 1 else "") + \
        (", this thread's CPU time" if "--cpu-time" in sys.argv else "")
    print(f"per-call overhead, 3-op function on 8 elements ({n} calls{how}, microseconds)")
    print(f"{'':<28}{'eager':>10}{'aotcheck':>10}{'ratio':>8}{'aot_function':>14}{'ratio':>8}")
    for label, args, bw in (("forward (no grad inputs)", (xs, ys), False),
                            ("forward (grad inputs)", (x, y), False),
                            ("forward + backward", (x, y), True)):
        if batches > 1:
            e, a, t = side_by_side([small, aotcheck.aot_function(small), noop_aot(small)], args, bw, n,
                                   batches)
        else:
            e = per_call(small, args, bw, n)
            a = per_call(aotcheck.aot_function(small), args, bw, n)
            t = per_call(noop_aot(small), args, bw, n)
        print(f"{label:<28}{e:>10.1f}{a:>10.1f}{a / e:>7.1f}x{t:>14.1f}{t / e:>7.1f}x")
    print("\ncold compile + first forward and backward (best of 3, milliseconds)")
    mlp_args = (torch.randn(16, 32), torch.randn(64, 32, requires_grad=True), torch.randn(64, requires_grad=True),
                torch.randn(8, 64, requires_grad=True), torch.randn(8, requires_grad=True))
    chain_args = (torch.randn(64, requires_grad=True),)
    print(f"{'':<28}{'aotcheck':>10}{'aot_function':>14}{'ratio':>8}")
    # warm both tracers once so that one-time imports do not count
    aotcheck.aot_function(small)(x, y).sum().backward()
    noop_aot(small)(x, y).sum().backward()
    for label, fn, args in (("small MLP", mlp, mlp_args), ("200-op pointwise chain", chain, chain_args)):
        a = cold(lambda: aotcheck.aot_function(fn), args, 3)
        t = cold(lambda: noop_aot(fn), args, 3)
        print(f"{label:<28}{a:>10.1f}{t:>14.1f}{a / t:>7.2f}x")


if __name__ == "__main__":
    main()

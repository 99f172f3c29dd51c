"""Cold compile vs warm cache load, each in a fresh process.

    python tools/bench_cache.py [--functions mlp,conv,chain200,mutation] [--repeat 1]

For each function and engine, one process compiles with an empty cache
directory (cold) and another, started afterwards, loads from it (warm). Each
timed region is: build the compiled callable, first call, backward. It
*excludes* interpreter start-up and ``import torch`` (paid before the timer).

Two variants:
  incl. tracer start-up  the first fake-tensor trace in a process imports
                         torch._dynamo and friends (~1.5 s here). Both cold
                         and warm pay it, because the key needs a capture.
  excl. tracer start-up  a trivial function is traced before the timer
                         starts, so the figure is the per-function cost.

Engines: aotcheck (``aot_function(fn, cache=DIR)``) and PyTorch's
AOTAutogradCache (``torch.compile(backend="aot_eager")`` with
``force_autograd_cache`` and ``bundled_autograd_cache``, a private
``TORCHINDUCTOR_CACHE_DIR``). For torch the warm-up is a trivial
``torch.compile`` call. Figures are medians over ``--repeat`` process pairs.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

FUNCTIONS = ("mlp", "conv", "chain200", "mutation")


# ---------------------------------------------------------------- child side

def _functions(torch):
    F = torch.nn.functional

    def mlp(x, w1, b1, w2):
        return (F.relu(x @ w1 + b1) @ w2).sum()

    def conv(x, w, g, b):
        y = F.conv2d(x, w, padding=1)
        y = F.batch_norm(y, None, None, g, b, training=True)
        return F.max_pool2d(F.relu(y), 2).sum()

    def chain200(x, w):
        y = x
        for i in range(50):
            y = (y * w).sin() + 0.5
            y = y - 0.25 * i / 50
        return y.sum()

    def mutation(a, b, w):
        a.add_(w)
        a[1:].mul_(2)
        b.copy_(a * 3)
        a.view(-1)[::2].sin_()
        return (a * b).sum()

    def rg(*shape):
        return torch.randn(*shape, requires_grad=True)

    return {
        "mlp": (mlp, lambda: (torch.randn(32, 64), rg(64, 128), rg(128), rg(128, 10))),
        "conv": (conv, lambda: (torch.randn(2, 3, 16, 16), rg(8, 3, 3, 3), rg(8), rg(8))),
        "chain200": (chain200, lambda: (torch.randn(64), rg(64))),
        "mutation": (mutation, lambda: (torch.randn(4, 4), torch.randn(4, 4), rg(4, 4))),
    }


def child(name: str, engine: str, cache_dir: str, warmup: bool) -> dict:
    import torch
    fns = _functions(torch)
    fn, make = fns[name]
    args = make()
    if engine == "aotcheck":
        import aotcheck
        if warmup:
            aotcheck.aot_function(lambda x: x + 1)(torch.randn(2))
        t0 = time.perf_counter()
        compiled = aotcheck.aot_function(fn, cache=cache_dir)
        compiled(*args).backward()
        dt = time.perf_counter() - t0
        counters = {k: v for k, v in aotcheck.counters.items() if v}
    else:
        import torch._functorch.config as fconfig
        fconfig.force_autograd_cache = True
        fconfig.bundled_autograd_cache = True
        if warmup:
            torch.compile(lambda x: x + 1, backend="aot_eager")(torch.randn(2, requires_grad=True)).sum().backward()
        from torch._dynamo.utils import counters as dyn
        dyn.clear()
        t0 = time.perf_counter()
        compiled = torch.compile(fn, backend="aot_eager")
        compiled(*args).backward()
        dt = time.perf_counter() - t0
        counters = {k: v for k, v in dyn["aot_autograd"].items() if "cache" in k}
    return {"seconds": dt, "counters": counters}


# ---------------------------------------------------------------- parent side

def _spawn(name, engine, cache_dir, warmup) -> dict:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(cache_dir, "inductor"),
               PYTHONHASHSEED="0")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", name, engine, cache_dir]
    if warmup:
        cmd.append("--warmup")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"{name}/{engine} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def measure(name, engine, warmup, repeat) -> tuple[float, float, dict, dict]:
    colds, warms = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="aotcheck-bench-") as d:
            c = _spawn(name, engine, d, warmup)
            w = _spawn(name, engine, d, warmup)
            colds.append(c["seconds"])
            warms.append(w["seconds"])
    return statistics.median(colds), statistics.median(warms), c["counters"], w["counters"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--functions", default=",".join(FUNCTIONS))
    p.add_argument("--engines", default="aotcheck,torch")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--child", nargs=3, metavar=("NAME", "ENGINE", "DIR"), help=argparse.SUPPRESS)
    p.add_argument("--warmup", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        print(json.dumps(child(*a.child, a.warmup)))
        return 0
    names = a.functions.split(",")
    engines = a.engines.split(",")
    print("Each figure: seconds in a fresh process for build + first call + backward; "
          "excludes interpreter start-up and `import torch`.")
    print(f"median of {a.repeat} cold/warm process pair(s) per row\n")
    rows = []
    for warmup in (False, True):
        label = "excl. tracer start-up (a trivial trace runs before the timer)" if warmup else \
            "incl. tracer start-up (first fake-tensor trace imports torch._dynamo)"
        print(f"== {label}")
        print(f"{'function':10} {'engine':9} {'cold s':>8} {'warm s':>8} {'cold/warm':>10}  warm counters")
        for name in names:
            for engine in engines:
                cold, warm, _, wc = measure(name, engine, warmup, a.repeat)
                rows.append((warmup, name, engine, cold, warm))
                print(f"{name:10} {engine:9} {cold:8.3f} {warm:8.3f} {cold / warm:9.1f}x  {wc}")
        print()
    print("aotcheck warm vs torch warm (lower is better for aotcheck):")
    for warmup in (False, True):
        for name in names:
            ours = [r for r in rows if r[:3] == (warmup, name, "aotcheck")]
            theirs = [r for r in rows if r[:3] == (warmup, name, "torch")]
            if ours and theirs:
                print(f"  {'excl' if warmup else 'incl'} start-up  {name:10} aotcheck {ours[0][4]:.3f} s, "
                      f"torch {theirs[0][4]:.3f} s  ({theirs[0][4] / ours[0][4]:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

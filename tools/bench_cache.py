"""Cold compile vs warm cache load, each in a fresh process.

    python tools/bench_cache.py [--functions mlp,conv,chain200,mutation,gpt2] [--repeat 1]

``gpt2`` is a tiny GPT-2 (2 blocks, built here from nn modules) through
``torch.compile(backend="aotcheck")`` for aotcheck and ``backend="aot_eager"`` for torch;
for aotcheck the bench also splits each start into aotcheck's own time (the backend call
plus key, lookup and, on a miss, the pipeline) and the rest (Dynamo, and running the graphs).
Targets printed at the end: aotcheck's warm start at least 20x cheaper than its cold
compile on the small functions, and cheaper than torch's warm start on every function.

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

FUNCTIONS = ("mlp", "conv", "chain200", "mutation", "gpt2")
SMALL = ("mlp", "conv", "chain200", "mutation")


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


def _gpt2(torch):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.heads = heads

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
            mask = torch.ones(t, t, dtype=torch.bool).tril()
            att = att.masked_fill(~mask, float("-inf")).softmax(-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT2(nn.Module):
        def __init__(self, vocab=256, d=64, heads=4, layers=2, ctx=32):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
            self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
            self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
            for blk in self.blocks:
                x = blk(x)
            return F.cross_entropy(self.head(self.ln_f(x)).flatten(0, 1), idx.flatten())

    torch.manual_seed(0)
    return GPT2(), torch.randint(0, 256, (2, 32))


def _child_gpt2(torch, engine: str, cache_dir: str, warmup: bool) -> dict:
    model, idx = _gpt2(torch)
    if engine == "aotcheck":
        import aotcheck
        import aotcheck.compiled
        from aotcheck.targets.backend import aotcheck_backend
        spent = [0.0]
        compile_ = aotcheck.compiled.CompiledFunction._compile

        def timed_compile(self, *a, **k):
            t = time.perf_counter()
            try:
                return compile_(self, *a, **k)
            finally:
                spent[0] += time.perf_counter() - t
        aotcheck.compiled.CompiledFunction._compile = timed_compile

        def backend(gm, example_inputs):
            t = time.perf_counter()
            try:
                return aotcheck_backend(gm, example_inputs, options={"cache": cache_dir})
            finally:
                spent[0] += time.perf_counter() - t
        if warmup:
            torch.compile(lambda x: x + 1, backend=backend)(torch.randn(2))
            spent[0] = 0.0
        t0 = time.perf_counter()
        torch.compile(model, backend=backend)(idx).backward()
        dt = time.perf_counter() - t0
        return {"seconds": dt, "aotcheck_seconds": spent[0],
                "counters": {k: v for k, v in aotcheck.counters.items() if v}}
    return _child_torch(torch, model, (idx,), warmup)


def _child_torch(torch, fn, args, warmup: bool) -> dict:
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
    return {"seconds": dt, "counters": {k: v for k, v in dyn["aot_autograd"].items() if "cache" in k}}


def child(name: str, engine: str, cache_dir: str, warmup: bool) -> dict:
    import torch
    if name == "gpt2":
        return _child_gpt2(torch, engine, cache_dir, warmup)
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
        return _child_torch(torch, fn, args, warmup)
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
    return statistics.median(colds), statistics.median(warms), c, w


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
                cold, warm, c, w = measure(name, engine, warmup, a.repeat)
                rows.append((warmup, name, engine, cold, warm))
                print(f"{name:10} {engine:9} {cold:8.3f} {warm:8.3f} {cold / warm:9.1f}x  {w['counters']}")
                if "aotcheck_seconds" in w:
                    for label, r in (("cold", c), ("warm", w)):
                        ours = r["aotcheck_seconds"]
                        print(f"{'':10} {'':9} {label}: aotcheck {ours:.3f} s, Dynamo and running the "
                              f"graphs {r['seconds'] - ours:.3f} s ({100 * ours / r['seconds']:.0f}% aotcheck)")
        print()
    print("aotcheck warm vs torch warm (lower is better for aotcheck):")
    for warmup in (False, True):
        for name in names:
            ours = [r for r in rows if r[:3] == (warmup, name, "aotcheck")]
            theirs = [r for r in rows if r[:3] == (warmup, name, "torch")]
            if ours and theirs:
                print(f"  {'excl' if warmup else 'incl'} start-up  {name:10} aotcheck {ours[0][4]:.3f} s, "
                      f"torch {theirs[0][4]:.3f} s  ({theirs[0][4] / ours[0][4]:.1f}x)")
    print("\ntargets (incl. tracer start-up, the figure a new process pays):")
    for name in names:
        ours = [r for r in rows if r[:3] == (False, name, "aotcheck")]
        theirs = [r for r in rows if r[:3] == (False, name, "torch")]
        if not ours:
            continue
        cold, warm = ours[0][3], ours[0][4]
        line = f"  {name:10} cold/warm {cold / warm:6.1f}x"
        if name in SMALL:
            line += f" ({'meets' if cold / warm >= 20 else 'MISSES'} >= 20x)"
        if theirs:
            line += f"; warm {warm:.3f} s vs torch warm {theirs[0][4]:.3f} s " \
                    f"({'cheaper' if warm < theirs[0][4] else 'NOT cheaper'})"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Partitioners side by side: aotcheck's default, aotcheck's min-cut, PyTorch's min-cut.

Prints, per function and partitioner, in one run on the same inputs:

- saved activations: the bytes of the distinct storages the forward saves for the
  backward (seen by ``torch.autograd.graph.saved_tensors_hooks``), not counting storages
  that belong to the inputs;
- forward+backward time: best of N (and the median, whose distance from the best is the
  noise), the partitioners interleaved round by round so that load hits them alike; by
  default this thread's CPU time with one torch thread, which other processes' load
  disturbs far less than wall time (``--wall`` for wall time);
- peak memory: the CPU allocator's peak above the start of one forward+backward
  (``torch.profiler`` memory events).

PyTorch's min-cut is ``functorch.compile.aot_function(fn, nop, nop,
partition_fn=min_cut_rematerialization_partition)``. Target (issue 14): aotcheck's
min-cut saves at most what PyTorch's saves on each function, and is at most 10% slower
forward+backward. It prints the ratios and, per function, whether each target holds; it
asserts nothing (timings on shared machines are noisy). Usage:

    python tools/bench_partition.py [--rounds N] [--quick] [--wall] [--threads N]
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import aotcheck


# ---------------------------------------------------------------- the functions


def chain20(x):
    for i in range(20):
        x = x.sin() if i % 2 else x * 1.01
    return x


def gelu_mlp(x, w1, w2):
    return F.gelu(x @ w1) @ w2


def layer_norm_softmax(x, w, b):
    return torch.softmax(F.layer_norm(x, (x.shape[-1],), w, b), dim=-1)


def transformer_block(x, ln1_w, ln1_b, w_qkv, w_o, ln2_w, ln2_b, w_up, w_down):
    b, s, d = x.shape
    heads = 4
    h = F.layer_norm(x, (d,), ln1_w, ln1_b)
    q, k, v = (h @ w_qkv).chunk(3, dim=-1)
    q, k, v = (t.reshape(b, s, heads, d // heads).transpose(1, 2) for t in (q, k, v))
    att = torch.softmax(q @ k.transpose(-1, -2) / (d // heads) ** 0.5, dim=-1)
    y = (att @ v).transpose(1, 2).reshape(b, s, d) @ w_o
    x = x + y
    h = F.layer_norm(x, (d,), ln2_w, ln2_b)
    return x + F.gelu(h @ w_up) @ w_down


def _randn(*shape, scale=1.0):
    return (torch.randn(*shape) * scale).requires_grad_()


FUNCTIONS = {
    "pointwise chain 20 ops 1024x256": (chain20, lambda: (_randn(1024, 256),)),
    "gelu mlp 256x512 @ 512x512": (gelu_mlp, lambda: (_randn(256, 512), _randn(512, 512, scale=0.05),
                                                      _randn(512, 512, scale=0.05))),
    "layer_norm+softmax 1024x256": (layer_norm_softmax, lambda: (_randn(1024, 256), _randn(256),
                                                                 _randn(256))),
    "transformer block 4x64x128": (transformer_block, lambda: (
        _randn(4, 64, 128), _randn(128), _randn(128), _randn(128, 384, scale=0.05),
        _randn(128, 128, scale=0.05), _randn(128), _randn(128), _randn(128, 512, scale=0.05),
        _randn(512, 128, scale=0.05))),
}


def torch_mincut(fn):
    from functorch.compile import aot_function, min_cut_rematerialization_partition, nop
    return aot_function(fn, fw_compiler=nop, bw_compiler=nop,
                        partition_fn=min_cut_rematerialization_partition)


PARTITIONERS = {
    "aotcheck default": lambda fn: aotcheck.aot_function(fn, partitioner="default"),
    "aotcheck mincut": lambda fn: aotcheck.aot_function(fn, partitioner="mincut"),
    "torch mincut": torch_mincut,
}


# ---------------------------------------------------------------- the measurements


def _step(compiled, args, grad):
    out = compiled(*args)
    out.backward(grad)


def saved_bytes(compiled, args) -> int:
    """Bytes of the distinct non-input storages the forward saves for the backward."""
    inputs = {a.untyped_storage().data_ptr() for a in args}
    seen: dict[int, int] = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in inputs:
            seen[st.data_ptr()] = st.nbytes()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = compiled(*args)
    del out
    return sum(seen.values())


def peak_bytes(compiled, args, grad) -> int:
    from torch.profiler import ProfilerActivity, profile
    for a in args:
        a.grad = None
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        _step(compiled, args, grad)
    events = sorted((e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"),
                    key=lambda e: e.start_ns())
    live = peak = 0
    for e in events:
        live += e.nbytes()
        peak = max(peak, live)
    return peak


_clock = time.thread_time


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=30, help="timed rounds per partitioner")
    ap.add_argument("--quick", action="store_true", help="5 rounds, for a smoke run")
    ap.add_argument("--wall", action="store_true", help="time wall-clock instead of this thread's "
                    "CPU time (CPU time is steadier on a loaded machine)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1: "
                    "all the work runs on this thread, so its CPU time is the whole cost)")
    args = ap.parse_args(argv)
    global _clock
    _clock = time.perf_counter if args.wall else time.thread_time
    torch.set_num_threads(args.threads)
    rounds = 5 if args.quick else args.rounds
    torch.manual_seed(0)
    clock = "wall time" if args.wall else "thread CPU time"
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {clock}, best of {rounds} "
          "rounds (interleaved); saved and peak in MB (1e6 bytes), inputs excluded from saved")
    header = f"| function | partitioner | saved MB | fwd+bwd ms best | median | noise | peak MB |"
    print(header)
    print("|" + "---|" * 7)
    verdicts = []
    for fname, (fn, make) in FUNCTIONS.items():
        inputs = make()
        grad = torch.randn_like(fn(*inputs))
        compiled = {name: make_c(fn) for name, make_c in PARTITIONERS.items()}
        for c in compiled.values():           # compile, and warm up
            for _ in range(3):
                _step(c, inputs, grad)
        times = {name: [] for name in compiled}
        for _ in range(rounds):
            for name, c in compiled.items():
                t0 = _clock()
                _step(c, inputs, grad)
                times[name].append(_clock() - t0)
        rows = {}
        for name, c in compiled.items():
            best, med = min(times[name]), statistics.median(times[name])
            rows[name] = (saved_bytes(c, inputs), best, med, peak_bytes(c, inputs, grad))
            s, b, m, p = rows[name]
            print(f"| {fname} | {name} | {s / 1e6:.3f} | {b * 1e3:.2f} | {m * 1e3:.2f} | "
                  f"{(m - b) / b:+.0%} | {p / 1e6:.2f} |")
        ours, theirs = rows["aotcheck mincut"], rows["torch mincut"]
        verdicts.append((fname, ours[0] <= theirs[0], ours[0] / max(theirs[0], 1),
                         ours[1] / theirs[1], ours[2] / theirs[2]))
    print()
    print("| function | mincut saved <= torch's | saved ratio | time ratio best | time ratio median |"
          " time <= 1.10 |")
    print("|" + "---|" * 6)
    for fname, ok, sr, tr, mr in verdicts:
        print(f"| {fname} | {'yes' if ok else 'NO'} | {sr:.2f} | {tr:.3f} | {mr:.3f} | "
              f"{'yes' if tr <= 1.10 else 'NO'} |")


if __name__ == "__main__":
    main()

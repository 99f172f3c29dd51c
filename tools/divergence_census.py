"""Gather real problem messages and the fingerprints the code gives them (issue 37, item 4).

    python tools/divergence_census.py OUT.json [--engines aotcheck,torch,...] [--no-engines]

Sources, in order:

- *planted*: every corpus case against wrong "compiled" functions (``MUTANTS``: outputs
  detached, cloned, scaled, on copied arguments, raising, ...) through the harness's
  ``check_case`` (call modes and states included), plus a few hand-made pairs for the rarer
  checks (``PAIRS``); all eager, so fast;
- *engines*: the corpus through the regression command's runner (``aotcheck.regress.run``),
  every stage and the key-variation phase, keeping every problem of every outcome;
- *harness*: the problems the harness, the fuzzer and the key-variation phase write themselves,
  one example each, and one oracle record of each check kind again in each place the harness
  says it saw it (``in state K: ``, ``run that fills the cache: ``).

Each distinct problem's sentence is written with ``aotcheck.regress.fingerprint.fingerprint``
and ``aotcheck.fuzz.fingerprint.check_kind`` of the problem as the installed code computes them;
sentences that differ only in their numbers are kept once. ``tests/test_divergence_prints.py``
pins the result. ``tests/divergence_prints.json`` was written by this tool as of commit 73dbd72,
when problems were sentences and fingerprints parsed them (a run over every source, re-pinned
without its duplicate prefixed sentences): a rerun re-pins today's fingerprints, which is right
only when a fingerprint change is meant.
"""
from __future__ import annotations

import argparse
import json
import re
import sys

import torch
from torch.utils import _pytree as pytree


def _each_tensor(out, f):
    return pytree.tree_map(lambda t: f(t) if isinstance(t, torch.Tensor) else t, out)


def _floating(t):
    return t.is_floating_point() or t.is_complex()


class _DoubleGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g * 2


class _RaisingGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("planted failure in backward of shape [2, 3]")


class BackendCompilerFailed(Exception):
    """Named as Dynamo's wrapper, whose first line ends in "raised:"."""


def _through(fn_cls):
    def wrap(t):
        return fn_cls.apply(t) if t.requires_grad and t.is_floating_point() else t
    return wrap


def _plain(t) -> bool:
    """A dense tensor of torch's own type with memory behind it (cloning others can crash)."""
    return type(t) in (torch.Tensor, torch.nn.Parameter) and t.layout == torch.strided and \
        not t.is_inference() and (t.numel() == 0 or t.untyped_storage().nbytes() > 0)


def _copy(t):
    if not isinstance(t, torch.Tensor) or not _plain(t):
        return t
    return t.detach().clone().requires_grad_(t.requires_grad) if t.is_leaf else t.clone()


def _copied_args(fn):
    def g(*a, **k):
        a, k = pytree.tree_map(_copy, (a, k))
        return fn(*a, **k)
    return g


def _raising(exc):
    def mutant(fn):
        def g(*a, **k):
            raise exc
        return g
    return mutant


def _outputs(f):
    def mutant(fn):
        return lambda *a, **k: _each_tensor(fn(*a, **k), f)
    return mutant


def _rng_first(fn):
    def g(*a, **k):
        torch.rand(1)
        return fn(*a, **k)
    return g


def _first_item(fn):
    def g(*a, **k):
        flat, spec = pytree.tree_flatten(fn(*a, **k))
        flat = [x.detach().sum().item() if isinstance(x, torch.Tensor) and k_ == 0 else x
                for k_, x in enumerate(flat)]
        return pytree.tree_unflatten(flat, spec)
    return g


MUTANTS = {
    "detach": _outputs(lambda t: t.detach()),
    "clone": _outputs(lambda t: t.clone()),
    "scale": _outputs(lambda t: t * 1.01 + 0.01 if _floating(t) else t + 1 if t.dtype != torch.bool else ~t),
    "double": _outputs(lambda t: t.double() if t.is_floating_point() else t),
    "transposed": _outputs(lambda t: t.t().contiguous().t() if t.dim() == 2 else t),
    "leaf": _outputs(lambda t: t.detach().requires_grad_() if t.is_floating_point() else t),
    "double_grad": _outputs(_through(_DoubleGrad)),
    "raising_grad": _outputs(_through(_RaisingGrad)),
    "copied_args": _copied_args,
    "rng": _rng_first,
    "item": _first_item,
    "tuple": lambda fn: (lambda *a, **k: (fn(*a, **k), None)),
    "raise": _raising(RuntimeError("planted: shape '[3, 4]' is invalid for input of size 7")),
    "raise_backend": _raising(BackendCompilerFailed(
        "backend='aot_eager' raised:\nAssertionError: outs_to_grad length (1) != tangents length (2)")),
    "raise_inductor": _raising(BackendCompilerFailed(
        "backend='inductor' raised:\nLoweringException: planted lowering failure for 'aten.add'")),
}


def planted_problems(cases) -> list:
    """The harness's problems for each corpus case against each of ``MUTANTS``."""
    from aotcheck.check.harness import check_case
    out = []
    for case in cases:
        for name, mutant in MUTANTS.items():
            try:
                out += check_case(case, mutant(case.fn)).divergences
            except Exception as e:  # noqa: BLE001 - a mutant the oracle cannot compare: skipped
                print(f"  {case.id} x {name}: oracle raised {type(e).__name__}: {e}", file=sys.stderr)
    return out


def pair_problems() -> list:
    """Hand-made pairs for checks the mutants do not reach."""
    from aotcheck.check.oracle import Inputs, check
    x = lambda: Inputs((torch.randn(2, 3),))                      # noqa: E731
    leaf = lambda: (lambda t: Inputs((t,), leaves=(t,)))(torch.randn(2, 3, requires_grad=True))  # noqa: E731

    def raises(t):
        raise ValueError("eager says no")

    def bw_eager(t):
        return _RaisingGrad.apply(t * 1)

    def retained(t):
        y = t * 2
        y.retain_grad()
        return y

    def made_leaf(t):
        return torch.ones(2, requires_grad=True), t * 2

    def made_leaf_wrong(t):
        return torch.ones(2, requires_grad=True) * 1, t * 2

    def made_leaf_grad(t):
        w = torch.ones(2, requires_grad=True)
        return w, t * 2 + w.sum()

    def views(t):
        y = t + 1
        return y[0], y[1]

    def bool_out(t):
        return t > 0

    def bool_rejects(t):
        return (t > 0).expand(2, 2, 3)

    def offset(t):
        t.set_(t.detach().clone().view(-1)[1:].view(-1))  # noqa: E501 - a storage offset differs
        return t + 0

    def resized(t):
        t.untyped_storage().resize_(0)
        return t.new_zeros(1)

    def type_changed(t):
        return torch.nn.Parameter(t.detach() + 0)

    def fake(t):
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode():
            return torch.empty(2, 3)

    def two(t):
        from torch.testing._internal.two_tensor import TwoTensor
        return TwoTensor(t + 0, t * 2)

    def two_of_two(t):
        from torch.testing._internal.two_tensor import TwoTensor
        return TwoTensor(t + 0, TwoTensor(t * 2, t * 3))

    def overlapping(t):
        y = t * 2
        return y.view(-1), y[0]

    def apart(t):
        y = t * 2
        buf = torch.empty(9, dtype=y.dtype)
        buf[:6].copy_(y.view(-1))
        buf[6:].copy_(y[0])
        return buf[:6], buf[6:]

    zeros = lambda: Inputs((torch.zeros(2, 3),))                    # noqa: E731
    ints = lambda: Inputs((torch.arange(6).view(2, 3),))            # noqa: E731
    pairs = [
        (lambda t: t + 0, fake, x, {"backward": False}),
        (lambda t: t + 0, two, x, {"backward": False}),
        (two, two_of_two, x, {"backward": False}),
        (two, lambda t: two(t + 1), x, {"backward": False}),
        (lambda t: t[0], lambda t: t[1], zeros, {"backward": False}),
        (overlapping, apart, ints, {"backward": False}),
        (raises, lambda t: t + 1, x, {}),
        (bw_eager, lambda t: t * 1, leaf, {}),
        (retained, lambda t: t * 2, leaf, {}),
        (retained, lambda t: (t * 2).detach().requires_grad_(), leaf, {}),
        (made_leaf, made_leaf_wrong, leaf, {}),
        (made_leaf_grad, made_leaf, leaf, {}),
        (views, lambda t: ((t + 1)[0], (t + 1)[1]), x, {"backward": False}),
        (lambda t: (t + 1, t + 1), lambda t: (lambda y: (y, y))(t + 1), x, {"backward": False}),
        (bool_out, bool_rejects, x, {"backward": False}),
        (lambda t: t.t(), lambda t: t.t().contiguous().expand(3, 2), x, {"backward": False}),
        (lambda t: t[1:], lambda t: t[1:].clone(), x, {"backward": False}),
        (resized, lambda t: t.new_zeros(1), x, {"backward": False}),
        (lambda t: t + 0, type_changed, x, {"backward": False}),
        (lambda t: (t[0].add_(1), 3), lambda t: (t[0].add_(1), 4), x, {"backward": False}),
        (lambda t: [t + 1], lambda t: (t + 1,), x, {"backward": False}),
        (offset, lambda t: t + 0, x, {"backward": False}),
    ]
    out = []
    for f, g, make, kw in pairs:
        for a, b in ((f, g), (g, f)):
            try:
                out += check(a, b, make, **kw).divergences
            except Exception as e:  # noqa: BLE001
                print(f"  pair {a.__name__}: oracle raised {type(e).__name__}: {e}", file=sys.stderr)
    return out


def engines(cases, names: list[str]) -> list:
    from aotcheck.regress import record as records, run as regress_run
    from aotcheck.regress.plan import Plan
    plan = Plan(tuple(names), cached=True, variations=True, backward=True)
    result = regress_run.run(cases, plan, records.load(None), jobs=regress_run.default_jobs())
    return [p for o in result.outcomes for p in o.problems]


def _harness() -> list:
    """One example of each problem the harness, the fuzzer and the key-variation phase write
    themselves (records, or the sentences of NOTE [harness sentences without a record]), and the
    oracle's records no planted pair reaches."""
    from aotcheck.check.divergence import APART, SHARED, Check, Divergence as D, Subject
    return [
        D(Check.HARNESS_RAISED, error="RuntimeError: planted harness failure at 0x7f3a (3, 4)"),
        D(Check.HARNESS_RAISED, error="KeyError: 'planted'", detail="in the key-variation phase"),
        "stale hit: an entry written under A was served under B (hits=1 misses=0 bypasses=0) and differs "
        "from eager: output 0 values: Tensor-likes are not close!",
        "lost hit: hits=0 misses=1 bypasses=0; B changes nothing the graph depends on",
        "fails under b: no hit (hits=0 misses=1 bypasses=0); compiled under B differs from eager: "
        "output 0 requires_grad: eager True, compiled False",
        "unkeyed hit: every graph hit (hits=1 misses=0 bypasses=0) although B changed grad_mode",
        "STALE HIT: grad_mode no_grad -> enabled: output 0 requires_grad",
        D(Check.STATE_LEAK, detail="inference mode off before"),
        D(Check.ORACLE_RAISED, error="RuntimeError: planted oracle failure"),
        D(Check.CACHED_RUN_MISS, actual="hits=0 misses=1 bypasses=0"),
        D(Check.CACHE_MISS, actual="hits=0 misses=1 bypasses=0"),
        "warm worker failed: BrokenProcessPool: A process in the process pool was terminated abruptly",
        "key variation grad_mode[call]=no_grad: STALE HIT: output 0 requires_grad: eager False, compiled True",
        D(Check.GRAPH_BREAK, detail="graph_break: Unsupported Tensor.item() call 7"),
        D(Check.GRAPH_BREAK, detail="skipped frame: 'f' (torch/_dynamo/x.py:12); b"),
        D(Check.NO_GRAPH),
        D(Check.COMPILED_RAISED, error="WorkerCrash: crashed the worker process in this run (a signal such "
                                       "as SIGSEGV while this case ran; confirmed alone in a fresh worker)"),
        D(Check.COMPILED_RAISED, error="CacheError: expected cache hits only, got a miss for 'f'"),
        D(Check.COMPILED_RAISED, error="RuntimeError: first line\nsecond line (3, 4)"),
        D(Check.COMPILED_RAISED, error="BackendCompilerFailed: backend='aot_eager' raised:\nRuntimeError: "
                                       "wrapped 'x'"),
        D(Check.COMPILED_RAISED, error="RuntimeError: "),
        D(Check.BACKWARD_RAISED, error="RuntimeError: "),
        "not run: recorded as crashing the process",
        # the sharing check, which no planted pair reaches (equal alias maps, other pairs)
        D(Check.SHARING, Subject.output(0), other=Subject.argument(0), expected=SHARED, actual=APART),
        D(Check.SHARING, Subject.output(1), other=Subject.output(2), expected=APART, actual=SHARED),
        # a fake or functional tensor that escaped tracing (this torch build only warns for FakeTensor)
        D(Check.UNREADABLE, Subject.output(1), detail="FunctionalTensor: Cannot access data pointer of "
                                                      "Tensor (e.g. FakeTensor, FunctionalTensor). If you're using "),
    ]


# the harness's places: a case's state K, the run that fills the cache, both
PLACES = ({"state": 0}, {"state": 12}, {"cache_fill": True}, {"state": 1, "cache_fill": True})


def with_places(problems) -> list:
    """One oracle record of each fuzz check kind again in each of the harness's places."""
    from dataclasses import replace

    from aotcheck.check.divergence import Check
    from aotcheck.fuzz.fingerprint import check_kind
    harness = {Check.GRAPH_BREAK, Check.NO_GRAPH, Check.CACHE_MISS, Check.CACHED_RUN_MISS,
               Check.HARNESS_RAISED, Check.ORACLE_RAISED, Check.STATE_LEAK}
    bare = [p for p in problems if not isinstance(p, str) and p.check not in harness
            and p.state is None and not p.cache_fill]
    one = {check_kind([p])[:40]: p for p in reversed(bare)}
    return [replace(p, **place) for place in PLACES for p in one.values()]


def _shape(message: str) -> str:
    return re.sub(r"\d+", "N", message)


def pin(problems) -> list[dict]:
    from aotcheck.fuzz.fingerprint import check_kind
    from aotcheck.regress.fingerprint import fingerprint
    seen, out = set(), []
    for p in problems:
        if _shape(str(p)) in seen:
            continue
        seen.add(_shape(str(p)))
        fp = fingerprint([p])
        out.append({"message": str(p), "fingerprint": fp.to_dict() if fp else None, "check": check_kind([p])})
    return out


def gather(args) -> list:
    from aotcheck.check.corpus import all_cases
    cases = all_cases()
    found = planted_problems(cases) + pair_problems()
    print(f"planted: {len(found)} problems", file=sys.stderr)
    if not args.no_engines:
        real = engines(cases, args.engines.split(","))
        print(f"engines: {len(real)} problems", file=sys.stderr)
        found += real
    return found


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--engines", default="aotcheck,torch,torch-aot-function,torch-inductor-lite")
    p.add_argument("--no-engines", action="store_true")
    args = p.parse_args(argv)
    found = gather(args)
    rows = pin(found + _harness() + with_places(found))
    with open(args.out, "w") as f:
        json.dump({"schema": 1, "messages": rows}, f, indent=0, ensure_ascii=False)
        f.write("\n")
    print(f"{len(rows)} distinct messages -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

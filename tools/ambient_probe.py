"""Trace a set of small programs under each varied value of each census setting, and say
which graphs changed: the evidence behind ``aotcheck/cache/census.py``'s roles.

    python tools/ambient_probe.py                    # every setting with a domain
    python tools/ambient_probe.py --only sdp_flash autocast_dtype[cpu]
    python tools/ambient_probe.py --check            # exit 1 where a "(probe" record disagrees

For each setting with a ``domain`` and each value in it, every program is explained
(``aotcheck.explain``: captured, forward and backward graphs and the decision) as the
process is, and again with the setting varied. A program whose two explanations under the
unchanged settings already differ (an LSTM's backward names its outputs in a varying order)
is left out and named. One line per value::

    sdp_flash = False: graph differs in sdpa, mha, encoder
    cudnn_benchmark = True: equal graphs

``--check`` holds the records whose ``why`` cites the probe to it: one in the key must
change some program's graph, one out of it none. A record that needs a package this
process lacks (opt_einsum) is reported, not held.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import sys
import warnings
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

import aotcheck
from aotcheck.cache.census import PROBE_MARK, Role, census, exists, varied


@dataclass(frozen=True)
class Program:
    name: str
    fn: Callable
    inputs: Callable[[], tuple]
    context: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext


def _r(*shape, grad=False, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype, requires_grad=grad)


def _autocast_mm(x, w):
    with torch.autocast("cpu"):
        return x @ w


def _autocast_leaves_twice(x, w):
    with torch.autocast("cpu"):
        return (x @ w.mT) + (x @ w)


def _factory(x):
    return x + torch.ones(3), torch.arange(3.0), torch.tensor([1.5, 2.0])


def _sdpa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)


def _sdpa_math(q, k, v):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.MATH):
        return F.scaled_dot_product_attention(q, k, v)


def _einsum(a, b, c):
    return torch.einsum("ij,jk,kl->il", a, b, c)


def _scatter(x, v):
    idx = torch.tensor([0, 1, 1, 3])
    return x.index_put((idx,), v, accumulate=True), x.index_add(0, idx, v), x.cumsum(0)


def _pointwise(x):
    return (x * 2).sin().sum()


def _conv(x, w):
    return F.conv2d(x, w)


def _batch_norm(x, w, b):
    return F.batch_norm(x, torch.zeros(3), torch.ones(3), w, b, training=True)


def _interpolate(x):
    return F.interpolate(x, scale_factor=2, mode="bilinear")


def _matmul(x, w):
    return (x @ w).sin()


def _embedding_bag(i, w):
    return F.embedding_bag(i, w, torch.tensor([0, 3]), mode="sum")


def _empty(x):
    return torch.empty(3).isnan().sum() + x.sum()


_MHA = torch.nn.MultiheadAttention(8, 2, batch_first=True).eval().requires_grad_(False)
_LSTM = torch.nn.LSTM(4, 4, batch_first=True).requires_grad_(False)


def _mha(x):
    return _MHA(x, x, x, need_weights=False)[0]


def _lstm(x):
    return _LSTM(x)[0]


_LIB = None


def _no_autograd_op(x):
    """An op with a CPU kernel and no autograd kernel (autograd's fallback decides its grad)."""
    global _LIB
    if _LIB is None:
        _LIB = torch.library.Library("ambient_probe", "DEF")
        _LIB.define("double(Tensor x) -> Tensor")
        _LIB.impl("double", lambda t: t * 2, "CPU")
        _LIB.impl("double", lambda t: torch.empty_like(t), "Meta")
    return torch.ops.ambient_probe.double(x).sin()


PROGRAMS = (
    Program("autocast_mm", _autocast_mm, lambda: (_r(3, 3), _r(3, 3))),
    Program("autocast_leaves_twice", _autocast_leaves_twice, lambda: (_r(3, 3, grad=True), _r(3, 3, grad=True))),
    Program("factory", _factory, lambda: (_r(3),)),
    Program("empty", _empty, lambda: (_r(3),)),
    Program("sdpa", _sdpa, lambda: tuple(_r(1, 2, 4, 8, grad=True) for _ in range(3))),
    Program("sdpa_math_bf16", _sdpa_math, lambda: tuple(_r(1, 2, 4, 8, dtype=torch.bfloat16) for _ in range(3))),
    Program("einsum", _einsum, lambda: (_r(2, 5), _r(5, 7), _r(7, 3))),
    Program("scatter", _scatter, lambda: (_r(5, grad=True), _r(4, grad=True))),
    Program("pointwise", _pointwise, lambda: (_r(4, grad=True),)),
    Program("conv", _conv, lambda: (_r(1, 2, 6, 6, grad=True), _r(3, 2, 3, 3, grad=True))),
    Program("batch_norm", _batch_norm, lambda: (_r(2, 3, 4, 4), _r(3, grad=True), _r(3, grad=True))),
    Program("interpolate", _interpolate, lambda: (_r(1, 2, 4, 4, grad=True),)),
    Program("matmul", _matmul, lambda: (_r(3, 4, grad=True), _r(4, 5, grad=True))),
    Program("embedding_bag", _embedding_bag, lambda: (torch.randint(0, 10, (6,)), _r(10, 3, grad=True))),
    Program("mha", _mha, lambda: (_r(1, 3, 8),), torch.no_grad),
    Program("lstm", _lstm, lambda: (_r(2, 3, 4),), torch.no_grad),
    Program("no_autograd_op", _no_autograd_op, lambda: (_r(4, grad=True),)),
)


def explain_text(p: Program, args: tuple) -> str:
    with p.context():
        try:
            return str(aotcheck.explain(p.fn, *args, print_result=False))
        except Exception as e:  # noqa: BLE001 - a refusal under one value is a difference too
            return f"raised {type(e).__name__}: {e}"


def baseline(programs=PROGRAMS) -> tuple[dict, list[str]]:
    """(inputs and explanation per stable program, the names of the unstable ones)."""
    out, unstable = {}, []
    for p in programs:
        torch.manual_seed(0)
        args = p.inputs()
        a = explain_text(p, args)
        if explain_text(p, args) != a:
            unstable.append(p.name)
            continue
        out[p.name] = (p, args, a)
    return out, unstable


def probe_value(setting, value_expr: str, base: dict) -> tuple[str, list[str]]:
    """``(the value, as text; the programs whose explanation changed)`` under one varied value."""
    with varied(setting, value_expr) as value:
        changed = [name for name, (p, args, a) in base.items() if explain_text(p, args) != a]
    return repr(value), changed


def _missing_package(setting) -> str | None:
    if setting.name.startswith("opt_einsum") and importlib.util.find_spec("opt_einsum") is None:
        return "opt_einsum is not installed: einsum takes no contraction path"
    return None


def disagreement(setting, changed_any: bool) -> str | None:
    """Why a record that cites the probe disagrees with it, or None."""
    if not PROBE_MARK.search(setting.why):
        return None
    if setting.role is Role.KEY and not changed_any:
        return f"{setting.name} is in the key, but no program's graph changed"
    if setting.role is Role.OUT and changed_any:
        return f"{setting.name} is out of the key, but a program's graph changed"
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", default=None, help="setting names")
    ap.add_argument("--check", action="store_true", help="exit 1 where a record citing the probe disagrees")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    base, unstable = baseline()
    if unstable:
        print(f"left out (their graphs differ between two traces): {', '.join(unstable)}")
    bad = []
    for s in census():
        if not s.domain or not exists(s) or (args.only and s.name not in args.only):
            continue
        missing = _missing_package(s)
        changed_any = False
        for expr in s.domain:
            value, changed = probe_value(s, expr, base)
            changed_any = changed_any or bool(changed)
            print(f"{s.name} = {value}: " + (f"graph differs in {', '.join(changed)}" if changed
                                             else "equal graphs") + f"  [{s.role.value}]")
        why = None if missing else disagreement(s, changed_any)
        if missing:
            print(f"  (not held: {missing})")
        if why:
            bad.append(why)
    for line in bad:
        print(f"DISAGREES: {line}")
    return 1 if args.check and bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""The behavioural probe of ``tools/mutate_torch.py``: does a mutant change what torch does?

Run as a script (``python tools/mutant_probe.py OUT.json``) under the torch to probe. It runs a
fixed set of small programs, each through ``torch.compile(backend="aot_eager")`` (``dyn``, the
min-cut partitioner), ``functorch.compile.aot_function`` with no-op compilers (``aotf``, the
default partitioner, no Dynamo in front), and, for the cache programs, AOTAutogradCache: compile
under condition A into a fresh cache directory, ``torch._dynamo.reset()``, then call under
condition B (one key component changed) through the same directory.

Each program's fingerprint is written as JSON: values (rounded), dtype, shape, strides, storage
offset, requires_grad, whether an output is an argument, the arguments after the call, the
leaves' gradients, the exception type where one was raised, and for the cache programs the
AOTAutogradCache hits and misses. The harness runs it once on stock torch and once per mutant:
a mutant whose fingerprints all equal stock's is treated as equivalent
(NOTE [equivalent mutants] in mutate_torch.py). Nothing here compares with eager: the
reference is stock torch.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile


def main(out_path: str) -> int:
    import torch
    import torch._dynamo
    import torch._functorch.config as fconfig
    from functorch.compile import aot_function, nop
    from torch._dynamo.utils import counters

    def fp(x):
        if isinstance(x, torch.Tensor):
            v = x.detach()
            vals = v.float().flatten()[:12].tolist() if v.dtype.is_floating_point else \
                v.flatten()[:12].tolist()
            return {"dtype": str(x.dtype), "shape": list(x.shape), "stride": list(x.stride()),
                    "offset": x.storage_offset(), "rg": x.requires_grad,
                    "grad_fn": None if x.grad_fn is None else type(x.grad_fn).__name__,
                    "vals": [round(float(a), 4) for a in vals]}
        if isinstance(x, (list, tuple)):
            return [fp(a) for a in x]
        return repr(x)

    def err(e):
        return {"error": type(e).__name__, "msg": str(e).splitlines()[0][:120] if str(e) else ""}

    # ------------------------------------------------------------ programs (fn, make_args, leaves)

    def leaf(*shape, rg=True):
        return torch.randn(*shape, requires_grad=rg)

    programs = {}

    def program(name):
        def deco(f):
            programs[name] = f
            return f
        return deco

    @program("mut_nonleaf")
    def _():
        def f(x, w):
            x.mul_(2)
            return x * w
        lx, w = leaf(3), leaf(3)
        return f, lambda: (lx.clone(), w), (lx, w)

    @program("mut_buffer_nograd")
    def _():
        def f(x, b):
            with torch.no_grad():
                b.add_(1)
            return x * b
        x = leaf(3)
        b0 = torch.randn(3)
        return f, lambda: (x, b0.clone()), (x,)

    @program("mut_leaf_under_nograd")
    def _():
        def f(x):
            with torch.no_grad():
                x.mul_(2)
            return x * 3
        x0 = torch.randn(3)
        holder = {}

        def make():
            holder["x"] = x0.clone().requires_grad_()
            return (holder["x"],)
        return f, make, None

    @program("mut_detached")
    def _():
        def f(x):
            x.detach().mul_(2)
            return x + 1
        x0 = torch.randn(3)
        return f, lambda: (x0.clone().requires_grad_(),), None

    @program("mut_grad_input_data")
    def _():
        def f(x, y):
            y.add_(x)
            return y.sum()
        lx, ly = leaf(3), leaf(3)
        return f, lambda: (lx, ly.clone()), (lx, ly)

    @program("meta_transpose")
    def _():
        def f(x):
            x.t_()
            return x + 1
        lx = leaf(2, 3)
        return f, lambda: (lx.clone(),), (lx,)

    @program("meta_offset")
    def _():
        def f(x):
            x.as_strided_((2,), (1,), 1)
            return x * 2
        x0 = torch.randn(4)
        return f, lambda: (x0.clone(),), None

    @program("meta_offset_grad")
    def _():
        def f(x):
            x.as_strided_((2, 2), (2, 1), 2)
            return x * 2
        lx = leaf(6)
        return f, lambda: (lx.clone(),), (lx,)

    @program("set_nograd")
    def _():
        def f(x, y):
            with torch.no_grad():
                x.set_(y)
            return x + 1
        x0, y0 = torch.randn(3), torch.randn(3)
        return f, lambda: (x0.clone(), y0.clone()), None

    @program("return_input")
    def _():
        def f(x):
            return x, x * 2
        lx = leaf(3)
        return f, lambda: (lx,), (lx,)

    @program("return_mutated_input")
    def _():
        def f(x):
            x.mul_(2)
            return x, x + 1
        x0 = torch.randn(3)
        return f, lambda: (x0.clone(),), None

    @program("return_mutated_input_grad")
    def _():
        def f(x):
            x.mul_(2)
            return x, x + 1
        lx = leaf(3)
        return f, lambda: (lx.clone(),), (lx,)

    @program("view_under_nograd")
    def _():
        def f(x):
            with torch.no_grad():
                v = x.view(-1)
            return v, x * 2
        lx = leaf(2, 2)
        return f, lambda: (lx,), (lx,)

    @program("view_out_mutated_input")
    def _():
        def f(x, w):
            x.mul_(w)
            return x.view(-1), x.sum()
        lx, w = leaf(2, 2), leaf(2, 2)
        return f, lambda: (lx.clone(), w), (lx, w)

    @program("out_and_detach")
    def _():
        def f(x):
            y = x * 2
            return y, y.detach()
        lx = leaf(3)
        return f, lambda: (lx,), (lx,)

    @program("unbind_and_view")
    def _():
        def f(x):
            y = x * 2
            a, b = y.unbind(0)
            return a, b, y.view(-1)
        lx = leaf(2, 3)
        return f, lambda: (lx,), (lx,)

    @program("unbind_and_view_of_input")
    def _():
        def f(x):
            a, b = x.unbind(0)
            return a, b, x.view(-1)
        lx = leaf(2, 3)
        return f, lambda: (lx * 1,), (lx,)

    @program("unbind_only")
    def _():
        def f(x):
            return list((x * 2).unbind(0))
        lx = leaf(2, 3)
        return f, lambda: (lx,), (lx,)

    @program("view_intermediate")
    def _():
        def f(x):
            y = x * 2
            return y.view(-1), y.t()
        lx = leaf(2, 3)
        return f, lambda: (lx,), (lx,)

    @program("view_dtype")
    def _():
        def f(x):
            return x.view(torch.int32), x + 1
        x0 = torch.randn(4)
        return f, lambda: (x0.clone(),), None

    @program("view_dtype_of_view")
    def _():
        def f(x):
            return x[1:].view(torch.int32), x.sum()
        x0 = torch.randn(5)
        return f, lambda: (x0.clone(),), None

    @program("custom_fn_view")
    def _():
        class ViewFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.view(-1)

            @staticmethod
            def backward(ctx, g):
                return g.view(2, 2) * 3

        def f(x):
            return ViewFn.apply(x), x.sum()
        lx = leaf(2, 2)
        return f, lambda: (lx,), (lx,)

    @program("custom_fn_view_intermediate")
    def _():
        class ViewFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.view(-1)

            @staticmethod
            def backward(ctx, g):
                return g.view(2, 2) * 3

        def f(x):
            y = x * 2
            return ViewFn.apply(y), y.sum()
        lx = leaf(2, 2)
        return f, lambda: (lx,), (lx,)

    @program("dup_args")
    def _():
        def f(x, y):
            return x * 2 + y * 3, y.sum()
        lx = leaf(3)
        return f, lambda: (lx, lx), (lx,)

    @program("dup_args_mut")
    def _():
        def f(a, b, c):
            a.mul_(2)
            return a + b * c
        x0, z0 = torch.randn(3), torch.randn(3)
        holder = {}

        def make():
            holder["x"] = x0.clone()
            return (holder["x"], z0.clone(), holder["x"])
        return f, make, None

    @program("alias_views_mut")
    def _():
        def f(a, b):
            a.mul_(2)
            return a + b
        base0 = torch.randn(4)
        lw = leaf(4)

        def make():
            base = (base0.clone() * lw)
            return (base[:2], base[2:])
        return f, make, (lw,)

    @program("alias_base_and_view_mut")
    def _():
        def f(a, b):
            b.mul_(2)
            return a.sum() + b.sum()
        base0 = torch.randn(4)
        lw = leaf(4)

        def make():
            base = (base0.clone() * lw)
            return (base, base[1:3])
        return f, make, (lw,)

    @program("nograd_input_mix")
    def _():
        def f(x, y, z):
            return x * y + z
        lx = leaf(3)
        y0, z0 = torch.randn(3), torch.randn(3)
        return f, lambda: (lx, y0, z0), (lx,)

    @program("nograd_input_mutated")
    def _():
        def f(x, y):
            y.add_(1)
            return x * y
        lx = leaf(3)
        y0 = torch.randn(3)
        return f, lambda: (lx, y0.clone()), (lx,)

    @program("dropout")
    def _():
        def f(x):
            return torch.nn.functional.dropout(x * 2, 0.5, training=True).sin() * x
        lx = leaf(64)
        return f, lambda: (lx,), (lx,)

    @program("rand_like")
    def _():
        def f(x):
            r = torch.rand_like(x)
            return (x * r).exp()
        lx = leaf(32)
        return f, lambda: (lx,), (lx,)

    @program("buffer_update_and_grad")
    def _():
        def f(x, running):
            y = x * 2
            with torch.no_grad():
                running.mul_(0.9).add_(y.detach() * 0.1)
            return (y * running).sum()
        lx = leaf(3)
        r0 = torch.randn(3)
        return f, lambda: (lx, r0.clone()), (lx,)

    @program("sizes_in_backward")
    def _():
        def f(x, w):
            y = x * w
            return y.sum() * y.shape[0], (y * y).mean()
        lx, lw = leaf(4, 3), leaf(4, 3)
        return f, lambda: (lx, lw), (lx, lw)

    @program("requires_grad_inside")
    def _():
        def f(x, y):
            y.requires_grad_()
            return x * y
        lx = leaf(3)
        y0 = torch.randn(3)
        return f, lambda: (lx, y0.clone()), (lx,)

    def run_one(compile_fn, name):
        torch.manual_seed(0)              # each program's inputs do not depend on the ones before
        f, make, leaves = programs[name]()
        torch.manual_seed(0)
        args = make()
        res = {}
        try:
            torch.manual_seed(1)
            out = compile_fn(f)(*args)
            outs = out if isinstance(out, (list, tuple)) else (out,)
            res["out"] = fp(list(outs))
            res["is_arg"] = [any(o is a for a in args) for o in outs]
            res["args_after"] = fp(list(args))
            diff = [o for o in outs if isinstance(o, torch.Tensor) and o.requires_grad]
            if diff:
                total = sum((o.float().sum() if o.grad_fn is not None or o.is_leaf else 0)
                            for o in diff)
                grads = torch.autograd.grad(total, list(leaves or ()) or
                                            [a for a in args if isinstance(a, torch.Tensor)
                                             and a.requires_grad],
                                            allow_unused=True)
                res["grads"] = fp(list(grads))
        except Exception as e:                 # noqa: BLE001 - the type is the fingerprint
            res["error"] = err(e)
        return res

    engines = {
        "dyn": lambda f: torch.compile(f, backend="aot_eager", fullgraph=False),
        "aotf": lambda f: aot_function(f, fw_compiler=nop, bw_compiler=nop),
    }
    result: dict = {}
    for ename, comp in engines.items():
        for name in programs:
            torch._dynamo.reset()
            result[f"{ename}:{name}"] = run_one(comp, name)

    # ------------------------------------------------------------ AOTAutogradCache: A, reset, B
    cache_cfg = {"force_autograd_cache": True, "bundled_autograd_cache": True,
                 "force_non_lazy_backward_lowering": True}

    def cached_pair(name, f, call_a, call_b, dynamic=False):
        d = tempfile.mkdtemp(prefix="probe-cache-")
        old = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = d
        res = {}
        try:
            with fconfig.patch(cache_cfg):
                for phase, call in (("a", call_a), ("b", call_b)):
                    torch._dynamo.reset()
                    h0 = counters["aot_autograd"]["autograd_cache_hit"]
                    m0 = counters["aot_autograd"]["autograd_cache_miss"]
                    try:
                        torch.manual_seed(0)
                        cf = torch.compile(f, backend="aot_eager", dynamic=dynamic)
                        res[phase] = call(cf)
                    except Exception as e:     # noqa: BLE001
                        res[phase] = err(e)
                    res[phase + "_hits"] = counters["aot_autograd"]["autograd_cache_hit"] - h0
                    res[phase + "_misses"] = counters["aot_autograd"]["autograd_cache_miss"] - m0
        finally:
            if old is None:
                os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
            else:
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = old
        result[f"cache:{name}"] = res

    def lin(x):
        return x * 2 + 1

    def grad_of(out, x):
        if not out.requires_grad:
            return {"out": fp(out), "grad": None}
        (g,) = torch.autograd.grad(out.sum(), [x])
        return {"out": fp(out), "grad": fp(g)}

    torch.manual_seed(0)
    x0 = torch.randn(3, 4)

    def under_nograd(cf):
        x = x0.clone().requires_grad_()
        with torch.no_grad():
            return {"out": fp(cf(x))}

    def with_grad(cf):
        x = x0.clone().requires_grad_()
        return grad_of(cf(x), x)

    cached_pair("grad_mode", lin, under_nograd, with_grad)

    def no_rg(cf):
        return {"out": fp(cf(x0.clone()))}
    cached_pair("requires_grad", lin, no_rg, with_grad)

    def flat(x):
        return x.reshape(-1) * 1, x.reshape(-1)

    def contiguous(cf):
        x = x0.clone()
        out = cf(x)
        return {"out": fp(list(out)), "alias": out[1].data_ptr() == x.data_ptr()}

    def transposed(cf):
        x = x0.clone().t().contiguous().t()
        out = cf(x)
        return {"out": fp(list(out)), "alias": out[1].data_ptr() == x.data_ptr()}
    cached_pair("strides", flat, contiguous, transposed)

    w0 = torch.randn(4, 4)

    def mm(x, w):
        return x @ w

    def plain_mm(cf):
        return {"out": fp(cf(x0.clone(), w0))}

    def autocast_mm(cf):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return {"out": fp(cf(x0.clone(), w0))}
    cached_pair("autocast", mm, plain_mm, autocast_mm)

    def alias_out(x):
        return x.view(-1), x * 2

    def view_default(cf):
        x = x0.clone().requires_grad_()
        out = cf(x)
        return {"out": fp(list(out))}

    def view_flag_flipped(cf):
        with fconfig.patch(view_replay_for_aliased_outputs=not fconfig.view_replay_for_aliased_outputs):
            x = x0.clone().requires_grad_()
            out = cf(x)
            return {"out": fp(list(out))}
    cached_pair("functorch_config", alias_out, view_default, view_flag_flipped)

    def index_by_size(x):
        return x * x.shape[0] + x.sum()

    def size5(cf):
        return {"out": fp(cf(torch.arange(5.0)))}

    def size7(cf):
        return {"out": fp(cf(torch.arange(7.0)))}
    cached_pair("dynamic_guards", index_by_size, size5, size7, dynamic=True)

    def first_five(x):                     # the entry for width 8 carries the guard 5 <= s1
        return x[:, :5] * 2

    def width8(cf):
        return {"out": fp(cf(torch.arange(24.0).reshape(3, 8)))}

    def width4(cf):                        # fails that guard: a correct lookup misses
        return {"out": fp(cf(torch.arange(12.0).reshape(3, 4)))}
    cached_pair("dynamic_guard_fails", first_five, width8, width4, dynamic=True)

    def det_on(cf):
        torch.use_deterministic_algorithms(True)
        try:
            return {"out": fp(cf(x0.clone()))}
        finally:
            torch.use_deterministic_algorithms(False)
    cached_pair("deterministic", lin, no_rg, det_on)

    with open(out_path, "w") as fh:
        json.dump(result, fh, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

"""One hermetic printer for graphs and metadata.

Golden tests pin its output, so it prints nothing that varies between runs:
no addresses, paths, timings or ids. Each node is one line::

    mul: f32[2, 3] = aten.mul.Tensor(clone, 2)      # no_grad

with the value's dtype and shape, and ``# no_grad`` where the op ran with grad
mode off.
"""
from __future__ import annotations

import torch
import torch.fx as fx

_DT = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int64": "i64",
       "int32": "i32", "bool": "b8", "uint8": "u8", "int8": "i8", "int16": "i16",
       "complex64": "c64", "complex128": "c128"}


def _type(val) -> str:
    if isinstance(val, torch.Tensor):
        dt = str(val.dtype).replace("torch.", "")
        return f"{_DT.get(dt, dt)}{list(val.shape)}"
    return ""


def _arg(a) -> str:
    if isinstance(a, fx.Node):
        return a.name
    if isinstance(a, (list, tuple)):
        inner = ", ".join(_arg(x) for x in a)
        return f"[{inner}]"
    if isinstance(a, torch.dtype):
        return str(a)
    if isinstance(a, torch.device):
        return f"device({a.type!r})"
    if isinstance(a, float):
        return repr(a)
    return repr(a)


def format_graph(graph: fx.Graph | fx.GraphModule, name: str = "graph") -> str:
    if isinstance(graph, fx.GraphModule):
        graph = graph.graph
    ins, body, ret = [], [], ""
    for n in graph.nodes:
        t = _type(n.meta.get("val"))
        if n.op == "placeholder":
            ins.append(f"{n.name}: {t}" if t else n.name)
        elif n.op == "output":
            outs = n.args[0]
            outs = outs if isinstance(outs, (list, tuple)) else (outs,)
            ret = "    return (" + ", ".join("None" if o is None else _arg(o) for o in outs) + \
                  ("," if len(outs) == 1 else "") + ")"
        else:
            target = n.target
            op = f"{target.namespace}.{target._opname}.{target._overloadname}" \
                if isinstance(target, torch._ops.OpOverload) else getattr(target, "__name__", str(target))
            args = [_arg(a) for a in n.args] + [f"{k}={_arg(v)}" for k, v in n.kwargs.items()]
            line = f"    {n.name}{': ' + t if t else ''} = {op}({', '.join(args)})"
            if n.meta.get("no_grad"):
                line += "  # no_grad"
            body.append(line)
    return "\n".join([f"def {name}({', '.join(ins)}):"] + body + [ret])

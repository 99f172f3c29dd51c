"""codegen: turn an aten graph into a plain Python function.

The code calls each op's C++ entry point (``OpOverload._op``) bound as a
global of the generated function, so a call costs what eager's call costs:
no ``torch.ops.aten.mul.Tensor`` attribute walk and no Python ``__call__``
wrapper per op. Constants that are not plain literals (dtypes, devices,
memory formats) are bound as globals too. The source is generated here from
an in-memory graph (never read from the cache), and kept on the function as
``__source__`` for debugging.

Before::

    mul: f32[8] = aten.mul.Tensor(x, y)
    sin: f32[8] = aten.sin.default(mul)
    return (sin,)

After::

    def forward(x, y):
        mul = _op0(x, y)
        del x, y
        sin = _op1(mul)
        del mul
        return (sin,)
"""
from __future__ import annotations

import operator

import torch
import torch.fx as fx

from ..rng.layout import runtime_kernel


def _is_literal(v) -> bool:
    if isinstance(v, (bool, int, str)) or v is None:
        return True
    if isinstance(v, float):
        return v == v and v not in (float("inf"), float("-inf"))
    return False


def _last_uses(graph: fx.Graph) -> dict[fx.Node, list[fx.Node]]:
    """For each node, the values whose last use it is (the output's values are never freed)."""
    last: dict[fx.Node, fx.Node] = {}
    for n in graph.nodes:
        for a in n.all_input_nodes:
            last[a] = n
    out: dict[fx.Node, list[fx.Node]] = {}
    for v, user in last.items():
        if user.op != "output":
            out.setdefault(user, []).append(v)
    return out


def _free(lines: list[str], values, names: dict) -> None:
    # NOTE [free after last use]
    # each local is dropped after its last use, as eager drops a
    # temporary, so a backward that recomputes a chain holds only what is still needed.
    if values:
        lines.append(f"    del {', '.join(names[v] for v in values)}")


def compile_graph(graph: fx.Graph, name: str = "forward", constants: dict | None = None):
    env: dict[str, object] = {}
    names: dict[fx.Node, str] = {}
    lines: list[str] = []
    params: list[str] = []

    def const(v) -> str:
        key = f"_c{len(env)}"
        env[key] = v
        return key

    def arg(a) -> str:
        if isinstance(a, fx.Node):
            return names[a]
        if isinstance(a, (list, tuple)):
            inner = ", ".join(arg(x) for x in a)
            return f"[{inner}]" if isinstance(a, list) else f"({inner}{',' if len(a) == 1 else ''})"
        if _is_literal(a):
            return repr(a)
        return const(a)

    last_use = _last_uses(graph)
    for i, n in enumerate(graph.nodes):
        var = f"v{i}"
        names[n] = var
        if n.op == "placeholder":
            params.append(var)
        elif n.op == "call_function":
            if n.target is operator.getitem:
                lines.append(f"    {var} = {arg(n.args[0])}[{arg(n.args[1])}]")
                _free(lines, last_use.get(n, ()), names)
                continue
            # random draws run as eager draws them
            # (NOTE [a draw in eager's layout] in rng/layout.py)
            fn = runtime_kernel(n.target) or \
                (n.target._op if isinstance(n.target, torch._ops.OpOverload) else n.target)
            key = f"_op{i}"
            env[key] = fn
            call_args = [arg(a) for a in n.args] + [f"{k}={arg(v)}" for k, v in n.kwargs.items()]
            lines.append(f"    {var} = {key}({', '.join(call_args)})")
            _free(lines, last_use.get(n, ()), names)
        elif n.op == "get_attr":
            if not constants or n.target not in constants:
                raise ValueError(f"codegen: graph reads constant {n.target!r}, which was not given")
            lines.append(f"    {var} = {const(constants[n.target])}")
        elif n.op == "output":
            outs = n.args[0]
            outs = outs if isinstance(outs, (list, tuple)) else (outs,)
            lines.append(f"    return ({''.join(arg(o) + ', ' for o in outs)})")
        else:
            raise ValueError(f"codegen: unsupported node {n.op} {n.target}")
    src = f"def {name}({', '.join(params)}):\n" + ("\n".join(lines) or "    return ()") + "\n"
    code = compile(src, f"<aotcheck {name}>", "exec")
    exec(code, env)  # noqa: S102 - our own source, generated above from a checked graph
    fn = env[name]
    fn.__source__ = src
    return fn


def to_callable(graph: fx.Graph, name: str, constants: dict | None = None):
    """A runnable function for ``graph``; ``constants`` holds the tensors its get_attr nodes read.

    # NOTE [autocast at run time]
    A graph traced under autocast holds autocast's casts as ops of its own (``_to_copy`` to
    bfloat16 before a matmul), and the ops inside an autocast op's own decomposition
    (sdpa's math path, run with autocast off) as they ran: a float32 ``bmm`` there. Run
    again under the caller's autocast, that op would be cast a second time (to bfloat16),
    where eager's was not: values saved for the backward then have another dtype than the
    backward graph was traced with ("expected scalar type Float but found BFloat16"). As
    PyTorch's AOTAutograd does, the graphs run with autocast off; the autocast state is in
    the cache key (a call under another state compiles its own graphs)."""
    fn = compile_graph(graph, name, constants)
    is_on, off = torch._C._is_any_autocast_enabled, torch._C._DisableAutocast

    def run(*args):
        if is_on():
            with off():
                return fn(*args)
        return fn(*args)
    run.__source__ = fn.__source__
    return run

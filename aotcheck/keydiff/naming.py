"""naming: the input that differed between A and B, named as a person would.

    config     torch._inductor.config.fallback_random: False -> True
    ambient    ambient torch.set_autocast_dtype('cpu', ...) (autocast off): torch.bfloat16 -> torch.float16
    storage    arguments 0 and 1: disjoint -> overlap (one storage, argument 1 starts k elements in)
    global     global SCALE read by helper _opaque (allow_in_graph) inside a checkpoint body: [2.0] -> [3.0]
    setup      registration of custom op kdiff::foo (setup 'backward'): 1.0 -> 2.0

A global is traced to its readers in the program's source: the functions whose code reads it,
what they are (an ``allow_in_graph`` function, the forward or backward of an
``autograd.Function``) and where they run (the body of a ``checkpoint`` call, directly or
through the functions that call them).
"""
from __future__ import annotations

import ast
import inspect
import re

from .program import Input, Kind

_AMBIENT = {"autocast_dtype.cpu": "torch.set_autocast_dtype('cpu', ...) (autocast off)",
            "autocast_dtype.cuda": "torch.set_autocast_dtype('cuda', ...) (autocast off)",
            "autocast_cache_enabled": "torch.set_autocast_cache_enabled(...)",
            "default_dtype": "torch.set_default_dtype(...)",
            "deterministic_algorithms": "torch.use_deterministic_algorithms(...)",
            "float32_matmul_precision": "torch.set_float32_matmul_precision(...)",
            "mkldnn_enabled": "torch.backends.mkldnn.enabled",
            "num_threads": "torch.set_num_threads(...)"}
_RELATION = {"disjoint": "disjoint storages", "same": "one tensor passed twice",
             "view_of_base": "a view and its base", "shared_disjoint": "one storage, no element in common",
             "overlap": "partial overlap, the second starts k elements in",
             "overlap_reversed": "partial overlap, the first starts k elements in",
             "offset": "separate storages, each one element in"}


def component(module, inp: Input, a: int, b: int) -> str:
    """``inp`` going from value ``a`` to value ``b``, in words (module docstring)."""
    change = f"{inp.values[a]} -> {inp.values[b]}"
    if inp.kind is Kind.CONFIG or inp.kind is Kind.ATTRIBUTE:
        return f"{inp.name}: {change}"
    if inp.kind is Kind.AMBIENT:
        key = inp.name.split(":", 1)[1]
        return f"ambient {_AMBIENT.get(key, key)}: {change}"
    if inp.kind is Kind.STORAGE:
        i, j = inp.name.split(":", 1)[1].split(",")
        va, vb = (inp.values[k].strip("'") for k in (a, b))
        return f"arguments {i} and {j}: {va} ({_RELATION.get(va, va)}) -> {vb} ({_RELATION.get(vb, vb)})"
    if inp.kind is Kind.GLOBAL:
        return f"{global_readers(module, inp.name)}: {change}"
    ops = custom_ops(module)
    what = f"registration of custom op {', '.join(ops)}" if ops else "program setup"
    return f"{what} (setup {inp.name!r}): {change}"


# ---------------------------------------------------------------- globals and their readers


def global_readers(module, name: str) -> str:
    """``global NAME read by helper H (allow_in_graph) inside a checkpoint body``, from the source."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError, SyntaxError):
        return f"global {name}"
    funcs = _functions(tree)
    readers = [f for f in funcs.values() if _reads(f.node, name)]
    if not readers:
        return f"global {name}"
    parts = [_describe(f, funcs, tree) for f in readers]
    return f"global {name} read by " + "; ".join(parts)


class _Func:
    def __init__(self, node, owner: ast.ClassDef | None):
        self.node, self.owner = node, owner

    @property
    def name(self) -> str:
        return self.node.name


def _functions(tree) -> dict[str, _Func]:
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = _Func(node, None)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    out[f"{node.name}.{item.name}"] = _Func(item, node)
    return out


def _reads(node, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(node))


def _describe(f: _Func, funcs: dict[str, _Func], tree) -> str:
    if f.owner is not None and _is_autograd_function(f.owner):
        return f"the {f.name} of autograd.Function {f.owner.name}"
    what = {"fn": "the compiled function", "BACKEND": "the backend factory",
            "compile": "the entry point"}.get(f.name, "helper")
    if f.name in ("BACKEND", "compile"):
        return f"{what} {f.name}"
    tags = [t for t in (_decorator(f.node, "allow_in_graph"),) if t]
    text = f"{what} {f.name}" + (f" ({', '.join(tags)})" if tags else "")
    where = _where(f.name, funcs, tree, seen=set())
    return text + (f" {where}" if where else "")


def _decorator(node, word: str) -> str:
    for d in node.decorator_list:
        if word in ast.unparse(d):
            return word
    return ""


def _is_autograd_function(cls: ast.ClassDef) -> bool:
    return any(re.search(r"\bFunction$", ast.unparse(b)) for b in cls.bases)


def _where(name: str, funcs, tree, seen: set) -> str:
    """Where a function runs: ``inside a checkpoint body`` when it (or a function that calls it)
    is the first argument of a ``checkpoint`` call; ``inside autograd.Function F`` when one of
    F's methods calls it."""
    if name in seen:
        return ""
    seen.add(name)
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        callee = ast.unparse(call.func)
        if callee.split(".")[-1] == "checkpoint" and call.args and ast.unparse(call.args[0]) == name:
            return "inside a checkpoint body"
    for other in funcs.values():
        if other.name != name and _calls(other.node, name):
            if other.owner is not None and _is_autograd_function(other.owner):
                return f"inside the {other.name} of autograd.Function {other.owner.name}"
            where = _where(other.name, funcs, tree, seen)
            if where:
                return f"(called by {other.name}) {where}"
    return ""


def _calls(node, name: str) -> bool:
    return any(isinstance(n, ast.Call) and ast.unparse(n.func) == name for n in ast.walk(node))


def custom_ops(module) -> list[str]:
    """The custom ops the program's source calls (``torch.ops.NS.OP``, NS not aten or prims)."""
    try:
        src = inspect.getsource(module)
    except (OSError, TypeError):
        return []
    found = re.findall(r"torch\.ops\.(\w+)\.(\w+)", src)
    return sorted({f"{ns}::{op}" for ns, op in found if ns not in ("aten", "prims", "higher_order")})

"""serialize: an FX graph as plain JSON data, and back, without running stored code.

The cache stores graphs as data, never as code: no pickle, no ``exec``, no
``eval``. Every call target is written as a qualified op name and, on load,
resolved against ``torch.ops.aten`` and ``torch.ops.prims`` only (plus
``_operator::getitem``, which picks one result of a multi-output op). Anything
else is rejected with :class:`SerializeError`, so a tampered cache directory
cannot make aotcheck call an arbitrary function.

Before (a graph)::

    def graph(x: f32[3]):
        mul: f32[3] = aten.mul.Tensor(x, 2.0)      # no_grad
        return (mul,)

After (``graph_to_data``)::

    {"nodes": [
       {"name": "x", "op": "placeholder", "target": "x", "args": [], "kwargs": {},
        "val": {"shape": [3], "stride": [1], "offset": 0, "dtype": "float32"}},
       {"name": "mul", "op": "call_function", "target": "aten::mul.Tensor",
        "args": [{"node": "mul"}, 2.0], "kwargs": {}, "val": {...}, "no_grad": true},
       {"name": "output", "op": "output", "target": "output",
        "args": [{"list": [{"node": "mul"}]}], "kwargs": {}}],
     "constants": {}}

Argument encoding: JSON ints, finite floats, bools, None and strings stand for
themselves; everything else is a one-key object: ``{"node": name}``,
``{"list": [...]}``, ``{"tuple": [...]}``, ``{"float": "inf" | "-inf" | "nan"}``,
``{"dtype": "float32"}``, ``{"device": "cpu"}``, ``{"layout": "strided"}``,
``{"memory_format": "contiguous_format"}``. Small tensor constants
(``get_attr``) are stored by value; larger ones raise :class:`Uncacheable`.

A node's ``meta["val"]`` is summarised (shape, stride, offset, dtype); a loaded
graph keeps that summary in ``meta["val_summary"]``, so a load-then-save round
trip gives the same data.
"""
from __future__ import annotations

import math
import operator
import re

import torch
import torch.fx as fx

FORMAT = 1
MAX_CONSTANT_NUMEL = 256
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_OPS = ("placeholder", "call_function", "get_attr", "output")
_EXTRA_TARGETS = {"_operator::getitem": operator.getitem}
_NAMESPACES = ("aten", "prims", "aotcheck")   # aotcheck: engine/rng/seeding.py's ops
_LAYOUTS = {"strided": torch.strided, "sparse_coo": torch.sparse_coo}
_FORMATS = {"contiguous_format": torch.contiguous_format, "channels_last": torch.channels_last,
            "channels_last_3d": torch.channels_last_3d, "preserve_format": torch.preserve_format}


class SerializeError(ValueError):
    """Stored data that does not describe a safe, well-formed graph (a corrupt or tampered entry)."""


class Uncacheable(Exception):
    """A graph the serializer cannot represent; ``code`` names the reason for the bypass counter."""

    def __init__(self, code: str, detail: str):
        super().__init__(f"{code}: {detail}")
        self.code, self.detail = code, detail


# ---------------------------------------------------------------- graph -> data


# the counter a graph calling an op outside aten and prims moves
# (NOTE [a custom op the cache does not hold] in check/harness.py)
OPAQUE_OP_BYPASS = "bypass.unsupported_target"


def target_name(target) -> str:
    if isinstance(target, torch._ops.OpOverload):
        if target.namespace not in _NAMESPACES:
            # the reader would refuse it: bypass now rather than write an unreadable entry
            raise Uncacheable("unsupported_target",
                              f"call target {target} is outside the namespaces {_NAMESPACES}")
        return f"{target.namespace}::{target._opname}.{target._overloadname}"
    if target is operator.getitem:
        return "_operator::getitem"
    raise Uncacheable("unsupported_target", f"call target {target!r} is not an aten/prims op")


def _enc(a):
    if isinstance(a, fx.Node):
        return {"node": a.name}
    if a is None or isinstance(a, (bool, int, str)):
        return a
    if isinstance(a, float):
        return a if math.isfinite(a) else {"float": repr(a)}
    if isinstance(a, list):
        return {"list": [_enc(x) for x in a]}
    if isinstance(a, tuple):
        return {"tuple": [_enc(x) for x in a]}
    if isinstance(a, torch.dtype):
        return {"dtype": str(a).replace("torch.", "")}
    if isinstance(a, torch.device):
        return {"device": str(a)}
    if isinstance(a, torch.layout):
        name = str(a).replace("torch.", "")
        if name in _LAYOUTS:
            return {"layout": name}
    if isinstance(a, torch.memory_format):
        name = str(a).replace("torch.", "")
        if name in _FORMATS:
            return {"memory_format": name}
    raise Uncacheable("unsupported_argument", f"argument {a!r} of type {type(a).__name__}")


def _seeded_first(node: fx.Node) -> bool:
    """A generator constant that the graph seeds (``aotcheck.rng_generator_manual_seed``) before
    it draws from it: a generator made inside the function (engine/rng/seeding.py), which a new
    generator stands in for when the graph is loaded. Any other generator (an argument, a
    closure) is the caller's very object, which no entry can hold."""
    from ..engine.rng.seeding import GENERATOR_RESETS
    first = next((u for u in node.graph.nodes if node in u.all_input_nodes), None)
    return first is not None and first.target is GENERATOR_RESETS[0]


def _val_summary(v):
    if isinstance(v, torch.Tensor):
        return {"shape": list(v.shape), "stride": list(v.stride()), "offset": v.storage_offset(),
                "dtype": str(v.dtype).replace("torch.", "")}
    if isinstance(v, (list, tuple)):
        return [_val_summary(x) for x in v]
    return None


def _number(x):
    if isinstance(x, float) and not math.isfinite(x):
        return {"float": repr(x)}
    return x


def _constant(t: torch.Tensor) -> dict:
    if t.numel() > MAX_CONSTANT_NUMEL:
        raise Uncacheable("constant_too_large",
                          f"tensor constant of {t.numel()} elements (limit {MAX_CONSTANT_NUMEL})")
    if t.is_complex() or t.layout != torch.strided or t.device.type != "cpu":
        raise Uncacheable("unsupported_constant", f"tensor constant {t.dtype} on {t.device}")
    flat = t.detach().reshape(-1).tolist()
    return {"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape),
            "values": [_number(x) for x in flat]}


def graph_to_data(graph: fx.Graph | fx.GraphModule, constants: dict | None = None) -> dict:
    """Plain JSON data for ``graph``. ``constants`` maps get_attr targets to tensors
    (default: the graph's owning module's attributes)."""
    if isinstance(graph, fx.GraphModule):
        owner, graph = graph, graph.graph
    else:
        owner = graph.owning_module
    nodes, consts = [], {}
    for n in graph.nodes:
        if n.op not in _OPS:
            raise Uncacheable("unsupported_node", f"node {n.name} has op {n.op}")
        if n.op == "call_function":
            target = target_name(n.target)
        elif n.op == "get_attr":
            target = n.target
            t = (constants or {}).get(target)
            if t is None and owner is not None:
                t = getattr(owner, target, None)
            if isinstance(t, torch._C.Generator) and _NAME.match(target) \
                    and (target in consts or _seeded_first(n)):
                consts[target] = {"generator": str(t.device)}
            elif not isinstance(t, torch.Tensor) or not _NAME.match(target):
                raise Uncacheable("unsupported_constant", f"get_attr {target!r} is not a tensor attribute")
            else:
                consts[target] = _constant(t)
        else:
            target = n.target
        d = {"name": n.name, "op": n.op, "target": target,
             "args": [_enc(a) for a in n.args],
             "kwargs": {k: _enc(v) for k, v in n.kwargs.items()}}
        val = _val_summary(n.meta["val"]) if "val" in n.meta else n.meta.get("val_summary")
        if val is not None:
            d["val"] = val
        if n.meta.get("no_grad"):
            d["no_grad"] = True
        nodes.append(d)
    return {"format": FORMAT, "nodes": nodes, "constants": consts}


# ---------------------------------------------------------------- data -> graph


def resolve_target(name: str):
    """The op a qualified name stands for: aten/prims OpOverloads only (and getitem)."""
    if not isinstance(name, str):
        raise SerializeError(f"call target {name!r} is not a string")
    if name in _EXTRA_TARGETS:
        return _EXTRA_TARGETS[name]
    ns, sep, rest = name.partition("::")
    if not sep or ns not in _NAMESPACES:
        raise SerializeError(f"call target {name!r} is outside the allowed namespaces {_NAMESPACES}")
    opname, _, overload = rest.partition(".")
    overload = overload or "default"
    if not (_NAME.match(opname) and _NAME.match(overload)) or opname.startswith("__") \
            or overload.startswith("__"):
        raise SerializeError(f"call target {name!r} is not a valid op name")
    try:
        packet = getattr(getattr(torch.ops, ns), opname)
        op = getattr(packet, overload)
    except (AttributeError, RuntimeError) as e:
        raise SerializeError(f"call target {name!r} does not exist: {e}") from None
    if not isinstance(op, torch._ops.OpOverload) or op.namespace != ns:
        raise SerializeError(f"call target {name!r} is not an op overload")
    if op._schema.is_mutable:
        raise SerializeError(f"call target {name!r} mutates its arguments; stored graphs are functional")
    return op


def _float_tag(s):
    if s not in ("inf", "-inf", "nan"):
        raise SerializeError(f"bad float tag {s!r}")
    return float(s)


def _dec(a, env: dict):
    if a is None or isinstance(a, (bool, int, str)):
        return a
    if isinstance(a, float):
        return a
    if isinstance(a, dict) and len(a) == 1:
        (tag, v), = a.items()
        if tag == "node":
            if v not in env:
                raise SerializeError(f"argument names unknown node {v!r}")
            return env[v]
        if tag in ("list", "tuple") and isinstance(v, list):
            items = [_dec(x, env) for x in v]
            return items if tag == "list" else tuple(items)
        if tag == "float":
            return _float_tag(v)
        if tag == "dtype" and isinstance(v, str) and _NAME.match(v) and \
                isinstance(getattr(torch, v, None), torch.dtype):
            return getattr(torch, v)
        if tag == "device" and isinstance(v, str) and re.match(r"^[a-z]+(:\d+)?$", v):
            return torch.device(v)
        if tag == "layout" and v in _LAYOUTS:
            return _LAYOUTS[v]
        if tag == "memory_format" and v in _FORMATS:
            return _FORMATS[v]
    raise SerializeError(f"cannot decode argument {a!r}")


def load_constants(data: dict) -> dict[str, torch.Tensor]:
    out = {}
    consts = data.get("constants", {})
    if not isinstance(consts, dict):
        raise SerializeError("constants must be an object")
    for name, c in consts.items():
        if not (isinstance(name, str) and _NAME.match(name)) or not isinstance(c, dict):
            raise SerializeError(f"bad constant {name!r}")
        if "generator" in c:            # see _seeded_first: the graph seeds it before any draw
            if c["generator"] != "cpu":
                raise SerializeError(f"constant {name!r}: generator on {c['generator']!r}")
            out[name] = torch._C.Generator("cpu")
            continue
        dtype = _dec({"dtype": c.get("dtype")}, {})
        values = [_float_tag(v["float"]) if isinstance(v, dict) else v for v in c.get("values", [])]
        shape = c.get("shape")
        if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape) \
                or math.prod(shape) != len(values) or len(values) > MAX_CONSTANT_NUMEL:
            raise SerializeError(f"constant {name!r} has inconsistent shape")
        out[name] = torch.tensor(values, dtype=dtype).reshape(shape)
    return out


def graph_from_data(data: dict) -> fx.Graph:
    """Rebuild a graph from :func:`graph_to_data` output, validating every field."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SerializeError(f"graph data format {data.get('format') if isinstance(data, dict) else None!r} "
                             f"!= {FORMAT}")
    constants = load_constants(data)
    g = fx.Graph()
    env: dict[str, fx.Node] = {}
    nodes = data.get("nodes")
    if not isinstance(nodes, list):
        raise SerializeError("nodes must be a list")
    for d in nodes:
        if not isinstance(d, dict):
            raise SerializeError("a node must be an object")
        op, name, target = d.get("op"), d.get("name"), d.get("target")
        if op not in _OPS or not (isinstance(name, str) and _NAME.match(name)) or name in env:
            raise SerializeError(f"bad node {name!r} (op {op!r})")
        args = d.get("args", [])
        kwargs = d.get("kwargs", {})
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise SerializeError(f"node {name}: bad args")
        args = tuple(_dec(a, env) for a in args)
        kwargs = {str(k): _dec(v, env) for k, v in kwargs.items()}
        if op == "call_function":
            target = resolve_target(target)
        elif op == "get_attr":
            if target not in constants:
                raise SerializeError(f"get_attr {target!r} names no stored constant")
        elif not (isinstance(target, str) and _NAME.match(target)):
            raise SerializeError(f"node {name}: bad target {target!r}")
        node = g.create_node(op, target, args, kwargs, name=name)
        if node.name != name:
            raise SerializeError(f"node name {name!r} clashes")
        if "val" in d:
            node.meta["val_summary"] = d["val"]
        if d.get("no_grad"):
            node.meta["no_grad"] = True
        env[name] = node
    try:
        g.lint()
    except Exception as e:  # noqa: BLE001 - any lint failure means bad data
        raise SerializeError(f"rebuilt graph fails fx lint: {e}") from None
    g._aotcheck_constants = constants
    return g


def graph_constants(graph: fx.Graph) -> dict[str, torch.Tensor]:
    """Tensor constants attached by :func:`graph_from_data` (empty for other graphs)."""
    return getattr(graph, "_aotcheck_constants", {})

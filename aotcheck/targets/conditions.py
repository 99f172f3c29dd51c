"""conditions: condition B of one variation, applied to a call (``variations.py`` says which).

Three parts, each from a :class:`~aotcheck.targets.variations.Variation` (plain data):

    vary_inputs(v, make)       the input maker of B: A's inputs with one input's requires_grad,
                               dtype, shape, layout, storage offset, aliasing or a scalar changed
                               (an input stays a leaf or not, an ``nn.Parameter`` stays one)
    call_context(subject, v)   around each call: grad mode, default dtype, autocast,
                               deterministic algorithms
    state_context(subject, v)  around the whole run: the Python state the function reads (a
                               closure value, a global, a module's ``training``, the subject's
                               own states) and config flags; restored afterwards

``check_under(subject, compiled, v)`` is the oracle's check under B, ``observe(engine)`` the
cache events of a block, ``compile_and_check`` both around a compile through a cache; ``mark`` writes a pool worker's progress line
(``variation_corpus.py``), so that a process that dies names the step it was taking.
"""
from __future__ import annotations

import contextlib
import types
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Callable

import torch
from torch.utils import _pytree as pytree


# ---------------------------------------------------------------- the vocabulary


class VariationKind(StrEnum):
    """What a variation changes (``variations.Variation.kind``; the list with each kind's B is
    ``variations.py``'s docstring). Here, next to the code that applies each kind, because
    ``variations.py`` imports this module. Its value is the label's and the JSON's spelling."""
    GRAD_MODE = "grad_mode"              # the grad mode of the call (a GradMode)
    REQUIRES_GRAD = "requires_grad"      # one floating input's requires_grad flipped
    DTYPE = "dtype"                      # one floating input float32 <-> float64
    SHAPE = "shape"                      # the inputs of one shape grow along the last dimension
    STRIDES = "strides"                  # one input transposed, or every other element
    MEMORY_FORMAT = "memory_format"      # one 4-D input channels_last
    STORAGE_OFFSET = "storage_offset"    # one input one element into a larger storage
    ALIASING = "aliasing"                # two inputs made one tensor, or aliased inputs split
    SCALAR = "scalar"                    # a Python number argument changed
    CLOSURE = "closure"                  # a number the function closes over changed
    GLOBAL = "global"                    # a number the function reads from its globals changed
    TRAINING = "training"                # a module it reads switched between train() and eval()
    STATE = "state"                      # the subject's own Python states, state 0 -> k
    DEFAULT_DTYPE = "default_dtype"      # torch.set_default_dtype around the call
    AUTOCAST = "autocast"                # torch.autocast("cpu", bfloat16) around the call
    DETERMINISTIC = "deterministic"      # torch.use_deterministic_algorithms(True) around the call
    CONFIG = "config"                    # one engine config flag that changes a graph
    VALUES = "values"                    # every floating input's values changed, nothing else
    DYNAMIC_SHAPE = "dynamic_shape"      # A and B compiled with dynamic shapes, B's sizes smaller


class GradMode(StrEnum):
    """The grad mode a subject is called in (``variations.Subject.grad_mode``), and the B of a
    ``grad_mode`` variation."""
    ENABLED = "enabled"                  # nothing around the call
    NO_GRAD = "no_grad"                  # torch.no_grad()
    INFERENCE_MODE = "inference_mode"    # torch.inference_mode()


# Kinds ``vary_inputs`` applies to the inputs (the others act around the call or the run).
INPUT_KINDS = frozenset({
    VariationKind.REQUIRES_GRAD, VariationKind.DTYPE, VariationKind.SHAPE, VariationKind.STRIDES,
    VariationKind.MEMORY_FORMAT, VariationKind.STORAGE_OFFSET, VariationKind.ALIASING,
    VariationKind.SCALAR, VariationKind.VALUES, VariationKind.DYNAMIC_SHAPE})


# ---------------------------------------------------------------- reading the inputs


def _flat(inputs) -> list:
    return pytree.tree_leaves((inputs.args, inputs.kwargs))


def _floating(t) -> bool:
    return isinstance(t, torch.Tensor) and type(t) in (torch.Tensor, torch.nn.Parameter) \
        and t.layout == torch.strided and (t.is_floating_point() or t.is_complex()) \
        and not t.is_inference()


def _plain(t) -> bool:
    return isinstance(t, torch.Tensor) and type(t) in (torch.Tensor, torch.nn.Parameter) \
        and t.layout == torch.strided and not t.is_inference() and t.untyped_storage().nbytes() > 0


def _storage(t) -> int:
    return t.untyped_storage().data_ptr()


def _aliased(flat: list) -> set[int]:
    """Indices of tensor inputs that share a storage with another input."""
    seen: dict[int, list[int]] = {}
    for i, t in enumerate(flat):
        if isinstance(t, torch.Tensor) and _plain(t):
            seen.setdefault(_storage(t), []).append(i)
    return {i for group in seen.values() if len(group) > 1 for i in group}


def _python_reads(fn) -> tuple[list[tuple[str, object]], list[tuple[str, object]]]:
    """(closure cells, globals) the function reads: (name, value)."""
    fn = getattr(fn, "__wrapped__", fn)
    if not isinstance(fn, types.FunctionType):
        return [], []
    cells = [(name, c.cell_contents) for name, c in zip(fn.__code__.co_freevars, fn.__closure__ or ())
             if _cell_ok(c)]
    gl = [(n, fn.__globals__[n]) for n in fn.__code__.co_names if n in fn.__globals__]
    return cells, gl


def _cell_ok(c) -> bool:
    try:
        c.cell_contents
    except ValueError:
        return False
    return True


# NOTE [numbers the compiled code reads]
# A compiled graph bakes in the Python numbers its function reads, and a cache key that hashes
# only the function's own code and globals misses the ones read elsewhere: by a helper it calls
# (an ``allow_in_graph`` function is keyed by its import path; the body of a checkpoint or of a
# custom ``autograd.Function`` is not vetted), or as an element of a list or dict
# (``SCALE[0]``, ``cfg["scale"]``). ``numeric_reads`` follows the function's globals and
# closure cells, the code objects nested in it (lambdas, inner functions), the plain Python
# functions and ``autograd.Function`` classes it names (``DEPTH`` levels down, none of torch's
# own), and the first elements of lists and dicts it reaches; each number found is a
# :class:`Read` that a ``closure`` or ``global`` variation can change and put back. A label
# names the place: ``SCALE``, ``SCALE[0]``, ``cfg['scale']``, and ``@helper`` when a helper
# reads it (``SCALE[0]@_opaque``).
DEPTH = 3
ELEMENTS = 2       # numbers taken from one list or dict


@dataclass(frozen=True)
class Read:
    """A number the function reads: ``kind`` CLOSURE or GLOBAL, ``label``
    (NOTE [numbers the compiled code reads]), its value, and where it lives (``owner[index]``, or a cell)."""
    kind: VariationKind
    label: str
    value: object
    owner: object
    index: object = None

    def set(self, value) -> None:
        if isinstance(self.owner, types.CellType):
            self.owner.cell_contents = value
        else:
            self.owner[self.index] = value


def _code_names(code) -> list[str]:
    names = list(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names += _code_names(c)
    return list(dict.fromkeys(names))


def _helpers_of(v) -> list:
    """The functions a value read by the function leads to: itself if a plain function of user
    code, an ``autograd.Function``'s forward and backward."""
    if isinstance(v, types.FunctionType):
        return [] if (v.__module__ or "").startswith("torch") else [v]
    if isinstance(v, type) and issubclass(v, torch.autograd.Function) and not v.__module__.startswith("torch"):
        return [f for f in (v.__dict__.get("forward"), v.__dict__.get("backward")) if f is not None]
    return []


def _unwrap(f):
    f = getattr(f, "__func__", f)                    # staticmethod
    return getattr(f, "__wrapped__", f)


def _place(kind: VariationKind, label: str, value, owner, index, where: str) -> list[Read]:
    """The numbers at one place: the value itself, or the first elements of a list or dict."""
    suffix = f"@{where}" if where else ""
    if type(value) in (int, float):
        return [Read(kind, label + suffix, value, owner, index)]
    if isinstance(value, list):
        return [Read(kind, f"{label}[{k}]{suffix}", x, value, k)
                for k, x in enumerate(value) if type(x) in (int, float)][:ELEMENTS]
    if isinstance(value, dict):
        return [Read(kind, f"{label}[{k!r}]{suffix}", x, value, k)
                for k, x in value.items() if type(x) in (int, float) and isinstance(k, (str, int))][:ELEMENTS]
    return []


def numeric_reads(fn) -> list[Read]:
    """Every number the function reads (NOTE [numbers the compiled code reads]), in a fixed order."""
    out: list[Read] = []
    seen: set = set()

    def visit(f, where: str, depth: int) -> None:
        f = _unwrap(f)
        if not isinstance(f, types.FunctionType) or id(f) in seen or depth > DEPTH:
            return
        seen.add(id(f))
        helpers = []
        for name, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
            if _cell_ok(cell):
                out.extend(_place(VariationKind.CLOSURE, name, cell.cell_contents, cell, None, where))
                helpers += _helpers_of(cell.cell_contents)
        for name in _code_names(f.__code__):
            if name in f.__globals__:
                v = f.__globals__[name]
                out.extend(_place(VariationKind.GLOBAL, name, v, f.__globals__, name, where))
                helpers += _helpers_of(v)
        for h in helpers:
            visit(h, getattr(_unwrap(h), "__qualname__", "helper"), depth + 1)
    visit(fn, "", 0)
    unique: dict[tuple, Read] = {}
    for r in out:
        unique.setdefault((id(r.owner), r.index if not isinstance(r.owner, types.CellType) else None), r)
    return list(unique.values())


def _number(v) -> bool:
    return type(v) in (int, float)


def _new_number(v):
    return v + 1 if type(v) is int else v * 1.5 + 0.5


# ---------------------------------------------------------------- applying one


def _target_indices(v) -> list[int]:
    t = v.target.split(" ", 1)[1] if v.target.startswith("input") else ""
    return [int(x) for x in t.split(",") if x]


def _relayout(t: torch.Tensor, data: torch.Tensor, leaves_map: dict) -> torch.Tensor:
    """An argument like ``t`` (leaf or not, requires_grad as ``t``) over ``data`` (a new tensor
    with the layout, dtype or values wanted); a replaced leaf is recorded in ``leaves_map``."""
    data = data.detach()
    if t.is_leaf or not t.requires_grad:
        new = _leaf(t, data, t.requires_grad)
        leaves_map[id(t)] = new
        return new
    leaf = data.clone().requires_grad_(True)
    leaves_map[id(t)] = leaf
    with torch.enable_grad():
        return data.copy_(leaf)


def _leaf(t: torch.Tensor, data: torch.Tensor, requires_grad: bool) -> torch.Tensor:
    """A leaf over ``data`` of ``t``'s type (an ``nn.Parameter`` stays one)."""
    if type(t) is torch.nn.Parameter:
        return torch.nn.Parameter(data, requires_grad=requires_grad)
    return data.requires_grad_(requires_grad) if (data.is_floating_point() or data.is_complex()) else data


def _transposed_like(t: torch.Tensor) -> torch.Tensor:
    perm = list(range(t.dim()))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return t.detach().permute(perm).contiguous().permute(perm)


def _every_other(t: torch.Tensor) -> torch.Tensor:
    """A 1-D tensor's values at stride 2."""
    return torch.zeros(t.numel() * 2, dtype=t.dtype)[::2].copy_(t.detach())


def _offset(t: torch.Tensor) -> torch.Tensor:
    buf = torch.zeros(t.numel() + 1, dtype=t.dtype)
    return buf[1:].view(t.shape).copy_(t.detach())


def _grown(t: torch.Tensor) -> torch.Tensor:
    pad = torch.zeros(*t.shape[:-1], 1, dtype=t.dtype)
    return torch.cat([t.detach(), pad], dim=-1)


def _cut(t: torch.Tensor, sizes: dict[int, int]) -> torch.Tensor:
    """``t`` cut along each dimension to its new size (``sizes``: old -> new), in its layout order."""
    part = t.detach()[tuple(slice(0, sizes.get(s, s)) for s in t.shape)]
    return part.clone(memory_format=torch.preserve_format)


def _changed_values(t: torch.Tensor) -> torch.Tensor:
    """New values in exactly ``t``'s layout (size, strides, offset, storage size)."""
    values = t.detach() * 0.5 + 0.25
    n = t.untyped_storage().nbytes() // t.element_size()
    if t.is_contiguous() and t.storage_offset() == 0 and n == t.numel():
        return values
    new = torch.zeros(n, dtype=t.dtype).as_strided(t.size(), t.stride(), t.storage_offset())
    return new.copy_(values)


def vary_inputs(v, make: Callable) -> Callable:
    """The input maker of condition B: A's inputs with the variation applied."""
    if v.kind not in INPUT_KINDS:
        return make

    def make_b():
        inp = make()
        flat, spec = pytree.tree_flatten((inp.args, inp.kwargs))
        idx = _target_indices(v)
        leaves_map: dict[int, torch.Tensor] = {}
        with torch.no_grad():
            if v.kind is VariationKind.VALUES:
                idx = [i for i, t in enumerate(flat) if _floating(t) and i not in _aliased(flat)]
            for i in idx:
                t = flat[i]
                if v.kind is VariationKind.REQUIRES_GRAD:
                    flat[i] = _leaf(t, t.detach().clone(), v.b == "True")
                    leaves_map[id(t)] = flat[i]
                elif v.kind is VariationKind.DTYPE:
                    flat[i] = _relayout(t, t.detach().to(getattr(torch, v.b)), leaves_map)
                elif v.kind is VariationKind.SHAPE:
                    flat[i] = _relayout(t, _grown(t), leaves_map)
                elif v.kind is VariationKind.DYNAMIC_SHAPE:
                    sizes = dict(tuple(map(int, p.split("->"))) for p in v.b.split(","))
                    flat[i] = _relayout(t, _cut(t, sizes), leaves_map)
                elif v.kind is VariationKind.STRIDES:
                    data = _transposed_like(t) if t.dim() >= 2 else _every_other(t)
                    flat[i] = _relayout(t, data, leaves_map)
                elif v.kind is VariationKind.MEMORY_FORMAT:
                    flat[i] = _relayout(t, t.detach().contiguous(memory_format=torch.channels_last),
                                        leaves_map)
                elif v.kind is VariationKind.STORAGE_OFFSET:
                    flat[i] = _relayout(t, _offset(t), leaves_map)
                elif v.kind is VariationKind.SCALAR:
                    flat[i] = type(flat[i])(float(v.b)) if type(flat[i]) is int else float(v.b)
                elif v.kind is VariationKind.VALUES:
                    flat[i] = _relayout(t, _changed_values(t), leaves_map)
            if v.kind is VariationKind.ALIASING and v.b == "same tensor":
                i, j = idx
                flat[j] = flat[i]
            elif v.kind is VariationKind.ALIASING:
                for i in idx:
                    flat[i] = _relayout(flat[i], flat[i].detach().clone(), leaves_map)
        args, kwargs = pytree.tree_unflatten(flat, spec)
        leaves = tuple(leaves_map.get(id(x), x) for x in inp.leaves)
        extra = tuple(x for k, x in leaves_map.items() if x is not None and x.is_leaf and x.requires_grad
                      and not any(x is y for y in leaves))
        return replace(inp, args=args, kwargs=kwargs, leaves=leaves + extra)
    return make_b


def _grad_mode(mode: GradMode):
    return torch.inference_mode() if mode is GradMode.INFERENCE_MODE else \
        torch.no_grad() if mode is GradMode.NO_GRAD else contextlib.nullcontext()


@contextlib.contextmanager
def _default_dtype(dtype):
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


@contextlib.contextmanager
def _deterministic():
    old = torch.are_deterministic_algorithms_enabled()
    warn = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(old, warn_only=warn)


def call_context(subject, v) -> Callable:
    """A fresh context manager for one call under condition B (A when ``v`` is None): the
    grad mode, and the default dtype, autocast and deterministic setting of a variation."""
    def ctx():
        stack = contextlib.ExitStack()
        mode = GradMode(v.b) if v is not None and v.kind is VariationKind.GRAD_MODE else subject.grad_mode
        stack.enter_context(_grad_mode(mode))
        if v is not None and v.kind is VariationKind.DEFAULT_DTYPE:
            stack.enter_context(_default_dtype(getattr(torch, v.b)))
        if (v is not None and v.kind is VariationKind.AUTOCAST) or getattr(subject, "autocast", False):
            stack.enter_context(torch.autocast("cpu", dtype=torch.bfloat16))
        if v is not None and v.kind is VariationKind.DETERMINISTIC:
            stack.enter_context(_deterministic())
        return stack
    return ctx


@contextlib.contextmanager
def state_context(subject, v):
    """The Python state and config of condition B around the whole run (compile, eager and
    compiled calls, backward), restored afterwards."""
    restore: list[Callable] = []
    try:
        if subject.states:
            subject.states[int(v.b) if v is not None and v.kind is VariationKind.STATE else 0]()
            restore.append(subject.states[0])
        if v is not None and v.kind in (VariationKind.CLOSURE, VariationKind.GLOBAL, VariationKind.TRAINING):
            cells, gl = _python_reads(subject.fn)
            if v.kind is not VariationKind.TRAINING:
                read = next(r for r in numeric_reads(subject.fn) if r.kind is v.kind and r.label == v.target)
                old = read.value
                read.set(type(old)(float(v.b)) if type(old) is int else float(v.b))
                restore.append(lambda: read.set(old))
            else:
                m = dict(cells + gl)[v.target]
                was = m.training
                m.train(v.b == "True")
                restore.append(lambda: m.train(was))
        if v is not None and v.kind is VariationKind.CONFIG:
            restore.append(_apply_config(v))
        yield
    finally:
        for r in reversed(restore):
            r()


def _apply_config(v) -> Callable:
    """Set one config flag of condition B; returns the undo."""
    owner, name = v.target.split(".", 1)
    if owner == "aotcheck":
        from .. import flags
        flag = next(f for f in flags.ALL if f.name == name)
        cm = flags.overridden(flag, v.b)
        cm.__enter__()
        return lambda: cm.__exit__(None, None, None)
    if owner == "functorch":
        import torch._functorch.config as module
    else:
        import torch._inductor.config as module
    old = getattr(module, name)
    setattr(module, name, (not old) if v.b == "flip" else v.b)
    return lambda: setattr(module, name, old)


# ---------------------------------------------------------------- a run under B


def check_under(subject, compiled: Callable, v):
    """The oracle's check of ``compiled`` against eager under condition B (A where ``v`` is None)."""
    from ..check.oracle import check
    ctx = call_context(subject, v)
    make = subject.make_inputs if v is None else vary_inputs(v, subject.make_inputs)
    return check(wrapped(subject.fn, ctx, "eager"), wrapped(compiled, ctx, "compiled"), make,
                 backward=subject.backward)


@dataclass(frozen=True)
class CacheEvents:
    hits: int = 0
    misses: int = 0
    bypasses: int = 0
    saves: int = 0


@contextlib.contextmanager
def observe(engine):
    """The cache events of the block: the engine's ``measure()`` (aotcheck's counters, or
    AOTAutogradCache's), plus the FX graph cache's for Inductor. Yields a dict, filled at the end."""
    from torch._dynamo.utils import counters
    before = dict(counters["inductor"])
    box: dict = {}
    with engine.measure() as stats:
        yield box
    fx = {k: counters["inductor"][k] - before.get(k, 0)
          for k in ("fxgraph_cache_hit", "fxgraph_cache_miss", "fxgraph_cache_bypass")}
    inductor = engine.name == "torch-inductor"
    box["events"] = CacheEvents(
        hits=stats.hits + (fx["fxgraph_cache_hit"] if inductor else 0),
        misses=stats.misses + (fx["fxgraph_cache_miss"] if inductor else 0),
        bypasses=stats.bypasses, saves=stats.saves)
    box["fx"] = fx


def compile_and_check(engine, subject, v, cache_dir, dynamic: bool = False):
    """Compile the subject into ``cache_dir`` (``dynamic``: with every size symbolic) and check
    it against eager, under A (``v`` None) or under ``v``'s condition B: the cache events seen,
    the oracle's report and the compiled function."""
    compile_ = engine.compile_dynamic if dynamic else engine.compile_cached
    with state_context(subject, v), observe(engine) as box:
        compiled = compile_(subject.fn, str(cache_dir))
        report = check_under(subject, compiled, v)
    return box["events"], report, compiled


def wrapped(fn: Callable, ctx: Callable, which: str = "") -> Callable:
    def called(*args, **kwargs):
        mark(f"CALL\t{which}")
        with ctx():
            return fn(*args, **kwargs)
    called.__wrapped__ = fn       # NOTE [what a compiled function needs in force] in check/oracle.py
    return called


_PROGRESS: list = []       # a pool worker's progress file (``variation_corpus.run_cases``), one line per step


def mark(line: str) -> None:
    """Record a step before taking it, so that a crash of the process names the step."""
    if _PROGRESS:
        _PROGRESS[0].write(line.replace("\n", " ") + "\n")
        _PROGRESS[0].flush()


@contextlib.contextmanager
def quiet_torch_logs():
    """Fake-tensor and Dynamo error logs of a B whose eager run raises too (a shape that no
    longer broadcasts) are expected: silenced for the block."""
    import logging
    names = ("torch._subclasses.fake_tensor", "torch._dynamo", "torch._inductor")
    old = [(logging.getLogger(n), logging.getLogger(n).level) for n in names]
    for log, _ in old:
        log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for log, level in old:
            log.setLevel(level)

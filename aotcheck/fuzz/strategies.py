"""A hypothesis strategy for straight-line torch programs that mix views, mutation and aliasing.

``programs()`` draws a ``Program`` (see ``aotcheck.fuzz.programs``) one statement at a time and runs
each statement on real tensors as soon as it is drawn, so every fact an op needs (shape, stride,
overlap, is it a leaf, was it saved for backward) comes from torch itself. Only ops that are
legal for the current values are offered; nothing is generated and then filtered.

    >>> from hypothesis import find
    >>> p = find(programs(), lambda p: any(s.op == "t_" for s in p.statements))
    >>> print(p.function_source())
    def f(a0):
        a0.t_()
        return ()
"""
from __future__ import annotations

import functools
import math
from collections import Counter
from contextlib import nullcontext

import hypothesis.strategies as st
import torch
from hypothesis import assume
from torch._C._autograd import CreationMeta, _get_creation_meta

from .choosers import APPLIES as _APPLIES, ARGS as _ARGS, MAX_NDIM, _no_args, _pick  # noqa: F401
from .choosers import storage_of as _storage
from .prelude import _CUSTOM_FUNCTIONS, _IMPERATIVE_HELPERS, _LIBRARY_OPS, _PRELUDE, _RANDINT, _TWO_TENSOR
from .programs import (KIND_OF_OP, NULLARY_OPS, OP_KINDS, Base, Index, InputSpec, Program, Statement,
                       is_mutating, run_eager)

# NOTE [stop inside each statement]
# Each statement is one nested draw whose first choice is "go on or stop" (stop is the value
# hypothesis shrinks toward); inputs and returned values are drawn the same way. With a count
# drawn up front, shrinking can only cut the tail; with the choice inside a statement's own draw,
# the shrinker can delete any statement as a unit, and reproducers shrink to the few that matter.

# NOTE [stale special views]
# A view made under no_grad, or an output of unbind/split, is "special" (its ``CreationMeta`` is
# not DEFAULT). Once its storage has been changed in place after it was made, autograd refuses to
# rebuild its grad_fn, so any grad-mode op that reads it raises (even ``.is_leaf``). Such a value
# is only offered to no_grad statements and is never returned.

# NOTE [views that gain requires_grad]
# A view made while its base needed no grad has no grad_fn. When the base later gains
# requires_grad (an in-place op through another view wrote a grad-requiring value into it), the
# view requires grad too, but autograd builds its grad_fn only when something reads it: an op
# that takes the view as an operand in grad mode, or Python's ``.is_leaf``/``.grad_fn``. Until
# then an in-place op on the view fails with "a leaf Variable that requires grad is being used
# in an in-place operation". So eager's verdict depends on whether anyone looked: the strategy
# never reads ``.is_leaf`` of a view, and tracks which views autograd has not linked yet.

# NOTE [legal in-place targets]
# Eager PyTorch refuses an in-place or metadata op on: a leaf that requires grad, or a view of
# one (outside no_grad); a view made under no_grad, or one of several outputs of unbind/split,
# when grad mode is on (``CreationMeta`` other than DEFAULT); and it fails at backward when the
# mutated storage holds a tensor saved for backward (also when the op itself saves an operand
# that shares the destination's version counter, as ``x.mul_(y)`` saves ``y``). Writes also need
# a destination with no internal overlap and a source that shares no element with it. Under
# no_grad, a tensor that requires grad keeps its shape. The strategy records saved
# tensors with ``saved_tensors_hooks`` while it runs each statement. Those hooks switch off
# autograd's own version check, so the finished program is run once more, fresh and without
# hooks, forward and backward; a program that fails there is rejected with ``assume(False)``
# and counted in ``STATS``.

# Op kinds in draw order, repeated by weight: mutation and views are what aotcheck is about.
KIND_WEIGHTS = {"pointwise": 2, "view": 4, "inplace": 4, "reduction": 1, "metadata": 2,
                "matmul": 1, "detach": 1,
                # the wider grammar's kinds come last, so that without them draws are as before
                "cast": 1, "random": 1, "custom": 1, "custom_inplace": 1, "state": 1, "multi": 1,
                "scalar": 1,
                # issue 27's kinds after those, for the same reason
                "autograd": 2, "data": 2, "new_leaf": 1, "func": 1, "library": 2, "out": 2}
_KIND_DRAWS = [kind for kind, weight in KIND_WEIGHTS.items() for _ in range(weight)]
# Counts kept across draws: "programs" drawn, and "rejected: <first line of the error>".
STATS: Counter = Counter()


# The wider grammar (issue 13), by name. None is drawn unless asked for: the CI property test
# (tests/test_fuzz.py, against aotcheck's engine) runs ``programs()`` as it was, and runs the
# extensions aotcheck's engine passes through ``AOTCHECK_EXTENSIONS``.
ISSUE13_EXTENSIONS = ("regions", "casts", "integer", "multi_output", "non_tensor", "parameter",
                      "custom_function", "random", "set_", "requires_grad_", "subclass", "seeding")
# Issue 27's classes, the programs people report: imperative autograd (``retain_grad()`` and
# tensor hooks on arguments and intermediates), ``.data`` assignment (swaps between arguments
# too), leaves made inside (``torch.randn(..., requires_grad=True)``, ``nn.Parameter``; a
# function may then take no tensor at all), ``torch.func`` transforms inside, ``torch.library``
# ops that mutate their argument, and ``out=`` variants (resizing their out tensor).
IMPERATIVE_EXTENSIONS = ("retain_grad", "hooks", "data", "inner_leaves", "func", "library",
                         "out_variants")
EXTENSIONS = ISSUE13_EXTENSIONS + IMPERATIVE_EXTENSIONS
_EXTENSION_OPS = {"casts": ("to", "gt"), "multi_output": ("unbind_all", "chunk"),
                  "non_tensor": ("size",), "custom_function": ("double_fn", "mul2_fn_"),
                  "random": ("rand_like", "dropout"), "set_": ("set_",),
                  # seeding inside the function: the default generator, or a torch.Generator
                  # made there (issue 11's rng class)
                  "seeding": ("reseeded_rand_like", "generator_rand"),
                  "requires_grad_": ("requires_grad_",),
                  "retain_grad": ("retain_grad",), "hooks": ("hook",),
                  "data": ("data_set", "data_swap", "data_mul_"),
                  "inner_leaves": ("randn_leaf", "new_parameter"),
                  "func": ("func_grad", "func_vjp", "func_grad_index"),
                  "library": ("lib_mul2_", "lib_add_first_"),
                  "out_variants": ("sin_out", "sin_out_fresh")}
_BASE_OPS = frozenset(op for op in KIND_OF_OP if not any(op in ops for ops in _EXTENSION_OPS.values()))
# Extensions drawn against aotcheck's own engine by default: all of them, subclass arguments and
# issue 27's classes included (issue 13's alone: `--extensions all --seed 7`, 1000 programs
# pass; `--seed 1`, 10,000 programs: 53 fail in 14 fingerprints, 11 of them with subclass
# arguments). The slow test in tests/test_fuzz.py runs issue 13's; tests/test_fuzz_escapes.py
# runs issue 27's (a failure there is an engine bug to fix). The torch engines draw issue 13's
# by default and issue 27's with ``--extensions all`` (``runner.default_extensions``).
AOTCHECK_EXTENSIONS = EXTENSIONS
# Ops offered on integer and bool tensors (the others would mostly be rejected by torch).
_INTEGER_OPS = frozenset(OP_KINDS["view"]) | {"to", "gt", "sum", "clone", "add", "mul", "detach",
                                              "size", "unbind_all", "chunk", "setitem", "zero_",
                                              "copy_", "t_", "transpose_", "unsqueeze_", "squeeze_"}


@st.composite
def programs(draw, max_inputs: int = 4, max_statements: int = 8, max_numel: int = 64,
             min_statements: int = 0, extensions=()) -> Program:
    """Programs of 1..max_inputs inputs and min..max_statements statements, valid in eager.

    Hypothesis favours small examples: with ``min_statements=0`` about 30% of the programs
    have no statement at all (they still test aliased inputs and returned inputs).
    ``min_statements=1`` avoids that, at the price of a first statement the shrinker can only
    simplify, not delete.

    ``extensions``: names from ``EXTENSIONS`` to draw as well (``"all"`` for every one).
    """
    extensions = frozenset(EXTENSIONS if extensions == "all" else extensions)
    if extensions - set(EXTENSIONS):
        raise ValueError(f"unknown extensions {sorted(extensions - set(EXTENSIONS))}; "
                         f"known: {', '.join(EXTENSIONS)}")
    # Drawing runs each statement on real tensors, and what ran decides what may be drawn
    # next; the global generator (an unseeded random op) must not carry state from whatever
    # ran before, or the same choices draw another program: hypothesis' "inconsistent data
    # generation" (FlakyStrategyDefinition) in a shard that skipped other shards' programs.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return _draw_program(draw, max_inputs, max_statements, max_numel, min_statements,
                             extensions)


def _draw_program(draw, max_inputs, max_statements, max_numel, min_statements, extensions):
    made = _Inputs(max_inputs, max_numel, extensions)
    while draw(_input_step(made)):
        pass
    state = _State(tuple(made.bases), tuple(made.inputs), max_numel, extensions)
    statements = [draw(_statement(state)) for _ in range(min(min_statements, max_statements))]
    while stmt := draw(_statement_step(state, room=len(statements) < max_statements)):
        statements.append(stmt)
    returns: list[str] = []
    while name := draw(_return_step(state, room=len(returns) < 4)):
        returns.append(name)
    program = Program(tuple(made.bases), tuple(made.inputs), tuple(statements), tuple(returns))
    STATS["programs"] += 1
    try:
        run_eager(program.to_function(), program.make_inputs())
    except RuntimeError as e:
        _reject("in the fresh eager run", e)
    return program


def _reject(when: str, error: RuntimeError):
    STATS[f"rejected {when}: " + str(error).strip().split("\n")[0][:100]] += 1
    assume(False)


# Each input, statement and returned value is one nested draw that starts with its own "go on
# or stop" choice, so the shrinker can delete it as a unit. See NOTE [stop inside each statement].
# The choice is drawn even when there is no room left (and then ignored): otherwise deleting an
# item from a full list would leave the next list's choices one short.

def _go_on(draw, odds: int) -> bool:
    """Another item, or stop? Stop is 0, where shrinking goes; go on has ``odds`` to 1."""
    return draw(st.integers(0, odds)) != 0


@st.composite
def _statement(draw, state):
    """A statement that is always there (one of the first ``min_statements``)."""
    return state.run(_draw_statement(draw, state))


@st.composite
def _statement_step(draw, state: "_State", room: bool) -> Statement | None:
    """Another statement, or stop."""
    return state.run(_draw_statement(draw, state)) if _go_on(draw, 9) and room else None


@st.composite
def _return_step(draw, state: "_State", room: bool) -> str | None:
    """Another returned value, or stop (always, where no value was made: no input, no statement)."""
    options = state.usable(no_grad=False) + state.extras
    return _pick(draw, options) if _go_on(draw, 3) and room and options else None


# -- inputs -----------------------------------------------------------------------------------

class _Inputs:
    """The bases and inputs drawn so far."""

    def __init__(self, max_inputs, max_numel, extensions=frozenset()):
        self.max_inputs, self.max_numel = max_inputs, max_numel
        self.extensions = extensions
        self.bases: list[Base] = []
        self.inputs: list[InputSpec] = []
        self.shapes: dict[str, tuple] = {}

    def add(self, kind, op, args, shape):
        name = f"a{len(self.inputs)}"
        self.inputs.append(InputSpec(name, kind, op, args))
        self.shapes[name] = shape


@st.composite
def _input_step(draw, made: _Inputs) -> bool:
    """Add an input (two for a disjoint pair) to ``made``, or say stop (before the first only where
    the function can make its own leaves: a function of no tensor at all)."""
    if made.inputs and not _go_on(draw, 2) or len(made.inputs) >= made.max_inputs:
        return False
    if not made.inputs and "inner_leaves" in made.extensions and not _go_on(draw, 9):
        return False
    shapes, max_numel = made.shapes, made.max_numel

    def new_base(shape, make, subclass=False):
        if make in ("parameter", "integer"):
            dtype = "float32" if make == "parameter" else _pick(draw, ["int64", "bool"])
            made.bases.append(Base(f"b{len(made.bases)}", shape, dtype, make == "parameter",
                                   False, draw(st.integers(0, 2**16)), make == "parameter"))
            return made.bases[-1].name
        rg = True if make == "clone" else draw(st.booleans())
        dtype = "float64" if draw(st.integers(0, 4)) == 4 else "float32"
        made.bases.append(Base(f"b{len(made.bases)}", shape, dtype, rg, make == "clone",
                               draw(st.integers(0, 2**16)), subclass=subclass))
        return made.bases[-1].name

    can = {
        "leaf": True, "nonleaf": True, "noncontig": True, "same": bool(shapes),
        "overlap": any(len(s) >= 1 and s[0] >= 2 for s in shapes.values()),
        "transposed": any(len(s) >= 2 for s in shapes.values()),
        "disjoint": made.max_inputs - len(made.inputs) >= 2,
        "parameter": "parameter" in made.extensions, "integer": "integer" in made.extensions,
        "subclass": "subclass" in made.extensions,
    }
    kind = _pick(draw, [k for k, ok in can.items() if ok])
    if kind in ("parameter", "integer"):
        shape = _draw_shape(draw, 0, max_numel)
        made.add(kind, "same", (new_base(shape, kind),), shape)
    elif kind in ("leaf", "nonleaf"):
        shape = _draw_shape(draw, 0, max_numel)
        made.add(kind, "same", (new_base(shape, "leaf" if kind == "leaf" else "clone"),), shape)
    elif kind == "subclass":
        shape = _draw_shape(draw, 0, max_numel)
        made.add(kind, "same", (new_base(shape, _pick(draw, ["leaf", "clone"]), subclass=True),),
                 shape)
    elif kind == "noncontig":
        shape = _draw_shape(draw, 1, max_numel // 2)
        make = _pick(draw, ["leaf", "clone"])
        if len(shape) >= 2 and draw(st.booleans()):
            b = new_base(shape[:-2] + (shape[-1], shape[-2]), make)
            made.add(kind, "transpose", (b, -2, -1), shape)
        else:
            b = new_base((2 * shape[0],) + shape[1:], make)
            made.add(kind, "slice", (b, Index(((None, None, 2),))), shape)
    elif kind == "same":
        source = _pick(draw, list(shapes))
        made.add(kind, "same", (source,), shapes[source])
    elif kind == "overlap":
        source = _pick(draw, [n for n, s in shapes.items() if len(s) >= 1 and s[0] >= 2])
        shape = shapes[source]
        made.add(kind, "slice", (source, Index(((1, None, None),))), (shape[0] - 1,) + shape[1:])
    elif kind == "transposed":
        source = _pick(draw, [n for n, s in shapes.items() if len(s) >= 2])
        shape = shapes[source]
        op_args = ("t", (source,)) if len(shape) == 2 else ("transpose", (source, -2, -1))
        made.add(kind, *op_args, shape[:-2] + (shape[-1], shape[-2]))
    else:  # disjoint: two rows of one hidden base
        shape = _draw_shape(draw, 0, max_numel // 2)
        b = new_base((2,) + shape, _pick(draw, ["leaf", "clone"]))
        made.add(kind, "slice", (b, Index((0,))), shape)
        made.add(kind, "slice", (b, Index((1,))), shape)
    return True


def _draw_shape(draw, min_ndim, max_numel):
    ndim = _pick(draw, [n for n in (1, 2, 3, 0) if n >= min_ndim])
    shape = []
    for _ in range(ndim):
        room = max_numel // math.prod(shape)
        shape.append(draw(st.integers(1, max(1, min(4, room)))))
    return tuple(shape)


# -- running statements while they are drawn --------------------------------------------------

class _State:
    """The values of a program being drawn, as real tensors, and what autograd saved."""

    def __init__(self, bases, inputs, max_numel, extensions=frozenset()):
        args = Program(bases, inputs, ()).make_inputs().args
        self.extensions = extensions
        self.ops = _BASE_OPS | {op for ext in extensions for op in _EXTENSION_OPS.get(ext, ())}
        self.extras: list[str] = []      # values that are returned only: tuples, torch.Size
        self.env = {spec.name: t for spec, t in zip(inputs, args)}
        self.names = [spec.name for spec in inputs]
        self.max_numel = max_numel
        self.saved_storages: set[int] = set()
        self.born_version = {name: t._version for name, t in self.env.items()}
        self._keep_alive: list[torch.Tensor] = []  # so saved storages' addresses stay unique
        # ids of views that may have no grad_fn yet; see NOTE [views that gain requires_grad]
        self.unlinked_views = {id(t) for t in args if t._is_view() and not t.requires_grad}
        self.outs = 0

    def fresh_name(self) -> str:
        self.outs += 1
        return f"v{self.outs - 1}"

    def run(self, stmt: Statement) -> Statement:
        def pack(t):
            self.saved_storages.add(_storage(t).data_ptr())
            self._keep_alive.append(t)
            return t

        quiet = stmt.no_grad or stmt.region == "inference_mode"
        if not quiet:  # autograd links every grad-requiring operand it reads
            self.unlinked_views -= {id(self.env[a]) for a in stmt.args
                                    if isinstance(a, str) and self.env[a].requires_grad}
        try:
            # torch.func transforms refuse to run under saved-tensor hooks: what they save goes
            # unrecorded, and a later write that breaks their backward is caught by the fresh run
            recording = (nullcontext() if KIND_OF_OP[stmt.op] == "func"
                         else torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t))
            with recording:
                with _region(stmt):
                    exec(_compiled(stmt.line()), _GLOBALS, self.env)
        except RuntimeError as e:  # a legality rule the choosers do not know yet
            _reject("while drawing", e)
        if stmt.out is not None and (not isinstance(self.env[stmt.out], torch.Tensor)
                                     or self.env[stmt.out].is_inference()):
            self.extras.append(stmt.out)   # a tuple, a torch.Size, an inference tensor: returned only
        elif stmt.out is not None:
            self.names.append(stmt.out)
            out = self.env[stmt.out]
            self.born_version[stmt.out] = out._version
            if out._is_view() and not out.requires_grad:
                self.unlinked_views.add(id(out))
        return stmt

    def usable(self, no_grad: bool) -> list[str]:
        """Values an op may read: with grad mode on, none that NOTE [stale special views] bars."""
        return [n for n in self.names if no_grad or not self._stale_special_view(n)]

    def _stale_special_view(self, name) -> bool:
        t = self.env[name]
        return (t._is_view() and _get_creation_meta(t) != CreationMeta.DEFAULT
                and t._version != self.born_version[name])

    def facts(self, no_grad: bool) -> dict[str, "_Facts"]:
        try:
            return {name: _Facts(self.env[name], no_grad, self.saved_storages,
                                 id(self.env[name]) in self.unlinked_views)
                    for name in self.usable(no_grad)}
        except RuntimeError as e:  # a storage torch cannot show (a plain tensor set_ onto a subclass)
            _reject("reading facts", e)


def _region(stmt: Statement):
    if stmt.no_grad:
        return torch.no_grad()
    if stmt.region == "inference_mode":
        return torch.inference_mode()
    return nullcontext()     # enable_grad nested in no_grad is grad mode


_GLOBALS: dict = {}
exec(compile(_PRELUDE + _RANDINT + _TWO_TENSOR + _CUSTOM_FUNCTIONS + _IMPERATIVE_HELPERS + _LIBRARY_OPS,
             "<aotcheck prelude>", "exec"), _GLOBALS)


@functools.lru_cache(maxsize=4096)
def _compiled(line: str):
    return compile(line, "<statement>", "exec")


class _Facts:
    """What the op choosers need to know about one value, read from the tensor."""

    def __init__(self, t: torch.Tensor, no_grad: bool, saved_storages: set[int], unlinked: bool):
        self.t = t
        self.no_grad = no_grad           # the statement runs with grad mode off
        self.unlinked = unlinked         # NOTE [views that gain requires_grad]
        self.saved = _storage(t).data_ptr() in saved_storages
        self.plain = type(t) in (torch.Tensor, torch.nn.Parameter)
        self.shape = tuple(t.shape)
        self.ndim = t.ndim
        self.numel = t.numel()
        self.storage = _storage(t).data_ptr()
        self.offsets = _offsets(t)
        self.mutable = self.storage not in saved_storages and (
            no_grad or _grad_mode_mutable(t, unlinked))
        self.writable = self.mutable and len(set(self.offsets)) == self.numel
        # Under no_grad, a new shape for a tensor that requires grad is not recorded: the grad_fn
        # of a non-leaf, the views of a leaf and the ops that already read it keep the old shape,
        # and backward hands on gradients of the wrong shape.
        self.reshapable = self.mutable and not (no_grad and t.requires_grad)
        self.floating = t.is_floating_point()
        self.tame = bool(t.detach().abs().max() <= 5) if self.numel and self.floating else True

    def shares_elements(self, other: "_Facts") -> bool:
        return self.storage == other.storage and not set(self.offsets).isdisjoint(other.offsets)

    def shares_version(self, other: "_Facts") -> bool:
        """Do in-place writes to one bump the other's version counter? (one storage, here)"""
        return self.storage == other.storage


def _is_leaf(t: torch.Tensor) -> bool:
    """``t.is_leaf`` without its side effect: on a view, reading it rebuilds the grad_fn."""
    return not (t._is_view() and t.requires_grad) and t.is_leaf


def _grad_mode_mutable(t: torch.Tensor, unlinked: bool) -> bool:
    """May ``t`` be changed in place with grad mode on? See NOTE [legal in-place targets]."""
    if t.requires_grad and _is_leaf(t):
        return False
    if t._is_view():
        if t._base.is_leaf and t._base.requires_grad:
            return False
        if _get_creation_meta(t) != CreationMeta.DEFAULT:
            return False
        if unlinked and t.requires_grad:
            return False
    return True


def _offsets(t: torch.Tensor) -> list[int]:
    """The storage element each element of ``t`` lives at."""
    size = _storage(t).nbytes() // t.element_size()
    return torch.arange(size).as_strided(t.shape, t.stride(), t.storage_offset()).flatten().tolist()


# -- choosing a statement ---------------------------------------------------------------------

def _draw_statement(draw, state: _State) -> Statement:
    region = ""
    if "regions" in state.extensions:
        # inference_mode rarely: AOTAutogradCache never caches such a graph (findings C1)
        r = draw(st.integers(0, 19))
        no_grad = r in (14, 15, 16)
        region = {17: "enable_grad", 18: "enable_grad", 19: "inference_mode"}.get(r, "")
    else:
        no_grad = draw(st.integers(0, 7)) == 7
    facts = state.facts(no_grad or region == "inference_mode")
    targets = {op: [n for n, f in facts.items() if _APPLIES[op](f, facts, state)
                    and (f.floating or op in _INTEGER_OPS)] if op in state.ops else []
               for op in KIND_OF_OP if op not in NULLARY_OPS}
    for op in NULLARY_OPS:              # no operand: a leaf made inside, from a drawn shape
        targets[op] = [None] if op in state.ops else []
    kind = _pick(draw, [k for k in _KIND_DRAWS if any(targets[o] for o in OP_KINDS[k])])
    op = _pick(draw, [o for o in OP_KINDS[kind] if targets[o]])
    x = _pick(draw, targets[op][::-1])  # newest first: ops chain on recent results
    if x is None:
        args = _ARGS[op](draw, None, facts, state)
    else:
        args = (x,) + _ARGS.get(op, _no_args)(draw, facts[x], facts, state)
    out = None if is_mutating(op) else state.fresh_name()
    return Statement(op, args, out, no_grad, region)



"""Straight-line torch programs as plain data, and the printer that turns one into a reproducer.

A ``Program`` is what ``aotcheck.fuzz.strategies.programs()`` draws: how to build the inputs, a list of
one-op statements, and the returned values. It holds only strings, numbers and tuples, so it can be
printed, hashed, compared and stored as JSON. The printed source *is* the program's meaning:
``to_function()`` and the strategy both run the very lines that ``to_source()`` prints.

Example, a program and its printout (``program.to_source(engine="aotcheck")``, trimmed)::

    Program(
        bases=(Base("b0", (3, 4), "float32", requires_grad=True, clone=True, seed=7),),
        inputs=(InputSpec("a0", "nonleaf", "same", ("b0",)),
                InputSpec("a1", "overlap", "slice", ("a0", Index(((1, None, None),))))),
        statements=(Statement("t", ("a1",), out="v0"),
                    Statement("mul_", ("v0", 2.0)),
                    Statement("sum", ("a0", 1, False), out="v1", no_grad=True)),
        returns=("v0", "v1"))

    def f(a0, a1):
        v0 = a1.t()
        v0.mul_(2.0)
        with torch.no_grad():
            v1 = a0.sum(1, keepdim=False)
        return (v0, v1)

    def make_inputs():
        l0 = _randn((3, 4), torch.float32, 7).requires_grad_()
        b0 = l0.clone()
        a0 = b0
        a1 = a0[1:]
        return Inputs(args=(a0, a1), kwargs={}, leaves=(l0,))

    if __name__ == "__main__":
        compiled = aotcheck.aot_function(f)
        report = check(f, compiled, make_inputs)
        ...   # prints the divergences and exits 1, or exits 0

Names: hidden bases are ``b0, b1, ...`` (``l0`` is the grad-requiring leaf a ``clone`` base is
made from), inputs are ``a0, a1, ...`` and statement results are ``v0, v1, ...``. In ``args`` a
``str`` is always a reference to one of those names; constants are numbers, ``None``, tuples of
ints, or an ``Index`` (the key of ``x[...]``).
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Union

import torch

from .. import flags
from ..check.oracle import Inputs
from .prelude import (_CUSTOM_FUNCTIONS, _IMPERATIVE_HELPER_OPS, _IMPERATIVE_HELPERS, _LIBRARY_OPS,
                      _PRELUDE, _RANDINT, _TWO_TENSOR)

SCHEMA_VERSION = 1

# The op vocabulary, by kind; within a kind the simplest op comes first, and the strategy draws
# kinds and ops in this order, so shrinking moves toward the front.
OP_KINDS: dict[str, tuple[str, ...]] = {
    "pointwise": ("sin", "relu", "exp", "sigmoid", "tanh", "add", "mul", "clone"),
    "view": ("view", "reshape", "t", "transpose", "permute", "slice", "select", "narrow",
             "unsqueeze", "squeeze", "expand", "diagonal", "unbind", "split", "as_strided"),
    "inplace": ("add_", "mul_", "copy_", "zero_", "fill_", "clamp_", "setitem"),
    "reduction": ("sum", "mean", "amax"),
    "metadata": ("t_", "transpose_", "unsqueeze_", "squeeze_"),
    "matmul": ("matmul",),
    "detach": ("detach",),
    # the wider grammar (issue 13), drawn only when the strategy's ``extensions`` ask for it
    "cast": ("to", "gt"),                           # dtype casts; bool results
    "random": ("rand_like", "dropout",              # random ops (the oracle seeds both runs)
               "reseeded_rand_like", "generator_rand"),   # ... seeded inside the function
    "custom": ("double_fn",),                       # a custom autograd.Function
    "custom_inplace": ("mul2_fn_",),                # one that mutates its input (mark_dirty)
    "state": ("requires_grad_", "set_"),            # autograd state and storage swaps
    "multi": ("unbind_all", "chunk"),               # multi-output views, returned as a tuple
    "scalar": ("size",),                            # a non-tensor value, returned
    # imperative autograd and the rest of issue 27's classes, drawn only when asked for too
    "autograd": ("retain_grad", "hook"),            # retain_grad(); a hook that doubles the grad
    "data": ("data_set", "data_swap", "data_mul_"),  # x.data = y; a swap; x.data.mul_(2)
    "new_leaf": ("randn_leaf", "new_parameter"),    # leaves made inside (no operand)
    "func": ("func_grad", "func_vjp", "func_grad_index"),   # torch.func transforms inside
    "library": ("lib_mul2_", "lib_add_first_"),     # torch.library ops that mutate their argument
    "out": ("sin_out", "sin_out_fresh"),            # out= variants, into a tensor of any shape
}
KIND_OF_OP = {op: kind for kind, ops in OP_KINDS.items() for op in ops}
# Ops that change an existing tensor and bind no new name.
MUTATING_KINDS = ("inplace", "metadata", "state", "custom_inplace", "autograd", "data", "library")
# Ops that change the tensor named by their first argument although their kind is not mutating
# (``torch.sin(x, out=o)`` writes ``o``, its first argument, and binds no name).
MUTATING_OPS = ("sin_out",)
# Ops with no tensor operand: their first argument is a shape, not a name.
NULLARY_OPS = ("randn_leaf", "new_parameter")


def is_mutating(op: str) -> bool:
    """Does ``op`` change its first argument and bind no name?"""
    return KIND_OF_OP[op] in MUTATING_KINDS or op in MUTATING_OPS
# Ops whose value is not a tensor (a tuple of views, a torch.Size): only ever returned.
RETURN_ONLY_KINDS = ("multi", "scalar")
# Grad-mode regions a statement can run in, besides plain grad mode and ``no_grad``: an
# ``enable_grad`` block nested in a ``no_grad`` block, and an ``inference_mode`` block.
REGIONS = ("enable_grad", "inference_mode")
# How an input can be made: a fresh leaf, a clone of a grad-requiring leaf, a transpose or strided
# slice of a bigger base; or an alias: "same" tensor as an earlier input, an "overlap"ping slice
# of it, its "transposed" view, or one of two "disjoint" rows of one hidden base; the wider
# grammar adds an nn.Parameter, an integer or bool tensor, and a ``TwoTensor`` (a traceable
# wrapper subclass whose two inner tensors get every op), a leaf or a clone of one.
INPUT_KINDS = ("leaf", "nonleaf", "noncontig", "same", "overlap", "transposed", "disjoint",
               "parameter", "integer", "subclass")
DTYPES = ("float32", "float64", "int64", "bool")


@dataclass(frozen=True)
class DType:
    """A dtype argument, printed as ``torch.<name>``."""
    name: str

    def __str__(self) -> str:
        return f"torch.{self.name}"


@dataclass(frozen=True)
class Index:
    """The key of ``x[...]``: one item per leading dim, an int or a ``(start, stop, step)``."""
    items: tuple[Union[int, tuple], ...]

    def key(self) -> tuple:
        return tuple(i if isinstance(i, int) else slice(*i) for i in self.items)

    def __str__(self) -> str:
        def one(item):
            if isinstance(item, int):
                return str(item)
            start, stop, step = item
            text = f"{'' if start is None else start}:{'' if stop is None else stop}"
            return text if step in (None, 1) else f"{text}:{step}"
        return ", ".join(one(i) for i in self.items)


Arg = Union[str, int, float, bool, None, tuple, Index, DType]


def render_arg(arg: Arg) -> str:
    if isinstance(arg, (str, Index, DType)):
        return str(arg)
    return repr(arg)


def render_expr(op: str, args: tuple) -> str:
    """One op applied to its args, as Python source. ``args[0]`` is always the tensor it acts on."""
    a = [render_arg(x) for x in args]
    if op == "same":
        return a[0]
    if op == "slice":
        return f"{a[0]}[{a[1]}]"
    if op == "setitem":
        return f"{a[0]}[{a[1]}] = {a[2]}"
    if op in ("unbind", "split"):
        return f"{a[0]}.{op}({', '.join(a[1:-1])})[{a[-1]}]"
    if op == "rand_like":
        return f"torch.rand_like({a[0]})"
    if op == "dropout":
        return f"torch.nn.functional.dropout({a[0]}, {a[1]})"
    if op == "reseeded_rand_like":      # the default generator seeded again, then a draw
        return f"(torch.manual_seed({a[1]}), torch.rand_like({a[0]}))[1]"
    if op == "generator_rand":          # a generator made (and seeded) inside the function
        return (f"torch.rand({a[0]}.shape, dtype={a[0]}.dtype, "
                f"generator=torch.Generator().manual_seed({a[1]}))")
    if op == "double_fn":
        return f"_Double.apply({a[0]})"
    if op == "mul2_fn_":
        return f"_MulTwoInPlace.apply({a[0]})"
    if op == "unbind_all":
        return f"{a[0]}.unbind({a[1]})"
    if op == "size":
        return f"{a[0]}.shape"
    if op == "retain_grad":
        return f"{a[0]}.retain_grad()"
    if op == "hook":
        return f"{a[0]}.register_hook(_double_grad)"
    if op == "data_set":
        return f"{a[0]}.data = {a[1]}"
    if op == "data_swap":
        return f"{a[0]}.data, {a[1]}.data = {a[1]}.data, {a[0]}.data"
    if op == "data_mul_":
        return f"{a[0]}.data.mul_({a[1]})"
    if op == "randn_leaf":
        return f"torch.randn({a[0]}, dtype={a[1]}, requires_grad=True)"
    if op == "new_parameter":
        return f"torch.nn.Parameter(torch.randn({a[0]}, dtype={a[1]}))"
    if op == "func_grad":
        return f"torch.func.grad(_sin_sum)({a[0]})"
    if op == "func_vjp":
        return f"torch.func.vjp(torch.sin, {a[0]})[1](torch.ones_like({a[0]}))[0]"
    if op == "func_grad_index":
        return f"torch.func.grad(_first_row_tripled_square_sum)({a[0]})"
    if op == "lib_mul2_":
        return f"torch.ops.aotcheck_fuzz.mul2_({a[0]})"
    if op == "lib_add_first_":
        return f"torch.ops.aotcheck_fuzz.add_first_({a[0]}, {a[1]})"
    if op == "sin_out":                 # writes (and, for another shape, resizes) args[0]
        return f"torch.sin({a[1]}, out={a[0]})"
    if op == "sin_out_fresh":           # an empty out tensor, resized by the op
        return f"torch.sin({a[0]}, out=torch.empty(0, dtype={a[0]}.dtype))"
    if op == "matmul":
        return f"torch.matmul({a[0]}, {a[1]}{'.mT' if args[2] else ''})"
    if op in OP_KINDS["reduction"] and len(args) == 3:
        return f"{a[0]}.{op}({a[1]}, keepdim={a[2]})"
    return f"{a[0]}.{op}({', '.join(a[1:])})"


@dataclass(frozen=True)
class Base:
    """A tensor built from a seed inside ``make_inputs``; ``f`` sees only views of it (inputs).

    ``clone=True`` makes it ``l<i>.clone()`` of a grad-requiring leaf ``l<i>``, so it is not a
    leaf and in-place ops on it are legal.
    """
    name: str
    shape: tuple[int, ...]
    dtype: str
    requires_grad: bool
    clone: bool
    seed: int
    parameter: bool = False          # an nn.Parameter (a leaf that requires grad)
    subclass: bool = False           # a TwoTensor of two tensors drawn from seed and seed + 1

    @property
    def leaf(self) -> str | None:
        """The name of the grad-requiring leaf whose ``.grad`` is compared, if any."""
        if not self.requires_grad:
            return None
        return "l" + self.name[1:] if self.clone else self.name

    def lines(self) -> list[str]:
        make = f"_randn({self.shape!r}, torch.{self.dtype}, {self.seed})"
        if self.dtype == "int64":
            make = f"_randint({self.shape!r}, {self.seed})"
        elif self.dtype == "bool":
            make = f"(_randn({self.shape!r}, torch.float32, {self.seed}) > 0)"
        elif self.subclass:
            make = (f"TwoTensor({make}, _randn({self.shape!r}, torch.{self.dtype}, "
                    f"{self.seed + 1}))")
        if self.parameter:
            return [f"{self.name} = torch.nn.Parameter({make})"]
        if self.clone:
            return [f"{self.leaf} = {make}.requires_grad_()", f"{self.name} = {self.leaf}.clone()"]
        return [f"{self.name} = {make}{'.requires_grad_()' if self.requires_grad else ''}"]


@dataclass(frozen=True)
class InputSpec:
    """Argument ``name`` of ``f``: ``op`` applied to a base or an earlier input (``args[0]``)."""
    name: str
    kind: str
    op: str
    args: tuple

    def line(self) -> str:
        return f"{self.name} = {render_expr(self.op, self.args)}"


@dataclass(frozen=True)
class Statement:
    """One op. ``out`` names the result; it is None for in-place and metadata ops."""
    op: str
    args: tuple
    out: str | None = None
    no_grad: bool = False
    region: str = ""                 # "" or one of REGIONS (then no_grad is False)

    @property
    def block(self) -> str:
        """The grad-mode block it runs in: "no_grad", one of REGIONS, or "" (none)."""
        return "no_grad" if self.no_grad else self.region

    def line(self) -> str:
        expr = render_expr(self.op, self.args)
        return expr if self.out is None else f"{self.out} = {expr}"


@dataclass(frozen=True)
class Program:
    bases: tuple[Base, ...]
    inputs: tuple[InputSpec, ...]
    statements: tuple[Statement, ...]
    returns: tuple[str, ...] = ()

    def __post_init__(self):
        if flags.get(flags.CHECK_GRAPHS):
            self.check()

    # -- checking ---------------------------------------------------------------------------

    def check(self) -> None:
        """Raise ValueError unless every name is defined once, before it is used."""
        defined: list[str] = []

        def need(name, where):
            if name not in defined:
                raise ValueError(f"{where}: {name!r} is used before it is defined "
                                 f"(defined so far: {', '.join(defined) or 'nothing'})")

        def define(name, where):
            if name in defined:
                raise ValueError(f"{where}: {name!r} is defined twice")
            defined.append(name)

        for base in self.bases:
            if base.dtype not in DTYPES:
                raise ValueError(f"{base.name}: dtype {base.dtype!r} is not one of {DTYPES}")
            if base.clone and not base.requires_grad:
                raise ValueError(f"{base.name}: a clone base must require grad")
            if base.subclass and (base.parameter or base.dtype not in ("float32", "float64")):
                raise ValueError(f"{base.name}: a subclass base is a floating TwoTensor, "
                                 "not a parameter")
            define(base.name, base.name)
        for spec in self.inputs:
            if spec.kind not in INPUT_KINDS:
                raise ValueError(f"{spec.line()}: kind {spec.kind!r} is not one of {INPUT_KINDS}")
            need(spec.args[0], spec.line())
            define(spec.name, spec.line())
        defined = [spec.name for spec in self.inputs]  # f sees its arguments, not the bases
        for stmt in self.statements:
            if stmt.region and (stmt.region not in REGIONS or stmt.no_grad):
                raise ValueError(f"{stmt.line()}: region {stmt.region!r} is not one of {REGIONS}")
            if stmt.op not in KIND_OF_OP:
                raise ValueError(f"{stmt.line()}: unknown op {stmt.op!r}")
            mutating = is_mutating(stmt.op)
            if mutating != (stmt.out is None):
                raise ValueError(f"{stmt.line()}: in-place and metadata ops bind no name; "
                                 "every other op must")
            for arg in stmt.args:
                if isinstance(arg, str):
                    need(arg, stmt.line())
            if stmt.out is not None:
                define(stmt.out, stmt.line())
        for name in self.returns:
            need(name, "return")

    # -- printing ---------------------------------------------------------------------------

    def prelude(self) -> str:
        """The imports and helpers the printed program needs (custom Functions only if used)."""
        text = _PRELUDE
        if any(b.dtype == "int64" for b in self.bases):
            text += _RANDINT
        if any(b.subclass for b in self.bases):
            text += _TWO_TENSOR
        ops = {stmt.op for stmt in self.statements}
        if ops & {"double_fn", "mul2_fn_"}:
            text += _CUSTOM_FUNCTIONS
        if ops & _IMPERATIVE_HELPER_OPS:
            text += _IMPERATIVE_HELPERS
        if ops & {"lib_mul2_", "lib_add_first_"}:
            text += _LIBRARY_OPS
        return text

    def function_source(self) -> str:
        """``def f(...)`` alone; consecutive statements in one region share its ``with`` block."""
        lines = [f"def f({', '.join(spec.name for spec in self.inputs)}):"]
        current = ""
        for stmt in self.statements:
            region = stmt.block
            if region and region != current:
                lines += _REGION_LINES[region]
            current = region
            depth = 1 + (len(_REGION_LINES[region]) if region else 0)
            lines.append("    " * depth + stmt.line())
        lines.append(f"    return {_tuple(self.returns)}")
        return "\n".join(lines) + "\n"

    def inputs_source(self) -> str:
        """``def make_inputs()``: builds the arguments and the leaves from the seeds."""
        lines = ["def make_inputs():"]
        lines += ["    " + line for base in self.bases for line in base.lines()]
        lines += ["    " + spec.line() for spec in self.inputs]
        args = _tuple(spec.name for spec in self.inputs)
        leaves = _tuple(base.leaf for base in self.bases if base.leaf)
        lines.append(f"    return Inputs(args={args}, kwargs={{}}, leaves={leaves})")
        return "\n".join(lines) + "\n"

    def to_source(self, engine: str = "aotcheck") -> str:
        """A runnable file: it checks ``f`` compiled by ``engine`` against eager.

        ``engine="aotcheck"`` compiles with ``aotcheck.aot_function``, ``"eager"`` uses ``f``
        itself (a self-test of the printer), any other name goes through
        ``aotcheck.targets.engines.get_engine``. The file exits 0 when the engine matches eager, and
        prints the divergences and exits 1 when it does not.
        """
        if engine == "aotcheck":
            compile_lines = ["    import aotcheck", "", "    compiled = aotcheck.aot_function(f)"]
        elif engine == "eager":
            compile_lines = ["    compiled = f  # the identity engine: checks the printer itself"]
        else:
            compile_lines = ["    from aotcheck.targets.engines import get_engine", "",
                             f"    compiled = get_engine({engine!r}).compile(f)"]
        return "\n".join([
            f'"""A program drawn by aotcheck.fuzz.strategies.programs(), checked under engine {engine!r}.',
            "",
            "Exits 0 when the engine matches eager PyTorch, 1 (printing the divergences) when not.",
            '"""',
            self.prelude(),
            "",
            self.function_source(),
            "",
            self.inputs_source(),
            "",
            'if __name__ == "__main__":',
            *compile_lines,
            "    report = check(f, compiled, make_inputs)",
            "    if not report.ok:",
            "        print(report)",
            "        sys.exit(1)",
            '    print("ok: matches eager")',
            "    sys.exit(0)",
            "",
        ])

    # -- running ----------------------------------------------------------------------------

    def _namespace(self) -> dict:
        namespace: dict = {"__name__": "aotcheck_program"}
        exec(compile(self.prelude() + "\n" + self.function_source() + "\n" + self.inputs_source(),
                     "<aotcheck program>", "exec"), namespace)
        return namespace

    def to_function(self):
        """The callable ``f``, from the printed source."""
        return self._namespace()["f"]

    def make_inputs(self) -> Inputs:
        """Fresh arguments and leaves; equal values on every call."""
        return _inputs_maker(self.prelude() + "\n" + self.inputs_source())()

    # -- describing -------------------------------------------------------------------------

    def origins(self) -> dict[str, str]:
        """What each value of ``f`` is: 'input', 'input view', 'intermediate', 'intermediate view'.

        Views and ``detach`` keep the origin of their source and add ' view'.
        """
        origin = {spec.name: "input" for spec in self.inputs}
        for stmt in self.statements:
            if stmt.out is None:
                continue
            if KIND_OF_OP[stmt.op] == "scalar":
                origin[stmt.out] = "non-tensor"
            elif KIND_OF_OP[stmt.op] in ("view", "detach", "multi"):
                origin[stmt.out] = origin[stmt.args[0]].replace(" view", "") + " view"
            else:
                origin[stmt.out] = "intermediate"
        return origin

    def roots(self) -> dict[str, str]:
        """The storage each value of ``f`` lives in, named by a base or a statement result.

        Two values with one root may alias (views, ``detach``, inputs cut from one base).
        """
        root = {spec.name: spec.args[0] for spec in self.inputs}
        for _ in self.inputs:  # inputs made from earlier inputs: follow them to their base
            root = {name: root.get(r, r) for name, r in root.items()}
        for stmt in self.statements:
            if stmt.out is not None:
                aliasing = KIND_OF_OP[stmt.op] in ("view", "detach", "multi")
                root[stmt.out] = root[stmt.args[0]] if aliasing else stmt.out
        return root

    def features(self) -> frozenset[str]:
        """Tags for coverage counts: ``op:<op>``, ``input:<kind>``, ``inplace:<origin>``, ..."""
        origin = self.origins()
        tags = {f"input:{spec.kind}" for spec in self.inputs} or {"input:none"}
        tags |= {f"input:{'float64' if b.dtype == 'float64' else 'float32'}" for b in self.bases}
        for stmt in self.statements:
            tags.add(f"op:{stmt.op}")
            if stmt.no_grad:
                tags.add("no_grad")
            if stmt.region:
                tags.add(stmt.region)
            if is_mutating(stmt.op):
                tags.add(f"{KIND_OF_OP[stmt.op]}:{origin[stmt.args[0]]}")
            if stmt.op == "slice" and any(not isinstance(i, int) and i[2] not in (None, 1)
                                          for i in stmt.args[1].items):
                tags.add("op:slice with step")
            if stmt.op == "setitem":
                tags.add("op:setitem " + ("scalar" if isinstance(stmt.args[2], float) else "tensor"))
        tags |= {f"return:{origin[name]}" for name in self.returns}
        if not self.returns:
            tags.add("return:empty")
        if len(set(self.returns)) < len(self.returns):
            tags.add("return:same value twice")
        root = self.roots()
        if len({root[n] for n in set(self.returns)}) < len(set(self.returns)):
            tags.add("return:aliasing values")
        return frozenset(tags)

    # -- storing ----------------------------------------------------------------------------

    def to_json(self) -> str:
        return json.dumps({
            "schema": SCHEMA_VERSION,
            "bases": [[b.name, list(b.shape), b.dtype, b.requires_grad, b.clone, b.seed]
                      + ([b.parameter, True] if b.subclass else [True] if b.parameter else [])
                      for b in self.bases],
            "inputs": [[s.name, s.kind, s.op, _encode(s.args)] for s in self.inputs],
            "statements": [[s.op, _encode(s.args), s.out, s.no_grad] + ([s.region] if s.region else [])
                           for s in self.statements],
            "returns": list(self.returns),
        })

    @staticmethod
    def from_json(text: str) -> "Program":
        data = json.loads(text)
        if data.get("schema") != SCHEMA_VERSION:
            raise ValueError(f"program schema {data.get('schema')!r}, expected {SCHEMA_VERSION}")
        return Program(
            bases=tuple(Base(n, tuple(shape), dt, rg, cl, seed, *rest)
                        for n, shape, dt, rg, cl, seed, *rest in data["bases"]),
            inputs=tuple(InputSpec(n, kind, op, _decode(args))
                         for n, kind, op, args in data["inputs"]),
            statements=tuple(Statement(op, _decode(args), out, ng, *rest)
                             for op, args, out, ng, *rest in data["statements"]),
            returns=tuple(data["returns"]),
        )


_REGION_LINES = {
    "no_grad": ["    with torch.no_grad():"],
    "inference_mode": ["    with torch.inference_mode():"],
    "enable_grad": ["    with torch.no_grad():", "        with torch.enable_grad():"],
}


def _tuple(names) -> str:
    names = list(names)
    return f"({', '.join(names)}{',' if len(names) == 1 else ''})"


def _encode(value):
    if isinstance(value, DType):
        return {"dtype": value.name}
    if isinstance(value, Index):
        return {"index": _encode(value.items)}
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    return value


def _decode(value):
    if isinstance(value, dict):
        return DType(value["dtype"]) if "dtype" in value else Index(_decode(value["index"]))
    if isinstance(value, list):
        return tuple(_decode(v) for v in value)
    return value


@functools.lru_cache(maxsize=256)
def _inputs_maker(source: str):
    """``make_inputs`` of a program's source, compiled once: the oracle calls it for every run
    of every check, and it only builds tensors from seeds (the function ``f`` is compiled anew
    for each ``to_function``, so that no two compiles share a code object)."""
    namespace: dict = {"__name__": "aotcheck_program"}
    exec(compile(source, "<aotcheck program inputs>", "exec"), namespace)
    return namespace["make_inputs"]


# -- the eager run the strategy uses to vouch for a program ---------------------------------

def backward_roots(outputs, args) -> list[torch.Tensor]:
    """What the oracle's loss sums: grad-requiring outputs, and arguments that are non-leaves."""
    roots = [t for t in outputs if isinstance(t, torch.Tensor) and t.requires_grad]
    return roots + [t for t in args if t.requires_grad and not t.is_leaf]


def run_eager(fn, inputs: Inputs, *, backward: bool = True):
    """Call ``fn`` on ``inputs`` and backpropagate from every backward root, as the oracle does."""
    outputs = fn(*inputs.args, **inputs.kwargs)
    roots = backward_roots(outputs, inputs.args)
    if backward and roots:
        torch.autograd.backward([r.sum() for r in roots])
    return outputs

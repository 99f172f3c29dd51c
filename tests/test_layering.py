"""The package layering: each layer imports only the layers below it.

The order is the data flow (see ``aotcheck/__init__.py``)::

    base (errors, flags, version) < engine < cache < lift < compiled < subclass < api
        < check < targets < {fuzz, grad, keydiff} < regress (the regression command) < cli

Every import in every module is read from the source (module-level and inside
functions alike), resolved to an ``aotcheck`` module, and checked against the
table below, so the layering cannot rot one lazy import at a time. Within a layer,
no module may import in a circle (``test_no_import_cycles``), lazily or not.
"""
from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent / "aotcheck"

BASE = {"base"}
BELOW_API = BASE | {"engine", "cache", "lift", "compiled", "subclass"}
ALLOWED: dict[str, set[str]] = {
    "base": set(),
    "engine": BASE,
    "cache": BASE | {"engine"},
    "lift": BASE | {"engine", "cache"},
    "compiled": BASE | {"engine", "cache", "lift"},
    "subclass": BASE | {"engine", "cache", "lift", "compiled"},
    "api": BELOW_API,
    "check": BELOW_API | {"api"},
    "targets": BELOW_API | {"api", "check"},
    "fuzz": BELOW_API | {"api", "check", "targets"},
    "grad": BELOW_API | {"api", "targets"},
    "regress": BELOW_API | {"api", "check", "targets", "fuzz"},
    "keydiff": BELOW_API | {"api", "check", "targets"},
    "cli": BELOW_API | {"api", "check", "targets", "fuzz", "grad", "regress", "keydiff"},
}
_TOP = {"errors": "base", "flags": "base", "version": "base", "api": "api", "__init__": "api",
        "lift": "lift",            # aotcheck.lift: tensors the function reads become arguments
        "compiled": "compiled",    # aotcheck.compiled: state -> lift -> signature -> key -> pipeline
        "strategies": "fuzz"}      # aotcheck.strategies: the public alias of fuzz.strategies
# the top-level modules that are no package (and no layer of their own), each in one layer
TOP_MODULES = {"__init__", "api", "compiled", "errors", "flags", "lift", "strategies", "version"}


def layer_of(module: str) -> str:
    """``aotcheck.engine.capture`` -> ``engine``; ``aotcheck`` -> ``api``."""
    parts = module.split(".")
    assert parts[0] == "aotcheck", module
    if len(parts) == 1:
        return "api"
    head = parts[1]
    if head in _TOP:
        return _TOP[head]
    if head in ALLOWED:
        return head
    raise AssertionError(f"module {module} belongs to no layer; add its package to ALLOWED")


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1] if len(parts) > 1 else parts[:-1] + ["__init__"]
    return ".".join(parts) if parts != ["aotcheck", "__init__"] else "aotcheck"


def _is_module(name: str) -> bool:
    p = ROOT.parent.joinpath(*name.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def imports_of(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """Every aotcheck module that ``source`` (the text of ``module``) imports, with its line."""
    package = module if is_package else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "aotcheck"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "aotcheck":
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.append((node.lineno, sub if _is_module(sub) else target))
    return out


def violations(path: Path) -> list[str]:
    module = module_name(path)
    own = layer_of(module)
    found = []
    for line, target in imports_of(path.read_text(), module, path.name == "__init__.py"):
        other = layer_of(target)
        if other != own and other not in ALLOWED[own]:
            found.append(f"{path.relative_to(ROOT.parent)}:{line}: {own} imports {target} ({other}); "
                         f"{own} may import only {sorted(ALLOWED[own]) or 'nothing from aotcheck'}")
    return found


MODULES = sorted(ROOT.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_respects_layering(path):
    assert violations(path) == []


def test_every_subpackage_is_a_layer_with_a_docstring():
    for d in sorted(p for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()):
        assert d.name in ALLOWED, f"aotcheck/{d.name} is in no layer"
        doc = ast.get_docstring(ast.parse((d / "__init__.py").read_text()))
        assert doc and "may import" in doc, f"aotcheck/{d.name}/__init__.py must say what it may import"


def test_checker_catches_an_upward_import():
    """The checker itself can fail: a lazy import of the cache inside an engine function
    is found, resolved and judged a violation."""
    src = "import torch\n\ndef f():\n    from ..cache import store\n    from ..errors import TraceError\n"
    found = imports_of(src, "aotcheck.engine.capture", False)
    assert found == [(4, "aotcheck.cache.store"), (5, "aotcheck.errors")]
    assert layer_of("aotcheck.cache.store") not in ALLOWED["engine"]
    assert layer_of("aotcheck.errors") in ALLOWED["engine"]


def import_graph(sources: dict[str, tuple[str, bool]]) -> nx.DiGraph:
    """The digraph of aotcheck imports: ``sources`` maps a module's name to (its text, whether it
    is a package's ``__init__``); an edge for every import, module-level or lazy."""
    graph = nx.DiGraph()
    for module, (source, is_package) in sources.items():
        graph.add_node(module)
        for line, target in imports_of(source, module, is_package):
            if target != module:
                graph.add_edge(module, target, line=line)
    return graph


def import_cycles(graph: nx.DiGraph) -> list[str]:
    """Each import cycle, as ``a:LINE -> b:LINE -> a`` from its first module by name, shortest
    first (a fixed text, whatever order networkx finds them in)."""
    found = []
    cycles = [c[c.index(min(c)):] + c[:c.index(min(c))] for c in nx.simple_cycles(graph)]
    for cycle in sorted(cycles, key=lambda c: (len(c), c)):
        steps = [f"{m}:{graph.edges[m, cycle[(i + 1) % len(cycle)]]['line']}"
                 for i, m in enumerate(cycle)]
        found.append(" -> ".join(steps + [cycle[0]]))
    return found


def test_no_import_cycles():
    """No aotcheck module imports itself through others, at module level or inside a function
    (a lazy import that only hides a circle from the interpreter counts)."""
    graph = import_graph({module_name(p): (p.read_text(), p.name == "__init__.py") for p in MODULES})
    assert import_cycles(graph) == []


def test_checker_catches_a_planted_cycle():
    """The cycle checker itself can fail: a lazy import that closes a circle is reported by name,
    with each import's line; the same modules without it are acyclic."""
    sources = {
        "aotcheck.subclass.base": ("import torch\n\ndef f():\n    from .facts import g\n", False),
        "aotcheck.subclass.facts": ("from .base import f\n", False),
        "aotcheck.subclass": ("from .facts import g\n", True),
    }
    assert import_cycles(import_graph(sources)) == [
        "aotcheck.subclass.base:4 -> aotcheck.subclass.facts:1 -> aotcheck.subclass.base"]
    sources["aotcheck.subclass.base"] = ("import torch\n", False)
    assert import_cycles(import_graph(sources)) == []


def test_top_level_modules_are_few_and_listed():
    """At most 8 modules sit directly in aotcheck/, each in the table above (and so in a layer)."""
    top = {p.stem for p in ROOT.glob("*.py")}
    assert top == TOP_MODULES and len(top) <= 8, sorted(top)


MAX_FUNCTION_LINES = 80
MAX_PARAMETERS = 8
# "path:qualified name" -> why this function may stay over the limits; a stale entry fails
SIZE_EXCEPTIONS: dict[str, str] = {}


def _parameter_count(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Positional and keyword-only parameters, less a leading ``self``/``cls``; ``*args`` and
    ``**kwargs`` do not count."""
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    return len(names) - (1 if names and names[0] in ("self", "cls") else 0)


def function_sizes(source: str) -> dict[str, tuple[int, int]]:
    """Each function and method in ``source`` by qualified name (``Class.method``, ``outer.inner``),
    with its length in lines (``def`` to last line, docstring included) and its parameter count."""
    sizes = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                sizes[name] = (child.end_lineno - child.lineno + 1, _parameter_count(child))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return sizes


def oversized(source: str) -> dict[str, str]:
    """The functions in ``source`` over the limits, each with what it has against them."""
    return {name: f"{lines} lines, {params} parameters"
            for name, (lines, params) in function_sizes(source).items()
            if lines > MAX_FUNCTION_LINES or params > MAX_PARAMETERS}


# the corpus's case modules hold case bodies (data), and are not held to the function size
SIZED = [p for p in MODULES if p.parent.relative_to(ROOT).parts[:2] != ("check", "corpus")]


def test_no_function_over_80_lines_or_8_parameters():
    """Size hurts in functions (STYLE.md rule 12): no function or method outside the corpus data
    is longer than 80 lines or takes more than 8 parameters, unless SIZE_EXCEPTIONS names it with
    a reason; an exception for a function that is gone or now fits is stale and fails too."""
    found = {f"{p.relative_to(ROOT).as_posix()}:{name}": why
             for p in SIZED for name, why in oversized(p.read_text()).items()}
    assert SIZED
    assert {k: v for k, v in found.items() if k not in SIZE_EXCEPTIONS} == {}
    assert sorted(set(SIZE_EXCEPTIONS) - set(found)) == [], "stale entries in SIZE_EXCEPTIONS"


def test_size_checker_catches_a_planted_long_function():
    """The size checker itself can fail: a method of 81 lines and a nested function of nine
    parameters are found by qualified name; ``self``, ``*args`` and ``**kwargs`` do not count."""
    body = "".join(f"        x{i} = {i}\n" for i in range(80))
    src = (f"class C:\n    def long(self):\n{body}\n"
           "def outer(self, a, b, c, d, e, f, g, h, *args, **kwargs):\n"
           "    def inner(a, b, c, d, e, f, g, h, /, i):\n        pass\n")
    assert oversized(src) == {"C.long": "81 lines, 0 parameters",
                              "outer.inner": "2 lines, 9 parameters"}


def private_imports_across_packages(root: Path = ROOT) -> list[str]:
    """``file:line name from module`` for each underscore name a module imports from another
    package of aotcheck (a package's own modules may share private names)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        own = ".".join(parts[:-1])                      # the package the module belongs to
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _absolute(own, node)
            if not target.startswith("aotcheck"):
                continue
            home = target if _is_package(root, target) else target.rpartition(".")[0]
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__") and home != own:
                    out.append(f"{path.relative_to(root.parent)}:{node.lineno} {alias.name} from {target}")
    return out


def _absolute(package: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_package(root: Path, name: str) -> bool:
    return (root.parent.joinpath(*name.split(".")) / "__init__.py").is_file()


def test_no_private_name_is_imported_from_another_package():
    """Issue 37: what another package needs has a public name (a package's own modules may
    share private ones)."""
    assert private_imports_across_packages() == []


def test_the_private_import_checker_can_fail(tmp_path):
    pkg = tmp_path / "aotcheck"
    (pkg / "a").mkdir(parents=True)
    (pkg / "b").mkdir()
    for p in (pkg, pkg / "a", pkg / "b"):
        (p / "__init__.py").write_text("")
    (pkg / "a" / "x.py").write_text("_hidden = 1\n")
    (pkg / "a" / "y.py").write_text("from .x import _hidden\n")           # same package: fine
    (pkg / "b" / "z.py").write_text("from ..a.x import _hidden\n")        # another package
    assert [s.split(" ", 1)[1] for s in private_imports_across_packages(pkg)] == ["_hidden from aotcheck.a.x"]

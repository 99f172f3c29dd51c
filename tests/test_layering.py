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


def test_no_module_over_600_lines_outside_the_corpus_data():
    """Size stays honest (STYLE.md rule 12): no module of the package is over 600 lines. The
    corpus's theme modules (``check/corpus/<theme>.py``) are data, one record a case, and are
    not held to it."""
    scope = [p for p in MODULES if not (p.parent.name == "corpus"
                                        and p.name not in ("__init__.py", "registry.py", "builders.py"))]
    over = {str(p.relative_to(ROOT)): n for p in scope if (n := len(p.read_text().splitlines())) > 600}
    assert scope and over == {}

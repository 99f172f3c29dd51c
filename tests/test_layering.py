"""The package layering: each layer imports only the layers below it.

The order is the data flow (see ``aotcheck/__init__.py``)::

    base (errors, flags, version) < engine < cache < api < check < targets < {fuzz, grad}
        < regress (the regression command) < cli

Every import in every module is read from the source (module-level and inside
functions alike), resolved to an ``aotcheck`` module, and checked against the
table below, so the layering cannot rot one lazy import at a time.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "aotcheck"

BASE = {"base"}
ALLOWED: dict[str, set[str]] = {
    "base": set(),
    "engine": BASE,
    "cache": BASE | {"engine"},
    "api": BASE | {"engine", "cache"},
    "check": BASE | {"engine", "cache", "api"},
    "targets": BASE | {"engine", "cache", "api", "check"},
    "fuzz": BASE | {"engine", "cache", "api", "check", "targets"},
    "grad": BASE | {"engine", "cache", "api", "targets"},
    "regress": BASE | {"engine", "cache", "api", "check", "targets", "fuzz"},
    "cli": BASE | {"engine", "cache", "api", "check", "targets", "fuzz", "grad", "regress"},
}
_TOP = {"errors": "base", "flags": "base", "version": "base", "api": "api", "__init__": "api",
        "lift": "api",             # aotcheck.lift: tensors the function reads become arguments
        "subclass": "api",         # aotcheck.subclass: the API boundary for tensor subclasses
        "subclass_facts": "api",   # its outer-level facts, read off the trace and applied
        "subclass_autograd": "api",    # its outer-level autograd facts
        "subclass_set": "api",     # its set_() of a wrapper onto a plain tensor, in the trace
        "subclass_replay": "api",  # its in-place metadata replay and real-tensor joint retry
        "strategies": "fuzz"}      # aotcheck.strategies: the public alias of fuzz.strategies


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

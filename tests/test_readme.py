"""The README's walk-through is executed here, so it cannot go stale."""
import contextlib
import io
import pathlib
import re

import pytest

from aotcheck import flags

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _block(text: str, marker: str) -> str:
    after = text.split(f"<!-- walkthrough:{marker} -->", 1)[1]
    return re.search(r"```[a-z]*\n(.*?)```", after, re.S).group(1)


def test_walkthrough_output_matches_readme():
    text = README.read_text()
    code, expected = _block(text, "code"), _block(text, "output")
    buf = io.StringIO()
    # the walk-through shows the default partition, whatever --partitioner this run uses
    with contextlib.redirect_stdout(buf), flags.overridden(flags.PARTITIONER, "default"):
        exec(compile(code, "README.md", "exec"), {})
    assert buf.getvalue().strip() == expected.strip()


def test_readme_names_both_commands():
    text = README.read_text()
    assert "aotcheck check" in text
    assert "pytest tests/ --with-cache" in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert "pytest tests/ --with-cache -n 2" in ci


def test_readme_shows_a_backend_author_both_commands():
    text = README.read_text()
    assert "aotcheck ops --samples first --backend mypkg.compile:my_backend" in text
    assert "aotcheck ops --kernels my_kernels/" in text


def test_readme_keydiff_program_is_a_program_the_loader_takes(tmp_path):
    """The README's user-program example loads as written, with the input it says, and the
    storage relations the README lists are the lattice's."""
    from aotcheck.keydiff import program, setters
    text = README.read_text()
    block = text.split("<!-- keydiff:program -->", 1)[1].split("<!-- keydiff:end -->", 1)[0]
    code = block.split("```python", 1)[1].split("```", 1)[0]
    path = tmp_path / "kd_readme_program.py"
    path.write_text(code)
    module = program.load(path).module()
    [(inp, values)] = setters.inputs_of(module)
    assert (inp.name, inp.kind, values) == ("SCALE", program.Kind.GLOBAL, ([2.0], [3.0]))
    for relation in setters.RELATIONS:
        assert f"`{relation}`" in text
    for name in setters.AMBIENT:
        assert name in (README.parent / "aotcheck" / "keydiff" / "setters.py").read_text()


def test_tests_readme_names_every_file_in_tests():
    """tests/README.md gives each Python file in tests/ its line, and names no file that is gone."""
    text = (README.parent / "tests" / "README.md").read_text()
    listed = set(re.findall(r"^- `([\w.]+\.py)`", text, re.M))
    present = {p.name for p in (README.parent / "tests").glob("*.py") if p.name != "__init__.py"}
    assert listed == present, (sorted(present - listed), sorted(listed - present))


# the README's module map: a nested list between these markers, one `name.py` or `package/` a line
MAP_START, MAP_END = "<!-- layout:map -->", "<!-- layout:end -->"
MAP_ITEM = re.compile(r"^(?P<indent> *)- `(?P<name>[\w.]+(?:\.py|/))`")


def module_map(text: str) -> list[str]:
    """The paths (relative to ``aotcheck/``) that the README's map lists, in its order: a
    module as ``engine/capture/trace.py``, a package or folder as ``engine/capture/``. An
    item's indent (two spaces a level) puts it inside the package listed above it."""
    block = text.split(MAP_START, 1)[1].split(MAP_END, 1)[0]
    stack: list[str] = []
    listed = []
    for line in block.splitlines():
        m = MAP_ITEM.match(line)
        if not line.strip():
            continue
        assert m, f"a line of the module map that names no module: {line!r}"
        depth = len(m["indent"]) // 2
        assert len(m["indent"]) % 2 == 0 and depth <= len(stack), f"misindented: {line!r}"
        del stack[depth:]
        listed.append("".join(stack) + m["name"])
        if m["name"].endswith("/"):
            stack.append(m["name"])
    return listed


def map_problems(listed: list[str], root: pathlib.Path) -> list[str]:
    """What the map gets wrong about the modules under ``root``: a module it leaves out, a
    name it lists that is not there, a name it lists twice. A package's line stands for its
    ``__init__.py``."""
    present = {str(p.relative_to(root)) for p in root.rglob("*.py")}
    covered = {p + "__init__.py" if p.endswith("/") else p for p in listed}
    problems = [f"aotcheck/{p} is in no line of the README's module map"
                for p in sorted(present - covered) if not p.endswith("__init__.py")
                or p[:-len("__init__.py")] not in listed]
    problems += [f"the README's module map lists aotcheck/{p}, which does not exist"
                 for p in listed if not (root / p).exists()]
    problems += [f"the README's module map lists aotcheck/{p} twice"
                 for p in sorted({p for p in listed if listed.count(p) > 1})]
    return problems


def test_module_map_lists_every_module_and_nothing_stale():
    """README.md's "Layout" is the one map of the modules: every .py file under aotcheck/ has
    its line, and every line names a module or package that exists."""
    listed = module_map(README.read_text())
    assert len(listed) > 150
    problems = map_problems(listed, README.parent / "aotcheck")
    assert problems == [], "\n".join(problems)


def test_module_map_check_finds_a_missing_and_a_stale_module(tmp_path):
    """The map's check itself can fail: a module left out, a package left out, a name that is
    gone and a name listed twice are each reported; the repaired map is clean."""
    for path in ("__init__.py", "api.py", "engine/__init__.py", "engine/joint.py",
                 "engine/capture/__init__.py", "engine/capture/trace.py",
                 "cache/__init__.py", "cache/key.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    good = ("- `__init__.py`: the names\n- `engine/`: the engine\n  - `capture/`: capture\n"
            "    - `trace.py`: the entry\n  - `joint.py`: joint\n"
            "- `cache/`: the cache\n  - `key.py`: the key\n- `api.py`: the API\n")
    text = f"intro\n{MAP_START}\n{good}{MAP_END}\n- `gone.py`: outside the map\n"
    assert module_map(text) == ["__init__.py", "engine/", "engine/capture/",
                                "engine/capture/trace.py", "engine/joint.py", "cache/",
                                "cache/key.py", "api.py"]
    assert map_problems(module_map(text), tmp_path) == []
    planted = (good.replace("`trace.py`: the entry", "`tracer.py`: renamed")
               .replace("- `cache/`: the cache\n  - `key.py`: the key\n", "")
               + "- `api.py`: again\n")
    problems = map_problems(module_map(f"{MAP_START}\n{planted}{MAP_END}"), tmp_path)
    assert problems == [
        "aotcheck/cache/__init__.py is in no line of the README's module map",
        "aotcheck/cache/key.py is in no line of the README's module map",
        "aotcheck/engine/capture/trace.py is in no line of the README's module map",
        "the README's module map lists aotcheck/engine/capture/tracer.py, which does not exist",
        "the README's module map lists aotcheck/api.py twice"], "\n".join(problems)
    misplaced = good.replace("  - `joint.py`", "      - `joint.py`")
    with pytest.raises(AssertionError, match="misindented"):
        module_map(f"{MAP_START}\n{misplaced}{MAP_END}")


def test_readme_module_paths_exist():
    """Every module path the README's prose names (`engine/capture/trace.py`,
    `aotcheck/compiled.py`, `tools/bench_overhead.py`) is a file, read from the repository or
    from aotcheck/; a path under a folder of neither (`OUT/...`) is an example, not checked."""
    repo = README.parent
    stale = []
    for path in sorted(set(re.findall(r"`([\w./-]+/[\w.-]+\.py)`", README.read_text()))):
        head = path.split("/", 1)[0]
        roots = [r for r in (repo, repo / "aotcheck") if (r / head).is_dir()]
        if roots and not any((r / path).is_file() for r in roots):
            stale.append(path)
    assert stale == []

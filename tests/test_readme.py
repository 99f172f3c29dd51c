"""The README's walk-through is executed here, so it cannot go stale."""
import contextlib
import io
import pathlib
import re

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

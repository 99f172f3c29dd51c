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

"""Re-run the README's walk-through code block and rewrite its output block.

Usage: python tools/refresh_readme.py   (tests/test_readme.py checks they agree)
"""
import contextlib
import io
import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def main() -> None:
    text = README.read_text()
    after_code = text.split("<!-- walkthrough:code -->", 1)[1]
    code = re.search(r"```python\n(.*?)```", after_code, re.S).group(1)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, "README.md", "exec"), {})
    head, rest = text.split("<!-- walkthrough:output -->", 1)
    tail = rest.split("<!-- walkthrough:end -->", 1)[1]
    README.write_text(f"{head}<!-- walkthrough:output -->\n```\n{buf.getvalue().rstrip()}\n```\n"
                      f"<!-- walkthrough:end -->{tail}")
    print("README walk-through refreshed")


if __name__ == "__main__":
    main()

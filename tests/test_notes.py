"""NOTE references resolve: one definition per title, every reference on one line.

A NOTE is defined by a line that holds only ``# NOTE [title]`` (in a comment or inside a
docstring), with its text on the lines below, and is referred to as ``NOTE [title]``
anywhere else. A reference that names a file (``NOTE [title] in capture/storage/swaps.py``,
``NOTE [title] (values.py)``) names the file that holds the definition. A reference without
its title (``NOTE in x.py``, ``see the NOTE``, the second title of ``NOTE [a], [b]``) is
reported, since nothing could check it. The scan covers
``aotcheck/``, ``tools/``, ``tests/`` and ``README.md``, so ``grep 'NOTE \\[title\\]'``
finds every use of a title.
"""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# a line holding only the marker: the one spelling of a definition
DEFINITION = re.compile(r"^[ \t]*# NOTE \[(?P<title>[^\]\n]+)\][ \t]*$", re.M)
# any use of a title on one line; a definition is one too, and is skipped as a reference
REFERENCE = re.compile(r"NOTE \[(?P<title>[^\]\n]+)\]")
# the file a reference names: "NOTE [t] in x.py", "NOTE [t] (x.py)", "NOTE [t], x.py"
NAMED_FILE = re.compile(r"NOTE \[(?P<title>[^\]\n]+)\](?: in|,| \()[ \t]*`*(?P<file>[\w./]+\.py)\b")
# "NOTE" at a line's end, a title over a line break, or "NOTE [t] in" with the file below
SPLIT = re.compile(r"\bNOTE[ \t]*\n|\bNOTE \[[^\]\n]*\n|\bNOTE \[[^\]\n]+\] in[ \t]*\n")
# another spelling of the marker: "Note [", "NOTE[", "NOTE: [", "NOTE  ["
MISSPELT = re.compile(r"\b(?!NOTE \[)(?:NOTE|Note)[: \t]*\[")
# a reference without its title, which nothing can resolve: "NOTE in x.py", "see the NOTE",
# "the NOTEs in ...", and the second title of "NOTE [a], [b]"
UNTITLED = re.compile(r"\bNOTE in `*[\w./]+\.py|\bsee the NOTE\b(?! \[)|\bthe NOTEs\b"
                      r"|NOTE \[[^\]\n]+\], \[")


def scanned_files(repo: Path = REPO) -> list[Path]:
    files = [repo / "README.md"]
    for folder in ("aotcheck", "tools", "tests"):
        files += sorted(p for p in (repo / folder).rglob("*.py"))
    return [p for p in files if p.name != "test_notes.py"]   # this file plants broken NOTEs


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def note_problems(texts: dict[str, str]) -> list[str]:
    """Every broken NOTE in ``texts`` (a file's repository path -> its text), as
    ``path:line: what is wrong`` lines; empty when every reference resolves."""
    definitions: dict[str, list[str]] = {}
    for path, text in texts.items():
        for m in DEFINITION.finditer(text):
            definitions.setdefault(m["title"], []).append(f"{path}:{_line(text, m.start())}")
    problems = [f"{where[1]}: NOTE [{title}] is defined again (first at {where[0]})"
                for title, where in sorted(definitions.items()) if len(where) > 1]
    for path, text in texts.items():
        defined_here = {m.start("title") for m in DEFINITION.finditer(text)}
        for m in SPLIT.finditer(text):
            problems.append(f"{path}:{_line(text, m.start())}: a NOTE reference is split over a "
                            "line break; re-wrap the prose so `NOTE [title]` is on one line")
        for m in UNTITLED.finditer(text):
            problems.append(f"{path}:{_line(text, m.start())}: {m.group(0)!r} names no NOTE; "
                            "give each reference its title, `NOTE [title]`")
        for m in MISSPELT.finditer(text):
            problems.append(f"{path}:{_line(text, m.start())}: {m.group(0)!r} is no NOTE spelling; "
                            "write `NOTE [title]`")
        for m in REFERENCE.finditer(text):
            if m.start("title") not in defined_here and m["title"] not in definitions:
                problems.append(f"{path}:{_line(text, m.start())}: NOTE [{m['title']}] has no "
                                "definition (a line holding only `# NOTE [title]`)")
        for m in NAMED_FILE.finditer(text):
            named = m["file"].removeprefix("aotcheck/")
            homes = [w.rsplit(":", 1)[0] for w in definitions.get(m["title"], [])]
            if homes and not any(h == named or h.endswith("/" + named) for h in homes):
                problems.append(f"{path}:{_line(text, m.start())}: NOTE [{m['title']}] names "
                                f"{m['file']}, but it is defined in {homes[0]}")
    return problems


def test_every_note_reference_resolves():
    texts = {str(p.relative_to(REPO)): p.read_text() for p in scanned_files()}
    assert len(texts) > 100
    assert sum(len(DEFINITION.findall(t)) for t in texts.values()) > 100
    problems = note_problems(texts)
    assert problems == [], "\n".join(problems)


def test_scanner_finds_each_kind_of_broken_note():
    """The scanner itself can fail: each planted fault is reported, and the repaired text
    is clean."""
    good = {
        "aotcheck/engine/a.py": "# NOTE [lazy backward]\n# the backward compiles at first use.\n",
        "aotcheck/engine/b.py": "x = 1  # NOTE [lazy backward] in engine/a.py\n"
                                '"""Saves the graph (NOTE [lazy backward], a.py)."""\n',
    }
    assert note_problems(good) == []
    planted = dict(good)
    planted["aotcheck/engine/b.py"] = (
        "x = 1  # NOTE [lazy backward] in engine/c.py\n"       # the wrong file
        "# as the runtime says (NOTE\n# [lazy backward])\n"     # NOTE at a line's end
        "# see NOTE [lazy\n# backward]\n"                       # a title over a line break
        "# NOTE [lazy backward] in\n# engine/a.py\n"            # the file on the next line
        "y = 2  # NOTE [eager backward]\n"                      # no definition
        "# Note [lazy backward]\n"                              # another spelling
        "# NOTE [lazy backward]\n")                             # a second definition
    problems = note_problems(planted)
    assert [p.split(": ", 1)[0] for p in problems] == [
        "aotcheck/engine/b.py:10",
        "aotcheck/engine/b.py:2", "aotcheck/engine/b.py:4", "aotcheck/engine/b.py:6",
        "aotcheck/engine/b.py:9",
        "aotcheck/engine/b.py:8",
        "aotcheck/engine/b.py:1"], "\n".join(problems)
    assert "defined again" in problems[0] and "no NOTE spelling" in problems[4]
    assert "no definition" in problems[5] and "names engine/c.py" in problems[6]


def test_scanner_finds_a_reference_without_its_title():
    """A reference that names a file or "the NOTE" but no title is reported, as is the second
    title of a list; each spelt in full is clean."""
    good = {"aotcheck/engine/a.py": "# NOTE [lazy backward]\n# text\n# NOTE [eager forward]\n# text\n",
            "aotcheck/engine/b.py": "# NOTE [lazy backward] in a.py, NOTE [eager forward]\n"
                                    "# see the NOTE [lazy backward] above\n"}
    assert note_problems(good) == []
    planted = dict(good)
    planted["aotcheck/engine/b.py"] = ("# NOTE in a.py\n# (see the NOTE)\n# See the NOTEs in engine/\n"
                                       "# NOTE [lazy backward], [eager forward]\n")
    problems = note_problems(planted)
    assert [p.split(": ", 1)[0] for p in problems] == [
        "aotcheck/engine/b.py:1", "aotcheck/engine/b.py:2", "aotcheck/engine/b.py:3",
        "aotcheck/engine/b.py:4"], "\n".join(problems)
    assert all("names no NOTE" in p for p in problems)

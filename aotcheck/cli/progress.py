"""Progress bars and tables for the CLI, drawn by rich (on stderr, only on a terminal unless
forced). ``Progress(total, label)`` keeps the call sites simple: ``advance(note)`` per item;
``total=None`` draws a spinner with a count; as a context manager it closes the bar."""
from __future__ import annotations

import sys

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress as _RichProgress, SpinnerColumn,
                           TextColumn, TimeElapsedColumn)
from rich.table import Table


class Progress:
    def __init__(self, total: int | None, label: str = "", stream=None, force: bool = False):
        self.total, self.label, self.n = total, label, 0
        self.stream = stream or sys.stderr
        self.enabled = force or self.stream.isatty()
        self._bar = None
        if self.enabled:
            console = Console(file=self.stream, force_terminal=force or None)
            columns = ([SpinnerColumn()] if total is None else []) + [
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TextColumn("{task.fields[note]}")]
            self._bar = _RichProgress(*columns, console=console, transient=False)
            self._task = self._bar.add_task(label, total=total, note="")
            self._bar.start()

    def advance(self, note: str = "") -> None:
        self.n += 1
        if self._bar is not None:
            self._bar.update(self._task, advance=1, note=note[:40])
            if self.total is not None and self.n >= self.total:
                self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def print_table(title: str, columns: list[str], rows: list[tuple], stream=None) -> None:
    """A rich table on stdout (plain text when stdout is not a terminal)."""
    table = Table(title=title, show_lines=False)
    for c in columns:
        table.add_column(c, overflow="fold")
    for row in rows:
        table.add_row(*(str(x) for x in row))
    Console(file=stream or sys.stdout, width=160).print(table)

"""A dependency-free progress bar for the CLI (writes to stderr, only on a TTY
unless forced)."""
from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total: int, label: str = "", stream=None, force: bool = False):
        self.total, self.label, self.n = total, label, 0
        self.stream = stream or sys.stderr
        self.enabled = force or self.stream.isatty()
        self.start = time.perf_counter()

    def advance(self, note: str = "") -> None:
        self.n += 1
        if not self.enabled:
            return
        width = 30
        filled = int(width * self.n / max(self.total, 1))
        bar = "#" * filled + "-" * (width - filled)
        elapsed = time.perf_counter() - self.start
        self.stream.write(f"\r{self.label} [{bar}] {self.n}/{self.total} {elapsed:5.1f}s {note[:40]:<40}")
        self.stream.flush()
        if self.n >= self.total:
            self.stream.write("\n")

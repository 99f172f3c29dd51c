"""aotcheck.fuzz: generated mutation and alias programs, shrunk to runnable reproducers.

    programs.py    a program as plain data; running it eagerly; writing it as a script
    strategies.py  the hypothesis strategy that draws programs statement by statement
                   (public as ``aotcheck.strategies``)
    runner.py      ``fuzz()``: explore a seeded stream, then shrink one reproducer per
                   failure signature
    inflight.py    the program being run, on disk, so a crash that kills the process
                   leaves its reproducer

What it may import: check (the oracle), targets (the engines), the API, errors and
flags. Nothing from grad or cli.
"""

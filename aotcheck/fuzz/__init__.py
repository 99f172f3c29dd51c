"""aotcheck.fuzz: generated mutation and alias programs, shrunk to runnable reproducers.

    programs.py    a program as plain data; running it eagerly; writing it as a script
    prelude.py     the source text a program's script starts with (imports, helpers, library ops)
    strategies.py  the hypothesis strategy that draws programs statement by statement
                   (public as ``aotcheck.strategies``)
    runner.py      ``fuzz()``: explore a seeded stream, then shrink one reproducer per
                   failure signature
    inflight.py    the program being run, on disk, so a crash that kills the process
                   leaves its reproducer
    database.py    the example database the shards share (Redis or a directory)
    process_state.py  thread-local state a program may leak (checked and repaired); quiet GC
    pytest_shards.py  the fuzzer under pytest(-xdist): one test per shard

What it may import: check (the oracle), targets (the engines), the API, errors and
flags. Nothing from grad or cli.
"""

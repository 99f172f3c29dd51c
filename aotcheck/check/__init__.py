"""aotcheck.check: how a compiled function is judged against eager PyTorch.

The oracle is the one comparison with eager (values, gradients, input mutations, aliasing
and storage sharing, requires_grad, in-place use of the outputs afterwards); the corpus is
the hand-written cases, as data, by theme; the harness runs a case cold and then from the
cache; the pytest plugin adds ``--with-cache``, ``--engine`` and ``--strict-cache``. Its
modules, one line each: the map in README.md, "Layout".

What it may import: the API (``aotcheck.aot_function``), the cache (counters, strict
mode), the engine, errors and flags. Nothing from targets, fuzz, grad or cli.
"""

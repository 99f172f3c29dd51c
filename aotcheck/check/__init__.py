"""aotcheck.check: how a compiled function is judged against eager PyTorch.

    oracle.py         ``check()``: the one comparison with eager (values, gradients, input
                      mutations, aliasing and storage sharing, requires_grad, in-place use
                      of the outputs afterwards)
    corpus/           the hand-written cases, as data, by theme
    harness.py        running a case cold and then from the cache; ``xfail_inherited``
                      (class-level expected failures that subclasses inherit)
    pytest_plugin.py  ``--with-cache``, ``--engine``, ``--strict-cache`` (pytest11 entry point)

What it may import: the API (``aotcheck.aot_function``), the cache (counters, strict
mode), the engine, errors and flags. Nothing from targets, fuzz, grad or cli.
"""

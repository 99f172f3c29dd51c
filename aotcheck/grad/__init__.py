"""aotcheck.grad: backward-pass correctness, numerically and over PyTorch's OpInfo database.

Finite-difference checks and compiled-versus-eager gradients, and the OpInfo backward suite
(``aotcheck ops``) with BackendBench-style scores. Its modules, one line each: the map in
README.md, "Layout".

What it may import: the API, the cache (counters), targets, the engine, errors and
flags. Nothing from check, fuzz or cli.
"""

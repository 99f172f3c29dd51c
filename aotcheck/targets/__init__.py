"""aotcheck.targets: the engines the corpus and the fuzzer run against.

Adapters over every AOT autograd implementation under test (aotcheck, torch.compile's,
functorch's ``aot_function``, Inductor), the cases each is expected to get wrong (data, one
record per torch release), the ``aotcheck`` torch.compile backend, the side-by-side report,
any backend or kernels directory for the OpInfo suite, and the key-variation pass (cache-key
variation, one thing at a time, against an engine's persistent cache). Its modules, one line
each: the map in README.md, "Layout".

What it may import: check (the oracle, the corpus, the harness), the API, the cache,
errors and flags. Nothing from fuzz, grad or cli.
"""

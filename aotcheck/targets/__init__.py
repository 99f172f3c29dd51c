"""aotcheck.targets: the engines the corpus and the fuzzer run against.

    engines.py           adapters: aotcheck, torch (torch.compile aot_eager with
                         AOTAutogradCache), torch-aot-function, dynamo-aotcheck,
                         torch-inductor and torch-inductor-lite (Inductor, ops as aten fallbacks)
    known_failures.py    per engine, the cases expected to differ from eager, and why;
                         the table itself is data (known_failures.json)
    backend.py           ``torch.compile(fn, backend="aotcheck")`` (torch_dynamo_backends)
    report.py            the side-by-side table per theme for several engines
    compile_backends.py  any torch.compile backend by name, entry point or module:function,
                         for the OpInfo suite (``aotcheck ops --backend``)
    kernels.py           a user's kernels directory, registered over aten for a run
                         (``aotcheck ops --kernels``)

What it may import: check (the oracle, the corpus, the harness), the API, the cache,
errors and flags. Nothing from fuzz, grad or cli.
"""

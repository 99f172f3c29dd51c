"""A ``torch.compile`` backend: Dynamo captures, aotcheck compiles.

Registered through the ``torch_dynamo_backends`` entry point (pyproject.toml), so
after ``pip install -e .`` the name works without importing aotcheck first::

    compiled = torch.compile(f, backend="aotcheck")
    compiled = torch.compile(f, backend="aotcheck", options={"cache": "/tmp/aotcheck-cache"})

Dynamo hands the backend a ``torch.fx.GraphModule`` whose inputs are already
flattened (tensors, and SymInts/ints for sizes), plus fake example inputs. The
backend wraps the module's ``forward`` in :func:`aotcheck.aot_function`, which
captures, analyses, partitions and compiles it for each new input signature at
the first real call (Dynamo's guards pick the graph; aotcheck's signature picks
the artifact). Options:

    cache        a cache directory (or :class:`aotcheck.cache.Cache`); default: none. The key is
                 trace-free: Dynamo's graph (the GraphModule's code, its parameter and buffer
                 metadata, submodules) plus the call's input signature, so a hit in a new
                 process runs neither aotcheck's capture nor its joint trace
    remote       a Redis URL shared with other machines (``AOTCHECK_REMOTE_CACHE``)
    partitioner  "default", "mincut" (``aotcheck.engine.partition.cut.STRATEGIES``); default:
                 the ``AOTCHECK_PARTITIONER`` flag
"""
from __future__ import annotations

import torch

OPTIONS = ("cache", "partitioner", "remote")


def aotcheck_backend(gm: torch.fx.GraphModule, example_inputs, options: dict | None = None, **kwargs):
    """Dynamo backend: compile Dynamo's graph with ``aotcheck.aot_function``."""
    from ..api import aot_function
    from torch._dynamo.utils import counters

    from ..errors import AotcheckError
    options = dict(options or {})
    options.update(kwargs.pop("options", None) or {})
    unknown = sorted(set(options) - set(OPTIONS)) + sorted(kwargs)
    if unknown:
        raise AotcheckError(f"aotcheck backend: unknown options {unknown}; supported: {list(OPTIONS)}")
    counters["aotcheck"]["graphs"] += 1      # graphs Dynamo handed to this backend
    compiled = aot_function(gm.forward, cache=options.get("cache"), remote=options.get("remote"),
                            partitioner=options.get("partitioner"))

    def run(*args):
        return compiled(*args)
    run.aot_function = compiled      # for tests and tools: the AotFunction behind this graph
    return run

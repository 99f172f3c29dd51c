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
    restore_data_assignments(gm)
    compiled = aot_function(gm.forward, cache=options.get("cache"), remote=options.get("remote"),
                            partitioner=options.get("partitioner"))

    def run(*args):
        return compiled(*args)
    run.aot_function = compiled      # for tests and tools: the AotFunction behind this graph
    return run


def _assign_data(t: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    t.data = value
    return t


def restore_data_assignments(gm: torch.fx.GraphModule) -> int:
    """Give Dynamo's graph back the ``x.data = y`` it lowered; returns how many.

    # NOTE [.data assignment in Dynamo's graph]
    Dynamo lowers ``x.data = y`` to ``torch.Tensor.set_(x, y)`` under no_grad followed by a
    call of its own that lowers ``x``'s version counter by one. That is not eager's
    ``set_()``: ``.data =`` keeps the tensor's autograd identity (a non-leaf keeps its
    grad_fn, a leaf its AccumulateGrad while a use holds it) whatever requires grad, where
    a set_() of a tensor that requires grad is an in-place op that autograd sees. aotcheck
    traces ``.data =`` as eager runs it (capture/storage/data_assign.py), so the pair is put back
    as the assignment it stands for: the set_() node calls ``_assign_data`` and the version
    call goes. A set_() that the user wrote (no version call after it) stays as it is.

    Dynamo of torch 2.14 and later lowers it to ``aten.shallow_copy_data_(x, y)`` instead,
    which is eager's ``x.data = y`` and which aotcheck's trace takes as such
    (NOTE [shallow_copy_data_] in capture/storage/data_assign.py): that graph needs nothing here.
    """
    done = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or \
                getattr(node.target, "__name__", "") != "_lower_version_count_by_1":
            continue
        (src,) = node.args or (None,)
        if not (isinstance(src, torch.fx.Node) and src.op == "call_function"
                and src.target is torch.Tensor.set_ and len(src.args) == 2 and not src.kwargs
                and list(src.users) == [node]):
            continue
        node.graph.erase_node(node)
        src.target = _assign_data
        done += 1
    if done:
        gm.recompile()
    return done

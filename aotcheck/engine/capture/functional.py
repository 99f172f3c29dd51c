"""functional: tracing machinery shared by capture and the joint trace.

- ``trace_functional(body, placeholders)``: ``make_fx`` on fake tensors with
  functionalization on around ``body``, turning the user's errors into aotcheck's
  named ones (``guard_trace``);
- ``TraceGuard``: a dispatch mode that rejects value reads and value-dependent shapes,
  and tags nodes that ran under no_grad;
- ``to_fun``/``from_fun``: wrap and unwrap functional tensors;
- ``trace_grad_mode``: trace in the caller's grad mode.
"""
from __future__ import annotations

import contextlib
import logging

import torch
import torch.fx as fx
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from ...errors import DataDependentError, TraceError, UnsupportedInputError
from ..rng.layout import DrawLikeEager
from ..rng.seeding import GlobalGeneratorGuard, draw_begins, draw_ends, fresh_generators
from ..signature import Signature
from .checkpoint import checkpoint_as_eager
from .higher_order import inline_higher_order_ops
from .values import ReadsThroughOps, pin, reads_python_value, reads_values, real_copies


def to_fun(t: torch.Tensor) -> torch.Tensor:
    ft = torch._to_functional_tensor(t)
    torch._mirror_autograd_meta_to(t, ft)
    return ft


def from_fun(t: torch.Tensor) -> torch.Tensor:
    torch._sync(t)
    return torch._from_functional_tensor(t)


def storage_ref(t: torch.Tensor):
    return StorageWeakRef(unwrap_functorch(t).untyped_storage())


# NOTE [functorch wrappers]
def unwrap_functorch(t: torch.Tensor) -> torch.Tensor:
    """Inside a ``torch.func`` transform the function works on functorch's wrappers
    (``TensorWrapper`` for grad/jvp/vjp, ``BatchedTensor`` for vmap), which have no storage of
    their own: each wraps the tensor of the level below, and its ops reach that tensor (the
    functional one, at the bottom) as aten ops. Where aotcheck asks a tensor for its storage,
    it asks the tensor at the bottom, whose storage the wrapper's writes reach."""
    while torch._C._functorch.is_functorch_wrapped_tensor(t):
        t = torch._C._functorch.get_unwrapped(t)
    return t


class TraceGuard(TorchDispatchMode):
    """Watches every op while tracing:

    - rejects reads of tensor values (``.item()``, ``bool(t)``) and ops whose output shape
      depends on values (``nonzero``), which would otherwise slip in as symbolic sizes;
    - tags each node that ran with grad mode off, so no_grad regions reach the cache key;
    - calls ``on_op`` after each op, when set (storage_views.StorageTagger uses it).
    """
    on_op = None
    values = False      # the values trace: read values, and pin them (NOTE [value specialization])

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.values and reads_values(func):
            if reads_python_value(func):
                # read the real value under the functional wrapper; the proxy mode would refuse
                from torch.utils._python_dispatch import _disable_current_modes
                with _disable_current_modes():
                    out = func(*args, **(kwargs or {}))
            else:
                out = func(*args, **(kwargs or {}))
            pin(func, args, kwargs, out)
            if self.on_op is not None:
                self.on_op(func, args, kwargs or {}, out)
            return out
        draws = draw_begins(kwargs["generator"]) if kwargs and kwargs.get("generator") is not None \
            else None
        if func is torch.ops.aten._local_scalar_dense.default:
            raise DataDependentError(
                "the function reads a tensor value while being traced (.item(), bool(tensor), "
                ".tolist() or Python control flow on a tensor); aotcheck compiles static graphs. "
                "Use torch.where, or pass the value as a Python scalar argument")
        out = func(*args, **(kwargs or {}))
        draw_ends(draws)
        for t in pytree.tree_leaves(out):
            if isinstance(t, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in t.shape):
                raise DataDependentError(
                    f"op {func} has an output shape that depends on tensor values; aotcheck "
                    "compiles static shapes only")
        if not torch.is_grad_enabled():
            from torch.fx.experimental.proxy_tensor import get_proxy_mode, get_proxy_slot
            mode = get_proxy_mode()
            if mode is not None:
                for t in pytree.tree_leaves(out):
                    if isinstance(t, torch.Tensor):
                        slot = get_proxy_slot(t, mode.tracer, None)
                        if slot is not None:
                            slot.proxy.node.meta["no_grad"] = True
        if self.on_op is not None:
            self.on_op(func, args, kwargs or {}, out)
        return out


def stand_in(t):
    """An ordinary tensor with an inference tensor's geometry and flags, to trace with.

    # NOTE [inference tensors]
    Tracing runs outside inference mode (as no_grad: fake and functional tensors need it),
    where an inference tensor may be read but not mutated, nor have requires_grad mirrored.
    Eager, inside inference mode, may do both (a module built under inference_mode has
    inference parameters that require grad). The graph depends only on the geometry, so
    the trace sees a plain tensor over a storage of the same size instead; the runtime
    then runs on the real inference tensors, inside the caller's inference mode.
    """
    if not isinstance(t, torch.Tensor) or not t.is_inference():
        return t
    with torch.inference_mode(False):
        numel = t.untyped_storage().nbytes() // t.element_size()
        out = torch.empty(numel, dtype=t.dtype, device=t.device).as_strided(
            t.shape, t.stride(), t.storage_offset())
        return out.requires_grad_(t.requires_grad) if t.requires_grad else out


def without_autocast():
    """A block with autocast off (every device), or nothing where it is off already.

    # NOTE [autocast in the backward]
    Eager's backward runs at ``.backward()``, under the autocast state of that moment: off,
    where the caller's autocast region has closed (its ops are the derivatives of the casts
    autocast made in the forward, at the dtypes those gave). The joint traces the backward
    inside the compiled call, under the caller's autocast, which cast the float32 derivative
    ``mm`` of a region the function had run with ``autocast(enabled=False)`` to bfloat16: the
    weight's gradient was the bfloat16 product, silently. So the joint's ``autograd.grad``
    runs with autocast off, and so does the replay of a plain graph (its autocast casts are
    ops of its own already; NOTE [autocast at run time] in runtime/codegen.py)."""
    return torch._C._DisableAutocast() if torch._C._is_any_autocast_enabled() else contextlib.nullcontext()


class backward_phase:
    """Tags every node the graph being traced gains inside the block ``meta["backward"]``:
    the joint's backward (``torch.autograd.grad``), as eager runs it at ``.backward()``. The
    partitioner puts the impure ones there (a draw in a custom Function's backward, a guard
    on a value the backward reads: ``rng.split_draws``). Outside make_fx it does nothing."""

    def __enter__(self):
        from torch.fx.experimental.proxy_tensor import get_proxy_mode
        mode = get_proxy_mode()
        self.graph = mode.tracer.graph if mode is not None else None
        self.mark = next(reversed(self.graph.nodes)) if self.graph is not None else None
        return self

    def __exit__(self, *exc):
        if self.mark is not None:
            n = self.mark.next
            while n.op != "root":
                n.meta["backward"] = True
                n = n.next
        return False


def geometry_of(t: torch.Tensor) -> tuple:
    return tuple(t.shape), tuple(t.stride()), t.storage_offset()


def dense_layout(shape, stride) -> bool:
    """Non-overlapping and without gaps: the elements fill a block of memory (any order of
    dimensions)."""
    expected = 1
    for st, sz in sorted((st, sz) for sz, st in zip(shape, stride) if sz != 1):
        if st != expected:
            return False
        expected *= sz
    return True


def make_fx_exact(fn, **kwargs):
    """``make_fx(fn, **kwargs)`` that records ``detach()`` as ``aten.detach``.

    # NOTE [detach in traced graphs]
    Given no decomposition table, torch 2.14's ``make_fx`` rewrites ``detach`` to
    ``aten.alias`` (its docstring: "re-differentiating the returned graph does not preserve
    those detach calls as autograd gradient cuts"); 2.13's kept ``aten.detach``. aotcheck runs
    traced graphs under autograd again: the subclass path's desugared graph is the plain
    engine's function (``explain`` traces it with inner tensors that require grad, where an
    alias of a bool tensor that requires grad raises "Autograd not support dtype: Bool"), and
    the plain way's graph is functionalized by a run of it. An explicit table, even an empty
    one, keeps every ``detach`` a gradient cut, as in eager; ``aten.alias`` in a graph is
    then a view the function took (``x[...]``). The runtime does not rely on either
    (NOTE [views the forward returns] in runtime/function.py)."""
    from torch.fx.experimental.proxy_tensor import make_fx
    return make_fx(fn, decomposition_table={}, **kwargs)


def trace_functional(body, example_placeholders: list[torch.Tensor], *,
                     functionalize: bool = True, guard: TraceGuard | None = None,
                     mode: str = "fake", constants: bool = False,
                     values_ok: bool = True) -> fx.GraphModule:
    """make_fx on fake copies of the placeholders, with functionalization around ``body``
    (without it when ``functionalize`` is False: a plain trace, see storage_views.py)."""
    guard = guard if guard is not None else TraceGuard()

    def traced(*args):
        if functionalize:
            torch._enable_functionalization(reapply_views=True)
        try:
            with guard, DrawLikeEager(), ReadsThroughOps():
                return body(*args)
        finally:
            if functionalize:
                torch._disable_functionalization()

    example_placeholders = [stand_in(t) for t in example_placeholders]
    if mode == "values":    # NOTE [value specialization]: real copies, values pinned by guards
        example_placeholders = real_copies(example_placeholders)
        guard.values = True
    try:
        with quiet_fake_tensor_log(), eager_view_strides(), compiling(), \
                GlobalGeneratorGuard(draws=mode != "fake") as generators:
            gm = guard_trace(lambda: make_fx_exact(traced, tracing_mode="real" if mode == "values"
                                                   else mode, _allow_non_fake_inputs=constants)(
                                                       *example_placeholders))
    except DataDependentError:
        if mode != "fake" or not values_ok:
            raise
        return trace_functional(body, example_placeholders, functionalize=functionalize,
                                guard=guard, mode="values", constants=constants)
    fresh_generators(gm, generators)
    _refuse_fake_constants(gm)
    for n in list(gm.graph.nodes):
        if n.target is _RESIZE and not n.users:
            gm.graph.erase_node(n)      # the runtime replays it (NOTE [storage resizes])
    return gm


_RESIZE = torch.ops.inductor.resize_storage_bytes_.default


def _refuse_fake_constants(gm: fx.GraphModule) -> None:
    """A tensor constant of the graph that is a fake (or functional) tensor is one the tracer
    never saw made (a C++ call that switched the dispatch modes off): run, it would hand a
    FakeTensor to the caller, and the cache could not store it. Refused by name, never run."""
    from torch._subclasses.fake_tensor import FakeTensor
    for n in gm.graph.nodes:
        if n.op != "get_attr":
            continue
        c = getattr(gm, n.target, None)
        if isinstance(c, FakeTensor) or (isinstance(c, torch.Tensor) and torch._is_functional_tensor(c)):
            raise TraceError(
                f"the function makes a tensor through a call the tracer cannot follow (graph "
                f"constant {n.target} is a traced stand-in, not a value); aotcheck cannot "
                "compile it. Make the tensor with ordinary torch ops")


class eager_view_strides:
    """While tracing, a fake tensor's ``view`` (and ``_unsafe_view``, and so ``reshape``) has
    eager's strides.

    # NOTE [fake view strides]
    PyTorch's fake kernel for ``aten.view`` is the Python reference (``_reshape_view_helper``),
    which strides a size-1 dimension differently from the C++ kernel that eager (and the meta
    device) runs: a (1, 2, 4, 1) tensor of strides (4, 4, 1, 4) viewed as (1, 2, 4) is
    (8, 4, 1) in eager, (4, 4, 1) fake. ``einsum`` ends that way, so the traced output's
    geometry, which the runtime rebuilds a view with, was not eager's (OpInfo einsum, samples
    5 and 6). The kernel is wrapped, for the trace only: where the C++ rule on the meta device
    gives other strides, the fake result is restrided to them. The graph node stays a view."""

    OPS = (torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default)

    def __enter__(self):
        from torch._subclasses import fake_impls
        from torch._subclasses.fake_tensor import FakeTensorMode
        self.table = fake_impls.op_implementations_dict
        self.saved = {op: self.table.get(op) for op in self.OPS}
        for op, impl in self.saved.items():
            if impl is not None and not getattr(impl, "_eager_strides", False):
                self.table[op] = _with_eager_strides(impl)
        self.dispatch = FakeTensorMode.dispatch        # NOTE [fake pointwise strides]
        if not getattr(self.dispatch, "_eager_strides", False):
            FakeTensorMode.dispatch = _pointwise_eager_strides(self.dispatch)
        return self

    def __exit__(self, *exc):
        from torch._subclasses.fake_tensor import FakeTensorMode
        for op, impl in self.saved.items():
            if impl is not None:
                self.table[op] = impl
        FakeTensorMode.dispatch = self.dispatch
        return False


# Operands larger than this (elements, all together) keep the fake kernel's strides: the
# eager run below allocates and computes them
EAGER_STRIDES_MAX_NUMEL = 1 << 18


# NOTE [fake pointwise strides]
def _pointwise_eager_strides(dispatch):
    """Eager lays out a pointwise op's result by TensorIterator's rules: the inputs' strides
    kept as they are when they are all non-overlapping and dense alike (size-1 dimensions
    included: ``a.transpose(1, 0)`` of a (1, 2, 4) tensor times 2 is (4, 8, 1)), else
    dense in the order of the inputs' strides, broadcast dimensions placed by its own
    permutation. The fake kernels differ (PyTorch's refs ``compute_elementwise_output_strides``
    orders size-1 dimensions and ties otherwise; copysign's and floor_divide's decompositions
    come out contiguous), and the traced strides reach the caller: a returned ``stride()``,
    and the geometry the runtime rebuilds an aliased output with. So while tracing, a
    functional pointwise op on fake tensors that are not all contiguous is also run eagerly,
    on real CPU tensors of the same geometry (filled with ones), and the fake result is
    restrided to the eager result's strides where they differ. Operands over
    ``EAGER_STRIDES_MAX_NUMEL`` elements keep the fake strides (a known limit)."""
    def patched(self, func, types, args=(), kwargs=None):
        out = dispatch(self, func, types, args, kwargs)
        try:
            pointwise = torch.Tag.pointwise in func.tags and not func._schema.is_mutable \
                and torch.Tag.nondeterministic_seeded not in func.tags     # draws: not rerun
        except AttributeError:
            return out
        if not pointwise or not isinstance(out, torch.Tensor) or out.layout != torch.strided \
                or out.dim() == 0:
            return out
        eager = _eager_pointwise_strides(func, args, kwargs or {})
        if eager is None or eager == tuple(out.stride()):
            return out
        from torch._subclasses.fake_tensor import FakeTensor
        from torch.utils._python_dispatch import _disable_current_modes
        with _disable_current_modes():
            meta = torch.empty_strided(tuple(out.shape), eager, dtype=out.dtype, device="meta")
        return FakeTensor(self, meta, device=out.device)
    patched._eager_strides = True
    return patched


def _canonical(t: torch.Tensor) -> bool:
    """Contiguous with a contiguous tensor's strides on its size-1 dimensions too (which
    ``is_contiguous`` ignores, and eager may keep)."""
    try:
        expected, n = [], 1
        for k in reversed(t.shape):
            expected.insert(0, n)
            n *= max(int(k), 1)
        return tuple(int(v) for v in t.stride()) == tuple(expected)
    except (TypeError, RuntimeError):
        return False


def _eager_pointwise_strides(func, args, kwargs) -> tuple | None:
    """The strides eager gives ``func``'s result on tensors of these geometries, or None
    (all operands contiguous, a symbolic size, too large, or the eager run fails)."""
    tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    if not tensors or all(_canonical(t) for t in tensors):
        return None
    total = 0
    for t in tensors:
        if t.layout != torch.strided or not all(
                isinstance(v, int) for v in (*t.shape, *t.stride(), t.storage_offset())):
            return None
        total += t.storage_offset() + sum((n - 1) * st for n, st in zip(t.shape, t.stride())
                                          if n > 0) + 1
    if total > EAGER_STRIDES_MAX_NUMEL:
        return None
    from torch.utils._python_dispatch import _disable_current_modes

    def real(t):
        if not isinstance(t, torch.Tensor):
            return t
        n = t.storage_offset() + sum((k - 1) * st for k, st in zip(t.shape, t.stride()) if k > 0) + 1
        return torch.ones(max(n, 1), dtype=t.dtype).as_strided(t.shape, t.stride(),
                                                               t.storage_offset())
    try:
        with _disable_current_modes(), torch._C._ExcludeDispatchKeyGuard(
                torch._C.DispatchKeySet(torch._C.DispatchKey.Functionalize)), torch.no_grad():
            a, k = pytree.tree_map(real, (args, kwargs))
            k = {n: (torch.device("cpu") if n == "device" else v) for n, v in k.items()}
            out = func(*a, **k)
    except Exception:       # noqa: BLE001 - keep the fake kernel's strides
        return None
    if not isinstance(out, torch.Tensor) or out.shape != torch.Size(
            [int(n) for n in torch.broadcast_shapes(*(t.shape for t in tensors))]):
        return None
    return tuple(out.stride())


def _with_eager_strides(impl):
    def view(fake_mode, func, a, *shape, **kwargs):
        out = impl(fake_mode, func, a, *shape, **kwargs)
        if not isinstance(out, torch.Tensor) or out.dim() == 0 or \
                not all(isinstance(v, int) for v in (*a.shape, *a.stride(), *out.shape)):
            return out
        from torch.utils._python_dispatch import _disable_current_modes
        with _disable_current_modes():
            try:
                meta = torch.empty_strided(tuple(a.shape), tuple(a.stride()), dtype=a.dtype,
                                           device="meta")
                eager = meta.view(tuple(out.shape)).stride()
            except RuntimeError:
                return out
        if tuple(eager) == tuple(out.stride()):
            return out
        return a.as_strided(out.shape, eager, out.storage_offset())
    view._eager_strides = True
    return view


class quiet_fake_tensor_log:
    """The fake-tensor module logs an op's error before raising it; the user's own errors are
    re-raised (or, where a failed run is expected, caught) by aotcheck, so it is silenced."""

    def __enter__(self):
        self.log = logging.getLogger("torch._subclasses.fake_tensor")
        self.level = self.log.level
        self.log.setLevel(logging.CRITICAL)

    def __exit__(self, *exc):
        self.log.setLevel(self.level)
        return False


def compiling():
    """While the function is traced, ``torch.compiler.is_compiling()`` is True, as under
    PyTorch's own tracing (torch.compile, torch.export).

    # NOTE [is_compiling]
    Library code (transformers' masking, for one) asks ``is_compiling()`` before a
    data-dependent shortcut such as ``if torch.all(mask == 1): return None``; the answer
    under tracing must be True, so that it takes the traceable path that PyTorch's tracers
    take. The compiled graph then runs that path for every call, as torch.compile's does.

    The same block runs torch's control-flow operators inline
    (NOTE [higher-order ops, inline] in higher_order.py), checkpoints as eager runs them
    (NOTE [reentrant checkpoint] in checkpoint.py), and ``torch.compile`` as eager (the stance
    ``force_eager``): eager's ``torch.cond`` compiles its own call with Dynamo, which must
    not trace the traced function.
    """
    stack = contextlib.ExitStack()
    stack.enter_context(torch.compiler._compile_session_context())
    stack.enter_context(torch.compiler.set_stance("force_eager"))
    stack.enter_context(inline_higher_order_ops())
    stack.enter_context(checkpoint_as_eager())
    return stack


class outside_saved_tensors_hooks:
    """Traces run without the ``saved_tensors_hooks`` the caller has active around the call.

    # NOTE [saved tensors hooks around the call]
    Hooks the caller entered before the call (``with saved_tensors_hooks(pack, unpack):
    compiled(x)``) belong to the call, not to the graph: eager packs each tensor its ops save
    at the call and unpacks it in the backward. The compiled function saves its values with
    ``ctx.save_for_backward`` (runtime/artifact.py), which runs the hooks active at the call:
    pack at forward time, unpack at backward time, and what unpack returns feeds the backward
    graph, as in eager. So the traces (capture, joint, the lazy backward) must not run them as
    well: on fake tensors, at compile time, that would bake a second application into the
    graphs, and a compiled graph reused under other hooks (or none) would keep it. Hooks the
    function enters itself are pushed while it is traced and are traced, as eager's run them.
    The stack is popped whole for the trace and pushed back in its order afterwards."""

    def __enter__(self):
        autograd = torch._C._autograd
        self._stack = []
        while (top := autograd._top_saved_tensors_default_hooks(True)) is not None:
            self._stack.append(top)
            autograd._pop_saved_tensors_default_hooks()
        return self

    def __exit__(self, *exc):
        autograd = torch._C._autograd
        for pack, unpack in reversed(self._stack):
            autograd._push_saved_tensors_default_hooks(pack, unpack)
        return False


def guard_trace(thunk):
    from torch._subclasses.fake_tensor import (DataDependentOutputException,
                                               DynamicOutputShapeException,
                                               UnsupportedOperatorException)
    try:
        return thunk()
    except (DataDependentError, UnsupportedInputError, TraceError):
        raise
    except DataDependentOutputException as e:
        raise DataDependentError(
            f"the function reads a tensor value while being traced ({e.func if hasattr(e, 'func') else e}); "
            "Python control flow on tensor values, .item() and .tolist() cannot be compiled. Use "
            "torch.where or pass the value as a Python scalar argument") from None
    except DynamicOutputShapeException as e:
        raise DataDependentError(
            f"op {e.func} has an output shape that depends on tensor values; aotcheck compiles "
            "static shapes only") from None
    except UnsupportedOperatorException as e:
        raise TraceError(f"op {e.func} cannot run on fake tensors, so it cannot be traced") from None
    except Exception as e:  # the user's function raised while being traced
        msg = str(e).split("\n")[0]
        if "mutation on a view chain" in msg and "as_strided" in msg:
            raise UnsupportedInputError(
                "the function mutates, in place, an as_strided() view taken of another view; "
                "functionalization cannot express that (a PyTorch limit). Take as_strided of "
                "the base tensor instead") from None
        if "convert all Tensors to FakeTensors" in msg:
            op = msg.split("Found in ")[-1].split("(")[0] if "Found in " in msg else "an op"
            raise UnsupportedInputError(
                f"the function uses a tensor that is not one of its arguments (a closure, a global "
                f"or a module parameter, in {op}); aotcheck compiles functions of their arguments: "
                "pass the tensor in (for module parameters, torch.func.functional_call)") from None
        if "data-dependent" in msg or "data dependent" in msg or "data is not allocated yet" in msg:
            raise DataDependentError(
                f"the function depends on tensor values while being traced: {msg}; use torch.where "
                "or pass the value as a Python scalar argument") from None
        raise TraceError(f"the function raised while being traced: {type(e).__name__}: {msg}") from e



class trace_grad_mode:
    """Trace in the caller's grad mode; inference mode is traced as no_grad."""

    def __init__(self, sig: Signature):
        self.ctx = torch.no_grad() if (sig.inference_mode or not sig.grad_enabled) else torch.enable_grad()

    def __enter__(self):
        self._im = torch.inference_mode(False)
        self._im.__enter__()
        self.ctx.__enter__()

    def __exit__(self, *exc):
        self.ctx.__exit__(*exc)
        self._im.__exit__(*exc)

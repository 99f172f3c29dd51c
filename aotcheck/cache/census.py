"""census: torch's global settings, one record each, and which of them a traced graph depends on.

A graph traced from a function depends on the function, its inputs, and the process's
*ambient* state: settings no argument carries, such as the default dtype, or the dtype
that a ``torch.autocast("cpu")`` entered without one casts to. :func:`census` lists each
global setting of the installed torch, one :class:`Setting` per setting: its name, how to
read it, the values it is varied over, the setters that change it, and its
:class:`Role`. A setting is in the key when tracing under another value records another
graph; every other record says why it cannot change one. The roles come from tracing
``tools/ambient_probe.py``'s programs under each varied value (``why`` quotes what it
showed), or, for a setting only CUDA code reads, from that code. ``ambient.py`` reads the
settings in the key, for the persistent key and for each call.

One record, and the value the key reads::

    Setting(name='autocast_dtype[cpu]', role=Role.KEY,
            why='a region the function enters without a dtype (torch.autocast(device)) casts to it, ...',
            setters=('torch.set_autocast_dtype', 'torch.autocast', 'torch.set_autocast_cpu_dtype', ...),
            read="torch.get_autocast_dtype('cpu')", write="torch.set_autocast_dtype('cpu', value)",
            domain=('torch.float16 if current != torch.float16 else torch.bfloat16',))
    >>> read(setting)
    torch.bfloat16

Scope: :func:`global_setters` finds the setters of the installed torch (``torch.set_*`` and
``torch.use_*``, ``torch._C._set_*``, every settable flag and ``set_``/``enable_``/``allow_``/
``preferred_`` function of ``torch.backends.*``, ``torch.autograd``'s and
``torch.autograd.graph``'s, ``torch.__future__``'s, ``torch.utils.checkpoint``'s,
``torch.utils.deterministic``'s, and the global ``nn.Module`` hook registrations), and
``tests/test_ambient.py`` fails for any that no record names, so a new torch's setter is
decided, never missed. State entered by a context manager (mode stacks, functorch levels,
forward AD, saved tensors hooks) has records too, written by hand.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import pkgutil
import re
import sys
import types
from dataclasses import dataclass
from enum import Enum

import torch
import torch.nn.modules.module as _module_mod
from torch.overrides import TorchFunctionMode, _get_current_function_mode_stack
from torch.utils._device import DeviceContext
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack

from .fingerprint import fingerprint_data, fingerprint_of


class Role(Enum):
    KEY = "in the key (torch_state)"
    SIGNATURE = "in the key (the signature)"
    OUT = "not in the key"


@dataclass(frozen=True)
class Setting:
    """One global setting. ``read`` is an expression over ``torch`` (and this module's mode and
    hook readers); ``write`` a statement that sets it to ``value``; ``domain`` the expressions
    of the values it is varied over (``current``: its value now); ``restore`` a statement that
    puts ``value`` back where ``write`` would not (default: ``write``). ``accelerator_only``:
    a setting that changes graphs only of tensors on an accelerator, which the per-call read
    skips in a process without one."""
    name: str
    role: Role
    why: str
    setters: tuple[str, ...] = ()
    read: str | None = None
    write: str | None = None
    domain: tuple[str, ...] = ()
    restore: str | None = None
    accelerator_only: bool = False

    def __post_init__(self):
        if not self.why:
            raise ValueError(f"{self.name}: a census record says why it is or is not in the key")
        if self.role is not Role.OUT and self.read is None:
            raise ValueError(f"{self.name}: a setting in the key needs a reader")
        if bool(self.write) != bool(self.domain):
            raise ValueError(f"{self.name}: write and domain go together")


# ---------------------------------------------------------------- the census

PROBE_MARK = re.compile(r"\(probe\b")   # a ``why`` citing tools/ambient_probe.py, which checks it
_RUN_TIME = ("{} reads it when the graph runs, under the caller's setting, as eager's kernels "
             "do; tracing records the same aten ops")
_PROBED = " (probe: equal graphs)"
_WARNINGS = "changes only which warnings are shown"
_INTERNAL = "internal: torch sets it and puts it back around its own {}; no user setting reaches a trace through it"
_SDP = ("scaled_dot_product_attention picks its kernel while tracing: the graph records the "
        "chosen one")
_AUTOCAST_SETTERS = {"cpu": ("torch.set_autocast_cpu_dtype", "torch.set_autocast_cpu_enabled"),
                     "cuda": ("torch.set_autocast_gpu_dtype",),
                     "ipu": ("torch.set_autocast_ipu_dtype", "torch.set_autocast_ipu_enabled"),
                     "xla": ("torch.set_autocast_xla_dtype", "torch.set_autocast_xla_enabled")}


def _key(name, why, read, setters, write=None, domain=(), **kw) -> Setting:
    return Setting(name, Role.KEY, why, tuple(setters), read, write, tuple(domain), **kw)


def _out(name, why, setters, read=None, write=None, domain=()) -> Setting:
    return Setting(name, Role.OUT, why, tuple(setters), read, write, tuple(domain))


def _attr(name, why, path, *setters, role=Role.OUT) -> Setting:
    """A boolean attribute (``torch.backends.cudnn.benchmark``), varied by a flip."""
    return Setting(name, role, why, (path, *setters), path, f"{path} = value", ("not current",))


def _flag(name, why, getter, setter, *public, role=Role.KEY, accelerator_only=False) -> Setting:
    """A boolean kept by a ``torch._C`` getter and setter pair, varied by a flip."""
    return Setting(name, role, why, (f"torch._C.{setter}", *public), f"torch._C.{getter}()",
                   f"torch._C.{setter}(value)", ("not current",), accelerator_only=accelerator_only)


def _autocast(device: str) -> tuple[Setting, ...]:
    q = repr(device)
    legacy = _AUTOCAST_SETTERS.get(device, ())
    evidence = ("(probe: float16 casts under float16; served from the cache before it was keyed, "
                "the bfloat16 graph)" if device == "cpu" else
                "(as autocast_dtype[cpu], for tensors of this device type)")
    accelerator_only = device != "cpu"
    return (
        _key(f"autocast_enabled[{device}]",
             "the ops of a call under it trace with their casts", f"torch.is_autocast_enabled({q})",
             ("torch.set_autocast_enabled", "torch.autocast", *legacy),
             f"torch.set_autocast_enabled({q}, value)", ("not current",), accelerator_only=accelerator_only),
        _key(f"autocast_dtype[{device}]",
             "a region the function enters without a dtype (torch.autocast(device)) casts to it, "
             f"autocast on or off at the call {evidence}",
             f"torch.get_autocast_dtype({q})", ("torch.set_autocast_dtype", "torch.autocast", *legacy),
             f"torch.set_autocast_dtype({q}, value)",
             ("torch.float16 if current != torch.float16 else torch.bfloat16",),
             accelerator_only=accelerator_only),
    )


def _torch_settings() -> tuple[Setting, ...]:
    """Dtypes, determinism, anomaly mode, the default device, autograd's fallback."""
    return (
        _key("default_dtype", "factory calls record it: torch.ones(3) traces as a float64 full "
             "under float64 (probe)", "torch.get_default_dtype()",
             ("torch.set_default_dtype", "torch.set_default_tensor_type", "torch._C._set_default_dtype",
              "torch._C._set_default_tensor_type"), "torch.set_default_dtype(value)",
             ("torch.float64 if current != torch.float64 else torch.float32",)),
        _key("default_device", "factory calls record it: torch.ones(3) traces on meta under "
             "set_default_device('meta') (probe; served stale before it was keyed). It is a "
             "DeviceContext on the function-mode stack, which the per-call read covers",
             "torch.get_default_device()", ("torch.set_default_device",), "torch.set_default_device(value)",
             ("'meta'",), restore="torch.set_default_device(None if value == torch.device('cpu') else value)"),
        _key("autocast_cache", "a region the function enters inherits it: with it on, eager casts a "
             "leaf that requires grad once for all the region's ops, and the trace does the same "
             "(probe: one cast against one per op; NOTE [the autocast cache])",
             "torch.is_autocast_cache_enabled()", ("torch.set_autocast_cache_enabled", "torch.autocast"),
             "torch.set_autocast_cache_enabled(value)", ("not current",)),
        *(s for d in autocast_devices() for s in _autocast(d)),
        _key("deterministic_algorithms", "torch's Python code reads it while tracing: F.pad(mode="
             "'replicate') on CUDA/XPU and the max_pool2d backward decomposition take another path "
             "(torch/nn/functional.py, torch/_decomp); the CPU probe programs trace the same",
             "torch.are_deterministic_algorithms_enabled()",
             ("torch.use_deterministic_algorithms", "torch.set_deterministic_debug_mode",
              "torch._C._set_deterministic_algorithms"), "torch.use_deterministic_algorithms(value)",
             ("not current",)),
        Setting("deterministic_warn_only", Role.OUT, "whether a nondeterministic kernel raises or "
                "warns, which the kernel decides when the graph runs (probe, with deterministic "
                "algorithms on: equal graphs)",
                ("torch.use_deterministic_algorithms", "torch.set_deterministic_debug_mode"),
                "torch.is_deterministic_algorithms_warn_only_enabled()",
                "torch.use_deterministic_algorithms(value, warn_only=value)", ("True",),
                restore="torch.use_deterministic_algorithms(False, warn_only=value)"),
        _attr("fill_uninitialized_memory", _RUN_TIME.format("empty's kernel") + _PROBED,
              "torch.utils.deterministic.fill_uninitialized_memory",
              "torch._C._set_deterministic_fill_uninitialized_memory"),
        _key("anomaly_check_nan", "anomaly mode with check_nan traces the backward with a NaN check "
             "after each node (aten.isnan, a guard) (probe)",
             "torch.is_anomaly_enabled() and torch.is_anomaly_check_nan_enabled()",
             ("torch.set_anomaly_enabled", "torch.autograd.set_detect_anomaly",
              "torch.autograd.detect_anomaly"), "torch.set_anomaly_enabled(value)", ("not current",)),
        Setting("anomaly_enabled", Role.OUT, "without check_nan it only keeps the forward's traceback "
                "for a backward error" + _PROBED, ("torch.set_anomaly_enabled", "torch.autograd.set_detect_anomaly"),
                "torch.is_anomaly_enabled()", "torch.set_anomaly_enabled(value, False)", ("not current",),
                restore="torch.set_anomaly_enabled(value)"),
        _key("autograd_fallback_mode", "an op with no autograd kernel: under 'nothing' its output does "
             "not require grad, and the trace decides inference (probe: a torch.library op)",
             "torch._C._get_autograd_fallback_mode()", ("torch._C._set_autograd_fallback_mode",),
             "torch._C._set_autograd_fallback_mode(value)",
             ("'nothing' if current != 'nothing' else 'warn'",)),
        Setting("grad_enabled", Role.SIGNATURE, "no_grad traces an inference graph",
                ("torch.set_grad_enabled", "torch._C._set_grad_enabled", "torch.autograd.set_grad_enabled",
                 "torch.no_grad", "torch.enable_grad", "torch.autograd.enable_grad"), "torch.is_grad_enabled()"),
        Setting("inference_mode", Role.SIGNATURE, "inference_mode traces an inference graph of "
                "inference tensors", ("torch.inference_mode",), "torch.is_inference_mode_enabled()"),
        _flag("fwd_grad_enabled", "forward AD only, whose tangents the graph's aten ops carry when it "
              "runs, as eager's" + _PROBED, "_is_fwd_grad_enabled", "_set_fwd_grad_enabled", role=Role.OUT),
        _flag("multithreading", "how autograd's engine runs a backward, not what it computes" + _PROBED,
              "_is_multithreading_enabled", "_set_multithreading_enabled",
              "torch.autograd.set_multithreading_enabled", role=Role.OUT),
        _flag("view_replay", "functionalization's choice of how a view is regenerated; aotcheck "
              "replays views itself" + _PROBED, "_is_view_replay_enabled", "_set_view_replay_enabled",
              role=Role.OUT),
        _out("grad_layout_enforcement", "AccumulateGrad's layout of .grad, applied when the backward "
             "runs, as eager's", ("torch._C._set_grad_layout_enforcement_enabled",)),
        _out("rng_state", "values, not graphs: random ops draw from the caller's generator when the "
             "graph runs (NOTE in engine/rng)", ("torch.set_rng_state", "torch.utils.checkpoint.set_device_states")),
    )


def _matmul_settings() -> tuple[Setting, ...]:
    """Matmul precision and the cuBLAS, cuDNN, oneDNN, NNPACK and MIOpen flags."""
    run = _RUN_TIME.format("a kernel")
    return (
        _out("float32_matmul_precision", run + _PROBED,
             ("torch.set_float32_matmul_precision", "torch._C._set_float32_matmul_precision"),
             "torch.get_float32_matmul_precision()", "torch.set_float32_matmul_precision(value)",
             ("'medium'", "'high'")),
        _out("fp32_precision", run + " (the per-backend form of float32_matmul_precision)",
             ("torch._C._set_fp32_precision_setter", "torch.backends.cudnn.fp32_precision",
              "torch.backends.mkldnn.fp32_precision")),
        _attr("cuda_matmul_allow_tf32", run + _PROBED, "torch.backends.cuda.matmul.allow_tf32",
              "torch._C._set_cublas_allow_tf32"),
        _attr("cuda_matmul_fp16_reduction", run + _PROBED,
              "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
              "torch._C._set_cublas_allow_fp16_reduced_precision_reduction"),
        _attr("cuda_matmul_bf16_reduction", run + _PROBED,
              "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
              "torch._C._set_cublas_allow_bf16_reduced_precision_reduction"),
        _attr("cuda_matmul_fp16_accumulation", run + _PROBED, "torch.backends.cuda.matmul.allow_fp16_accumulation",
              "torch._C._set_cublas_allow_fp16_accumulation"),
        _out("cublaslt_prefer_grouped_gemm", run, ("torch._C._set_cublaslt_prefer_grouped_gemm",)),
        _out("cpu_fp16_reduction", run, ("torch._C._set_cpu_allow_fp16_reduced_precision_reduction",)),
        _out("blas_library", run, ("torch.backends.cuda.preferred_blas_library",
                                   "torch._C._set_blas_preferred_backend")),
        _out("linalg_library", run, ("torch.backends.cuda.preferred_linalg_library",
                                     "torch._C._set_linalg_preferred_backend")),
        _out("rocm_fa_library", run, ("torch.backends.cuda.preferred_rocm_fa_library",
                                      "torch._C._set_rocm_fa_preferred_backend")),
        _flag("cudnn_enabled", "on CUDA and ROCm, batch_norm and the RNNs choose the cuDNN or MIOpen "
              "op while tracing (CompositeImplicit _batch_norm_impl_index, _VF.lstm); CPU programs "
              "trace the same", "_get_cudnn_enabled", "_set_cudnn_enabled", "torch.backends.cudnn.enabled",
              "torch.backends.cudnn.set_flags", accelerator_only=True),
        _attr("cudnn_benchmark", run + _PROBED, "torch.backends.cudnn.benchmark", "torch._C._set_cudnn_benchmark"),
        _out("cudnn_benchmark_limit", run, ("torch.backends.cudnn.benchmark_limit",)),
        _attr("cudnn_deterministic", run + _PROBED, "torch.backends.cudnn.deterministic",
              "torch._C._set_cudnn_deterministic"),
        _out("cudnn_allow_tf32", run, ("torch.backends.cudnn.allow_tf32", "torch._C._set_cudnn_allow_tf32")),
        _out("cudnn_depthwise_kernel", run,
             ("torch.backends.cudnn.depthwise_kernel", "torch._C._set_cudnn_depthwise_kernel")),
        _out("miopen_immediate", run, ("torch.backends.miopen.immediate", "torch.backends.miopen.set_flags",
                                     "torch._C._set_miopen_immediate")),
        _flag("mkldnn_enabled", "an LSTM on CPU traces as mkldnn_rnn_layer with it on, as the "
              "unrolled cell ops with it off (probe)", "_get_mkldnn_enabled", "_set_mkldnn_enabled",
              "torch.backends.mkldnn.enabled", "torch.backends.mkldnn.set_flags"),
        _attr("mkldnn_deterministic", run + _PROBED, "torch.backends.mkldnn.deterministic",
              "torch._C._set_mkldnn_deterministic"),
        _out("mkldnn_allow_tf32", run, ("torch.backends.mkldnn.allow_tf32", "torch._C._set_onednn_allow_tf32")),
        _flag("nnpack_enabled", run + _PROBED, "_get_nnpack_enabled", "_set_nnpack_enabled",
              "torch.backends.nnpack.set_flags", role=Role.OUT),
        _out("quantized_engine", run + " (quantized kernels)" + _PROBED,
             ("torch.backends.quantized.engine", "torch._C._set_qengine"), "torch.backends.quantized.engine",
             "torch.backends.quantized.engine = value",
             ("next(e for e in torch.backends.quantized.supported_engines if e != current)",)),
        _out("quantized_supported_engines", "a read-only list (its setter raises)",
             ("torch.backends.quantized.supported_engines",)),
        _out("xnnpack_enabled", "a read-only flag (its setter raises)", ("torch.backends.xnnpack.enabled",)),
        _out("flush_denormal", run, ("torch.set_flush_denormal",)),
        _out("num_threads", run + _PROBED, ("torch.set_num_threads",), "torch.get_num_threads()",
             "torch.set_num_threads(value)", ("1 if current != 1 else 2",)),
        _out("num_interop_threads", run, ("torch.set_num_interop_threads",)),
        _flag("native_aot_kernels", "which kernel computes an op, chosen when it runs (the embedded "
              "AOT kernels compute aten's answers)" + _PROBED, "_get_native_aot_enabled",
              "_set_native_aot_enabled", role=Role.OUT),
        _out("native_aot_unconditional_masked", "which implementation computes an op whose override "
             "is its implementation, chosen when it runs (torch._native rebuilds its routers)",
             ("torch._C._set_native_aot_unconditional_masked",)),
        _out("python_native_dsls", "which DSL kernel computes an op on CUDA, chosen when it runs",
             tuple(f"torch.backends.python_native.{k}_{w}" for k in ("enable", "disable")
                   for w in ("operations", "dispatch_keys"))),
    )


def _sdp_settings() -> tuple[Setting, ...]:
    cpu = " (probe: with flash off, CPU traces the math decomposition)"
    return (
        _flag("sdp_flash", _SDP + cpu, "_get_flash_sdp_enabled", "_set_sdp_use_flash",
              "torch.backends.cuda.enable_flash_sdp", "torch.nn.attention.sdpa_kernel"),
        _flag("sdp_math", _SDP + " (CPU falls back to it where flash cannot run)", "_get_math_sdp_enabled",
              "_set_sdp_use_math", "torch.backends.cuda.enable_math_sdp", "torch.nn.attention.sdpa_kernel"),
        _flag("sdp_math_fp16_bf16_reduction", "the math decomposition keeps bfloat16 and float16 inputs "
              "in their dtype instead of float32 (probe: no _to_copy casts)",
              "_get_math_sdp_allow_fp16_bf16_reduction", "_set_math_sdp_allow_fp16_bf16_reduction",
              "torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp"),
        _flag("sdp_mem_efficient", _SDP + " (CUDA)", "_get_mem_efficient_sdp_enabled",
              "_set_sdp_use_mem_efficient", "torch.backends.cuda.enable_mem_efficient_sdp", accelerator_only=True),
        _flag("sdp_cudnn", _SDP + " (CUDA)", "_get_cudnn_sdp_enabled", "_set_sdp_use_cudnn",
              "torch.backends.cuda.enable_cudnn_sdp", accelerator_only=True),
        _flag("sdp_overrideable", _SDP + " (a device's own kernel)", "_get_overrideable_sdp_enabled",
              "_set_sdp_use_overrideable", accelerator_only=True),
        _flag("sdp_fa3", _SDP + " (CUDA)", "_get_fa3_sdp_enabled", "_set_sdp_use_fa3", accelerator_only=True),
        _flag("sdp_fa4", _SDP + " (CUDA)", "_get_fa4_sdp_enabled", "_set_sdp_use_fa4", accelerator_only=True),
        _key("sdp_priority_order", _SDP + ", in this order (CUDA)", "torch._C._get_sdp_priority_order()",
             ("torch._C._set_sdp_priority_order", "torch.nn.attention.sdpa_kernel"),
             "torch._C._set_sdp_priority_order(value)", ("list(reversed(current))",), accelerator_only=True),
        _out("mha_fastpath", "make_fx tracing turns nn.MultiheadAttention's fast path off, so either "
             "value traces the slow path" + _PROBED, ("torch.backends.mha.set_fastpath_enabled",),
             "torch.backends.mha.get_fastpath_enabled()", "torch.backends.mha.set_fastpath_enabled(value)",
             ("not current",)),
        _key("opt_einsum_enabled", "einsum of three or more operands traces in opt_einsum's contraction "
             "order (probe, with opt_einsum installed)", "torch.backends.opt_einsum.m.enabled",
             ("torch.backends.opt_einsum.enabled", "torch.backends.opt_einsum.set_flags"),
             "torch.backends.opt_einsum.m.enabled = value", ("not current",)),
        _key("opt_einsum_strategy", "the contraction order einsum traces in (probe: greedy and auto "
             "differ)", "torch.backends.opt_einsum.m.strategy",
             ("torch.backends.opt_einsum.strategy", "torch.backends.opt_einsum.set_flags"),
             "torch.backends.opt_einsum.m.strategy = value", ("'greedy' if current != 'greedy' else 'auto'",)),
    )


def _stack_settings() -> tuple[Setting, ...]:
    """Mode stacks, module hooks, transforms: state a context manager or a registration sets."""
    return (
        _key("function_modes", "the trace runs under them: a TorchFunctionMode that turns sin into "
             "cos traces cos (tried; served stale both ways before it was keyed). Each by class and "
             "the fingerprint of its state (a DeviceContext by its device)", "function_modes()",
             ("torch.overrides.TorchFunctionMode", "torch.set_default_device", "torch.device")),
        _key("dispatch_modes", "the trace runs under them: a TorchDispatchMode's rewrites are in the "
             "graph (tried). Each by class and the fingerprint of its state", "dispatch_modes()",
             ("torch.utils._python_dispatch.TorchDispatchMode",)),
        _key("module_hooks", "Module.__call__ runs them inside the trace: a global forward hook's "
             "result is in the graph (tried; served stale both ways before it was keyed). Each by "
             "the fingerprint of its function",
             "module_hooks()", tuple(f"torch.nn.modules.module.register_module_{k}" for k in (
                 "backward_hook", "buffer_registration_hook", "forward_hook", "forward_pre_hook",
                 "full_backward_hook", "full_backward_pre_hook", "module_registration_hook",
                 "parameter_registration_hook"))),
        _out("saved_tensors_hooks", "the trace runs outside them and the backward's saved values reach "
             "them when the graph runs (NOTE [saved tensors hooks around the call])",
             ("torch.autograd.graph.saved_tensors_hooks", "torch.autograd.graph.save_on_cpu",
              "torch.autograd.graph.disable_saved_tensors_hooks")),
        _out("allow_mutation_on_saved_tensors", "a context for eager's in-place ops on saved tensors; "
             "the trace is functional", ("torch.autograd.graph.allow_mutation_on_saved_tensors",)),
        _out("functorch_levels", "a call inside a torch.func transform runs the graph traced outside it, "
             "whose ops reach the transform when they run (tried: grad of a call equals eager's); a "
             "compile inside one is refused (TraceError), so no graph is traced under a level",
             ("torch.func.grad", "torch.func.vmap", "torch.func.jvp")),
        _out("forward_ad_levels", "a dual tensor's tangent is carried by the graph's aten ops when "
             "they run (tried: compiled cold inside dual_level and out, eager's tangents)",
             ("torch.autograd.forward_ad.dual_level",)),
        _out("checkpoint_early_stop", "recomputation in the backward stops early or not: the backward "
             "computes the same ops (tried: a checkpointed sin-cos, whose graphs differ only in node names)",
             ("torch.utils.checkpoint.set_checkpoint_early_stop",)),
        _out("checkpoint_debug", "only what a checkpoint error message says",
             ("torch.utils.checkpoint.set_checkpoint_debug_enabled",)),
        _out("module_params_on_conversion", "only Module._apply (.to(), .double()) reads it, replacing "
             "parameters: a change the fingerprint sees at the next call",
             ("torch.__future__.set_overwrite_module_params_on_conversion",
              "torch.__future__.set_swap_module_params_on_conversion")),
    )


def _quiet_settings() -> tuple[Setting, ...]:
    """Warnings, printing, and torch's internal switches."""
    return (
        _out("warn_always", _WARNINGS, ("torch.set_warn_always", "torch._C._set_warnAlways")),
        _out("backcompat_warnings", _WARNINGS,
             ("torch._C._set_backcompat_broadcast_warn", "torch._C._set_backcompat_keepdim_warn")),
        _out("accumulate_grad_stream_warning", _WARNINGS,
             ("torch.autograd.graph.set_warn_on_accumulate_grad_stream_mismatch",
              "torch._C._set_warn_on_accumulate_grad_stream_mismatch")),
        _out("mutable_data_ptr_checks", "a flag of one tensor (torch's fake tensors), not a global",
             ("torch._C._set_throw_on_mutable_data_ptr", "torch._C._set_warn_deprecated_on_mutable_data_ptr")),
        _out("storage_access_messages", "only the text of an error", (
            "torch._C._set_storage_access_error_msg", "torch._C._set_storage_data_ptr_access_error_msg")),
        _out("printoptions", "printing only", ("torch.set_printoptions",)),
        _out("conj_neg_bits", "a flag of one tensor, not a global; the signature refuses such arguments",
             ("torch._C._set_conj", "torch._C._set_neg")),
        _out("sparse_invariants", "sparse tensors only, which the signature refuses",
             ("torch._C._set_check_sparse_tensor_invariants",)),
        _out("stale_capture_stream", "CUDA graph capture bookkeeping",
             ("torch.autograd.graph.set_override_stale_capture_stream", "torch._C._set_override_stale_capture_stream")),
        _out("cuda_graphs", _INTERNAL.format("CUDA graph trees"),
             ("torch._C._set_cached_tensors_enabled", "torch._C._set_graph_exec_group")),
        _out("sm_carveout", _RUN_TIME.format("a CUDA kernel"), ("torch._C._set_sm_carveout_experimental",)),
        _out("dtensor_implicit_replication", "DTensor only (no DTensor reaches aotcheck's engine)",
             ("torch._C._set_dtensor_allow_implicit_replication",)),
        _out("tracing_internals", _INTERNAL.format("tracers (dispatch and torch-function state, fake "
             "tensors, the JIT tracer)"), (
            "torch._C._set_dispatch_mode", "torch._C._set_torch_function_state",
            "torch._C._set_skip_next_torch_function", "torch._C._set_meta_in_tls_dispatch_include",
            "torch._C._set_only_lift_cpu_tensors", "torch._C._set_fake_constant", "torch._C._set_tracing_state",
            "torch._C._set_value_trace", "torch._C._set_tensor_metadata", "torch._C._set_graph_executor_optimize",
            "torch._C._set_generator_metaclass")),
        _out("process_internals", _INTERNAL.format("process machinery (DataLoader workers, signal "
             "handlers, thread names, mobile export)"), (
            "torch._C._set_worker_pids", "torch._C._set_worker_signal_handlers", "torch._C._set_thread_name",
            "torch._C._set_print_stack_traces_on_fatal_signal", "torch._C._set_default_mobile_cpu_allocator",
            "torch._C._set_should_use_format_with_string_table")),
    )


@functools.lru_cache(maxsize=1)
def census() -> tuple[Setting, ...]:
    """Every record, in the order of the key's component (autocast per device type of this build)."""
    out = (*_torch_settings(), *_matmul_settings(), *_sdp_settings(), *_stack_settings(), *_quiet_settings())
    names = [s.name for s in out]
    if len(set(names)) != len(names):
        raise ValueError(f"census names repeat: {sorted(n for n in names if names.count(n) > 1)}")
    return out


def autocast_devices() -> tuple[str, ...]:
    """The device types this build keeps an autocast state for (``torch.get_autocast_dtype``
    takes each)."""
    return tuple(torch._C._autocast_supported_devices())


# ---------------------------------------------------------------- reading and varying


@functools.lru_cache(maxsize=None)
def _code(text: str, mode: str):
    return compile(text, f"<census {mode}>", mode)


def _namespace(**values) -> dict:
    return {"torch": torch, "function_modes": function_modes, "dispatch_modes": dispatch_modes,
            "module_hooks": module_hooks, **values}


def read(s: Setting):
    """The setting's value now (raises AttributeError where this build lacks it)."""
    return eval(_code(s.read, "eval"), _namespace())    # noqa: S307 - the census's own expressions


def exists(s: Setting) -> bool:
    """Whether this build has the setting: its reader runs (or, without one, a setter exists)."""
    if s.read is None:
        return any(resolves(name) for name in s.setters)
    try:
        read(s)
    except (AttributeError, RuntimeError):
        return False
    return True


def resolves(dotted: str) -> bool:
    """Whether a dotted name (``torch._C._set_sdp_use_fa4``) exists in this torch, importing
    the submodules on its way (``torch.backends.xnnpack``)."""
    parts = dotted.split(".")
    obj: object = sys.modules.get(parts[0])
    for i, part in enumerate(parts[1:], start=2):
        try:
            obj = getattr(obj, part)
        except (AttributeError, RuntimeError):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                return False
    return True


@contextlib.contextmanager
def varied(s: Setting, value_expr: str):
    """Run the block with the setting at ``value_expr`` (one of its ``domain``), then put it back."""
    old = read(s)
    value = eval(_code(value_expr, "eval"), _namespace(current=old))    # noqa: S307
    exec(_code(s.write, "exec"), _namespace(value=value))               # noqa: S102
    try:
        yield value
    finally:
        exec(_code(s.restore or s.write, "exec"), _namespace(value=old))  # noqa: S102


# ---------------------------------------------------------------- modes and hooks, as data


def _state_print(obj) -> str:
    """A hook's or a mode's state as a fingerprint digest (raises Unfingerprintable)."""
    return fingerprint_of(fingerprint_data(obj))[1]


@functools.lru_cache(maxsize=None)
def _base_attributes(base: type) -> frozenset:
    """What a mode base class keeps on an instance by itself (the flags ``__enter__`` saves)."""
    mode = base()
    with mode:
        pass
    return frozenset(vars(mode))


def mode_state(mode) -> tuple:
    """A mode as data to fingerprint: its class and the attributes its own code set (not the
    bookkeeping TorchFunctionMode and TorchDispatchMode keep on it)."""
    base = TorchDispatchMode if isinstance(mode, TorchDispatchMode) else TorchFunctionMode
    own = {k: v for k, v in vars(mode).items() if k not in _base_attributes(base)}
    return type(mode), own


def _mode_data(mode) -> list:
    kind = f"{type(mode).__module__}.{type(mode).__qualname__}"
    return [kind, str(mode.device)] if type(mode) is DeviceContext else [kind, _state_print(mode_state(mode))]


def function_modes() -> list:
    """The TorchFunctionMode stack, bottom first, each ``[class, state]``."""
    return [_mode_data(m) for m in _get_current_function_mode_stack()]


def dispatch_modes() -> list:
    """The TorchDispatchMode stack, bottom first, each ``[class, state]``."""
    return [_mode_data(m) for m in _get_current_dispatch_mode_stack()]


HOOK_DICTS = tuple(sorted((k, v) for k, v in vars(_module_mod).items()
                           if k.startswith("_global_") and isinstance(v, dict)))


def module_hooks() -> list:
    """Each non-empty global ``nn.Module`` hook table, ``[name, [hook print...]]``."""
    return [[k, [_state_print(h) for h in d.values()]] for k, d in HOOK_DICTS if d] + \
        ([["_global_is_full_backward_hook", _module_mod._global_is_full_backward_hook]]
         if _module_mod._global_is_full_backward_hook is not None else [])


# ---------------------------------------------------------------- the census's scope

_SETTER_NAME = re.compile(r"^(set|enable|allow|use|disable)_|^preferred_")


def global_setters() -> list[str]:
    """The global setters of the installed torch, by dotted name (see the module docstring)."""
    out = {f"torch.{n}" for n in dir(torch) if n.startswith(("set_", "use_")) and callable(getattr(torch, n))}
    out |= {f"torch._C.{n}" for n in dir(torch._C) if n.startswith("_set_")}
    out |= set(_backend_setters())
    checkpoint = importlib.import_module("torch.utils.checkpoint")
    for mod in (torch.autograd, torch.autograd.graph, torch.__future__, checkpoint):
        out |= {f"{mod.__name__}.{k}" for k, v in vars(mod).items() if _SETTER_NAME.match(k) and callable(v)}
    out |= {f"torch.nn.modules.module.{k}" for k in vars(_module_mod) if k.startswith("register_module_")}
    det = importlib.import_module("torch.utils.deterministic")
    out |= {f"torch.utils.deterministic.{k}" for k, v in vars(type(det)).items()
            if not k.startswith("_") and _settable(v)}
    return sorted(out)


def _backend_setters():
    for info in pkgutil.iter_modules(torch.backends.__path__):
        if info.name.startswith("_"):
            continue
        name = f"torch.backends.{info.name}"
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        mod = sys.modules[name]              # the module object (a PropModule, where it is one)
        if type(mod) is not types.ModuleType:
            yield from (f"{name}.{k}" for k, v in vars(type(mod)).items() if not k.startswith("_") and (
                _settable(v) or _SETTER_NAME.match(k) and isinstance(v, types.FunctionType)))
        inner = getattr(mod, "m", mod) if type(mod) is not types.ModuleType else mod
        yield from (f"{name}.{k}" for k, v in vars(inner).items() if _SETTER_NAME.match(k)
                    and isinstance(v, types.FunctionType) and v.__module__ == name)


def _settable(v) -> bool:
    """A data descriptor that sets (a property without a setter only raises)."""
    return v.fset is not None if isinstance(v, property) else hasattr(type(v), "__set__")


def unlisted_setters() -> list[str]:
    """The installed torch's global setters that no census record names."""
    named = {n for s in census() for n in s.setters}
    return [n for n in global_setters() if n not in named]

"""ambient: the global torch settings a trace depends on, as the key reads them.

The settings are :mod:`census`'s records in the key. They are read twice:

- :func:`torch_state`, the persistent key's component: every one, by name, as JSON data
  (what ``aotcheck cache explain`` compares: ``torch_state.autocast_dtype[cpu]: ...``);
- :func:`call_state`, its per-call counterpart for the in-memory reuse of
  ``CompiledFunction``: a tuple of C getters bound once (NOTE [the per-call read]).

Before and after one setter, with autocast itself off::

    >>> torch_state()["autocast_dtype[cpu]"]
    'torch.bfloat16'
    >>> torch.set_autocast_dtype("cpu", torch.float16)
    >>> torch_state()["autocast_dtype[cpu]"]    # a function entering torch.autocast("cpu")
    'torch.float16'                             # traces float16 casts now
"""
from __future__ import annotations

import functools
import sys

import torch
import torch.nn.modules.module as _module_mod
from torch.overrides import _get_current_function_mode_stack
from torch.utils._device import DeviceContext
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

from .census import HOOK_DICTS, Role, autocast_devices, census, exists, mode_state, read
from .fingerprint import fingerprint_data, fingerprint_of
from .registrations import EPOCH as _EPOCH
from .registrations import install as _install_registration_epoch

_install_registration_epoch()      # NOTE [a registration changed in-process] (registrations.py)


@functools.lru_cache(maxsize=1)
def in_key() -> tuple:
    """The census's settings in ``torch_state`` that this build has."""
    return tuple(s for s in census() if s.role is Role.KEY and exists(s))


def _text(v):
    """A value as JSON data: dtypes and devices by name."""
    if isinstance(v, (bool, int, float, str, type(None))):
        return v
    if isinstance(v, (list, tuple)):
        return [_text(x) for x in v]
    return str(v)


def torch_state() -> dict:
    """The persistent key's ``torch_state``: every census setting in the key, by name, plus the
    Python version. Raises Unfingerprintable for a mode or hook without a stable fingerprint
    (the call then bypasses the persistent cache)."""
    state = {s.name: _text(read(s)) for s in in_key()}
    state["python"] = list(sys.version_info[:3])
    return state


# ---------------------------------------------------------------- the per-call read

# NOTE [the per-call read]
# The in-memory reuse reads the ambient state on every call of a compiled function, before
# the artifact lookup: C getters bound once here, in one tuple, about 40 ns each. A setting
# that changes graphs only of tensors on an accelerator (``accelerator_only``) is read only in a
# process that has one (``ACCELERATORS``); autocast's on/off flags sit behind one
# ``_is_any_autocast_enabled``, which misses some device types (``_UNCOVERED``, read
# always). The function-mode, dispatch-mode and module-hook readers run only while their
# stack or table is not empty; a DeviceContext is read by its device, any other entry by
# its state's fingerprint, so a fresh ``with Mode():`` around each call still hits.
# ``tests/test_ambient.py`` varies every setting in the key and requires this tuple and
# ``torch_state`` both to change.

_C = torch._C
_any_autocast, _autocast_dtype, _cache = _C._is_any_autocast_enabled, _C.get_autocast_dtype, \
    _C.is_autocast_cache_enabled
_default_dtype, _deterministic, _anomaly, _check_nan = torch.get_default_dtype, \
    _C._get_deterministic_algorithms, _C.is_anomaly_enabled, _C.is_anomaly_check_nan_enabled
_fallback, _mkldnn = _C._get_autograd_fallback_mode, _C._get_mkldnn_enabled
_flash, _math, _reduction = _C._get_flash_sdp_enabled, _C._get_math_sdp_enabled, \
    _C._get_math_sdp_allow_fp16_bf16_reduction
_function_stack, _dispatch_stack = _C._len_torch_function_stack, _C._len_torch_dispatch_stack
_opt_einsum = torch.backends.opt_einsum.m.__dict__       # the module globals its getters read
_hooks = tuple(d for _, d in HOOK_DICTS)


def _live(device: str) -> bool:
    try:
        return bool(torch.get_device_module(device).is_available())
    except (AttributeError, RuntimeError, AssertionError):
        return False


def _uncovered(device: str) -> bool:
    """Whether ``_is_any_autocast_enabled`` misses this device type's autocast (it does MPS's
    and MAIA's on 2.13): asked once, by turning it on and back off."""
    was = torch.is_autocast_enabled(device)
    torch.set_autocast_enabled(device, True)
    try:
        return not _any_autocast()
    finally:
        torch.set_autocast_enabled(device, was)


ACCELERATORS = tuple(d for d in autocast_devices() if d != "cpu" and _live(d))
_AUTOCAST_LIVE, _autocast_enabled = ("cpu", *ACCELERATORS), _C.is_autocast_enabled
_UNCOVERED = tuple(d for d in _AUTOCAST_LIVE if not _any_autocast() and _uncovered(d))
_ACCELERATOR_READS = tuple(getattr(_C, n) for n in (
    "_get_cudnn_enabled", "_get_mem_efficient_sdp_enabled", "_get_cudnn_sdp_enabled",
    "_get_overrideable_sdp_enabled", "_get_fa3_sdp_enabled", "_get_fa4_sdp_enabled",
    "_get_sdp_priority_order") if hasattr(_C, n))


def autocast_on() -> tuple:
    """Each live device type (the CPU and ``ACCELERATORS``) whose autocast is on, with its dtype:
    ``(("cuda", torch.float16),)``. Read only while some autocast is on (``call_state``)."""
    return tuple((d, _autocast_dtype(d)) for d in _AUTOCAST_LIVE if _autocast_enabled(d))


def _accelerator_state() -> tuple:
    return (tuple(_autocast_dtype(d) for d in ACCELERATORS), tuple(r() for r in _ACCELERATOR_READS))


def _modes_key(stack) -> tuple:
    return tuple((type(m), m.device) if type(m) is DeviceContext else
                 (type(m), fingerprint_of(fingerprint_data(mode_state(m), identity_fallback=True))[1])
                 for m in stack)


def _hooks_key() -> tuple:
    return tuple(tuple(fingerprint_of(fingerprint_data(h, identity_fallback=True))[1] for h in d.values())
                 for d in _hooks) + (_module_mod._global_is_full_backward_hook,)


def call_state() -> tuple:
    """The ambient part of the in-memory key (NOTE [the per-call read]): equal exactly when every
    setting in the key that can matter in this process is equal."""
    return (autocast_on() if _any_autocast() or _UNCOVERED else False, _autocast_dtype("cpu"), _cache(),
            _default_dtype(), _deterministic(), _anomaly() and _check_nan(), _fallback(), _mkldnn(), _flash(), _math(),
            _reduction(), _opt_einsum["enabled"], _opt_einsum["strategy"],
            _function_stack() and _modes_key(_get_current_function_mode_stack()),
            _dispatch_stack() and _modes_key(_get_current_dispatch_mode_stack()),
            any(_hooks) and _hooks_key(), ACCELERATORS and _accelerator_state(), _EPOCH[0])

"""census: every input of compilation the differential varies, as data, per torch release.

``census/torch-<release>.json`` holds, for one torch release:

- ``config``: every field of ``torch._functorch.config``, ``torch._inductor.config`` and
  ``torch._dynamo.config``, each with the values it is varied to (``vary``: a flipped bool, the
  other literals of an enum-like string, a perturbed number, an emptied collection, a
  replacement callable by name from ``REPLACEMENTS``) or, where it is not varied, the written
  reason (``reason``);
- ``programs``: the probe programs of the other kinds, by kind (``programs/*.py``, in the
  user-program format): the state reached from the function (``reached``), ambient settings
  (``ambient``), custom-op registrations (``registration``), argument storage relations
  (``storage``), compile entry points (``entry``), and the config fields that need a program of
  their own (``config``).

A field of the installed torch that the census does not list fails ``missing()`` (and the test
that calls it), so a new torch release is checked, never silently skipped: ``aotcheck keydiff
--write-census`` adds its new fields with derived values (``derive``), keeping every reason and
value already written.

    >>> derive("torch._inductor.config.max_fusion_size", 64, int)
    ([128], '')
    >>> derive("torch._inductor.config.triton.cudagraphs", False, bool)[1]
    'CUDA, ROCm, XPU or Triton code only: the census compiles for CPU, where it cannot change a graph'
"""
from __future__ import annotations

import importlib
import json
import re
import types
import typing
from pathlib import Path

from .program import CONFIG_MODULES

CENSUS_DIR = Path(__file__).resolve().parent / "census"
PROGRAMS_DIR = Path(__file__).resolve().parent / "programs"
SCHEMA = 1
KINDS = ("reached", "ambient", "registration", "storage", "entry", "config")

# name -> a callable a callable-valued field is set to (a graph pass that changes a graph)


def _mul_to_add_joint_pass(gm, joint_inputs):
    """A joint-graph pass that changes any graph with a multiplication: its first
    ``aten.mul.Tensor`` becomes ``aten.add.Tensor``."""
    import torch
    for node in gm.graph.nodes:
        if node.target is torch.ops.aten.mul.Tensor:
            node.target = torch.ops.aten.add.Tensor
            break
    gm.recompile()
    return gm


REPLACEMENTS = {"mul_to_add_joint_pass": _mul_to_add_joint_pass}
CALLABLE_FIELDS = {"torch._functorch.config.joint_custom_pass": "mul_to_add_joint_pass"}

# (pattern on the field's full name, reason); the first that matches wins
RULES: list[tuple[str, str]] = [
    (r"\.(TYPE_CHECKING|_save_config_ignore|_cache_config_ignore_prefix|_cache_config_factory_keys|"
     r"_compile_ignored_keys|external_matmul)$",
     "the config module's own bookkeeping, not a setting"),
    (r"(^|\.)(triton|cuda|rocm|xpu|mtia|cutlass|cutedsl|nvgemm|halide|pallas|mps|cuda_backend|"
     r"aot_inductor|aot_inductor_mode|lookup_table|nv_universal_gemm)\.|cudagraph|cuda|rocm|xpu|triton|"
     r"gpu|nccl|cublas|_tma|tf32|mtia|decompose_k|cooperative|persistent_reduction|pallas",
     "CUDA, ROCm, XPU or Triton code only: the census compiles for CPU, where it cannot change a graph"),
    (r"\.trace\.|(^|[._])(debug|verbose|log|logs|logging|profil|repro|minifier|minify|tlparse|"
     r"print|dump|visualize|pareto|report|warn|instruction_count|metrics|issue_3_13)|cprofile|profiler",
     "debugging, logging or reporting output: written beside a compile, not into the graph"),
    (r"(autotun|benchmark|coordinate_descent|max_autotune|search_autotune|precompilation_timeout|"
     r"bw_outputs_user_visible_timing|_timing)",
     "autotuning benchmarks candidate kernels at compile time; the census builds no kernel"),
    (r"(cache|_pgo|caching_precompile|strict_precompile|force_autograd_cache|force_non_lazy_backward_lowering)",
     "decides how a cache is used or keyed, which the differential itself sets "
     "(force_autograd_cache, bundled_autograd_cache, force_non_lazy_backward_lowering) or compares"),
    (r"(compile_threads|worker|subproc|async_compile|_start_method|num_workers|parallel_compile|"
     r"use_static_cuda_launcher|enable_linear_binary_folding_with_subproc)",
     "how compile work is spread over processes, not what is compiled"),
    (r"((^|[._])comms?(_|$)|communication|bucket|fsdp|ddp|distributed|collective|_ranks|p2p|simplefsdp|"
     r"overlap_scheduling|"
     r"reorder_for_compute_comm_overlap|aten_distributed)",
     "distributed collectives: the probe program runs in one process with no process group"),
    (r"(recompile_limit|cache_size_limit|error_on_recompile|fail_on_recompile|"
     r"skip_code_recursive_on_recompile_limit_hit|minimum_call_count|run_gc_after_compile|disable$|"
     r"suppress_errors|raise_on_|error_on_nested|replay_record|base_dir|debug_dir_root|"
     r"compiled_autograd_kwargs_override|pt2_compile_id_prefix|invalidate_compile_context_weakrefs|"
     r"record_runtime_overhead|issue_3_13_0_warning|_test_|TESTING_ONLY|test_configs|"
     r"sleep_sec|generate_pycode|inject_)",
     "steers when or whether Dynamo compiles, or test hooks; a compile that happens produces the same graph"),
    (r"(cpp_wrapper|freezing|aot_inductor|package|export|precompile|standalone|aoti)",
     "an entry point or a whole-program mode of its own (AOTInductor, freezing, packaging); a probe "
     "program of kind 'entry' covers the entry points"),
]


def rule_reason(name: str) -> str:
    for pattern, reason in RULES:
        if re.search(pattern, name):
            return reason
    return ""


def _literals(tp) -> list:
    """The literal values of a ``Literal[...]`` type (inside an Optional, too)."""
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return list(typing.get_args(tp))
    if origin in (typing.Union, types.UnionType):
        return [v for a in typing.get_args(tp) for v in _literals(a)]
    return []


def _optional_of(tp):
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(tp) if a is not type(None)]
        return rest[0] if len(rest) == 1 else None
    return None


def derive(name: str, default, value_type) -> tuple[list, str]:
    """(values to vary the field to, reason) for a field: the values, or [] and a reason."""
    reason = rule_reason(name)
    if reason:
        return [], reason
    if name in CALLABLE_FIELDS:
        return [{"callable": CALLABLE_FIELDS[name]}], ""
    literals = [v for v in _literals(value_type) if v != default]
    if literals:
        return literals[:3], ""
    if isinstance(default, bool):
        return [not default], ""
    if isinstance(default, int):
        return [default * 2 if default > 0 else (1 if default == 0 else 0)], ""
    if isinstance(default, float):
        return [default / 2 if default else 0.5], ""
    if isinstance(default, str):
        return [], "a free-form string (a path, a name or a format) with no value domain to vary"
    if isinstance(default, (list, tuple, set, frozenset, dict)):
        if default:
            return [[] if not isinstance(default, dict) else {}], ""
        return [], "an empty collection of names (passes, ops, modules) with no generic member to add"
    if default is None:
        return _derive_optional(_optional_of(value_type))
    if callable(default):
        return [], "a callable hook with no replacement registered (census.REPLACEMENTS)"
    return [], f"a value of type {type(default).__name__} with no value domain to vary"


def _derive_optional(inner) -> tuple[list, str]:
    if inner is bool:
        return [True, False], ""
    if inner is int:
        return [1], ""
    if inner is float:
        return [0.5], ""
    return [], "None, or a value of a type with no generic domain (a callable, an object, a free string)"


# ---------------------------------------------------------------- the installed torch


def live_fields() -> dict[str, tuple]:
    """Every field of the installed torch's three config modules: full name -> (default,
    value type); aliases are left out (they name another field)."""
    out = {}
    for mod_name in CONFIG_MODULES:
        mod = importlib.import_module(mod_name)
        for field, entry in mod._config.items():
            if entry.alias is None:
                out[f"{mod_name}.{field}"] = (entry.default, getattr(entry, "value_type", type(entry.default)))
    return out


def release() -> str:
    import torch
    return torch.__version__.split("+")[0]


def path_for(rel: str | None = None) -> Path:
    return CENSUS_DIR / f"torch-{rel or release()}.json"


def load(rel: str | None = None) -> dict:
    p = path_for(rel)
    if not p.is_file():
        raise FileNotFoundError(f"no census for torch {rel or release()} ({p}); write one with "
                                f"aotcheck keydiff --write-census")
    data = json.loads(p.read_text())
    if data.get("schema") != SCHEMA:
        raise ValueError(f"{p}: census schema {data.get('schema')}, expected {SCHEMA}")
    return data


def missing(data: dict) -> list[str]:
    """Fields of the installed torch that the census does not list."""
    return sorted(set(live_fields()) - set(data["config"]))


def stale(data: dict) -> list[str]:
    """Fields the census lists that the installed torch no longer has."""
    return sorted(set(data["config"]) - set(live_fields()))


def unjustified(data: dict) -> list[str]:
    """Fields with neither a value to vary nor a reason."""
    return sorted(n for n, e in data["config"].items() if not e.get("vary") and not e.get("reason"))


def write(rel: str | None = None) -> Path:
    """Write the installed torch's census: existing entries kept as written (for a release with
    no census yet, those of the newest census there is), new fields derived, fields this torch
    lacks dropped; the program lists and known gaps kept (or, for the first census, every probe
    program by its ``KIND``)."""
    p = path_for(rel)
    old = json.loads(p.read_text()) if p.is_file() else _nearest()
    config = {}
    for name, (default, tp) in sorted(live_fields().items()):
        if name in old.get("config", {}):
            config[name] = old["config"][name]
            continue
        vary, reason = derive(name, default, tp)
        config[name] = {"vary": vary, "reason": reason}
    data = {"schema": SCHEMA, "torch": rel or release(), "config": config,
            "programs": old.get("programs") or default_programs(), "known_gaps": old.get("known_gaps", {})}
    CENSUS_DIR.mkdir(exist_ok=True)
    p.write_text(json.dumps(data, indent=1, sort_keys=True, default=_json_default) + "\n")
    return p


def _nearest() -> dict:
    """The census of the newest other release, to seed a new release's census: its reasons,
    values, programs and known gaps carry over for the fields both releases have."""
    files = sorted(CENSUS_DIR.glob("torch-*.json"),
                   key=lambda f: tuple(int(x) for x in re.findall(r"\d+", f.stem)))
    return json.loads(files[-1].read_text()) if files else {}


def _json_default(v):
    if isinstance(v, (set, frozenset, tuple)):
        return sorted(v, key=repr) if isinstance(v, (set, frozenset)) else list(v)
    return repr(v)


def default_programs() -> dict[str, list[str]]:
    """Every probe program, by kind (its docstring's first line starts with the kind)."""
    out: dict[str, list[str]] = {k: [] for k in KINDS}
    for p in sorted(PROGRAMS_DIR.glob("kd_*.py")):
        kind = program_kind(p)
        if kind:
            out[kind].append(p.stem)
    return out


def program_kind(path: Path) -> str:
    """The census kind a probe program declares (``KIND = "reached"``)."""
    m = re.search(r'^KIND = "(\w+)"', Path(path).read_text(), re.M)
    return m.group(1) if m and m.group(1) in KINDS else ""


def config_inputs(data: dict) -> list[tuple[str, list]]:
    """(field, values) for every varied field, the values decoded (``value``)."""
    return [(n, [value(n, v) for v in e["vary"]]) for n, e in sorted(data["config"].items()) if e.get("vary")]


def value(name: str, encoded):
    """A census value as the field takes it: a replacement callable by name; a list where the
    field's default is a tuple or set, as that type."""
    if isinstance(encoded, dict) and set(encoded) == {"callable"}:
        return REPLACEMENTS[encoded["callable"]]
    if isinstance(encoded, list):
        default = live_fields().get(name, (None,))[0]
        if isinstance(default, (tuple, set, frozenset)):
            return type(default)(encoded)
    return encoded


def sizes(data: dict) -> dict[str, int]:
    """The census's size per kind: config fields varied and with a reason, values, programs."""
    cfg = data["config"]
    out = {"config fields": len(cfg), "config fields varied": sum(1 for e in cfg.values() if e.get("vary")),
           "config fields with a reason": sum(1 for e in cfg.values() if not e.get("vary")),
           "config values": sum(len(e.get("vary", [])) for e in cfg.values())}
    for kind, progs in data["programs"].items():
        out[f"{kind} programs"] = len(progs)
    return out

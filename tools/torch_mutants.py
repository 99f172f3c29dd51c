"""Mutants of torch's ``torch/_functorch`` sources, as data, for ``tools/mutate_torch.py``.

Each ``Mutant`` names a file under ``torch/_functorch``, an exact snippet of the stock
torch 2.13.0 source (it must occur exactly once) and its replacement, and says in one line
which plausible bug it models. ``area`` groups them for the score: ``cache`` (the
AOTAutogradCache key and lookup), ``metadata`` (collect_metadata_analysis), ``functional``
(functionalization of inputs: functional_utils), ``runtime`` (runtime wrappers) and
``partition`` (the partitioners).

``apply_mutant``/``restore`` edit one file of a tree and put it back; both check what they
do by sha256 (``MutantError`` when a snippet is missing, ambiguous, or a restore fails).
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass

AREAS = ("cache", "metadata", "functional", "runtime", "partition")
# the torch release whose ``_functorch`` sources the snippets are copied from; later releases
# rewrote some of those lines (torch 2.14.1: four runtime-wrapper snippets, 2.15.0: those and
# the autocast line of the cache key), and the harness refuses a run with a snippet missing
WRITTEN_FOR = "2.13.0"


class MutantError(RuntimeError):
    """A mutant that cannot be applied as written, or a tree that was not put back."""


@dataclass(frozen=True)
class Mutant:
    id: str
    area: str
    file: str            # relative to torch/_functorch
    old: str
    new: str
    description: str

    def to_json(self) -> dict:
        return asdict(self)


def sha256_file(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def tree_digest(root: str) -> dict[str, str]:
    """sha256 of every ``.py`` file under ``root`` (relative path -> hex), __pycache__ skipped."""
    out = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                p = os.path.join(d, name)
                out[os.path.relpath(p, root)] = sha256_file(p)
    return out


def _locate(text: str, m: Mutant) -> int:
    n = text.count(m.old)
    if n != 1:
        raise MutantError(f"mutant {m.id}: the original snippet occurs {n} times in {m.file} "
                          f"(must be exactly once)")
    return text.index(m.old)


def check_snippet(root: str, m: Mutant) -> None:
    """Raise MutantError unless ``m.old`` occurs exactly once in ``root/m.file``."""
    with open(os.path.join(root, m.file), encoding="utf-8") as f:
        _locate(f.read(), m)


def apply_mutant(root: str, m: Mutant) -> str:
    """Rewrite ``root/m.file`` with the mutant; return the file's original text."""
    path = os.path.join(root, m.file)
    with open(path, encoding="utf-8") as f:
        original = f.read()
    i = _locate(original, m)
    mutated = original[:i] + m.new + original[i + len(m.old):]
    if mutated == original:
        raise MutantError(f"mutant {m.id}: the replacement equals the original")
    with open(path, "w", encoding="utf-8") as f:
        f.write(mutated)
    return original


def restore(root: str, m: Mutant, original: str, expected_sha256: str) -> None:
    """Put the original text back and check it by sha256."""
    path = os.path.join(root, m.file)
    with open(path, "w", encoding="utf-8") as f:
        f.write(original)
    got = sha256_file(path)
    if got != expected_sha256:
        raise MutantError(f"mutant {m.id}: {m.file} not restored (sha256 {got[:12]} != "
                          f"{expected_sha256[:12]})")


AC = "_aot_autograd/autograd_cache.py"
CM = "_aot_autograd/collect_metadata_analysis.py"
FU = "_aot_autograd/functional_utils.py"
RW = "_aot_autograd/runtime_wrappers.py"
PT = "partitioners.py"

MUTANTS: tuple[Mutant, ...] = (
    # ------------------------------------------------------------ the cache key and lookup
    Mutant("key-grad-mode", "cache", AC,
           "        self.grad_enabled = torch.is_grad_enabled()\n",
           "        self.grad_enabled = True  # grad mode is guarded by Dynamo already\n",
           "grad mode dropped from the AOTAutogradCache key: a no_grad entry serves a grad call"),
    Mutant("cache-lazy-save-skipped", "cache", RW,
           "            if self.try_save_cache_entry is not None:\n",
           "            if False and self.try_save_cache_entry is not None:  # saved with the forward\n",
           "the entry of a training graph is never saved at the lazy backward compile (issue 38): "
           "every later process misses"),
    Mutant("key-requires-grad", "cache", AC,
           "        metadata = extract_tensor_metadata_for_cache_key(t)\n",
           "        metadata = extract_tensor_metadata_for_cache_key(t.detach())\n",
           "inputs hashed after detach(): requires_grad no longer in the key"),
    Mutant("key-dtype-shape-only", "cache", AC,
           "        return (_ident, (metadata,))\n\n\n@contextlib.contextmanager",
           "        return (_ident, ((metadata.dtype, metadata.shape),))\n\n\n@contextlib.contextmanager",
           "inputs keyed by dtype and shape only (strides, requires_grad, memory format dropped)"),
    Mutant("key-strides", "cache", AC,
           "        metadata = extract_tensor_metadata_for_cache_key(t)\n",
           "        metadata = dataclasses.replace(\n"
           "            extract_tensor_metadata_for_cache_key(t), stride=(), memory_format=None\n"
           "        )\n",
           "strides and memory format dropped from the key (a transposed input hits a contiguous entry)"),
    Mutant("key-autocast", "cache", AC,
           "            if torch.is_autocast_enabled(device_type):\n"
           "                self.autocast_state[device_type] = torch.get_autocast_dtype(device_type)\n",
           "            self.autocast_state[device_type] = torch.get_autocast_dtype(device_type)\n",
           "key records the autocast dtype but not whether autocast is on"),
    Mutant("key-functorch-config", "cache", AC,
           "        self.autograd_config = config.save_config()\n",
           "        self.autograd_config = None  # functorch config is process-wide\n",
           "functorch config flags left out of the key"),
    Mutant("lookup-ignores-guards", "cache", AC,
           "        result = shape_env.evaluate_guards_expression(guard_expr, hints)\n",
           "        result = bool(guard_expr)\n",
           "lookup accepts the first entry under a key without evaluating its shape guards"),
    Mutant("key-deterministic", "cache", AC,
           "        self.deterministic_algorithms = torch.are_deterministic_algorithms_enabled()\n",
           "        self.deterministic_algorithms = torch.is_grad_enabled()\n",
           "copy-paste: deterministic_algorithms slot records grad mode, deterministic mode unkeyed"),
    # ------------------------------------------------------------ metadata analysis
    Mutant("meta-no-grad-flag", "metadata", CM,
           "            mutations_under_no_grad_or_inference_mode = (\n"
           "                mutates_data\n",
           "            mutations_under_no_grad_or_inference_mode = (\n"
           "                mutates_metadata\n",
           "typo: no_grad-mutation flag conditioned on a metadata mutation instead of a data one"),
    Mutant("meta-input-rg-before", "metadata", CM,
           "            requires_grad = isinstance(f_arg, torch.Tensor) and f_arg.requires_grad\n",
           "            requires_grad = isinstance(arg, torch.Tensor) and arg.requires_grad\n",
           "input requires_grad read before the function ran (misses requires_grad_() inside)"),
    Mutant("meta-returned-input-as-alias", "metadata", CM,
           "                elif is_input_tensor:\n"
           "                    output_type = OutputType.is_input\n",
           "                elif is_input_tensor and not input_info[base_idx].mutates_data:\n"
           "                    output_type = OutputType.is_input\n",
           "a returned input that was mutated in data is regenerated as a view, not returned itself"),
    Mutant("meta-multi-output-view", "metadata", CM,
           "                    grad_fn is not None\n"
           "                    and num_aliased_outs_that_are_not_multi_output_views == 0\n",
           "                    grad_fn is not None\n"
           "                    and num_multi_output_view_outs > 0\n",
           "multi-output-view outputs hidden from autograd even when other outputs alias them too"),
    Mutant("meta-view-under-no-grad", "metadata", CM,
           "                requires_grad_for_backward=requires_grad\n"
           "                and (o._base is None or grad_fn is not None),\n",
           "                requires_grad_for_backward=requires_grad,\n",
           "a view made under no_grad (no grad_fn) still gets a tangent in the backward"),
    Mutant("meta-tangent-custom-fn-view", "metadata", CM,
           "                OutputType.non_alias,\n"
           "                OutputType.unsafe_view_alias,\n"
           "                OutputType.custom_function_view,\n"
           "            ]\n"
           "            and issubclass(info.raw_type, torch.Tensor)\n",
           "                OutputType.non_alias,\n"
           "                OutputType.unsafe_view_alias,\n"
           "            ]\n"
           "            and issubclass(info.raw_type, torch.Tensor)\n",
           "outputs of a custom autograd Function that view an input get no tangent"),
    # ------------------------------------------------------------ functionalization of inputs
    Mutant("func-offset-mutation", "functional", FU,
           "        same_offsets = arg.storage_offset() == arg_after.storage_offset()\n",
           "        same_offsets = True\n",
           "a metadata mutation that only moves the storage offset is not seen"),
    Mutant("func-detach-alias-rg", "functional", FU,
           "        if aliased_base_tensor.requires_grad and not target_requires_grad:\n"
           "            out = out.detach()\n"
           "        elif",
           "        if",
           "a regenerated alias of a grad-requiring base keeps requires_grad when the output had none"),
    Mutant("func-grad-mutation-in-graph", "functional", FU,
           "            (not mutates_metadata and not requires_grad)\n",
           "            (not mutates_metadata)\n",
           "a data mutation of a grad-requiring input kept in the graph, hidden from autograd"),
    Mutant("func-hidden-vs-nograd", "functional", FU,
           "        return torch._functionalize_are_all_mutations_hidden_from_autograd(t.elem)\n",
           "        return torch._functionalize_are_all_mutations_under_no_grad_or_inference_mode(\n"
           "            t.elem\n"
           "        )\n",
           "copy-paste: 'hidden from autograd' answered by the no_grad query (misses x.detach().mul_())"),
    Mutant("func-alias-dtype", "functional", FU,
           "    if aliased_out.dtype != target_meta_tensor.dtype:\n"
           "        aliased_out = aliased_out.view(target_meta_tensor.dtype)\n",
           "",
           "as_strided regeneration of an alias forgets a cross-dtype view"),
    # ------------------------------------------------------------ runtime wrappers
    Mutant("rt-nonleaf-copy-detached", "runtime", RW,
           "                        mut_lines.append(f\"    {oi}.copy_({ui})\")\n",
           "                        mut_lines.append(f\"    {oi}.detach().copy_({ui})\")\n",
           "the epilogue writes a mutated non-leaf input back under detach(): autograd misses it"),
    Mutant("rt-meta-mutation-offset", "runtime", RW,
           "                    f\"    {oi}.as_strided_(_u{i}.size(), _u{i}.stride(), _u{i}.storage_offset())\"\n",
           "                    f\"    {oi}.as_strided_(_u{i}.size(), _u{i}.stride())\"\n",
           "metadata-mutation replay forgets the storage offset"),
    Mutant("rt-dedupe-index", "runtime", RW,
           "                    add_dupe_map.append(seen_args[t])\n",
           "                    add_dupe_map.append(j)\n",
           "duplicate arguments mapped to the next kept argument instead of their first occurrence"),
    Mutant("rt-synthetic-base-view", "runtime", RW,
           "        if view1._base is view2._base or view1._base is view2 or view1 is view2._base:\n",
           "        if view1._base is view2._base or view1._base is view2:\n",
           "an argument that is the base of another argument is not seen as aliasing it"),
    Mutant("rt-non-diff-offset", "runtime", RW,
           "            if i < num_mutated_runtime_inps + num_outputs and not meta.requires_grad:\n",
           "            if i < num_outputs and not meta.requires_grad:\n",
           "non-differentiable outputs counted without the mutated-input prefix (off by an offset)"),
    Mutant("rt-detach-nograd-inputs", "runtime", RW,
           "        for idx in indices_of_inps_to_detach:\n"
           "            rw_lines.append(\n",
           "        for idx in indices_of_inps_to_detach[:-1]:\n"
           "            rw_lines.append(\n",
           "the last input that never needs grad is not detached before the compiled call"),
    # ------------------------------------------------------------ partitioners
    Mutant("part-recompute-random", "partition", PT,
           "    default_recomputable_ops += [\n"
           "        aten.zeros_like,\n"
           "    ]\n",
           "    default_recomputable_ops += [\n"
           "        aten.zeros_like,\n"
           "        aten.native_dropout,\n"
           "        aten.rand_like,\n"
           "        aten.randn_like,\n"
           "    ]\n",
           "min-cut may recompute random ops in the backward (dropout mask drawn again)"),
    Mutant("part-copy-not-forward", "partition", PT,
           "        and not _has_tag_must_be_in_backward(node)\n"
           "        and is_mutable\n"
           "    )\n",
           "        and not _has_tag_must_be_in_backward(node)\n"
           "        and is_mutable\n"
           "        and node.target is not torch.ops.aten.copy_.default\n"
           "    )\n",
           "an in-graph input mutation (copy_) is no longer pinned to the forward graph"),
    Mutant("part-sym-only-any", "partition", PT,
           "        backward_usages = [n for n in node.users if n.name not in forward_node_names]\n"
           "        if all(is_sym_node(n) for n in backward_usages):\n",
           "        backward_usages = [n for n in node.users if n.name not in forward_node_names]\n"
           "        if any(is_sym_node(n) for n in backward_usages) or not backward_usages:\n",
           "default partitioner saves only sizes of a tensor the backward also reads as data"),
    Mutant("part-mutation-src-recompute", "partition", PT,
           "            if _has_tag_must_be_in_forward(node) and node.args[0] in has_mutation_in_bw:\n"
           "                node.args[1].meta[\"recompute\"] = CheckpointPolicy.MUST_SAVE\n",
           "            if _has_tag_must_be_in_forward(node) and node.args[0] in has_mutation_in_bw:\n"
           "                pass\n",
           "the source of a forward mutation of a primal also mutated in the backward may be recomputed"),
)

BY_ID = {m.id: m for m in MUTANTS}
assert len(BY_ID) == len(MUTANTS), "duplicate mutant ids"

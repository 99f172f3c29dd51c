"""facts: what one functional run of the function observed, as plain frozen data.

*capture* records these raw facts; *analyze* turns them into the view/mutation
metadata (``analyze.ViewMutationMeta``). No tensors, FX nodes or callables: they
go into the cache key as JSON.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InputFacts:
    """What running the function did to one placeholder's tensor (or a member's metadata)."""
    placeholder: int
    data_mutated: bool
    metadata_mutated: bool
    autograd_saw_mutation: bool     # grad_fn or requires_grad changed: replay it with grad on
    requires_grad_after: bool
    final_shape: tuple[int, ...]
    final_stride: tuple[int, ...]
    final_offset: int
    value_output: int               # graph-output index of the new value, or -1
    storage_bytes: int = -1         # its storage's size after the call when the function
                                    # resized it (inductor.resize_storage_bytes_), else -1
    storage_source: int = -1        # set_(): -1 none, -2 a fresh storage (all of it in
                                    # storage_output), p >= 0 placeholder p's storage
    requires_grad_set: bool = False  # a leaf whose requires_grad_() the function called
                                     # (NOTE [requires_grad_ on an argument])
    writes_outside: bool = False    # a write through a view reaching storage elements the
                                    # argument does not (NOTE [writes outside an argument])
    storage_output: int = -1        # storage_source -2: the candidate holding all of the
                                    # storage made inside (value_output, when data_mutated,
                                    # is what was written to the old one: NOTE [writes before a
                                    # storage swap] in swaps.py)
    grad_value_output: int = -1     # after a swap, written with grad: the candidate holding
                                    # its final value (NOTE [grad writes after a swap])


@dataclass(frozen=True)
class MemberFacts:
    """A view-member of an alias group whose own metadata changed (e.g. ``a.t_()``), or
    whose storage ``set_()`` swapped for another one (NOTE [member storage swaps])."""
    leaf: int
    final_shape: tuple[int, ...]
    final_stride: tuple[int, ...]
    final_offset: int
    storage_source: int = -1        # -1 the storage it shares; p >= 0 placeholder p's storage
                                    # at the call; -2 one made inside the function
    value_output: int = -1          # -2: the candidate holding that storage's final value


@dataclass(frozen=True)
class OutputFacts:
    """One leaf of the returned pytree."""
    is_tensor: bool
    value: str = ""                 # repr of a non-tensor leaf
    is_input: int = -1              # leaf index of the argument it *is*
    same_output: int = -1           # earlier output it *is* (``return y, y``)
    input_storage: int = -1         # leaf index of an argument whose storage it shares
    output_storage: int = -1        # earlier output it shares storage with (not a view of it)
    base_output: int = -1           # it is a view whose root is this output
    base_intermediate: int = -1     # it is a view whose root is intermediate k
    graph_output: int = -1          # graph-output index of its value (for an input_storage
                                    # alias: of the value its gradient flows through, if any)
    shape: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    offset: int = 0
    dtype: str = ""
    requires_grad: bool = False
    is_leaf: bool = True
    multi_output_view: bool = False  # a view made by unbind/split (in-place on it is an error)
    grad_dead_end: bool = False       # requires grad, but its gradient reaches no input
    new_leaf: int = -1                # it is new grad leaf k (NOTE [new grad leaves])
    base_new_leaf: int = -1           # a view of new grad leaf k (its base, not returned)
    poisoned: str = ""                # its grad_fn raises in eager (NOTE [poisoned views])
    custom_view: bool = False         # a view whose autograd chain passes a custom Function
                                      # (NOTE [custom Function views] in outputs.py)
    inference: bool = False           # an inference tensor (made inside an inference_mode block)
    clips: tuple = ()                 # geometries an as_strided on its chain was cut from
                                      # (NOTE [as_strided clips] in recorder.py)
    from_root: bool = False           # eager regenerated it from its root base, reaching
                                      # outside the argument it aliases


@dataclass(frozen=True)
class RawFacts:
    inputs: tuple[InputFacts, ...]
    members: tuple[MemberFacts, ...]
    outputs: tuple[OutputFacts, ...]
    out_tree: str
    intermediate_outputs: tuple[int, ...]     # graph-output index of each intermediate base
    candidates: tuple[tuple, ...]   # per graph output: (shape, dtype, requires_grad, stride, offset)
    new_leaf_outputs: tuple[int, ...]         # outputs that are fresh leaves requiring grad
    metadata_ops: tuple = ()                  # (kind, index, method, args, kwargs, grad_enabled)
    view_replay_hazard: bool = False          # see recorder.MetadataRecorder.view_replay_hazard
    new_leaves: tuple = ()                    # (kind, source, shape, stride, offset, dtype) per
                                              # leaf made inside (NOTE [new grad leaves])
    custom_functions: tuple = ()              # "name:digest" per custom Function backward reached
                                              # (NOTE [custom Function backward in the key])
    # NOTE [imperative autograd on arguments and outputs] (runtime/artifact.py)
    retained: tuple = ()                      # ("argument", leaf) | ("output", k) per retain_grad()
    hooks: tuple = ()                         # (argument leaf, written before) per hook registered


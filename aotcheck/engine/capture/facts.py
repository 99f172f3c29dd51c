"""facts: what one functional run of the function observed, as plain frozen data.

*capture* records these raw facts; *analyze* turns them into the view/mutation
metadata (``analyze.ViewMutationMeta``). No tensors, FX nodes or callables: they
go into the cache key as JSON.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass



@dataclass(frozen=True)
class Candidate:
    """One graph output a later stage may read: a new input value, a fresh output, an
    intermediate base. Its layout is eager's (stride, storage offset), which the graph's
    value may lack."""
    shape: tuple[int, ...]
    dtype: str                      # "float32", without "torch."
    requires_grad: bool
    stride: tuple[int, ...]
    offset: int


class OpTarget(enum.StrEnum):
    """What a metadata call was made on."""
    PLACEHOLDER = "placeholder"     # a graph placeholder
    LEAF = "leaf"                   # an argument leaf: a member of an alias group


@dataclass(frozen=True)
class MetadataOp:
    """One in-place metadata call on an argument (``a.t_()``, ``a.resize_(4)``, a member's
    ``requires_grad_()``), which the runtime replays on the caller's tensor, in order."""
    kind: OpTarget                  # what ``index`` numbers
    index: int
    method: str                     # the Tensor method's name
    args: tuple                     # plain data (recorder.plain_args)
    kwargs: tuple                   # ((name, value), ...), sorted by name
    grad_enabled: bool              # autograd recorded it: replayed with grad on

    def __post_init__(self):
        object.__setattr__(self, "kind", OpTarget(self.kind))     # from the recorder's key


class NewLeafKind(enum.StrEnum):
    """How the runtime makes a grad leaf made inside (NOTE [new grad leaves])."""
    VIEW = "view"                   # a detached view of argument leaf ``source``
    FRESH = "fresh"                 # an empty tensor, filled from its graph value when returned
    ARGUMENT = "argument"           # the caller's argument leaf ``source`` itself


@dataclass(frozen=True)
class NewLeaf:
    """A tensor that became a leaf requiring grad inside the function (NOTE [new grad leaves]
    in autograd_facts.py), which the runtime makes before the graph runs, as ``kind`` says."""
    kind: NewLeafKind
    source: int | None             # argument leaf index (None: fresh)
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int
    dtype: str                      # "float32", without "torch."


class Poison(enum.StrEnum):
    """Why reading a view's grad_fn raises in eager (NOTE [poisoned views] in outputs.py): the
    view was made ..."""
    MULTI_OUTPUT = "multi_output"       # ... by a multi-output view op, then its base written
    INFERENCE_MODE = "inference_mode"   # ... in inference mode, then written outside it
    NO_GRAD = "no_grad"                 # ... under no_grad, then written under grad


class MovedKind(enum.StrEnum):
    """The kind ``.data =`` in an inference call left an output as
    (NOTE [inference state moved by .data =] in storage/watch.py)."""
    INFERENCE = "inference"         # an inference tensor
    ORDINARY = "ordinary"           # an ordinary tensor


class StorageKind(enum.StrEnum):
    """Where ``set_()`` (or ``.data =``) left a tensor's storage: the kind of a ``StorageSource``."""
    KEPT = "kept"                   # no swap (an alias-group member: the storage the group shares)
    NEW = "new"                     # a storage made inside the function
    PLACEHOLDER = "placeholder"     # a placeholder's storage as it was at the call


@dataclass(frozen=True)
class StorageSource:
    """Where ``set_()`` left a tensor's storage (NOTE [storage swaps] in storage/swaps.py):
    ``kept`` (no swap; for an alias-group member, the storage the group shares), ``new`` (a
    storage made inside the function, whose whole value the graph returns), or
    ``placeholder`` (placeholder ``placeholder``'s storage as it was at the call, its own
    included). ``placeholder`` is None for the other kinds."""
    kind: StorageKind = StorageKind.KEPT
    placeholder: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "kind", StorageKind(self.kind))     # from JSON: its value
        if (self.kind is StorageKind.PLACEHOLDER) != (self.placeholder is not None):
            raise ValueError(f"a {self.kind} storage source names placeholder {self.placeholder}")

    @staticmethod
    def made_inside() -> "StorageSource":
        """A storage the function made."""
        return StorageSource(StorageKind.NEW)

    @staticmethod
    def of_placeholder(q: int) -> "StorageSource":
        """Placeholder ``q``'s storage as it was at the call."""
        return StorageSource(StorageKind.PLACEHOLDER, q)

    @property
    def swapped(self) -> bool:
        return self.kind is not StorageKind.KEPT

    @property
    def new(self) -> bool:
        return self.kind is StorageKind.NEW

    @property
    def from_placeholder(self) -> bool:
        return self.kind is StorageKind.PLACEHOLDER

    def onto(self, p: int) -> bool:
        """Swapped onto placeholder ``p``'s storage at the call."""
        return self.kind is StorageKind.PLACEHOLDER and self.placeholder == p


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
    value_output: int | None       # graph-output index of the new value
    storage_bytes: int | None = None # its storage's size after the call when the function
                                    # resized it (inductor.resize_storage_bytes_), else None
    storage_source: StorageSource = StorageSource()   # set_(): a new storage's value is
                                    # storage_output
    requires_grad_set: bool = False  # a leaf whose requires_grad_() the function called
                                     # (NOTE [requires_grad_ on an argument])
    writes_outside: bool = False    # a write through a view reaching storage elements the
                                    # argument does not (NOTE [writes outside an argument])
    storage_output: int | None = None # a new storage_source: the candidate holding all of the
                                    # storage made inside (value_output, when data_mutated,
                                    # is what was written to the old one:
                                    # NOTE [writes before a storage swap] in storage/swaps.py)
    grad_value_output: int | None = None # after a swap, written with grad: the candidate holding
                                    # its final value (NOTE [grad writes after a swap])
    final_dtype: str = ""           # after ``x.data = y`` of another dtype: y's dtype
                                    # (NOTE [.data assignment] in runtime/writeback.py), else ""
    old_grad_edge: bool = False     # a leaf used under grad mode, then set_() under no_grad onto
                                    # another shape: its gradient node at the call is a gradient
                                    # target too (NOTE [set_ under no_grad onto another shape])
    data_only: bool = False         # the swap is ``.data =`` with nothing autograd recorded on
                                    # the argument after it
                                    # (NOTE [.data assignment of an argument that requires grad] in storage/swaps.py)
    kept_grad_node: bool = False    # ``.data =`` onto another shape of a leaf while a use held
                                    # its gradient node: eager's leaf keeps that node
                                    # (NOTE [.data = onto another shape while a use holds the node])


@dataclass(frozen=True)
class MemberFacts:
    """A view-member of an alias group whose own metadata changed (e.g. ``a.t_()``), or
    whose storage ``set_()`` swapped for another one (NOTE [member storage swaps])."""
    leaf: int
    final_shape: tuple[int, ...]
    final_stride: tuple[int, ...]
    final_offset: int
    storage_source: StorageSource = StorageSource()
    value_output: int | None = None # a new storage_source: the candidate holding its final value


@dataclass(frozen=True)
class OutputFacts:
    """One leaf of the returned pytree."""
    is_tensor: bool
    value: str = ""                 # repr of a non-tensor leaf
    is_input: int | None = None     # leaf index of the argument it *is*
    same_output: int | None = None  # earlier output it *is* (``return y, y``)
    input_storage: int | None = None # leaf index of an argument whose storage it shares
    output_storage: int | None = None # earlier output it shares storage with (not a view of it)
    base_output: int | None = None  # it is a view whose root is this output
    base_intermediate: int | None = None # it is a view whose root is intermediate k
    graph_output: int | None = None # graph-output index of its value (for an input_storage
                                    # alias: of the value its gradient flows through, if any)
    shape: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    offset: int = 0
    dtype: str = ""
    requires_grad: bool = False
    is_leaf: bool = True
    multi_output_view: bool = False  # a view made by unbind/split (in-place on it is an error)
    grad_dead_end: bool = False       # requires grad, but its gradient reaches no input
    new_leaf: int | None = None       # it is new grad leaf k (NOTE [new grad leaves])
    base_new_leaf: int | None = None  # a view of new grad leaf k (its base, not returned)
    poisoned: Poison | None = None    # its grad_fn raises in eager (NOTE [poisoned views])
    custom_view: bool = False         # a view whose autograd chain passes a custom Function
                                      # (NOTE [custom Function views] in outputs.py)
    inference: bool = False           # an inference tensor (made inside an inference_mode block)
    ordinary: bool = False            # called under inference_mode, yet an ordinary tensor in
                                      # eager (NOTE [ordinary outputs of an inference call])
    clips: tuple = ()                 # geometries an as_strided on its chain was cut from
                                      # (NOTE [as_strided clips] in recorder.py)
    from_root: bool = False           # eager regenerated it from its root base, reaching
                                      # outside the argument it aliases
    moved_kind: MovedKind | None = None   # ``.data =`` in an inference call gave it the other kind
                                      # (NOTE [inference state moved by .data =])
    at_call: bool = False             # a view of an argument taken before ``.data =`` moved it:
                                      # rebuilt before the swap (NOTE [views taken before .data =])


class RetainKind(enum.StrEnum):
    """Where eager's retain_grad() hook ends (NOTE [where an argument's retained gradient sits]
    in autograd_facts.py)."""
    OUTPUT = "output"                       # a returned tensor
    ARGUMENT = "argument"                   # an argument, on its final node
    ARGUMENT_AT_CALL = "argument_at_call"   # an argument, on its node at the call
    ARGUMENT_BETWEEN = "argument_between"   # an argument, between its writes and its metadata calls


@dataclass(frozen=True)
class Retained:
    """One retain_grad() the runtime makes on the caller's tensor
    (NOTE [imperative autograd on arguments and outputs] in runtime/imperative.py)."""
    kind: RetainKind
    index: int                      # the argument leaf (the output, for OUTPUT)
    placeholder: int | None = None  # ARGUMENT, ARGUMENT_BETWEEN: the graph placeholder the
                                    # argument is (None: a member of an alias group)

    @property
    def on_argument(self) -> bool:
        return self.kind is not RetainKind.OUTPUT


@dataclass(frozen=True)
class HookSite:
    """Where one tensor hook the function registers goes: on an argument leaf, or on grad leaf
    ``new_leaf`` made inside (NOTE [hooks on leaves made inside] in autograd_facts.py)."""
    leaf: int | None                # the argument leaf (None: a leaf made inside)
    written: bool = False           # registered after the function wrote the argument
    new_leaf: int | None = None     # the grad leaf made inside (``leaf`` is None)


@dataclass(frozen=True)
class RawFacts:
    inputs: tuple[InputFacts, ...]
    members: tuple[MemberFacts, ...]
    outputs: tuple[OutputFacts, ...]
    out_tree: str
    intermediate_outputs: tuple[int, ...]     # graph-output index of each intermediate base
    candidates: tuple[Candidate, ...]         # per graph output
    new_leaf_outputs: tuple[int, ...]         # outputs that are fresh leaves requiring grad
    metadata_ops: tuple[MetadataOp, ...] = ()
    view_replay_hazard: bool = False          # see recorder.MetadataRecorder.view_replay_hazard
    new_leaves: tuple[NewLeaf, ...] = ()      # per leaf made inside (NOTE [new grad leaves])
    custom_functions: tuple = ()              # "name:digest" per custom Function backward reached
                                              # (NOTE [custom Function backward in the key])
    # NOTE [imperative autograd on arguments and outputs] (runtime/imperative.py)
    retained: tuple[Retained, ...] = ()       # per retain_grad() the runtime makes
    hooks: tuple[HookSite, ...] = ()          # per hook registered

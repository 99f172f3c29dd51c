"""aotcheck.engine.capture: a function traced into a functional aten graph, plus raw facts.

Its modules, in the order a capture uses them::

    trace           -> ``capture()``: the stage's entry; traces on fake tensors, retries the
                       other ways, returns a ``Captured`` (NOTE [synthetic bases])
    mode            -> ``TraceMode``: which way it traced, and why (kept in the metadata)
    plan            -> placeholders <- argument leaves (synthetic bases)
    functional      -> make_fx + functionalization, named errors, grad mode
    functional_run  -> one run of the function on functional wrappers -> raw facts, in
                       named steps; with view_flags (requires_grad_() on an argument that
                       another views or aliases), recorder (the user's in-place metadata
                       calls, geometry, hazards; out= resizes made calls of their own, with
                       resize: the geometry resize_ and out= leave; overlap: writes to
                       overlapping memory split into pieces; custom_ops: a mutating
                       torch.library op run through its own kernel; inference_call: a call
                       under inference_mode traced with its rules; autocast_cache: eager's
                       cast cache for leaves; data_assign: ``.data =`` as the recorder sees
                       it and the run reads it; set_calls: the geometry set_() and ``.data =``
                       give), swaps (where set_() moved an argument's storage, or why it is
                       refused), outputs (what each returned tensor aliases; with nondiff:
                       bool or integer tensors that require grad, refused by name) and
                       autograd_facts (new grad leaves, custom Function digests)
    facts           -> the raw facts, as frozen data (what analyze reads)

Beside the functional way, two other ways to trace, each taken when the first cannot follow
the program:

    values          -> a trace on this call's values, pinned by guard ops, where the
                       function reads tensor values (NOTE [value specialization])
    storage_views   -> the plain-tensor way: traced on plain tensors with eager autograd,
                       then functionalized with every alias re-read from its storage

The joint trace (``engine/joint.py``) reuses functional, functional_run and storage_views.

What it may import: torch, ``aotcheck.errors``, ``aotcheck.flags``, and from the engine
``signature`` and ``rng`` (no later stage: analyze, joint, partition and runtime import
capture, never the reverse).
"""

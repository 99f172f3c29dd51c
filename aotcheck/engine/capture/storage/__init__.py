"""aotcheck.engine.capture.storage: an argument's (or any tensor's) storage changed, one home.

``x.data = y``, ``x.set_(y)`` (or ``set_()`` onto a storage, or onto nothing) and a leaf
moved onto a tensor of another shape give a tensor other memory without writing it. The
capture stage meets them twice, and this package holds both, in the order data flows:

- ``data_assign.py``: which calls are ``.data =`` (the ``data`` setter, the op
  ``aten.shallow_copy_data_``, Dynamo's lowering), what the plain trace does with one, and
  the refusals read from what the watcher saw;
- ``watch.py``: while the function runs, ``StorageWatch``, the recorder's watcher
  (recorder.py holds one and calls it), whose state is one record, ``StorageChanges``;
- ``swaps.py``: after the call, per argument whose storage changed, where it went (a
  ``StorageSource``, facts.py) or why aotcheck refuses the swap (``storage_swap`` answers a
  ``SwapOf`` with a ``SwapVerdict``).

The runtime replays what they find (runtime/writeback.py, runtime/swap_grad.py). The
NOTEs, in data-flow order: NOTE [storage changes, in data-flow order] below.

What it may import: what capture may (it is part of the capture stage), and capture's own
modules; recorder.py imports ``watch`` and ``data_assign``, so those two import no recorder,
and ``swaps`` reads the recorder only after the call.
"""

# NOTE [storage changes, in data-flow order]
# The NOTEs on storage changes, in the order a call meets them (each title once, with its file):
#
# While the function runs (the recorder and its watcher):
# 1. NOTE [shallow_copy_data_] in storage/data_assign.py: the op that is ``.data =``
# 2. NOTE [.data assignment in the plain trace] in storage/data_assign.py
# 3. NOTE [inference state moved by .data =] in storage/watch.py
# 4. NOTE [set_ in the recorder] in storage/watch.py: the geometry set_() gives
# 5. NOTE [.data = onto another shape while a use holds the node] in storage/watch.py
# 6. NOTE [.data assignment of a viewed tensor] in storage/data_assign.py: a run that fails after it
# After the call (the run's facts, per swapped argument):
# 7. NOTE [storage swaps] in storage/swaps.py: where the storage went
# 8. NOTE [writes before a storage swap] in storage/swaps.py
# 9. NOTE [.data assignment of an argument that requires grad] in storage/swaps.py
# 10. NOTE [swaps in an alias group] in storage/swaps.py
# 11. NOTE [member storage swaps] in storage/swaps.py
# 12. NOTE [views taken before .data =] in capture/outputs.py: outputs that view the old memory
# The joint trace:
# 13. NOTE [a gradient of a swapped argument's new shape] in engine/joint.py
# The runtime's replay on the caller's tensors:
# 14. NOTE [.data assignment] in runtime/writeback.py
# 15. NOTE [set_ recorded by autograd] in runtime/swap_grad.py
# 16. NOTE [set_ under no_grad] in runtime/swap_grad.py
# 17. NOTE [set_ under no_grad onto another shape] in runtime/swap_grad.py
# 18. NOTE [grad writes after a swap] in runtime/swap_grad.py
# Outside the engine: NOTE [.data assignment in Dynamo's graph] (targets/backend.py), and
# a tensor subclass's: NOTE [subclass .data assignment] (subclass/imperative.py),
# NOTE [subclass .data assignment onto another shape] (subclass/imperative.py),
# NOTE [subclass set_ onto a plain tensor] (subclass/wrapper_set.py).

"""aotcheck.keydiff: the key-completeness differential for torch's compiled-graph caches.

A cache key is complete when every input of compilation that changes what is produced also
changes the key. For each input (a config field, an ambient torch setting, a custom-op
registration, a module global reached from the function, a storage relation between arguments,
a compile entry point), the differential compiles under value A and under value B, each into a
fresh cache directory, and compares what was produced (AOTAutograd's forward and backward
graphs and the runtime metadata it hands on; Inductor's output code) and the keys
(AOTAutogradCache's, the FX graph cache's):

    produced differs, key equal    KEY GAP    (then confirmed as a stale hit: A's cache
                                               directory read by B in a new process, against
                                               eager under B)
    key differs, produced equal    LOST HIT   (lower severity: a miss that needed not be)
    both differ / both equal       keyed / no effect

No expectation is written per input: the verdict comes from the two compiles.

A program file names the inputs to vary; each compile is observed from torch's structured
trace; a KEY GAP is confirmed as a stale hit (B in a new process over A's cache directory,
against eager under B) and written as a standalone reproducer. The census
(``census/torch-<release>.json``) lists every config field with its values or a written
reason, and the probe programs (``programs/``, in the user-program format) of the other kinds. Its modules, one line each, in the order data flows through
them: the map in README.md, "Layout".

What it may import: targets, check, the API, and everything below them. Only cli imports it.
"""

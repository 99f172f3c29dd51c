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

Modules, in the order data flows through them:

    program.py       a user-program file (``fn``, ``inputs``, optional ``VARY``, ``setup``,
                     ``BACKEND``, ``ENTRY``): loaded as an importable module, checked, its inputs
                     of compilation listed (ProgramError names what is wrong)
    setters.py       how one value of an input is put in place and taken back: a program
                     global, a dotted attribute (config fields), an ambient torch setting, the
                     program's ``setup``; storage relations between two arguments (the lattice)
    observe.py       one compile under one state into one cache directory: what was produced
                     and the keys, read from torch's structured trace (``Observation``)
    differential.py  two observations compared: the verdict and its reason (``Verdict``)
    worker.py        one side in a fresh process (``python -m aotcheck.keydiff.worker``)
    confirm.py       a KEY GAP confirmed or not as a stale hit (B in a new process over A's
                     cache directory, against eager under B; B's cold compile against eager)
    naming.py        the differing component named as a person would
    repro.py         a standalone, importable reproducer for a confirmed stale hit
    census.py        the census as data, per torch version (``census/torch-<release>.json``):
                     every config field with its values or a written reason, and the probe
                     programs of the other kinds; completeness against the installed torch
    config_run.py    the config census, in-process per field, split over spawned processes
    run.py           a program (or the census's probe programs) through the differential
    report.py        the findings as text and JSON (frozen records, schema versioned)

Probe programs live in ``programs/`` (the census's non-config kinds, and the reproducers of
upstream reports), in the user-program format.

What it may import: targets, check, the API, and everything below them. Only cli imports it.
"""

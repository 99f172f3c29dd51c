"""aotcheck.regress: the regression command's data flow, one module per stage.

    quick.py        the corpus -> the quick set's cases (``--quick``): chosen by measured line
                    and variation-kind coverage per second (``quick_set.json``), with the reason
    plan.py         engine names (``all-torch``) -> the engines and the stages each runs
                    (cold; cached, sharing the cold run as the cache fill; key variations)
    run.py          the corpus through every engine, sharded over a pool of warm worker
                    processes -> one ``Outcome`` per (engine, stage, case)
    isolation.py    around each (case, engine) in a worker: in-memory caches emptied, process
                    state compared with the worker's start, named and put back where it leaked
    fingerprint.py  an outcome's divergences -> how it failed (``FailurePrint``: check, subject,
                    error), frozen and JSON round-trip
    record.py       the recorded failures (the built-in ``known_failures.json`` or a saved
                    baseline) -> ``Record``; outcomes -> a new ``Record`` (``baseline save``)
    judge.py        outcomes + record -> verdicts: pass, known, NEW, CHANGED, FIXED, and the
                    exit code (``--strict``: FIXED fails too)

``aotcheck check --engine ENGINE`` and ``aotcheck baseline save FILE`` (``aotcheck/cli``) are
these stages end to end; ``tests/test_engines.py`` judges each pytest run through the same
``judge.judge_one``, so the two give the same verdicts.

What it may import: targets (the engines, the known failures), fuzz (its fingerprint's
``check_kind``), check, the API, the cache, errors and flags. Nothing from cli or grad.
"""

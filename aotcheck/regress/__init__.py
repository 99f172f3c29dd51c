"""aotcheck.regress: the regression command's data flow, one module per stage.

The corpus (or its quick set) -> the planned engines and stages -> one ``Outcome`` per
(engine, stage, case), each run as if alone, in a pool of warm workers -> how each failed
-> verdicts against the recorded failures (pass, known, NEW, CHANGED, FIXED) and the exit
code. Its modules, one line each, in that order: the map in README.md, "Layout".

``aotcheck check --engine ENGINE`` and ``aotcheck baseline save FILE`` (``aotcheck/cli``) are
these stages end to end; ``tests/test_engines.py`` judges each pytest run through the same
``judge.judge_one``, so the two give the same verdicts.

What it may import: targets (the engines, the known failures), fuzz (its fingerprint's
``check_kind``), check, the API, the cache, errors and flags. Nothing from cli or grad.
"""

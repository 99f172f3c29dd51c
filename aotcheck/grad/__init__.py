"""aotcheck.grad: backward-pass correctness, numerically and over PyTorch's OpInfo database.

    reports.py     gradient-check results as frozen data; the one agreement rule
    gradcheck.py   finite-difference checks (2- and 4-point), NaN-safe asymmetry, vacuity
                   detection, compiled-vs-eager gradient comparison
    opinfo.py      which OpInfos, PyTorch's own skips and xfails, one case per sample
    results.py     the suite's statuses and its result record
    ops_suite.py   checking one case (forward, backward against eager, backward against
                   finite differences) and running the suite
    scores.py      BackendBench-style scores and the printed report
    perf.py        forward timing against eager, BackendBench's performance score and perf@p
    compare.py     several backends side by side, the run as JSON, the diff of two runs

What it may import: the API, the cache (counters), targets, the engine, errors and
flags. Nothing from check, fuzz or cli.
"""

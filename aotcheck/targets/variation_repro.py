"""variation_repro: a key-variation reproducer read back and replayed.

``variations.write_repro(result, subject, DIR)`` writes ``keyvar_<engine>_<subject>_<variation>.py``:
the engine, the subject (a corpus case id, or the program's source between two marker lines)
and the variation. ``python FILE`` (or ``aotcheck triage FILE``) replays A then B through
``variations.run_subject`` (``replay_file``) and exits 1 when the verdict is still bad;
``load_repro`` reads one back; ``is_repro`` tells one from a fuzzer's reproducer.
"""
from __future__ import annotations

from pathlib import Path

from .variations import (PROGRAM_BEGIN, PROGRAM_END, BAD, REPRO_MARK, GradMode, Subject, Variation,
                         run_subject)


def load_repro(path) -> tuple[str, Subject, Variation]:
    """(engine name, subject, variation) of a reproducer written by ``write_repro``."""
    import runpy
    ns = runpy.run_path(str(path), run_name="aotcheck_keyvar_repro")
    v = Variation.from_json(ns["VARIATION"])
    if ns.get("CASE"):
        from ..check.corpus import all_cases
        case = {c.id: c for c in all_cases()}[ns["CASE"]]
        return ns["ENGINE"], Subject.of_case(case), v
    text = Path(path).read_text()
    source = text.split(PROGRAM_BEGIN, 1)[1].split(PROGRAM_END, 1)[0] if PROGRAM_BEGIN in text else ""
    return ns["ENGINE"], Subject(ns.get("SUBJECT", Path(path).stem), ns["f"], ns["make_inputs"],
                                 GradMode(ns.get("GRAD_MODE", GradMode.ENABLED)), ns.get("BACKWARD", True), (), source), v


def is_repro(path) -> bool:
    try:
        return Path(path).read_text().startswith(REPRO_MARK)
    except OSError:
        return False


def replay_file(path) -> int:
    """Run a reproducer: A then B; print the verdict; 1 when it is bad."""
    from .engines import get_engine
    engine, subject, v = load_repro(path)
    run = run_subject(get_engine(engine), subject, [v])
    for r in run.results:
        print(r)
    if run.a != "ok":
        print(f"A: {run.a}")
    return 1 if any(r.verdict in BAD for r in run.results) else 0

"""worker: observations of one program in a process of its own.

``python -m aotcheck.keydiff.worker REQUEST.json`` loads the program, and for each request
(an input's name and value index, a cache directory) compiles and observes it
(``observe.observe``, against eager), one after another, each with fresh in-memory state;
it prints one line per observation, ``MARK`` followed by the observation's JSON. The
registrations a program's ``setup`` makes last as long as the process, which is why the runner
gives each value of a ``setup`` input a process of its own, and why a stale hit is confirmed
in a new process (``confirm.py``).
"""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

MARK = "AOTCHECK-KEYDIFF-OBSERVATION "


@dataclass(frozen=True)
class Request:
    """Compile ``program`` with input ``name`` at value ``index`` (``name`` empty: nothing set)
    into ``cache_dir``; ``eager``: compare with eager; ``details``: record the key's components;
    ``target``: whose cache (``torch``: torch's entry point and caches, ``observe.py``;
    ``aotcheck``: aotcheck's engine and cache, ``observe_aotcheck.py``)."""
    program: str
    name: str
    index: int
    cache_dir: str
    eager: bool = True
    details: bool = True
    target: str = "torch"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0]) as f:
        requests = [Request(**r) for r in json.load(f)]
    from . import observe_aotcheck, program, setters
    from .observe import observe as observe_torch
    prog = program.load(requests[0].program)
    module = prog.module()
    for r in requests:
        state = {r.name: setters.value_of(module, r.name, r.index)} if r.name else {}
        observe = observe_aotcheck.observe if r.target == "aotcheck" else observe_torch
        obs = observe(module, state, r.cache_dir, eager=r.eager, details=r.details)
        print(MARK + json.dumps(obs.to_json()), flush=True)
    return 0


def run(requests: list[Request], timeout: float = 600.0):
    """Run ``requests`` in one new process; their observations, in order (an observation whose
    process died carries the error)."""
    import os
    import tempfile

    from .observe import Observation
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([r.__dict__ for r in requests], f)
    try:
        proc = subprocess.run([sys.executable, "-m", "aotcheck.keydiff.worker", f.name], capture_output=True,
                              text=True, timeout=timeout)
    finally:
        os.unlink(f.name)
    got = [Observation.from_json(json.loads(line[len(MARK):])) for line in proc.stdout.splitlines()
           if line.startswith(MARK)]
    if len(got) < len(requests):
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        got += [Observation(error=f"the worker process exited with {proc.returncode}: {tail[:300]}")] \
            * (len(requests) - len(got))
    return got


if __name__ == "__main__":
    sys.exit(main())

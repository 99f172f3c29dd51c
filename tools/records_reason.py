"""Write a reason into every recorded entry whose reason is still the placeholder that
``aotcheck baseline save`` gives a new entry, by a rule per (engine, key, fingerprint).

    python tools/records_reason.py RULES.py [RECORD ...]     # default: every built-in record

``RULES.py`` defines ``reason(engine, key, fingerprint) -> str | None``; an entry the rules give
no reason is listed, and left as it is. Each record is read and written by
``aotcheck.regress.record`` (its one-entry-per-line layout kept).
"""
from __future__ import annotations

import json
import runpy
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aotcheck.regress import record as R  # noqa: E402

PLACEHOLDER = "recorded by aotcheck baseline save; no reason written yet"


def write_reasons(path: Path, reason) -> tuple[int, list[str]]:
    rec = R.from_json(json.loads(path.read_text()), str(path))
    engines, done, left = {}, 0, []
    for name, table in rec.engines.items():
        engines[name] = dict(table)
        for key, e in table.items():
            if e.reason != PLACEHOLDER:
                continue
            fp = e.fingerprint.to_dict() if e.fingerprint is not None else {}
            text = reason(name, key, fp)
            if text is None:
                left.append(f"{name} {key} {fp}")
                continue
            engines[name][key] = replace(e, reason=text)
            done += 1
    replace(rec, engines=engines).save(path)
    return done, left


def main(argv: list[str]) -> int:
    rules = runpy.run_path(argv[0])["reason"]
    paths = [Path(p) for p in argv[1:]] or sorted((ROOT / "aotcheck/targets/records").glob("torch-*.json"))
    for p in paths:
        done, left = write_reasons(p, rules)
        print(f"{p.name}: {done} reason(s) written, {len(left)} left")
        for line in left:
            print("  no rule:", line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

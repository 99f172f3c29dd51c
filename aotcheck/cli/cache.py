"""``aotcheck cache``: look inside a cache directory.

    aotcheck cache ls                  one line per entry: key, mode, backward?, size
    aotcheck cache show KEY            decision, metadata, forward (and backward) graph
    aotcheck cache explain KEY [KEY2]  the key's components; with two keys, which differ
                                       (a setting or field each: torch_state.autocast_dtype[cpu]:
                                       torch.bfloat16 -> torch.float16)
    aotcheck cache verify              check every file's checksum and graphs
    aotcheck cache clear               delete every entry
    aotcheck cache stats               entries, sizes, modes

``--dir`` defaults to ``./cache`` when it exists (the project's folder), else
the library default (``AOTCHECK_CACHE_DIR`` or ``~/.cache/aotcheck``). ``--remote
redis://host:port/db`` (default ``AOTCHECK_REMOTE_CACHE``) adds the shared remote: ``ls``
says where each entry is, ``verify`` checks both copies, ``clear`` empties both. A KEY
may be any unique prefix.
"""
from __future__ import annotations

import difflib
import json
from pathlib import Path

from ..cache import BACKWARD_FILE, ENTRY_FILE, Cache, CacheCorrupt, default_dir, verify
from ..cache.key import component_changes


def register(sub) -> None:
    p = sub.add_parser("cache", help="inspect the persistent cache", description=__doc__.split("\n")[0])
    p.add_argument("--dir", default=None, help="cache directory (default: ./cache if present, "
                                                  "else AOTCHECK_CACHE_DIR or ~/.cache/aotcheck)")
    p.add_argument("--remote", default=None, help="Redis URL of the remote cache (default: "
                                                  "AOTCHECK_REMOTE_CACHE; '' for none)")
    cmds = p.add_subparsers(dest="cache_command", required=True)
    cmds.add_parser("ls", help="list entries")
    s = cmds.add_parser("show", help="print one entry")
    s.add_argument("key")
    e = cmds.add_parser("explain", help="list a key's components, or compare two keys")
    e.add_argument("key")
    e.add_argument("key2", nargs="?")
    cmds.add_parser("verify", help="check every entry")
    cmds.add_parser("clear", help="delete every entry")
    cmds.add_parser("stats", help="summary counts and sizes")
    p.set_defaults(func=main)


def _dir(arg) -> Path:
    if arg:
        return Path(arg)
    local = Path("cache")
    return local if local.is_dir() else default_dir()


def _resolve(cache: Cache, prefix: str) -> str:
    hits = [k for k in cache.keys() if k.startswith(prefix)]
    if len(hits) != 1:
        raise SystemExit(f"aotcheck cache: {'no' if not hits else 'several'} entries match {prefix!r} "
                         f"in {cache.path}")
    return hits[0]


def _size(cache: Cache, key: str) -> int:
    return cache.size(key)


def _read(cache: Cache, key: str, name: str):
    try:
        return cache.read(key, name)
    except CacheCorrupt as e:
        print(f"{key[:12]}: {name} is unreadable ({e})")
        return None


def main(args) -> int:
    cache = Cache(_dir(args.dir), remote=getattr(args, "remote", None))
    cache.copy_remote_hits = False          # looking must not fill the local directory
    where = f"{cache.path}" + (f" and {cache.remote.url}" if cache.remote is not None else "")
    return _COMMANDS[args.cache_command](cache, where, args)


def _ls(cache: Cache, where: str, args) -> int:
    """One line per entry: key, mode, backward?, size (and where, with a remote)."""
    keys = cache.keys()
    print(f"{len(keys)} entries in {where}")
    for k in keys:
        e = _read(cache, k, ENTRY_FILE)
        mode = e["decision"]["mode"] if e else "?"
        bw = "backward" if cache.has(k, BACKWARD_FILE) else \
            ("-" if mode != "training" else "no backward yet")
        loc = f"  {cache.where(k):6}" if cache.remote is not None else ""
        print(f"{k[:16]}  {mode:9}  {bw:15}  {_size(cache, k):>8} B{loc}")
    return 0


def _show(cache: Cache, where: str, args) -> int:
    """One entry: its decision, metadata, forward graph and backward graph."""
    from ..cache.serialize import graph_from_data
    from ..engine.printer import format_graph
    key = _resolve(cache, args.key)
    e = _read(cache, key, ENTRY_FILE)
    if e is None:
        return 1
    from ..engine.analyze import ViewMutationMeta
    print(f"key {key}\n== decision ==\n{e['decision']['mode']}: {e['decision']['reason']}")
    print("== view/mutation metadata ==\n" + ViewMutationMeta.from_json(json.dumps(e["meta"])).format())
    print("== forward graph ==\n" + format_graph(graph_from_data(e["forward"]), "forward"))
    bw = _read(cache, key, BACKWARD_FILE)
    if bw is not None:
        print("== backward graph ==\n" + format_graph(graph_from_data(bw["backward"]), "backward"))
    elif e["decision"]["mode"] == "training":
        print("== backward graph ==\n(not written yet: it is added by the first backward)")
    return 0


def _explain(cache: Cache, where: str, args) -> int:
    """One key's components, or which components of two keys differ, and how."""
    keys = [_resolve(cache, k) for k in (args.key, args.key2) if k]
    comps = []
    for k in keys:
        e = _read(cache, k, ENTRY_FILE)
        if e is None:
            return 1
        comps.append(e["components"])
    if len(comps) == 1:
        fb = comps[0].get("fallback")
        print("trace-free key (a lookup traces nothing)" if fb is None else
              f"traced key (no trace-free fingerprint): {fb}")
        print(f"key {keys[0]} = sha256 of these components:")
        for name, value in sorted(comps[0].items()):
            print(f"-- {name}\n{value}")
        return 0
    a, b = comps
    differ = sorted(n for n in set(a) | set(b) if a.get(n) != b.get(n))
    same = sorted(n for n in set(a) & set(b) if a[n] == b[n])
    print(f"same: {', '.join(same) or '(none)'}\ndiffer: {', '.join(differ) or '(none)'}")
    for n in differ:
        print(f"-- {n}")
        changes = component_changes(n, a.get(n, "{}"), b.get(n, "{}"))
        if changes is not None:         # a JSON object: each field that differs, in words
            print("\n".join(changes))
            continue
        diff = difflib.unified_diff(_lines(a.get(n, "")), _lines(b.get(n, "")),
                                    keys[0][:12], keys[1][:12], lineterm="", n=1)
        print("\n".join(list(diff)[2:]))
    return 0


def _verify(cache: Cache, where: str, args) -> int:
    """Check every entry's files; 1 when one is bad."""
    problems = verify(cache)
    for k, why in problems.items():
        print(f"BAD {k[:16]}: {why}")
    print(f"{len(cache.keys()) - len(problems)} ok, {len(problems)} bad in {where}")
    return 1 if problems else 0


def _clear(cache: Cache, where: str, args) -> int:
    """Delete every entry."""
    keys = cache.keys()
    for k in keys:
        cache.remove(k)
    print(f"removed {len(keys)} entries from {where}")
    return 0


def _stats(cache: Cache, where: str, args) -> int:
    """Entries, bytes, modes (and where, with a remote)."""
    keys = cache.keys()
    modes: dict[str, int] = {}
    with_bw = 0
    for k in keys:
        e = _read(cache, k, ENTRY_FILE)
        m = e["decision"]["mode"] if e else "unreadable"
        modes[m] = modes.get(m, 0) + 1
        with_bw += cache.has(k, BACKWARD_FILE)
    total = sum(_size(cache, k) for k in keys)
    print(f"{where}: {len(keys)} entries, {total} bytes")
    if cache.remote is not None:
        locs: dict[str, int] = {}
        for k in keys:
            w = cache.where(k)
            locs[w] = locs.get(w, 0) + 1
        print("  where: " + ", ".join(f"{w} {n}" for w, n in sorted(locs.items())))
    for m, n in sorted(modes.items()):
        print(f"  {m}: {n}")
    print(f"  with a backward graph: {with_bw}")
    return 0


_COMMANDS = {"ls": _ls, "show": _show, "explain": _explain, "verify": _verify, "clear": _clear,
             "stats": _stats}


def _lines(text: str) -> list[str]:
    """Components are text; JSON ones are one line, so indent them for the diff."""
    try:
        text = json.dumps(json.loads(text), indent=1, sort_keys=True)
    except ValueError:
        pass
    return text.splitlines()

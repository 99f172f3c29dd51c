"""repro: a standalone reproducer for a confirmed stale hit, importable as written.

The reproducer is the program file itself, verbatim, with a block appended that needs nothing
but torch: run as ``python FILE``, it starts three processes, each of which imports the file
as a module (by its stem, its folder on ``sys.path``: the helpers live in an importable module,
never in ``__main__``, where torch would not cache a graph that calls them, and the bug would
hide):

    1. value A compiles into a fresh cache directory;
    2. value B compiles over that directory (a new process) and is compared with eager under B;
    3. value B compiles into a fresh directory, compared with eager under B.

It prints one line per process and exits 1 when step 2 hit the cache and differs from eager
while step 3 equals eager: the stale hit.
"""
from __future__ import annotations

import inspect
from pathlib import Path

from . import setters
from .program import Kind, kind_of

_AMBIENT_CODE = {
    "autocast_dtype.cpu": "torch.set_autocast_dtype('cpu', value)",
    "autocast_dtype.cuda": "torch.set_autocast_dtype('cuda', value)",
    "autocast_cache_enabled": "torch.set_autocast_cache_enabled(value)",
    "default_dtype": "torch.set_default_dtype(value)",
    "deterministic_algorithms": "torch.use_deterministic_algorithms(value)",
    "float32_matmul_precision": "torch.set_float32_matmul_precision(value)",
    "mkldnn_enabled": "torch.backends.mkldnn.enabled = value",
    "num_threads": "torch.set_num_threads(value)",
}


def _apply_code(module, name: str) -> str:
    kind = kind_of(module, name)
    if kind is Kind.GLOBAL:
        return "    globals()[_INPUT] = value\n"
    if kind is Kind.CONFIG or kind is Kind.ATTRIBUTE:
        return ("    owner, _, attr = _INPUT.rpartition('.')\n"
                "    mod, rest = _import_longest(owner)\n"
                "    setattr(_getattr_path(mod, rest) if rest else mod, attr, value)\n")
    if kind is Kind.AMBIENT:
        return f"    {_AMBIENT_CODE[name.split(':', 1)[1]]}\n"
    if kind is Kind.SETUP:
        return "    setup(_INPUT, value)\n"
    return "    pass   # a storage relation: applied to the arguments (_arguments)\n"


_HELPERS = '''
def _import_longest(dotted):
    import importlib
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            return importlib.import_module(".".join(parts[:cut])), ".".join(parts[cut:])
        except ImportError:
            continue
    raise ImportError(dotted)


def _getattr_path(obj, path):
    for p in path.split("."):
        obj = getattr(obj, p)
    return obj


def _configure():
    """The program's CONFIG, applied for both values."""
    for name, value in dict(globals().get("CONFIG", {})).items():
        owner, _, attr = name.rpartition(".")
        mod, rest = _import_longest(owner)
        setattr(_getattr_path(mod, rest) if rest else mod, attr, value)
'''


def _storage_code(name: str) -> str:
    i, j = setters.relation_pair(name)
    funcs = "\n\n".join(inspect.getsource(f) for f in (setters._build, setters._with_grad,
                                                       setters._regrad_view, setters._same_view))
    return f'''
{funcs}

def _arguments(index):
    args = list(inputs())
    relation = VARY[_INPUT][index]
    a, b = args[{i}], args[{j}]
    x, y = _build(a.detach(), b.detach(), relation)
    if a.requires_grad and b.requires_grad:
        x, y = _with_grad(x, y, relation)
    args[{i}], args[{j}] = x, y
    return tuple(args)
'''


_RUNNER = '''

def _run_side(index, cache_dir):
    import json
    import os
    import torch
    import torch._functorch.config as fconfig
    from torch._dynamo.utils import counters
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
    _configure()
    _apply(index)
    backend = globals().get("BACKEND", "aot_eager")
    backend = backend() if callable(backend) else backend
    torch.manual_seed(0)
    args = _arguments(index)
    torch.manual_seed(0)
    eager_args = _arguments(index)
    with fconfig.patch(force_autograd_cache=True, force_non_lazy_backward_lowering=True,
                       bundled_autograd_cache=backend != "inductor"):
        compiled = globals()["compile"](fn) if callable(globals().get("compile")) else \\
            torch.compile(fn, backend=backend)
        out = compiled(*args)
    expected = fn(*eager_args)
    problems = _differences(out, expected, args, eager_args)
    print(json.dumps({"value": repr(VARY[_INPUT][index])[:60], "cache_dir": cache_dir,
                      "hits": counters["aot_autograd"]["autograd_cache_hit"],
                      "matches_eager": not problems, "first_difference": problems[:1]}))


def _differences(out, expected, args, eager_args):
    import torch
    from torch.utils import _pytree as pytree
    outs, exps = pytree.tree_leaves(out), pytree.tree_leaves(expected)
    found = []
    for k, (o, e) in enumerate(zip(outs, exps)):
        if isinstance(e, torch.Tensor):
            if o.dtype != e.dtype:
                found.append(f"output {k} dtype {o.dtype} vs eager {e.dtype}")
            elif not torch.allclose(o.detach().double(), e.detach().double()):
                found.append(f"output {k} values differ")
    wants = [o for o in outs if isinstance(o, torch.Tensor) and o.requires_grad]
    if wants and globals().get("BACKWARD", True) is not False:
        sum(o.double().sum() for o in wants).backward()
        sum(e.double().sum() for e in exps if isinstance(e, torch.Tensor) and e.requires_grad).backward()
        for k, (a, b) in enumerate(zip(args, eager_args)):
            if isinstance(a, torch.Tensor) and a.is_leaf and a.requires_grad:
                if (a.grad is None) != (b.grad is None) or (a.grad is not None and not torch.allclose(a.grad, b.grad)):
                    found.append(f"grad of argument {k} differs")
    for k, (a, b) in enumerate(zip(args, eager_args)):
        if isinstance(a, torch.Tensor) and not torch.equal(a.detach(), b.detach()):
            found.append(f"argument {k} after the call differs")
    return found


if __name__ == "__main__":
    import importlib
    import os
    import subprocess
    import sys
    import tempfile
    if len(sys.argv) == 3:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        me = importlib.import_module(os.path.splitext(os.path.basename(__file__))[0])
        me._run_side(int(sys.argv[1]), sys.argv[2])
    else:
        shared = tempfile.mkdtemp(prefix="repro-cache-")
        lines = []
        for label, index, cache in (("A (writes)", _A, shared), ("B over A's cache", _B, shared),
                                    ("B cold", _B, tempfile.mkdtemp(prefix="repro-cold-"))):
            out = subprocess.run([sys.executable, os.path.abspath(__file__), str(index), cache],
                                 capture_output=True, text=True)
            line = (out.stdout.strip().splitlines() or [out.stderr.strip()[-300:]])[-1]
            print(f"{label}: {line}")
            lines.append(line)
        import json
        try:
            warm, cold = json.loads(lines[1]), json.loads(lines[2])
        except ValueError:
            sys.exit(2)
        stale = warm["hits"] > 0 and not warm["matches_eager"] and cold["matches_eager"]
        print("STALE HIT reproduced" if stale else "no stale hit")
        sys.exit(1 if stale else 0)
'''


def write(module, name: str, a: int, b: int, component: str, out_dir) -> Path:
    """Write the reproducer of ``name`` going from value ``a`` to ``b``; returns its path."""
    src = Path(module.__file__).read_text()
    safe = "".join(c if c.isalnum() else "_" for c in name).strip("_")
    path = Path(out_dir) / f"repro_{module.__name__}_{safe}_{a}to{b}.py"
    kind = kind_of(module, name)
    args_code = _storage_code(name) if kind is Kind.STORAGE else \
        "\n\ndef _arguments(index):\n    return tuple(inputs())\n"
    block = (f"\n\n# ---- standalone reproducer, written by aotcheck keydiff ----\n"
             f"# stale hit: {component}\n"
             f"# run: python {path.name}   (no aotcheck needed; see aotcheck/keydiff/repro.py)\n"
             f"_INPUT = {name!r}\n_A, _B = {a}, {b}\n" + _HELPERS +
             "\n\ndef _apply(index):\n    value = VARY[_INPUT][index]\n" + _apply_code(module, name) +
             args_code + _RUNNER)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    path.write_text(src + block)
    return path

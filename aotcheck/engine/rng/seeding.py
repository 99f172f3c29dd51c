"""rng.seeding: seeding and restoring a generator inside the function are graph ops.

# NOTE [seeding as graph ops]
A function may seed or restore the default generator in Python (``torch.manual_seed``,
``torch.get_rng_state``/``set_rng_state``, ``fork_rng``, OpInfo's ``wrapper_set_seed``);
eager then draws what follows from the new state. While the function is traced,
``torch.random``'s default generator is a stand-in (:class:`_TracedDefaultGenerator`) that
records each such call as an op of the ``aotcheck`` namespace (``rng_manual_seed``,
``rng_get_state``, ``rng_set_state``), tagged like a random op so that it stays in the
forward graph, in call order, among the draws. At run time the op does to the real
generator what the call did in eager. A function that draws from a ``torch.Generator``
object bakes that object into the graph: right for one made outside the function (an
argument, keyed by identity, or a closure), whose state the compiled draws advance as
eager's do; one made inside is reset before its first draw to the state it had there
(:func:`fresh_generators`), since eager makes it anew on each call. A change to the default
generator that bypasses ``torch.random`` is refused too (:class:`GlobalGeneratorGuard`).
"""
from __future__ import annotations

import torch
import torch.fx as fx

from ...errors import UnsupportedInputError


class _AnyGenerator(type(torch._C.Generator)):
    """``isinstance(x, torch.Generator)`` stays true for every generator while the stand-in
    class below is ``torch.Generator`` (library code checks its arguments so)."""

    def __instancecheck__(cls, x):
        return isinstance(x, torch._C.Generator)


class _GeneratorMadeInside(torch._C.Generator, metaclass=_AnyGenerator):
    """``torch.Generator`` while the function is traced: a real generator (ops accept it) that
    the innermost guard lists as made inside the function."""

    def __new__(cls, *args, **kwargs):
        gen = super().__new__(cls, *args, **kwargs)
        if _ACTIVE:
            _ACTIVE[-1].made.append(gen)
        return gen

    def manual_seed(self, seed):
        """Seeding it again after it drew is a graph op (``rng_generator_manual_seed``), in
        order among its draws; before its first draw, the reset to that state covers it."""
        super().manual_seed(seed)
        draws = _ACTIVE[-1].draws_of(self) if _ACTIVE else None
        if draws is not None:
            _traced(lambda: torch.ops.aotcheck.rng_generator_manual_seed(self, int(seed)))
            draws.after = _real_state(self)
        return self

    def get_state(self):
        """Read while traced: a graph op (``rng_generator_get_state``), so that the state it
        gives is the one at run time, where it is read, and a ``set_state`` of it replays."""
        if not _ACTIVE:
            return super().get_state()
        return _traced(lambda: torch.ops.aotcheck.rng_generator_get_state(self))

    def set_state(self, state):
        """A state the trace read (``get_state`` above, or the default generator's) is set by a
        graph op (``rng_generator_set_state``), in order among the draws: eager restores it so
        between draws to draw the same values again. A real tensor (one made outside the
        function) set after the generator drew is refused by name (a fake trace's draws do not
        move the state, so a restore to the state before them would look like no change)."""
        if _ACTIVE and _is_traced(state):
            _traced(lambda: torch.ops.aotcheck.rng_generator_set_state(self, state))
            return self
        super().set_state(state)
        draws = _ACTIVE[-1].draws_of(self) if _ACTIVE else None
        if draws is not None:
            draws.reseeded = True
        return self


def _is_traced(t) -> bool:
    """Whether ``t`` is a value of the trace (fake, functional or proxied), not a real tensor."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.fx.experimental.proxy_tensor import get_proxy_mode, get_proxy_slot
    if not isinstance(t, torch.Tensor):
        return False
    if isinstance(t, FakeTensor) or torch._is_functional_tensor(t):
        return True
    mode = get_proxy_mode()
    return mode is not None and get_proxy_slot(t, mode.tracer, None) is not None


def _same_generator(a, b) -> bool:
    """Whether two Python generator objects stand for one generator: the graph holds a new
    Python wrapper of the generator an op drew from, not the object the function passed. A
    seed set through one shows through the other; both seed and state are put back."""
    if a is b:
        return True
    if a.device != b.device:
        return False
    seed, state = a.initial_seed(), a.get_state()
    probe = (seed + 0x9E3779B97F4A7C15) % 2**63
    a.manual_seed(probe)
    same = b.initial_seed() == probe
    a.manual_seed(seed)
    a.set_state(state)
    return same


def fresh_generators(gm: fx.GraphModule, guard: "GlobalGeneratorGuard") -> None:
    """Give each ``torch.Generator`` made inside the function the state it had at its first
    draw, at the start of every call (see the module docstring). Eager makes it anew on each call and
    seeds it in Python before it draws (``torch.Generator().manual_seed(5)``); the graph holds
    one generator for all calls, so an ``aotcheck::rng_generator_set_state`` op before its
    first use resets it. A generator the function seeds or restores between its draws cannot
    be replayed so: refused by name. One made outside the function (an argument, a closure or
    global) is the graph's own constant, advanced by the compiled draws as by eager's. The
    persistent cache stores a graph whose generators are all reset by a seed
    (``rng_generator_manual_seed``: any new generator stands in for them), and no other."""
    reset: list = []
    for n in list(gm.graph.nodes):
        gen = getattr(gm, n.target, None) if n.op == "get_attr" else None
        if not isinstance(gen, torch._C.Generator) or any(_same_generator(gen, r) for r in reset):
            continue
        draws = guard.draws_of(gen)
        if draws is None:
            continue
        if draws.reseeded:
            _refuse_reseed(n)
        made = any(_same_generator(gen, m) for m in guard.made)
        if not made:
            start = next((st for g, st in guard.started if _same_generator(g, gen)), None)
            if start is None or torch.equal(start, draws.first):
                continue        # drawn from as the caller left it: the graph advances it
            # the function seeded the caller's generator before drawing: reset it on every
            # call, by state (a seed op would let the cache stand in a new generator for it)
            _reset(gm, n, draws, len(reset), by_seed=False)
            reset.append(gen)
            continue
        _reset(gm, n, draws, len(reset), by_seed=True)
        reset.append(gen)
    if reset:
        gm.recompile()


def _refuse_reseed(node) -> None:
    users = ", ".join(str(u.target) for u in node.users)
    raise UnsupportedInputError(
        f"a torch.Generator is seeded or restored in Python between its draws ({users}); a "
        "compiled graph replays only the state it had at its first draw (and seeds with "
        "manual_seed() of one made inside the function). Seed it before it draws")


def _reset(gm: fx.GraphModule, node, draws: "_Draws", k: int, by_seed: bool) -> None:
    """Insert, right after ``node`` (the generator's first get_attr), the op that gives it its
    state at its first draw: by its seed where that state is a fresh seed's (a generator made
    inside the function; the cache can store it), else by the state itself."""
    gen = getattr(gm, node.target)
    seed = gen.initial_seed()
    if by_seed and torch.equal(torch._C.Generator(gen.device).manual_seed(seed).get_state(),
                               draws.first):
        with gm.graph.inserting_after(node):
            gm.graph.call_function(torch.ops.aotcheck.rng_generator_manual_seed.default, (node, seed))
        return
    name = f"_aotcheck_generator_state{k}"
    gm.register_buffer(name, draws.first.clone())
    with gm.graph.inserting_after(node):
        state = gm.graph.get_attr(name)
    with gm.graph.inserting_after(state):
        gm.graph.call_function(torch.ops.aotcheck.rng_generator_set_state.default, (node, state))


class _Draws:
    """One generator's draws during a trace: its state before the first, after the last, and
    whether something other than a draw changed it in between."""

    def __init__(self, gen, first):
        self.gen, self.first, self.after, self.reseeded = gen, first, None, False


def _real_state(gen) -> torch.Tensor:
    """``gen.get_state()`` as a real tensor: not the trace's fake one, nor a functional wrapper."""
    from torch.utils._python_dispatch import _disable_current_modes
    with _disable_current_modes(), torch._C._ExcludeDispatchKeyGuard(
            torch._C.DispatchKeySet(torch._C.DispatchKey.Functionalize)):
        return gen.get_state()


def draw_begins(gen):
    """Called by the trace before an op draws from ``gen``: the innermost guard notes the
    generator (to restore it when the trace ends: a trace on real tensors really draws) and
    whether its state moved since its last draw (a seeding in Python)."""
    if not _ACTIVE or not isinstance(gen, torch._C.Generator):
        return None
    guard = _ACTIVE[-1]
    draws = guard.draws_of(gen)
    now = _real_state(gen)
    if draws is None:
        draws = _Draws(gen, now)
        guard.drawn.append(draws)
    elif draws.after is not None and not torch.equal(now, draws.after):
        draws.reseeded = True
    return draws


def draw_ends(draws) -> None:
    """After a draw. A draw on fake tensors leaves the generator where it was, so a seeding
    in Python back to the same state would look like nothing: the generator is moved to a
    state of its own after each fake draw (its state at the first draw is put back when the
    trace ends)."""
    if draws is None:
        return
    if _ACTIVE and not _ACTIVE[-1].draws:
        draws.gen.manual_seed(_SENTINEL_SEED + len(_ACTIVE[-1].drawn))
    draws.after = _real_state(draws.gen)


_ACTIVE: list = []
_WATCHED: list = []     # generators reachable from the function being captured (watch_generators)


class watch_generators:
    """Around a capture or a joint trace: the generators the function can reach from outside
    (its arguments, closure cells, the globals and attributes it names), whose state each
    trace notes when it starts. One the function seeds in Python before it draws from it
    (``g.manual_seed(0)`` on a closure's generator) is then reset to that state on every call,
    as eager seeds it on every call (:func:`fresh_generators`)."""

    def __init__(self, fn, leaves):
        self.found = _reachable_generators(fn, leaves)

    def __enter__(self):
        # before any run of the function: the capture's runs on fake tensors seed for real
        self.started = [(g, g.get_state()) for g in self.found]
        _WATCHED.append(self.started)
        return self

    def __exit__(self, *exc):
        _WATCHED.pop()
        for g, state in self.started:      # tracing leaves the caller's generators as they were
            g.set_state(state)
        return False


def _reachable_generators(fn, leaves, limit: int = 5000) -> list:
    """The ``torch.Generator`` objects reachable from ``fn`` and ``leaves`` through closure
    cells, named globals, containers and object attributes (torch's own modules excluded)."""
    import types
    found, seen, todo = [], set(), [(fn, 0)] + [(x, 0) for x in leaves]
    while todo and len(seen) < limit:
        x, depth = todo.pop()
        if id(x) in seen or depth > 6 or isinstance(x, (torch.Tensor, str, bytes, int, float, type)):
            continue
        seen.add(id(x))
        if isinstance(x, torch._C.Generator):
            found.append(x)
            continue
        kids = []
        if isinstance(x, types.FunctionType):
            kids += [c.cell_contents for c in (x.__closure__ or ()) if _has_contents(c)]
            glb = x.__globals__
            kids += [glb[n] for n in x.__code__.co_names if n in glb]
            kids += list(x.__defaults__ or ())
        elif isinstance(x, types.MethodType):
            kids += [x.__self__, x.__func__]
        elif isinstance(x, types.ModuleType):
            continue                # a module's generators are reached through the names used
        elif isinstance(x, (list, tuple, set, frozenset)):
            kids += list(x)
        elif isinstance(x, dict):
            kids += list(x.values())
        elif hasattr(x, "__dict__") and not type(x).__module__.startswith("torch"):
            kids += list(vars(x).values())
        elif isinstance(x, torch.nn.Module):
            kids += list(vars(x).values())
        todo.extend((k, depth + 1) for k in kids)
    return found


def _has_contents(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


# A state nobody seeds by accident: the default generator holds it while the function is
# traced, so that any seeding or restoring inside the function shows as a change.
_SENTINEL_SEED = 0x5EED_A07C_4EC4


# ---------------------------------------------------------------- seeding inside the function

_REAL_GENERATOR = torch._C.default_generator
_REAL_SEED = torch.random.seed
_STATE_BYTES = _REAL_GENERATOR.get_state().numel()
_lib = torch.library.Library("aotcheck", "DEF")
SEEDED_TAGS = (torch.Tag.nondeterministic_seeded,)   # impure, ordered among the draws, never folded
_lib.define("rng_manual_seed(int seed) -> ()", tags=SEEDED_TAGS)
_lib.define("rng_get_state() -> Tensor", tags=SEEDED_TAGS)
_lib.define("rng_set_state(Tensor state) -> ()", tags=SEEDED_TAGS)
_lib.define("rng_generator_set_state(Generator gen, Tensor state) -> ()", tags=SEEDED_TAGS)
_lib.define("rng_generator_manual_seed(Generator gen, int seed) -> ()", tags=SEEDED_TAGS)
_lib.define("rng_seed() -> ()", tags=SEEDED_TAGS)
_lib.define("rng_generator_get_state(Generator gen) -> Tensor", tags=SEEDED_TAGS)
_lib.define("guard_initial_seed(int expected) -> ()", tags=SEEDED_TAGS)


def _with_real_generator(call):
    """Run ``call`` with ``torch.random`` on the real default generator (eager's own code path:
    ``torch.manual_seed`` also seeds the other devices' generators)."""
    stand_in, torch.random.default_generator = torch.random.default_generator, _REAL_GENERATOR
    try:
        return call()
    finally:
        torch.random.default_generator = stand_in


def _manual_seed_impl(seed: int) -> None:
    _with_real_generator(lambda: torch.random.manual_seed(seed))


def _get_state_impl() -> torch.Tensor:
    return _REAL_GENERATOR.get_state()


def _set_state_impl(state: torch.Tensor) -> None:
    _REAL_GENERATOR.set_state(state)


def _generator_set_state_impl(gen, state: torch.Tensor) -> None:
    gen.set_state(state)


def _generator_manual_seed_impl(gen, seed: int) -> None:
    gen.manual_seed(seed)


def _generator_get_state_impl(gen) -> torch.Tensor:
    return gen.get_state()


def _seed_impl() -> None:
    _with_real_generator(_REAL_SEED)


def _guard_initial_seed_impl(expected: int) -> None:
    from ...errors import GuardFailed
    got = _REAL_GENERATOR.initial_seed()
    if got != expected:
        raise GuardFailed(f"the graph was specialized on torch.initial_seed() {expected}, which "
                          f"the function read; this call has {got}")


for _name, _impl in (("rng_manual_seed", _manual_seed_impl), ("rng_get_state", _get_state_impl),
                     ("rng_set_state", _set_state_impl),
                     ("rng_generator_set_state", _generator_set_state_impl),
                     ("rng_generator_manual_seed", _generator_manual_seed_impl),
                     ("rng_seed", _seed_impl), ("guard_initial_seed", _guard_initial_seed_impl),
                     ("rng_generator_get_state", _generator_get_state_impl)):
    _lib.impl(_name, _impl, "CompositeExplicitAutograd")
torch.library.register_fake("aotcheck::rng_manual_seed", lambda seed: None, lib=_lib)
torch.library.register_fake("aotcheck::rng_get_state",
                            lambda: torch.empty(_STATE_BYTES, dtype=torch.uint8), lib=_lib)
torch.library.register_fake("aotcheck::rng_set_state", lambda state: None, lib=_lib)
torch.library.register_fake("aotcheck::rng_generator_set_state", lambda gen, state: None, lib=_lib)
torch.library.register_fake("aotcheck::rng_generator_manual_seed", lambda gen, seed: None, lib=_lib)
torch.library.register_fake("aotcheck::rng_seed", lambda: None, lib=_lib)
torch.library.register_fake("aotcheck::rng_generator_get_state",
                            lambda gen: torch.empty(gen.get_state().numel(), dtype=torch.uint8),
                            lib=_lib)
torch.library.register_fake("aotcheck::guard_initial_seed", lambda expected: None, lib=_lib)
GENERATOR_RESETS = (torch.ops.aotcheck.rng_generator_manual_seed.default,
                    torch.ops.aotcheck.rng_generator_set_state.default)


def _traced(call):
    """``call()`` seen by the trace's dispatch modes even under ``no_dispatch()``, which
    ``torch.testing``'s ``freeze_rng_state`` puts around its own get/set of the state."""
    exclude = torch._C._dispatch_tls_local_exclude_set()
    if not exclude.has(torch._C.DispatchKey.Python):
        return call()
    for key in (torch._C.DispatchKey.Python, torch._C.DispatchKey.PythonTLSSnapshot):
        exclude = exclude.remove(key)
    with torch._C._ForceDispatchKeyGuard(torch._C._dispatch_tls_local_include_set(), exclude):
        return call()


class _TracedDefaultGenerator:
    """``torch.random.default_generator`` while the function is traced: each call that seeds,
    reads or restores the default generator becomes an ``aotcheck`` op in the graph (see the
    module docstring).

    ``initial_seed()`` gives the caller's initial seed (or the one the function set), and, read
    from the caller's generator, is pinned by a guard op in the graph
    (``aotcheck::guard_initial_seed``): a call under another seed compiles again, as for a
    tensor value (NOTE [value specialization] in values.py). ``torch.seed()`` is replayed at run
    time (``aotcheck::rng_seed``): it reseeds every device nondeterministically, as in eager;
    the int it returns is nondeterministic, so a graph cannot hold it, and a function that
    uses it is refused by name (:class:`_UnreadSeed`)."""

    def __init__(self, caller_seed: int):
        self.recorded = 0
        self.seeded: int | None = None
        self.caller_seed = caller_seed
        self.reseeded = False

    @property
    def device(self):
        return _REAL_GENERATOR.device

    def manual_seed(self, seed):
        self.recorded += 1
        self.seeded, self.reseeded = int(seed), False
        _traced(lambda: torch.ops.aotcheck.rng_manual_seed(int(seed)))
        return self

    def get_state(self):
        self.recorded += 1
        return _traced(torch.ops.aotcheck.rng_get_state)

    def set_state(self, state):
        self.recorded += 1
        _traced(lambda: torch.ops.aotcheck.rng_set_state(state))
        return self

    def initial_seed(self):
        if self.seeded is not None:
            return self.seeded
        if self.reseeded:
            return _UnreadSeed()
        _traced(lambda: torch.ops.aotcheck.guard_initial_seed(self.caller_seed))
        return self.caller_seed

    def seed(self):
        self.recorded += 1
        self.seeded, self.reseeded = None, True
        _traced(torch.ops.aotcheck.rng_seed)
        return _UnreadSeed()


def _traced_seed() -> int:
    """``torch.seed()`` / ``torch.random.seed()`` while the function is traced: the graph
    reseeds at run time (the real ``torch.random.seed`` seeds every device's generator)."""
    return torch.random.default_generator.seed()


class _UnreadSeed:
    """What ``torch.seed()`` returns while tracing, in place of eager's nondeterministic int,
    which no graph can hold. Using it raises a named refusal; a function that only reseeds
    compiles. Not an int: torch's C++ argument parsing reads an int subclass's value without
    asking it, so the value would be baked into the graph silently."""

    def __repr__(self):
        return "<the int torch.seed() returns, unread while tracing>"

    def _refuse(self, *args, **kwargs):
        raise UnsupportedInputError(
            "the function uses the value torch.seed() returned (or torch.initial_seed() after "
            "it), a nondeterministic Python int that a compiled graph cannot hold; calling "
            "torch.seed() for its reseeding alone is supported. Pass the seed as an argument")


for _dunder in ("__index__", "__int__", "__float__", "__complex__", "__bool__", "__hash__",
                "__str__", "__format__", "__eq__", "__ne__", "__lt__", "__le__",
                "__gt__", "__ge__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__",
                "__rmul__", "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__",
                "__mod__", "__rmod__", "__pow__", "__rpow__", "__and__", "__rand__", "__or__",
                "__ror__", "__xor__", "__rxor__", "__lshift__", "__rshift__", "__neg__",
                "__abs__", "__invert__", "__round__", "__trunc__", "__floor__", "__ceil__",
                "__divmod__", "__reduce__", "__reduce_ex__"):
    setattr(_UnreadSeed, _dunder, _UnreadSeed._refuse)


class GlobalGeneratorGuard:
    """Around a trace: the default CPU generator is set to a sentinel state and restored
    afterwards (tracing on fake tensors draws nothing, so the caller's state is kept).
    ``check=True`` refuses a function that changed it (seeding or restoring in Python)."""

    def __init__(self, check: bool = True, draws: bool = False):
        self.check = check
        # a trace on real tensors (storage_views.trace_plain) draws for real, so the state moves
        # on; only a new seed (torch.manual_seed, torch.seed) shows there, as a new initial seed
        self.draws = draws

    def draws_of(self, gen) -> "_Draws | None":
        """What this trace drew from ``gen`` (one generator may come as several Python objects)."""
        return next((d for d in self.drawn if _same_generator(d.gen, gen)), None)

    def __enter__(self):
        # the real generator's own methods: an enclosing guard's stand-in would record these
        self.saved = _REAL_GENERATOR.get_state()
        # the caller's initial seed (an enclosing guard has already put the sentinel in place)
        caller_seed = _ACTIVE[0].stand_in.caller_seed if _ACTIVE else _REAL_GENERATOR.initial_seed()
        _REAL_GENERATOR.manual_seed(_SENTINEL_SEED)
        self.sentinel = _REAL_GENERATOR.get_state()
        self.stand_in = _TracedDefaultGenerator(caller_seed)
        self.replaced = (torch.random.default_generator, torch.default_generator, torch.Generator,
                         torch.seed, torch.random.seed)
        torch.random.default_generator = torch.default_generator = self.stand_in
        torch.Generator = _GeneratorMadeInside
        torch.seed = torch.random.seed = _traced_seed
        self.drawn: list[_Draws] = []       # generators the trace drew from
        self.made: list = []                # generators the function made
        # the state each watched generator had when the trace began
        self.started = list(_WATCHED[-1]) if _WATCHED else []
        _ACTIVE.append(self)
        return self

    def __exit__(self, exc_type, *exc):
        _ACTIVE.remove(self)
        (torch.random.default_generator, torch.default_generator, torch.Generator,
         torch.seed, torch.random.seed) = self.replaced
        for draws in self.drawn:
            draws.gen.set_state(draws.first)
        if self.stand_in.recorded:
            changed = False     # the graph replays it (see the module docstring)
        elif self.draws:
            changed = _REAL_GENERATOR.initial_seed() != _SENTINEL_SEED
        else:
            changed = not torch.equal(_REAL_GENERATOR.get_state(), self.sentinel)
        _REAL_GENERATOR.set_state(self.saved)
        if changed and self.check and exc_type is None:
            raise UnsupportedInputError(
                "the function seeds or restores the global random generator (torch.manual_seed, "
                "torch.set_rng_state, ...) while it runs; a compiled graph cannot replay that "
                "Python-side state change. Seed outside the function")
        return False

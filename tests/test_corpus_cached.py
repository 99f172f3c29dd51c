"""The corpus through the persistent cache: cold, then cached.

``TestCold`` runs every case once with an empty per-case cache directory
(compile, forward and backward, so the lazy backward is written) and compares
with eager. ``TestCached`` (only with ``pytest --with-cache``) runs every case
cold and then again with a *fresh* ``aot_function`` on the same directory; the
second run must hit the forward and the backward (counters) and equal eager.
With ``--strict-cache`` (or ``AOTCHECK_STRICT_CACHE=1``) the cached run raises
``CacheError`` at the first miss or bypass.

Cases that are expected to fail only when cached are listed in the
``xfail_inherited`` decorator on ``TestCached`` (see tests/README.md).
"""
from __future__ import annotations

import pytest
import torch

from aotcheck import flags
from aotcheck.check.corpus import Case, Inputs, all_cases
from aotcheck.check.harness import check_cold_then_cached, run_case, xfail_inherited


def _local_cases() -> list[Case]:
    """A few cache-specific cases of our own (a tensor constant, a no_grad region)."""
    def constant(x):
        return x * torch.tensor([1.0, -2.0, float("inf")]) + 1

    def no_grad_region(x, w):
        y = x * w
        with torch.no_grad():
            z = y.exp()
        return y.sum() + z.sum()

    def mlp(x, w1, w2):
        return torch.relu(x @ w1) @ w2

    def rg(*shapes):
        def make():
            g = torch.Generator().manual_seed(0)
            ts = tuple(torch.randn(s, generator=g, requires_grad=True) for s in shapes)
            return Inputs(ts, leaves=ts)
        return make

    return [Case("constant", constant, rg((3,)), "cache", "training"),
            Case("no_grad_region", no_grad_region, rg((4,), (4,)), "cache", "training"),
            Case("mlp", mlp, rg((2, 4), (4, 8), (8, 3)), "cache", "training")]


CASES = _local_cases() + all_cases()


def _test_name(case: Case) -> str:
    return "test_" + case.id.replace(".", "__")


def _method(case: Case):
    def test(self, tmp_path, request):
        self.run(case, tmp_path, request)
    test.__name__ = test.__qualname__ = _test_name(case)
    if case.xfail:
        test = pytest.mark.xfail(strict=True, reason=case.xfail)(test)
    return test


class CorpusBase:
    """One generated test method per corpus case; subclasses say how to run a case."""

    def run(self, case, tmp_path, request):
        raise NotImplementedError


for _c in CASES:
    setattr(CorpusBase, _test_name(_c), _method(_c))


class TestCold(CorpusBase):
    def run(self, case, tmp_path, request):
        r = run_case(case, tmp_path / "cache")
        assert r.report.ok, f"{case.id} (cold) differs from eager:\n  " + "\n  ".join(r.report.messages)


def _strict(request) -> bool:
    return bool(flags.get(flags.STRICT_CACHE))     # --strict-cache sets the flag (pytest_plugin)


# Cases that pass cold but are expected to fail from the cache, with the reason.
CACHED_XFAILS: dict[str, str] = {}


@xfail_inherited(CACHED_XFAILS)
class TestCached(TestCold):
    def run(self, case, tmp_path, request):
        if not request.config.getoption("--with-cache"):
            pytest.skip("cached runs need --with-cache")
        check_cold_then_cached(case, tmp_path / "cache", strict=_strict(request))

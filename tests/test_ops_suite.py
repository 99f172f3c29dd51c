"""The OpInfo backward suite: a bounded first-sample sweep, PyTorch's skips, scoring and reports."""
import contextlib
import dataclasses
import io
import json
import time

import pytest
import torch

from aotcheck import cli
from aotcheck.grad import ops_suite as S

# 15 ops: in-place variants (sin_, add_, mul_, abs_, clamp_, unsqueeze_, transpose_, cumsum_), views
# (transpose, unsqueeze, expand, narrow), a PyTorch gradient skip (fmod), a zero gradient (floor),
# a data-dependent shape (masked_select, traced on its values: NOTE [value specialization]).
SUBSET = ["sin", "add", "mul", "abs", "clamp", "transpose", "unsqueeze", "expand", "narrow", "matmul",
          "sum", "cumsum", "fmod", "floor", "masked_select"]


@pytest.fixture(scope="module")
def sweep():
    t0 = time.perf_counter()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = cli.main(["ops", "--samples", "first", "--json", "/dev/null"] +
                      [a for op in SUBSET for a in ("--op", op)])
    return rc, out.getvalue(), time.perf_counter() - t0


def test_first_sample_sweep_scores_parse(sweep):
    """(Its speed is a benchmark's business, not a test's: this machine is shared.)"""
    rc, text, seconds = sweep
    scores = S.parse_scores(text)
    assert set(scores) == {"correctness", "backward correctness", "numerical agreement"}, text
    assert all(v is not None and 0.0 <= v <= 1.0 for v in scores.values()), text
    assert f"{len(SUBSET)} ops" in text
    assert "engine errors:" not in text and scores["correctness"] == 1.0, text


def test_sweep_covers_in_place_and_view_variants():
    results = S.run_suite(S.Suite(["sin", "transpose", "unsqueeze"], samples="first"))
    kinds = {(r.op, r.variant) for r in results}
    assert {("sin", "fn"), ("sin", "inplace"), ("transpose", "inplace"), ("unsqueeze", "fn")} <= kinds
    views = {r.op for r in results if r.is_view}
    assert {"transpose", "unsqueeze"} <= views and "sin" not in views
    for r in results:
        assert (r.forward, r.backward, r.numerical) == ("pass", "pass", "pass"), r


def test_pytorch_gradient_skip_is_honoured_and_reported():
    (v,) = [v for v in S.pytorch_verdicts(_op("fmod")) if v.scope is S.Scope.NUMERICAL]
    assert (v.kind, v.variant, v.source) == ("skip", "fn", "TestBwdGradients.test_fn_grad")
    results = S.run_suite(S.Suite(["fmod"], samples="first", variants=("fn",)))
    (r,) = results
    assert r.numerical == "skipped"
    assert r.numerical_detail == "skipped (pytorch skip: Skipped! (TestBwdGradients.test_fn_grad))"
    assert (r.forward, r.backward) == ("pass", "pass")  # the skip is about finite differences only
    text = S.format_report(results)
    assert "pytorch skips: 1 ops" in text and "pytorch skip: Skipped!" in text


def test_pytorch_xfail_and_class_wide_skip_are_read():
    """OpInfo's own records, built here: the op database's examples are torch's data and
    change with it (torch 2.13 had cov's xfail of test_fn_grad and as_strided's class-wide
    TestBwdGradients skip "Numerous errors"; torch 2.14 dropped both, with most others)."""
    import types
    import unittest
    from torch.testing._internal.opinfo.core import DecorateInfo
    op = types.SimpleNamespace(decorators=[
        DecorateInfo(unittest.expectedFailure, "TestBwdGradients", "test_fn_grad"),
        DecorateInfo(unittest.skip("Numerous errors"), "TestBwdGradients"),
        DecorateInfo(unittest.skip("cuda only"), "TestBwdGradients", device_type="cuda"),
        DecorateInfo(unittest.expectedFailure, "TestBwdGradients", "test_fn_grad",
                     dtypes=(torch.complex128,)),
        DecorateInfo(unittest.skip("not a gradient test"), "TestCommon", "test_out"),
    ])
    fn, whole = S.pytorch_verdicts(op)
    assert (fn.kind, fn.scope, fn.variant) == (S.VerdictKind.XFAIL, S.Scope.NUMERICAL, "fn")
    assert (whole.kind, whole.scope, whole.reason) == (S.VerdictKind.SKIP, S.Scope.BACKWARD, "Numerous errors")
    assert whole.describe().startswith("pytorch skip: Numerous errors (")
    # a cuda-only or complex-only skip does not apply to CPU float64
    assert S.pytorch_verdicts(_op("cholesky_solve")) == []
    assert not [v for v in S.pytorch_verdicts(_op("acos"))]


def test_xfail_turns_a_numerical_failure_into_xfail():
    v = S.Verdict(S.VerdictKind.XFAIL, S.Scope.NUMERICAL, "expected failure", "fn", "TestBwdGradients.test_fn_grad")
    case = S.Case("wrong", "fn", 0, lambda x: 2 * x, (torch.ones(3, dtype=torch.float64,
                                                                 requires_grad=True),), ("x",))

    class Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return 2 * x

        @staticmethod
        def backward(ctx, g):
            return 3 * g

    engine = S.Engine("wrong", lambda fn: Wrong.apply)
    (r,) = S.check_case(case, engine, verdicts=[v])
    assert (r.forward, r.backward, r.numerical) == ("pass", "fail", "xfail"), r
    (r,) = S.check_case(case, engine)
    assert r.numerical == "fail"


def test_an_error_eager_raises_too_is_not_the_engines_crash():
    # acosh_ has no derivative: eager raises at .backward(), and so does a faithful engine
    (r,) = S.run_suite(S.Suite(["acosh"], samples="first", variants=("inplace",)))
    assert r.numerical == "n/a" and "eager raises the same" in r.numerical_detail, r
    assert "the derivative for 'inplace version of acosh' is not implemented" in r.numerical_detail
    case = S.Case("raises", "fn", 0, lambda x: 2 * x, (torch.ones(3, dtype=torch.float64,
                                                                  requires_grad=True),), ("x",))

    def compile_raising(fn):
        def call(*args):
            raise NotImplementedError("the derivative for 'x' is not implemented.")
        return call
    (r,) = S.check_case(case, S.Engine("raises", compile_raising))
    assert r.numerical == "crash", r       # eager does not raise: the engine is to blame


def test_eager_engine_passes_everything():
    results = S.run_suite(S.Suite(["sin", "add", "transpose", "floor"], samples="first", engines=[S.eager_engine()]))
    for r in results:
        for c in S.CHECKS:
            assert r.status(c) in ("pass", "vacuous"), r
    assert {r.backward for r in results if r.op == "floor"} == {"vacuous"}


def test_engine_error_is_a_category_with_a_repro():
    from aotcheck.errors import DataDependentError

    def refusing(fn):
        def call(*args):
            raise DataDependentError("op aten.masked_select.default reads values")
        return call
    (r,) = S.run_suite(S.Suite(["masked_select"], samples="first", variants=("fn",),
                               engines=[S.Engine("refusing", refusing)]))
    assert (r.forward, r.backward, r.numerical) == ("engine error",) * 3
    assert r.error.startswith("DataDependentError: ")
    assert r.repro() == "aotcheck ops --op masked_select --samples all --sample-index 0 --variant fn"
    s = S.score([r])
    assert s.correctness == 0.0 and s.accepted["forward"] is None and s.counts["forward"]["engine error"] == 1
    ((checks, stem, ops),) = S.group_failures([r], ("engine error",))
    assert checks == "forward+backward+numerical" and ops == ["masked_select"] and "aten.OP" in stem


def test_backward_is_scored_even_when_forward_fails():
    rows = [S.SampleResult("a", "fn", 0, 0, "cold", "fail", "fail", "pass"),
            S.SampleResult("b", "fn", 0, 0, "cold", "pass", "pass", "vacuous"),
            S.SampleResult("b", "fn", 1, 0, "cold", "pass", "fail", "skipped"),
            S.SampleResult("c", "fn", 0, 0, "cold", "n/a", "n/a", "n/a")]
    s = S.score(rows)
    assert s.correctness == pytest.approx((0 + 1) / 2)
    assert s.backward_correctness == pytest.approx((0 + 0.5) / 2)
    assert s.numerical_agreement == 1.0 and s.n_ops == {"forward": 2, "backward": 2, "numerical": 1}
    parsed = S.parse_scores(S.format_scores(s))
    assert parsed == {"correctness": 0.5, "backward correctness": 0.25, "numerical agreement": 1.0}


def test_repeat_reports_failure_rates():
    rows = [S.SampleResult("a", "fn", 0, seed, "cold", "pass", "pass", "fail" if seed == 1 else "pass")
            for seed in range(4)]
    assert S.failure_rates(rows, "numerical") == {"a (cold)": 0.25}
    rows.append(S.SampleResult("b", "fn", 0, 0, "cold", "pass", "engine error", "engine error"))
    assert S.failure_rates(rows, "numerical") == {"a (cold)": 0.25}   # engine errors are not seed-dependent
    text = S.format_report(rows)
    assert "(ops with a failure): 1" in text and "[numerical] a (cold): 0.25  (flaky)" in text
    assert S.flaky_cases(rows, "numerical") == [
        "aotcheck ops --op a --samples all --sample-index 0 --variant fn --seed 1"]


def test_sample_result_json_round_trip():
    r = S.SampleResult("div.trunc_rounding", "inplace", 3, 2, "cached", "pass", "fail", "pass",
                       backward_detail="x", is_view=True, cache="hits 1", seconds=0.5)
    back = S.SampleResult(**json.loads(json.dumps(dataclasses.asdict(r))))
    assert back == r
    assert r.repro() == ("aotcheck ops --op div.trunc_rounding --samples all --sample-index 3 "
                         "--variant inplace --seed 2 --cached")


def test_stem_groups_messages_that_differ_in_numbers_and_op_names():
    a = S.stem("TraceError: op aten.nonzero.default failed at size 3")
    b = S.stem("TraceError: op aten.masked_select.default failed at size 10")
    assert a == b == "TraceError: op aten.OP failed at size N"


def _op(name):
    (op,) = [o for o in S.select_ops([name]) if S.op_id(o) == name]
    return op


def test_compiled_output_that_lost_requires_grad_fails_every_check():
    case = S.Case("sin", "fn", 0, torch.sin, (torch.randn(4, dtype=torch.float64, requires_grad=True),),
                  ("x",))
    engine = S.Engine("detaching", lambda fn: lambda *a: fn(*a).detach())
    (r,) = S.check_case(case, engine)
    assert (r.forward, r.backward, r.numerical) == ("fail", "fail", "fail"), r
    assert r.forward_detail == "output 0 requires_grad: eager True, compiled False"
    assert r.numerical_detail == "no compiled output requires grad, but eager's do"


def test_engine_run_shards_streams_and_merges(tmp_path):
    """``--shard`` and ``--stream`` work for the engine's own run (cold and cached), as for
    ``--backend``: two shards write disjoint ops, and ``--report-from`` scores them together."""
    def run(*extra):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = cli.main(["ops", "--op", "sin", "--op", "abs", "--variant", "fn", "--cached"] + list(extra))
        return rc, out.getvalue()
    streams = [str(tmp_path / f"shard{k}.jsonl") for k in (1, 2)]
    for k, stream in enumerate(streams, 1):
        rc, text = run("--shard", f"{k}/2", "--stream", stream)
        assert rc == 0 and f"shard {k}/2" in text, text
    ops = [{json.loads(line).get("op") for line in open(s)} - {None} for s in streams]
    assert ops[0] and ops[1] and not ops[0] & ops[1]
    modes = {json.loads(line).get("mode") for s in streams for line in open(s)} - {None}
    assert modes == {"cold", "cached"}
    rc, text = run("--shard", "1/2", "--stream", streams[0], "--resume")
    assert "resuming" in text and "0 to go" not in text     # the last op is run again
    with pytest.raises(SystemExit, match=r"other options \(cached differ\)"):
        cli.main(["ops", "--op", "sin", "--variant", "fn", "--stream", streams[0], "--resume"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli.main(["ops", "--report-from", streams[0], "--report-from", streams[1]])
    assert "2 ops" in out.getvalue(), out.getvalue()

"""``aotcheck ops --backend`` / ``--kernels`` / ``--reference numerical``: the OpInfo suite against any
torch.compile backend and against a directory of user kernels (issue 15)."""
import contextlib
import io
import json

import pytest
import torch

from aotcheck import cli
from aotcheck.grad import compare
from aotcheck.grad import ops_suite as S
from aotcheck.targets.compile_backends import BackendNotFoundError, resolve_backend, use_inductor_cache_dir
from aotcheck.targets.kernels import KernelsError, load_kernels

MM_KERNEL = '''
import torch

def mm(a, b):
    return (a.unsqueeze(-1) * b.unsqueeze(0)).sum(1)

def mm_setup_context(ctx, inputs, output):
    ctx.save_for_backward(*inputs)

def mm_backward(ctx, grad):
    a, b = ctx.saved_tensors
    return {k} * (grad @ b.t()), a.t() @ grad
'''


def _kernels(tmp_path, factor: int, name: str = "kernels"):
    d = tmp_path / name
    d.mkdir()
    (d / "mm.py").write_text(MM_KERNEL.format(k=factor))
    return load_kernels(str(d))


def _run_kernels(ks, reference="eager"):
    ops, missing = S.select_kernel_ops(ks)
    assert [o.name for o in ops] == ["mm"] and missing == []
    return S.run_suite(S.Suite(samples="first", engines=[S.kernels_engine(ks, perf=False)], ops=ops,
                               reference=reference))


# ---------------------------------------------------------------- kernels


def test_kernels_with_a_2x_wrong_mm_backward_score_backward_correctness_zero(tmp_path):
    results = _run_kernels(_kernels(tmp_path, 2))
    s = S.score(results, "kernels")
    assert (s.correctness, s.backward_correctness, s.numerical_agreement) == (1.0, 0.0, 0.0)
    bad = [r for r in results if r.backward == S.FAIL]
    assert bad and "tensor 0" in bad[0].backward_detail      # the wrong input is named
    assert bad[0].repro().endswith(f"--kernels {tmp_path / 'kernels'}")


def test_kernels_with_a_correct_mm_backward_score_one(tmp_path):
    ks = _kernels(tmp_path, 1)
    results = _run_kernels(ks)
    s = S.score(results, "kernels")
    assert (s.correctness, s.backward_correctness, s.numerical_agreement) == (1.0, 1.0, 1.0)
    assert ks.calls["mm.default"] > 0      # the user's kernel ran, not aten's


def test_kernels_are_registered_only_inside_active(tmp_path):
    d = tmp_path / "k"
    d.mkdir()
    (d / "ops.py").write_text("def add_Tensor(a, b, alpha=1):\n    return a - b\n")
    ks = load_kernels(str(d))
    assert [k.op for k in ks.kernels] == ["add.Tensor"]
    x, y = torch.ones(2), torch.ones(2)
    with ks.active():
        assert torch.add(x, y).tolist() == [0.0, 0.0]
    assert torch.add(x, y).tolist() == [2.0, 2.0]        # aten's kernel is back


def test_kernels_path_with_no_kernel_is_a_clear_error(tmp_path):
    (tmp_path / "helpers.py").write_text("def not_an_op(x):\n    return x\n")
    with pytest.raises(KernelsError, match="no function named after an aten op"):
        load_kernels(str(tmp_path))
    with pytest.raises(KernelsError, match="not a directory, a .py file or an importable module"):
        load_kernels("no_such_module_for_aotcheck")


def test_kernel_that_is_never_called_is_not_a_pass(tmp_path):
    ks = _kernels(tmp_path, 1)
    ops = S.select_ops(["sin"])
    results = S.run_suite(S.Suite(samples="first", engines=[S.kernels_engine(ks, perf=False)], ops=ops,
                                  variants=("fn",)))
    assert [(r.forward, r.backward, r.numerical) for r in results] == [(S.NA,) * 3]   # not scored
    assert results[0].forward_detail.startswith("NotCalled: no kernel")
    assert S.score(results, "kernels").correctness is None


def test_reference_numerical_scores_the_backward_by_finite_differences_alone(tmp_path):
    results = _run_kernels(_kernels(tmp_path, 2), reference="numerical")
    assert {(r.forward, r.backward, r.numerical) for r in results} == {(S.NA, S.NA, S.FAIL)}
    s = S.score(results, "kernels")
    assert s.backward_correctness is None and s.numerical_agreement == 0.0
    good = _run_kernels(_kernels(tmp_path, 1, "good"), reference="numerical")
    assert S.score(good, "kernels").numerical_agreement == 1.0


def test_cli_kernels_prints_the_side_by_side_scores(tmp_path):
    d = tmp_path / "kernels"
    d.mkdir()
    (d / "mm.py").write_text(MM_KERNEL.format(k=2))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = cli.main(["ops", "--kernels", str(d), "--json", str(tmp_path / "run.json")])
    text = out.getvalue()
    assert rc == 1
    assert "aten.mm.default (+ backward)" in text
    assert "  backward correctness                 0.000" in text, text
    assert "fail:backward+numerical" in text
    doc = compare.read_document(str(tmp_path / "run.json"))
    assert doc["columns"] == ["kernels"] and doc["ops"]["mm"] == {"kernels": "fail:backward+numerical"}
    assert doc["meta"]["kernels"][0]["backward"] is True


# ---------------------------------------------------------------- compile backends


CORRUPT_BACKEND = '''
import torch
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd


def _fw(gm, example_inputs):
    return make_boxed_func(gm.forward)


def _bw(gm, example_inputs):
    def run(*args):
        grads = list(gm.forward(*args))
        grads[-1] = grads[-1] * 2          # corrupt the last input's gradient
        return tuple(grads)
    return make_boxed_func(run)


corrupt_last_grad = aot_autograd(fw_compiler=_fw, bw_compiler=_bw)
'''


def test_planted_backend_that_corrupts_one_gradient_is_caught(tmp_path, monkeypatch):
    (tmp_path / "planted_backend.py").write_text(CORRUPT_BACKEND)
    monkeypatch.syspath_prepend(str(tmp_path))
    engine = S.backend_engine("planted_backend:corrupt_last_grad", perf=False)
    results = S.run_suite(S.Suite(["mul"], samples="first", engines=[engine], variants=("fn",)))
    [r] = results
    assert (r.forward, r.backward, r.numerical) == (S.PASS, S.FAIL, S.FAIL), r
    assert r.backward_detail.startswith("1 of 2 inputs failed; tensor 1 (args[0])"), r.backward_detail
    assert r.repro().endswith("--backend planted_backend:corrupt_last_grad")
    honest = S.run_suite(S.Suite(["mul"], samples="first", engines=[S.backend_engine("aot_eager", perf=False)],
                                 variants=("fn",)))
    assert (honest[0].forward, honest[0].backward, honest[0].numerical) == (S.PASS, S.PASS, S.PASS)


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(BackendNotFoundError, match="unknown backend; give a torch.compile backend"):
        resolve_backend("no_such_backend")
    with pytest.raises(BackendNotFoundError, match="cannot import 'f' from 'no_such_module_x'"):
        resolve_backend("no_such_module_x:f")
    assert resolve_backend("aotcheck").source == "aotcheck.targets.backend.aotcheck_backend"


def test_op_dynamo_does_not_compile_is_an_engine_error_not_a_pass():
    results = S.run_suite(S.Suite(["masked_select"], samples="first", engines=[S.backend_engine("aot_eager", perf=False)],
                                  variants=("fn",)))
    assert [(r.forward, r.backward, r.numerical) for r in results] == [(S.ENGINE_ERROR,) * 3]
    assert "Dynamo compiled no graph for backend aot_eager" in results[0].forward_detail


def test_each_case_gets_a_fresh_dynamo_cache():
    """NOTE [One Dynamo reset per case]: more ops than Dynamo's recompile limit still compile."""
    from torch._dynamo.utils import counters
    names = ["sin", "cos", "exp", "tanh", "neg", "abs", "sigmoid", "square", "log1p", "expm1"]
    assert len(names) > torch._dynamo.config.recompile_limit
    before = counters["stats"]["unique_graphs"]
    results = S.run_suite(S.Suite(names, samples="first", engines=[S.backend_engine("eager", perf=False)],
                                  variants=("fn",)))
    assert {r.forward for r in results} == {S.PASS}
    assert counters["stats"]["unique_graphs"] - before >= len(names)


@pytest.fixture
def inductor_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "unused"))   # restored afterwards
    return use_inductor_cache_dir(tmp_path / "inductor")


def test_small_inductor_sweep_side_by_side(inductor_cache, tmp_path):
    """A few ops through inductor and aot_eager: scores, perf, per-op statuses, JSON, diff."""
    engines = [S.backend_engine("inductor"), S.backend_engine("aot_eager")]
    results = S.run_suite(S.Suite(["sin", "mm"], samples="first", engines=engines, variants=("fn",)))
    assert {(r.mode, r.forward, r.backward, r.numerical) for r in results} == \
        {(m, S.PASS, S.PASS, S.PASS) for m in ("inductor", "aot_eager")}
    assert all(r.speedup and r.speedup > 0 for r in results)
    assert any(inductor_cache.rglob("*.py")), "inductor wrote nothing under the chosen cache dir"
    text = compare.format_side_by_side(results)
    assert text.splitlines()[0].split() == ["scores", "inductor", "aot_eager"]
    assert "  backward correctness                 1.000       1.000" in text, text
    doc = compare.run_document(results)
    assert doc["ops"] == {op: {"inductor": "pass", "aot_eager": "pass"} for op in ("sin", "mm")}
    compare.write_document(doc, str(tmp_path / "a.json"))
    back = compare.read_document(str(tmp_path / "a.json"))
    assert [S.SampleResult(**r) for r in back["results"]] == sorted(
        results, key=lambda r: (r.op, r.variant, r.index, r.seed, r.mode))
    assert compare.diff_documents(back, back) == []


# torch's release as (major, minor): where torch fixed a divergence pinned here, the pin says
# from which release (observed: 2.14.1 still has it, 2.15.0 not)
TORCH = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
INPLACE_NONLEAF_FIXED = (2, 15)


def test_inductor_inplace_on_a_grad_requiring_nonleaf_crashes_in_backward(inductor_cache):
    """docs/findings.md row 2, found again by the sweep: ``x.sin_()`` on a non-leaf that requires
    grad fails in backward under inductor and aot_eager (eager and aotcheck are right) before
    torch 2.15. The divergence itself is pinned as a strict xfail below; this test pins how the
    suite reports it (and, from torch 2.15, that it reports the fix as passes)."""
    engines = [S.backend_engine(b, perf=False) for b in ("inductor", "aot_eager", "aotcheck")]
    results = S.run_suite(S.Suite(["sin"], samples="first", engines=engines, variants=("inplace",)))
    got = {r.mode: (r.forward, r.backward) for r in results}
    torch_bw = S.PASS if TORCH >= INPLACE_NONLEAF_FIXED else S.CRASH
    assert got == {"inductor": (S.PASS, torch_bw), "aot_eager": (S.PASS, torch_bw),
                   "aotcheck": (S.PASS, S.PASS)}
    if torch_bw == S.CRASH:
        assert "modified by an inplace operation" in results[0].backward_detail


@pytest.mark.xfail(TORCH < INPLACE_NONLEAF_FIXED, strict=True,
                   reason="torch 2.13 and 2.14 inductor: an in-place op on a grad-requiring non-leaf "
                   "input whose old value the backward needs raises 'modified by an inplace operation' "
                   "(docs/findings.md row 2)")
@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_minimized_inplace_nonleaf_backward_matches_eager(backend, inductor_cache):
    def f(a):
        return a.sin_()
    x = torch.randn(4, dtype=torch.float64, requires_grad=True)
    torch._dynamo.reset()
    torch.compile(f, backend=backend, dynamic=False)(x * 1).sum().backward()
    torch.testing.assert_close(x.grad, x.detach().cos())


@pytest.mark.xfail(strict=True, reason="torch 2.13: AOTAutograd traces the joint at the first call, so an op "
                   "with no derivative formula (acosh_) raises BackendCompilerFailed in the forward; eager "
                   "runs the forward and raises only at backward (docs/findings.md, OpInfo sweep row)")
@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_minimized_inplace_without_derivative_forward_matches_eager(backend, inductor_cache):
    def f(a):
        return a.acosh_()
    x = torch.rand(4, dtype=torch.float64).add(1.5).requires_grad_()
    expected = f(x * 1)                    # eager: fine; only a backward would raise
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(f, backend=backend, dynamic=False)(x * 1), expected)


@pytest.mark.xfail(strict=True, reason="torch 2.13: Tensor.polygamma_ fails to compile under aot_eager and "
                   "inductor, 'Found a custom (non-ATen) operator whose output has alias annotations: "
                   "aten::polygamma_' (docs/findings.md row 28)")
@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_minimized_polygamma_inplace_compiles(backend, inductor_cache):
    def f(a):
        return a.polygamma_(1)
    x = torch.rand(4, dtype=torch.float64).add(0.5)     # no grad needed
    expected = f(x.clone())
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(f, backend=backend, dynamic=False)(x.clone()), expected)


@pytest.mark.xfail(strict=True, reason="torch 2.13: Dynamo fails on torch.masked._output_mask with a masked op as "
                   "its first argument, 'InternalTorchDynamoError: NotImplementedError: argument of type: "
                   "<class 'function'>', under every backend (docs/findings.md row 40)")
@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_minimized_masked_output_mask_compiles(backend, inductor_cache):
    def f(x, m):
        return torch.masked._output_mask(torch.masked.sum, x, 0, mask=m)
    x, m = torch.randn(5), torch.tensor([True, False, True, True, False])
    expected = f(x, m)
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(f, backend=backend, dynamic=False)(x, m), expected)


def test_suite_reports_the_compile_time_derivative_error_as_a_crash(inductor_cache):
    results = S.run_suite(S.Suite(["acosh"], samples="first", engines=[S.backend_engine("aot_eager", perf=False)],
                                  variants=("inplace",)))
    [r] = results
    assert (r.forward, r.backward) == (S.CRASH, S.NA), r      # eager's own backward raises: n/a
    assert "derivative for 'inplace version of acosh' is not implemented" in r.forward_detail


def test_cli_diff_lists_changed_statuses(tmp_path):
    rows = [S.SampleResult("mm", "fn", 0, 0, "inductor", S.PASS, S.PASS, S.PASS, target="--backend inductor")]
    worse = [S.SampleResult("mm", "fn", 0, 0, "inductor", S.PASS, S.FAIL, S.PASS, target="--backend inductor")]
    for name, rs in (("a.json", rows), ("b.json", worse)):
        compare.write_document(compare.run_document(rs), str(tmp_path / name))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = cli.main(["ops", "--diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    assert rc == 1
    assert "[inductor] backward correctness: 1.000 -> 0.000" in out.getvalue()
    assert "[inductor] mm: pass -> fail:backward" in out.getvalue()
    (tmp_path / "list.json").write_text(json.dumps([]))
    with pytest.raises(SystemExit, match="not an aotcheck ops JSON file"):
        cli.main(["ops", "--diff", str(tmp_path / "list.json"), str(tmp_path / "b.json")])


def test_perf_scores_follow_backendbench():
    from aotcheck.grad.perf import per_op_speedup, perf_at_p, performance_score
    mk = lambda op, fwd, sp, bwd=S.PASS: S.SampleResult(op, "fn", 0, 0, "b", fwd, bwd, S.PASS, speedup=sp)
    rows = [mk("a", S.PASS, 4.0), mk("b", S.PASS, 0.25), mk("c", S.FAIL, None), mk("d", S.PASS, 2.0, S.FAIL)]
    assert per_op_speedup(rows) == {"a": 4.0, "b": 0.25, "c": 1.0, "d": 2.0}
    assert performance_score(rows) == pytest.approx((4.0 * 0.25 * 1.0 * 2.0) ** 0.25)
    assert perf_at_p(rows, 1.0) == 0.25          # only a is correct and faster; d is faster but wrong
    assert perf_at_p(rows, 0.1) == 0.5


# ---------------------------------------------------------------- full sweeps (slow)

# Divergences from eager the full first-sample sweep finds in inductor and aot_eager, each pinned
# above (a minimized strict xfail) and in docs/findings.md: (variant, check, status, message part).
KNOWN_BACKEND_DIVERGENCES = {
    "inplace on a grad-requiring non-leaf (findings row 2)":
        ("inplace", "backward", S.CRASH, "modified by an inplace operation"),
    "no derivative formula: compile-time error in the forward (findings, OpInfo sweep)":
        ("inplace", "forward", S.CRASH, "is not implemented"),
    "polygamma_ is not functionalized (findings row 28)":
        ("inplace", "forward", S.CRASH, "Found a custom (non-ATen) operator whose output has alias annotations"),
    "Dynamo fails on torch.masked._output_mask (masked.cumsum, masked.cumprod; findings row 40)":
        ("fn", "forward", S.CRASH, "argument of type: <class 'function'>"),
    # not a divergence: eager passes PyTorch's own xfail of native_group_norm's gradcheck as well
    # (aotcheck ops --engine eager --op native_group_norm), so every backend shows the xpass
    "PyTorch's xfail of TestBwdGradients.test_fn_grad passes in eager too (native_group_norm)":
        ("fn", "numerical", S.XPASS, "TestBwdGradients.test_fn_grad"),
}


def _explained(r) -> str | None:
    for name, (variant, check, status, part) in KNOWN_BACKEND_DIVERGENCES.items():
        bad = [c for c in S.CHECKS if r.status(c) in (S.FAIL, S.CRASH, S.XPASS)]
        if r.variant == variant and r.status(check) == status and part in r.detail(check) and \
                all(part in r.detail(c) for c in bad):
            return name
    return None


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_full_first_sample_sweep_has_only_known_divergences(backend, inductor_cache):
    results = S.run_suite(S.Suite(samples="first", engines=[S.backend_engine(backend, perf=False)]))
    bad = [r for r in results if any(r.status(c) in (S.FAIL, S.CRASH, S.XPASS) for c in S.CHECKS)]
    unexplained = [f"{r.repro()}: {r.backward_detail or r.forward_detail}" for r in bad if not _explained(r)]
    assert not unexplained, "\n".join(unexplained)
    seen = {_explained(r) for r in bad}
    assert seen == set(KNOWN_BACKEND_DIVERGENCES), f"no longer seen: {set(KNOWN_BACKEND_DIVERGENCES) - seen}"


def test_stream_resume_skips_done_ops_and_refuses_other_options(tmp_path):
    d = tmp_path / "kernels"
    d.mkdir()
    (d / "mm.py").write_text(MM_KERNEL.format(k=1))
    (d / "add.py").write_text("def add_Tensor(a, b, alpha=1):\n    return a - b\n")
    stream = str(tmp_path / "run.jsonl")
    base = ["ops", "--kernels", str(d), "--no-perf", "--variant", "fn", "--stream", stream]

    def run(*extra):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = cli.main(base + list(extra))
        return rc, out.getvalue()
    rc, text = run()
    assert rc == 1 and "fail:forward" in text                 # add_Tensor is wrong on purpose
    rc, text = run("--resume")
    assert "1 ops already done, 1 to go" in text, text        # the last op is run again
    with pytest.raises(SystemExit, match=r"written with other options \(reference differ\)"):
        run("--resume", "--reference", "numerical")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli.main(["ops", "--report-from", stream])
    assert "2 sample results, 2 ops" in out.getvalue()        # the repeated op counted once

"""The min-cut partitioner: golden forward/backward graphs, what it never recomputes, that it
saves no more (in its own cost model) than the default on every corpus case, and every way in
(flag, explain, cache key, torch.compile backend, CLI)."""
import expecttest
import pytest
import torch
import torch.nn.functional as F

import aotcheck
from aotcheck import flags
from aotcheck.engine.decide import CompileMode
from aotcheck.check.corpus import CallMode, all_cases
from aotcheck.engine.partition.mincut import choose_saved, node_cost, recompute_policy, regions
from aotcheck.engine.partition.cut import default_partition
from aotcheck.engine.printer import format_graph
from torch.multiprocessing.reductions import StorageWeakRef


def _mincut(fn, *args):
    return aotcheck.explain(fn, *args, partitioner="mincut", print_result=False).stages


def _rg(*shape):
    g = torch.Generator().manual_seed(0)
    return torch.randn(*shape, generator=g, requires_grad=True)


class TestGolden(expecttest.TestCase):
    def test_docstring_example_recomputes_sin_from_the_input(self):
        s = _mincut(lambda x: x.sin().cos().sum(), _rg(4))
        p = s.partitioned
        self.assertExpectedInline(format_graph(p.forward, "forward"), """\
def forward(arg0_1: f32[4]):
    sin: f32[4] = aten.sin.default(arg0_1)
    cos: f32[4] = aten.cos.default(sin)
    sum_1: f32[] = aten.sum.default(cos)
    return (sum_1, arg0_1)""")
        self.assertExpectedInline(format_graph(p.backward, "backward"), """\
def backward(saved_arg0_1: f32[4], tangents_1: f32[]):
    sin: f32[4] = aten.sin.default(saved_arg0_1)
    expand: f32[4] = aten.expand.default(tangents_1, [4])
    sin_1: f32[4] = aten.sin.default(sin)
    neg: f32[4] = aten.neg.default(sin_1)
    mul: f32[4] = aten.mul.Tensor(expand, neg)
    cos_1: f32[4] = aten.cos.default(saved_arg0_1)
    mul_1: f32[4] = aten.mul.Tensor(mul, cos_1)
    return (mul_1,)""")
        self.assertExpectedInline("\n".join(p.reasons), """\
saved arg0_1: input: free, the caller holds it
recomputed sin: aten.sin.default is pointwise, instead of saving 16 B""")

    def test_gelu_mlp_saves_the_matmul_and_recomputes_gelu(self):
        def mlp(x, w1, w2):
            return F.gelu(x @ w1) @ w2
        p = _mincut(mlp, _rg(2, 4), _rg(4, 8), _rg(8, 3)).partitioned
        self.assertExpectedInline(format_graph(p.forward, "forward"), """\
def forward(arg0_1: f32[2, 4], arg1_1: f32[4, 8], arg2_1: f32[8, 3]):
    mm: f32[2, 8] = aten.mm.default(arg0_1, arg1_1)
    gelu: f32[2, 8] = aten.gelu.default(mm)
    mm_1: f32[2, 3] = aten.mm.default(gelu, arg2_1)
    t_1: f32[3, 8] = aten.t.default(arg2_1)  # no_grad
    t_2: f32[4, 2] = aten.t.default(arg0_1)  # no_grad
    t_3: f32[8, 4] = aten.t.default(arg1_1)  # no_grad
    return (mm_1, mm, t_1, t_2, t_3)""")
        self.assertExpectedInline(format_graph(p.backward, "backward"), """\
def backward(saved_mm: f32[2, 8], saved_t_1: f32[3, 8], saved_t_2: f32[4, 2], saved_t_3: f32[8, 4], tangents_1: f32[2, 3]):
    gelu: f32[2, 8] = aten.gelu.default(saved_mm)
    t: f32[8, 2] = aten.t.default(gelu)
    mm_2: f32[8, 3] = aten.mm.default(t, tangents_1)
    mm_3: f32[2, 8] = aten.mm.default(tangents_1, saved_t_1)
    gelu_backward: f32[2, 8] = aten.gelu_backward.default(mm_3, saved_mm)
    mm_4: f32[4, 8] = aten.mm.default(saved_t_2, gelu_backward)
    mm_5: f32[2, 4] = aten.mm.default(gelu_backward, saved_t_3)
    return (mm_5, mm_4, mm_2)""")
        self.assertExpectedInline("\n".join(p.reasons), """\
saved mm: never recomputed: aten.mm.default is expensive (on the never-recompute list) (64 B)
recomputed gelu: aten.gelu.default is pointwise, instead of saving 64 B
saved t_1: shares an input's storage: free
saved t_2: shares an input's storage: free
saved t_3: shares an input's storage: free""")

    def test_dropout_is_saved_never_redrawn(self):
        def f(x):
            return F.dropout(x.sin(), 0.5, training=True) * 2
        p = _mincut(f, _rg(6)).partitioned
        self.assertExpectedInline(format_graph(p.forward, "forward"), """\
def forward(arg0_1: f32[6]):
    sin: f32[6] = aten.sin.default(arg0_1)
    empty_like: f32[6] = aten.empty_like.default(sin)
    bernoulli: f32[6] = aten.bernoulli.p(empty_like, 0.5)
    div: f32[6] = aten.div.Scalar(bernoulli, 0.5)
    mul: f32[6] = aten.mul.Tensor(sin, div)
    mul_1: f32[6] = aten.mul.Tensor(mul, 2)
    return (mul_1, arg0_1, div)""")
        self.assertExpectedInline(format_graph(p.backward, "backward"), """\
def backward(saved_arg0_1: f32[6], saved_div: f32[6], tangents_1: f32[6]):
    mul_2: f32[6] = aten.mul.Tensor(tangents_1, 2)
    mul_3: f32[6] = aten.mul.Tensor(mul_2, saved_div)
    cos: f32[6] = aten.cos.default(saved_arg0_1)
    mul_4: f32[6] = aten.mul.Tensor(mul_3, cos)
    return (mul_4,)""")

    def test_input_mutated_later_is_saved_as_a_copy(self):
        def f(a, x):
            y = (a + x).sin().exp()
            a.add_(1)
            return y
        p = _mincut(f, torch.randn(3), _rg(4, 3)).partitioned     # a is broadcast: its copy is smaller
        self.assertExpectedInline(format_graph(p.forward, "forward"), """\
def forward(arg0_1: f32[3], arg1_1: f32[4, 3]):
    add: f32[4, 3] = aten.add.Tensor(arg0_1, arg1_1)
    sin: f32[4, 3] = aten.sin.default(add)
    exp: f32[4, 3] = aten.exp.default(sin)
    add_1: f32[3] = aten.add.Tensor(arg0_1, 1)
    clone_default: f32[3] = aten.clone.default(arg0_1)
    return (add_1, exp, clone_default, arg1_1)""")
        self.assertExpectedInline("\n".join(p.reasons), """\
saved arg0_1: input mutated later: the forward saves a copy (12 B)
saved arg1_1: input: free, the caller holds it
recomputed add: aten.add.Tensor is pointwise, instead of saving 48 B
recomputed sin: aten.sin.default is pointwise, instead of saving 48 B
recomputed exp: aten.exp.default is pointwise, instead of saving 48 B""")


def _joint_and_parts(c):
    torch.manual_seed(0)
    inputs = c.make_inputs()
    with torch.no_grad() if c.call is CallMode.NO_GRAD else torch.enable_grad():
        if c.call is CallMode.INFERENCE_MODE:
            return None
        s = aotcheck.explain(c.fn, *inputs.args, print_result=False, **inputs.kwargs).stages
    return s if s.joint is not None else None


TRAINING = [c for c in all_cases() if c.mode is CompileMode.TRAINING and not c.xfail]


@pytest.mark.parametrize("c", TRAINING, ids=[c.id for c in TRAINING])
def test_never_saves_more_than_default_in_its_cost_model(c):
    s = _joint_and_parts(c)
    if s is None:
        pytest.skip("no joint graph")
    mutated = frozenset(m.placeholder for m in s.meta.mutations)
    reg = regions(s.joint)
    ins = {StorageWeakRef(p.meta["val"].untyped_storage()) for p in reg.primals}
    mut = {StorageWeakRef(reg.primals[i].meta["val"].untyped_storage()) for i in mutated}
    by_name = {n.name: n for n in s.joint.graph.graph.nodes}
    default_saved = [by_name[name[len("saved_"):]] for name in default_partition(s.joint, mutated).saved]
    choice = choose_saved(s.joint, mutated)
    cost = lambda nodes: sum(node_cost(n, ins, mut) or 0 for n in nodes)  # noqa: E731
    assert cost(choice.saved) <= cost(default_saved), (choice.reasons, [n.name for n in default_saved])
    for n in choice.recomputed:           # nothing it may not recompute was recomputed
        assert recompute_policy(n)[0], n.name


def test_policy_reasons():
    g = torch.fx.Graph()
    x = g.placeholder("x")
    cases = {
        torch.ops.aten.rand_like.default: (False, "random"),
        torch.ops.aten.mm.default: (False, "expensive"),
        torch.ops.aten.sum.default: (False, "reduction"),
        torch.ops.aten.add_.Tensor: (False, "mutates"),
        torch.ops.aten.sin.default: (True, "pointwise"),
        torch.ops.aten.view.default: (True, "a view"),
        torch.ops.aten.index_select.default: (False, "not on the cheap list"),
    }
    for op, (ok, word) in cases.items():
        n = g.call_function(op, (x,))
        got_ok, why = recompute_policy(n)
        assert got_ok == ok and word in why, (op, got_ok, why)


def test_flag_picks_the_partitioner_and_bad_names_are_refused():
    outer = flags.get(flags.PARTITIONER)      # pytest --partitioner may have set one
    with flags.overridden(flags.PARTITIONER, "mincut"):
        assert aotcheck.aot_function(lambda x: x).partitioner == "mincut"
        assert aotcheck.aot_function(lambda x: x, partitioner="default").partitioner == "default"
        with flags.overridden(flags.PARTITIONER, "default"):
            assert aotcheck.aot_function(lambda x: x).partitioner == "default"
        assert aotcheck.aot_function(lambda x: x).partitioner == "mincut"
    assert aotcheck.aot_function(lambda x: x).partitioner == outer
    with pytest.raises(aotcheck.AotcheckError, match=r"unknown partitioner 'min-cut'; supported: \['default', 'mincut'\]"):
        aotcheck.aot_function(lambda x: x, partitioner="min-cut")


def _chain(x):
    for i in range(6):
        x = x.sin() if i % 2 else x * 1.5
    return x


def test_changing_the_partitioner_misses_the_cache(tmp_path):
    def run(partitioner):
        aotcheck.reset_counters()
        x = _rg(5)
        f = aotcheck.aot_function(_chain, partitioner=partitioner, cache=str(tmp_path))
        f(x).sum().backward()
        return dict(aotcheck.counters), x.grad
    c1, g1 = run("default")
    c2, g2 = run("mincut")
    assert (c1["misses"], c2["misses"], c2["hits"]) == (1, 1, 0), (c1, c2)
    c3, g3 = run("mincut")
    assert c3["hits"] == 1 and c3["misses"] == 0, c3
    x = _rg(5)
    _chain(x).sum().backward()
    for g in (g1, g2, g3):
        assert torch.equal(g, x.grad)


def test_backend_option():
    torch._dynamo.reset()
    x, ref = _rg(5), _rg(5)
    out = torch.compile(_chain, backend="aotcheck", options={"partitioner": "mincut"})(x)
    out.sum().backward()
    _chain(ref).sum().backward()
    assert torch.equal(x.grad, ref.grad)


def test_cli_check_runs_with_mincut(capsys):
    from aotcheck.cli import main
    outer = flags.get(flags.PARTITIONER)
    assert main(["check", "--partitioner", "mincut", "-k", "basics."]) == 0
    out = capsys.readouterr().out
    assert "partitioner: mincut" in out and "fail" in out
    assert flags.get(flags.PARTITIONER) == outer           # the override ends with the command


class _SavesADrawItIgnores(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, r):
        ctx.save_for_backward(r)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        (r,) = ctx.saved_tensors
        return g * r.sin(), None


def _draw_only_the_backward_reads(x):
    return _SavesADrawItIgnores.apply(x, torch.rand_like(x))


def test_a_draw_only_the_backward_reads_is_saved_not_redrawn():
    from aotcheck.check.oracle import Inputs, check

    def make():
        x = _rg(5)
        return Inputs((x,), leaves=(x,))
    report = check(_draw_only_the_backward_reads,
                   aotcheck.aot_function(_draw_only_the_backward_reads, partitioner="mincut"), make,
                   backward=True)
    assert report.ok, report
    p = _mincut(_draw_only_the_backward_reads, _rg(5)).partitioned
    assert "rand_like" not in format_graph(p.backward, "backward")

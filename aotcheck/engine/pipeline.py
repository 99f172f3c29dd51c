"""pipeline: the stages, in order, on one screen.

    signature -> capture -> analyze -> decide -> [joint -> partition] -> runtime

Each stage is a function from one representation to the next; none edits its
input. ``run_stages`` runs them for one call's arguments (whose signature the
caller computed once) and returns every intermediate result (for ``explain`` and
the cache); ``build_artifact`` turns those into a runnable
:class:`~aotcheck.engine.runtime.artifact.CompiledArtifact`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace


from .. import flags
from .analyze import ViewMutationMeta, analyze
from .capture.trace import Captured, capture, joint_retry_modes, view_replay_refusal
from .capture.plan import placeholder_tensors
from .decide import CompileMode, Decision, decide
from .joint import Joint, ViewReplayError, forward_candidates, trace_joint
from .lint import check_graph, check_meta
from .partition.cut import Partitioned, inference_forward, partition
from .runtime.artifact import ArtifactParts, CompiledArtifact
from .signature import Signature


@dataclass
class Stages:
    """Every stage's result for one signature."""
    signature: Signature
    captured: Captured
    meta: ViewMutationMeta
    decision: Decision
    joint: Joint | None
    partitioned: Partitioned


def run_stages(fn, leaves: list, in_spec, sig: Signature, partitioner: str = "default", *,
               captured: Captured | None = None) -> Stages:
    """Run every stage for leaves whose signature is ``sig``. ``captured`` may be passed
    in when already computed (the cache key may have needed it)."""
    captured = captured if captured is not None else capture(fn, leaves, in_spec, sig)
    meta = analyze(captured, sig)
    decision = decide(meta, sig)
    checking = flags.get(flags.CHECK_GRAPHS)
    if checking:
        check_graph(captured.graph.graph, "captured", functional=True)
        check_meta(meta, sig)
    joint = None
    if decision.mode == CompileMode.TRAINING and captured.facts.view_replay_hazard and not captured.plain:
        raise view_replay_refusal("an in-place metadata change on a tensor that has views, "
                                   "then a mutation of its storage")
    if decision.mode == CompileMode.TRAINING:
        captured, meta, decision, joint = _joint(fn, leaves, in_spec, sig, captured, meta, decision)
        if joint.backward_error:
            meta = replace(meta, backward_error=joint.backward_error)
        mutated = frozenset(m.placeholder for m in meta.mutations)
        parts = partition(joint, partitioner, mutated)
        if checking:
            check_graph(joint.graph.graph, "joint", functional=True)
    else:
        parts = inference_forward(captured.graph, forward_candidates(meta))
    if checking:
        check_graph(parts.forward, "forward", functional=True)
        if parts.backward is not None:
            check_graph(parts.backward, "backward", functional=True)
    return Stages(sig, captured, meta, decision, joint, parts)


def _joint(fn, leaves: list, in_spec, sig: Signature, captured: Captured, meta: ViewMutationMeta,
           decision: Decision):
    """The joint graph, and the capture, metadata and decision it was traced from. Where
    autograd's view replay fails (NOTE [non-leaf copies] in capture/functional_run.py), the
    function is captured again each way capture gives (``joint_retry_modes``), the last one
    plain (NOTE [plain trace, then functionalize]); each capture's mode says why."""
    primals = placeholder_tensors(captured.plan, leaves)
    try:
        return captured, meta, decision, trace_joint(fn, captured, meta, sig, leaves, in_spec, primals)
    except ViewReplayError as e:
        error = e
    for mode in joint_retry_modes(captured.mode, primals):
        retry = capture(fn, leaves, in_spec, sig, mode)
        if retry.plain and not mode.plain:
            continue        # it went the plain way by itself: the plain way comes next, afresh
        meta = analyze(retry, sig)
        decision = decide(meta, sig)
        if decision.mode != CompileMode.TRAINING:
            if mode.plain:
                raise view_replay_refusal(error) from None
            continue
        primals = placeholder_tensors(retry.plan, leaves)
        try:
            return retry, meta, decision, trace_joint(fn, retry, meta, sig, leaves, in_spec, primals)
        except ViewReplayError:
            if mode.plain:
                raise
    raise AssertionError("joint_retry_modes ends with the plain way")


def build_artifact(stages: Stages) -> CompiledArtifact:
    p, j = stages.partitioned, stages.joint
    return CompiledArtifact(ArtifactParts(
        plan=stages.captured.plan, meta=stages.meta, decision=stages.decision,
        forward=p.forward, num_fw_outputs=p.num_fw_outputs,
        fw_candidates=forward_candidates(stages.meta),
        diff_outputs=j.diff_outputs if j else (), grad_inputs=j.grad_inputs if j else (),
        backward=p.backward, out_spec=stages.captured.out_spec, constants=graph_constants(stages),
        backward_mutations=j.backward_mutations if j else (), grad_reach=j.grad_reach if j else (),
        hook_fns=stages.captured.hook_fns))


def graph_constants(stages: Stages) -> dict:
    """The tensor constants (get_attr targets) that the forward and backward graphs read.
    They live on the traced module the graphs were cut from: the joint, or the capture."""
    owner = stages.joint.graph if stages.joint is not None else stages.captured.graph
    out = {}
    for g in (stages.partitioned.forward, stages.partitioned.backward):
        for n in (g.nodes if g is not None else ()):
            if n.op == "get_attr":
                out[n.target] = getattr(owner, n.target)
    return out

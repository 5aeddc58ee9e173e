"""The latency harness: operator counts (golden and against E), timing statistics, the tables, the rules."""

import pytest
import torch

from repro.claims import Evidence, evaluate
from repro.measure.latency import LatencySettings, compiled_or_eager, count_ops, head_call, settings_for, time_call
from repro.manifest import Claim, Profile, parse_manifest
from repro.models import HEADS
from repro.pipeline import Context, run_manifest
from repro.report.render import render_tables_md
from repro.report.tables import build_tables

CPU = torch.device("cpu")


def _ops(name: str, batch: int = 256, **params):
    torch.manual_seed(0)
    head = HEADS.get(name).builder(32, 10, **params).eval()
    return count_ops(head_call(head, 32, batch, CPU), CPU)


def test_dense_head_golden_operator_count():
    # three addmm and two relu; views (t) and evaluation-mode dropout launch nothing
    assert _ops("dense", hidden=(16, 8)).by_name == {"addmm": 3, "relu": 2}
    assert _ops("dense", hidden=()).ops == 1
    assert _ops("dense").host_syncs == 0


def test_loop_operator_calls_grow_with_experts_batched_do_not():
    loop = {e: _ops("sparse_moe", num_experts=e, expert_hidden=16, dispatch="loop") for e in (2, 4, 8, 16)}
    batched = {e: _ops("sparse_moe", num_experts=e, expert_hidden=16, dispatch="batched") for e in (2, 4, 8, 16)}
    steps = [(loop[b].ops - loop[a].ops) / (b - a) for a, b in ((2, 4), (4, 8), (8, 16))]
    assert steps[0] == steps[1] == steps[2] >= 4  # a fixed operator sequence per expert
    assert {e: c.host_syncs for e, c in loop.items()} == {2: 2, 4: 4, 8: 8, 16: 16}  # one nonzero per expert
    assert len({c.ops for c in batched.values()}) == 1 and all(c.host_syncs == 0 for c in batched.values())
    assert loop[8].by_name["addmm"] == 3 * 8 and batched[8].by_name["bmm"] == 3


def test_time_call_statistics_are_ordered_and_respect_the_repetition_bounds():
    calls = []
    s = LatencySettings(warmup=2, min_reps=4, max_reps=6, budget_s=0.0)
    t = time_call(lambda: calls.append(sum(range(1000 * (len(calls) % 3 + 1)))), CPU, s)
    assert t.reps == 4 and len(calls) == 2 + 4
    assert t.min_ms <= t.p25_ms <= t.median_ms <= t.p75_ms
    many = time_call(lambda: None, CPU, LatencySettings(warmup=0, min_reps=1, max_reps=7, budget_s=60.0))
    assert many.reps == 7


def test_settings_follow_the_profile():
    quick = settings_for(Profile(description="s", evidence="pipeline", batch_size=64, max_image_size=32), paper_scale=False)
    assert (quick.batch, quick.image_size, quick.op_batch) == (64, 32, 256) and quick.min_reps < 10
    full = settings_for(Profile(description="f", evidence="paper"), paper_scale=True)
    assert (full.batch, full.image_size, full.min_reps) == (256, None, 20)


def _mini_manifest():
    sparse = {"expert_hidden": 8, "top_k": 1}
    rows = [("cifar100_dense", {"name": "dense", "hidden": [8]}),
            ("cifar100_sparse_loop", {"name": "sparse_moe", "num_experts": 2, **sparse}),
            ("loop_e4", {"name": "sparse_moe", "num_experts": 4, **sparse}),
            ("batched_e2", {"name": "sparse_moe", "num_experts": 2, **sparse, "dispatch": "batched"}),
            ("batched_e4", {"name": "sparse_moe", "num_experts": 4, **sparse, "dispatch": "batched"})]
    doc = {
        "id": "lat", "title": "Latency", "paper_ref": "Table 7", "description": "test", "paper_table": "table7",
        "profiles": {"smoke": {"description": "s", "evidence": "pipeline", "batch_size": 4, "max_image_size": 16},
                     "full": {"description": "f", "evidence": "paper"}},
        "rows": [{"id": i, "label": i, "dataset": "cifar100", "measures": ["latency"],
                  "backbone": {"name": "cifar_standard"}, "head": h} for i, h in rows],
        "comparisons": [{"id": "cifar100_sparse_loop", "label": "loop over dense", "row": "cifar100_sparse_loop",
                         "baseline": "cifar100_dense"}],
        "claims": [
            {"id": "grows", "statement": "s", "section": "5", "scope": "analytic", "rule": "scales_with_experts",
             "metrics": ["rows.cifar100_sparse_loop.op_calls", "rows.loop_e4.op_calls"], "expect": "grows"},
            {"id": "flat", "statement": "s", "section": "5", "scope": "analytic", "rule": "scales_with_experts",
             "metrics": ["rows.batched_e2.op_calls", "rows.batched_e4.op_calls"], "expect": "constant"},
            {"id": "ratio", "statement": "s", "section": "5", "scope": "gpu", "rule": "within_factor",
             "metric": "comparisons.cifar100_sparse_loop.model_slowdown", "paper": "cifar100_sparse_loop.model_slowdown"},
        ],
    }
    return parse_manifest(doc, "lat")


def test_measure_decide_and_render_a_latency_manifest(tmp_path):
    manifest = _mini_manifest()
    ctx = Context("smoke", manifest.profiles["smoke"], tmp_path)
    result = run_manifest(manifest, ctx)
    m = result.measured.metrics
    assert result.ok, result.measured.problems
    assert m["comparisons.cifar100_sparse_loop.slowdown"] == pytest.approx(
        m["rows.cifar100_sparse_loop.latency_ms"] / m["rows.cifar100_dense.latency_ms"])
    assert m["rows.loop_e4.num_experts"] == 4 and m["rows.loop_e4.host_syncs"] == 4
    assert result.measured.details["latency"]["loop_e4"]["head_features"] == 3072  # the paper's D, not 16 px's
    assert result.measured.details["latency"]["loop_e4"]["image_size"] == 16
    verdicts = {v.claim: v for v in result.verdicts}
    assert verdicts["grows"].status == verdicts["flat"].status == "reproduced"
    assert verdicts["ratio"].status == "not run" and "GPU" in verdicts["ratio"].evidence
    tables = {t.key: t for t in build_tables(manifest, result)}
    assert {"latency", "slowdowns", "op_scaling"} <= set(tables)
    assert len(tables["latency"].rows) == 5
    assert "0.25 ms (model)" in tables["latency"].rows[0][-1]  # the paper's value beside our row
    assert tables["slowdowns"].rows[0][-1] == "145x (model)"
    scaling = tables["op_scaling"]
    assert scaling.columns[1:3] == ["E=2", "E=4"] and len(scaling.rows) == 2
    md = render_tables_md(manifest, list(tables.values()), result)
    assert "Operator calls" in md and "intra-op thread" in md


def _claim(rule, scope="gpu", **params):
    return Claim("c", "s", "5", rule, scope, params)


def _ev(device="cuda", **metrics):
    return Evidence("t", "table7", "full", metrics=metrics, device=device)


def test_within_factor_and_gpu_scope():
    claim = _claim("within_factor", metric="comparisons.x.model_slowdown", paper="cifar100_sparse_loop.model_slowdown",
                   factor=2.0)
    assert evaluate(claim, _ev(**{"comparisons.x.model_slowdown": 80.0})).status == "reproduced"  # 0.55x of 145
    off = evaluate(claim, _ev(**{"comparisons.x.model_slowdown": 70.0}))  # 0.48x
    assert off.status == "not reproduced" and off.failed[0].startswith("factor")
    assert evaluate(claim, _ev("cpu", **{"comparisons.x.model_slowdown": 145.0})).status == "not run"
    assert evaluate(claim, _ev()).status == "not run"  # nothing measured


def test_ordered_and_largest():
    ordered = _claim("ordered", metrics=("comparisons.a.model_slowdown", "comparisons.b.model_slowdown"))
    assert evaluate(ordered, _ev(**{"comparisons.a.model_slowdown": 9.0, "comparisons.b.model_slowdown": 3.0})).status == "reproduced"
    assert evaluate(ordered, _ev(**{"comparisons.a.model_slowdown": 3.0, "comparisons.b.model_slowdown": 3.0})).status == "not reproduced"
    largest = _claim("largest", row="a", rows=("b", "c"), row_metric="model_latency_ms")
    times = {"rows.a.model_latency_ms": 36.0, "rows.b.model_latency_ms": 0.25, "rows.c.model_latency_ms": 7.4}
    assert evaluate(largest, _ev(**times)).status == "reproduced"
    slower_c = evaluate(largest, _ev(**{**times, "rows.c.model_latency_ms": 40.0}))
    assert slower_c.status == "not reproduced" and slower_c.failed == ["c: 40 is not below 36"]


def test_scales_with_experts_on_hand_made_counts():
    paths = ("rows.e2.op_calls", "rows.e4.op_calls", "rows.e8.op_calls")
    experts = {"rows.e2.num_experts": 2, "rows.e4.num_experts": 4, "rows.e8.num_experts": 8}
    grows = _claim("scales_with_experts", "analytic", metrics=paths, expect="grows", min_per_expert=4.0)
    linear = {**experts, "rows.e2.op_calls": 54, "rows.e4.op_calls": 74, "rows.e8.op_calls": 114}
    verdict = evaluate(grows, _ev("cpu", **linear))
    assert verdict.status == "reproduced" and "10.0 more per added expert" in verdict.evidence
    slow = {**linear, "rows.e4.op_calls": 55, "rows.e8.op_calls": 56}  # rises, but < 4 per expert
    assert evaluate(grows, _ev("cpu", **slow)).failed[0].startswith("slope")
    flat = _claim("scales_with_experts", "analytic", metrics=paths, expect="constant")
    assert evaluate(flat, _ev("cpu", **{**linear, "rows.e4.op_calls": 54, "rows.e8.op_calls": 54})).status == "reproduced"
    assert evaluate(flat, _ev("cpu", **linear)).status == "not reproduced"
    same_e = {**linear, "rows.e4.num_experts": 2, "rows.e8.num_experts": 2}
    assert evaluate(grows, _ev("cpu", **same_e)).status == "not run"


def test_compiled_or_eager_falls_back_to_the_module():
    head = HEADS.get("dense").builder(4, 2, hidden=()).eval()

    def fails_when_compiled(m):
        if m is not head:
            raise RuntimeError("backend unavailable\nsecond line")

    module, why = compiled_or_eager(head, fails_when_compiled)
    assert module is head and why == "RuntimeError: backend unavailable second line"
    module, why = compiled_or_eager(head, lambda m: None)
    assert module is not head and why == ""

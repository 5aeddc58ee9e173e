"""The latency measurer: settings per profile, a latency manifest measured, decided and rendered, the rules."""

import pytest

from repro.claims import Evidence, evaluate
from inline_manifests import inline_manifest
from repro.plan.manifest import Claim
from repro.spec.profiles import LatencyProfile, Profile
from repro.measure import latency
from repro.cost.calibration import Throughput
from repro.cost.estimate import CostModel
from repro.cost.wall_time import estimate_latency
from repro.measure.latency import measure_latency
from repro.pipeline import Context, run_manifest
from repro.plan.latency_settings import settings_for
from repro.plan.table_plan import build_plan
from repro.report.render import render_tables_md
from repro.report.table_rows import build_tables


def test_settings_follow_the_profile():
    quick = settings_for(
        Profile(
            description="s",
            evidence="pipeline",
            batch_size=8,
            max_image_size=16,
            latency=LatencyProfile(batch_size=64, max_image_size=32),
        ),
        paper_scale=False,
    )
    assert (quick.batch, quick.image_size, quick.op_batch) == (64, 32, 256) and quick.min_reps < 10
    full = settings_for(Profile(description="f", evidence="paper"), paper_scale=True)
    assert (full.batch, full.image_size, full.min_reps) == (256, None, 20)


def _mini_manifest():
    sparse = {"expert_hidden": 8, "top_k": 1}
    rows = [
        ("cifar100_dense", {"name": "dense", "hidden": [8]}),
        ("cifar100_sparse_loop", {"name": "sparse_moe", "num_experts": 2, **sparse}),
        ("loop_e4", {"name": "sparse_moe", "num_experts": 4, **sparse}),
        ("batched_e2", {"name": "sparse_moe", "num_experts": 2, **sparse, "dispatch": "batched"}),
        ("batched_e4", {"name": "sparse_moe", "num_experts": 4, **sparse, "dispatch": "batched"}),
    ]
    doc = {
        "id": "lat",
        "title": "Latency",
        "paper_ref": "Table 7",
        "description": "test",
        "paper_table": "table7",
        "profiles": {
            "smoke": {"description": "s", "evidence": "pipeline", "latency": {"batch_size": 4, "max_image_size": 16}},
            "full": {"description": "f", "evidence": "paper"},
        },
        "rows": [
            {
                "id": i,
                "label": i,
                "dataset": "cifar100",
                "measures": ["latency"],
                "backbone": {"name": "cifar_standard"},
                "head": h,
            }
            for i, h in rows
        ],
        "comparisons": [
            {
                "id": "cifar100_sparse_loop",
                "label": "loop over dense",
                "row": "cifar100_sparse_loop",
                "baseline": "cifar100_dense",
            }
        ],
        "claims": [
            {
                "id": "grows",
                "statement": "s",
                "section": "5",
                "scope": "analytic",
                "kind": "self-test",
                "rule": "scales_with_experts",
                "metrics": ["rows.cifar100_sparse_loop.op_calls", "rows.loop_e4.op_calls"],
                "expect": "grows",
            },
            {
                "id": "flat",
                "statement": "s",
                "section": "5",
                "scope": "analytic",
                "kind": "self-test",
                "rule": "scales_with_experts",
                "metrics": ["rows.batched_e2.op_calls", "rows.batched_e4.op_calls"],
                "expect": "constant",
            },
            {
                "id": "ratio",
                "statement": "s",
                "section": "5",
                "scope": "gpu",
                "rule": "within_factor",
                "metric": "comparisons.cifar100_sparse_loop.model_slowdown",
                "paper": "cifar100_sparse_loop.model_slowdown",
            },
        ],
    }
    return inline_manifest(doc, "lat")


def test_measure_decide_and_render_a_latency_manifest(tmp_path):
    manifest = _mini_manifest()
    ctx = Context("smoke", tmp_path)
    result = run_manifest(build_plan(manifest, "smoke"), ctx).result
    m = result.measured.metrics
    assert result.ok, result.measured.problems
    assert m["comparisons.cifar100_sparse_loop.slowdown"] == pytest.approx(
        m["rows.cifar100_sparse_loop.latency_ms"] / m["rows.cifar100_dense.latency_ms"]
    )
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


def test_a_failing_row_is_a_problem_and_leaves_its_metrics_missing(tmp_path, monkeypatch):
    manifest = _mini_manifest()
    real = latency.measure_row

    def fails_for_loop_e4(row, *args):
        if row.id == "loop_e4":
            raise RuntimeError("out of memory")
        return real(row, *args)

    monkeypatch.setattr(latency, "measure_row", fails_for_loop_e4)
    out = measure_latency(build_plan(manifest, "smoke"), Context("smoke", tmp_path))
    assert out.problems == ["lat/loop_e4: latency failed: RuntimeError: out of memory"]
    assert sorted(out.missing) == sorted(f"rows.loop_e4.{m}" for m in latency.LATENCY_METRICS)
    assert out.row("loop_e4", "op_calls") is None and out.row("batched_e4", "op_calls") is not None
    assert set(out.details["latency"]) == {"cifar100_dense", "cifar100_sparse_loop", "batched_e2", "batched_e4"}


def test_estimate_counts_every_latency_row_at_the_profile_settings(monkeypatch):
    cpu = Throughput("cpu", "cpu", 1e9, 0.004, "test cpu")  # 1 GMAC/s: the estimate is arithmetic
    monkeypatch.setattr("repro.cost.estimate.cpu_throughput", lambda speed=None: cpu)
    manifest = _mini_manifest()
    seconds, text = estimate_latency(build_plan(manifest, "smoke"), CostModel())
    assert text == "5 latency rows x 3 timings, batch 4, 4+ calls each"  # QUICK: 1 warm-up + 3 repetitions
    full, full_text = estimate_latency(build_plan(manifest, "full"), CostModel())
    assert "batch 256, 30+ calls each" in full_text and full > seconds > 5 * 3 * 4 * 0.002


def _claim(rule, scope="gpu", **params):
    return Claim("c", "s", "5", rule, scope, params)


def _ev(device="cuda", **metrics):
    return Evidence("t", "table7", "full", metrics=metrics, device=device)


def test_within_factor_and_gpu_scope():
    claim = _claim(
        "within_factor", metric="comparisons.x.model_slowdown", paper="cifar100_sparse_loop.model_slowdown", factor=2.0
    )
    assert evaluate(claim, _ev(**{"comparisons.x.model_slowdown": 80.0})).status == "reproduced"  # 0.55x of 145
    off = evaluate(claim, _ev(**{"comparisons.x.model_slowdown": 70.0}))  # 0.48x
    assert off.status == "not reproduced" and off.failed[0].startswith("factor")
    assert evaluate(claim, _ev("cpu", **{"comparisons.x.model_slowdown": 145.0})).status == "not run"
    assert evaluate(claim, _ev()).status == "not run"  # nothing measured


def test_ordered_and_largest():
    ordered = _claim("ordered", metrics=("comparisons.a.model_slowdown", "comparisons.b.model_slowdown"))
    apart = {"comparisons.a.model_slowdown": 9.0, "comparisons.b.model_slowdown": 3.0}
    tied = {"comparisons.a.model_slowdown": 3.0, "comparisons.b.model_slowdown": 3.0}
    assert evaluate(ordered, _ev(**apart)).status == "reproduced"
    assert evaluate(ordered, _ev(**tied)).status == "not reproduced"
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
    assert (
        evaluate(flat, _ev("cpu", **{**linear, "rows.e4.op_calls": 54, "rows.e8.op_calls": 54})).status == "reproduced"
    )
    assert evaluate(flat, _ev("cpu", **linear)).status == "not reproduced"
    same_e = {**linear, "rows.e4.num_experts": 2, "rows.e8.num_experts": 2}
    assert evaluate(grows, _ev("cpu", **same_e)).status == "not run"


def test_a_rows_latency_is_kept_and_reused_on_the_same_device_unless_asked_again(tmp_path, monkeypatch):
    import dataclasses

    manifest = _mini_manifest()
    plan, ctx = build_plan(manifest, "smoke"), Context("smoke", tmp_path)
    timed = []
    real = latency.measure_row
    monkeypatch.setattr(latency, "measure_row", lambda row, *a: timed.append(row.id) or real(row, *a))
    first = measure_latency(plan, ctx)
    rows = sorted(r.id for r in manifest.rows)
    assert sorted(timed) == rows and len(list((tmp_path / "runs" / "latency").glob("*.json"))) == len(rows)
    again = measure_latency(plan, ctx)
    assert sorted(timed) == rows and again.metrics == first.metrics  # nothing timed twice: the kept ones
    damaged = next((tmp_path / "runs" / "latency").glob("*.json"))
    damaged.write_text("{not json")
    measure_latency(plan, ctx)
    assert len(timed) == len(rows) + 1  # a file that is not a measurement is measured again
    measure_latency(plan, dataclasses.replace(ctx, remeasure_latency=True))
    assert len(timed) == 2 * len(rows) + 1
    other = build_plan(manifest, "smoke", dataclasses.replace(plan.profile, latency=LatencyProfile(batch_size=8)))
    measure_latency(other, ctx)
    assert len(timed) == 3 * len(rows) + 1  # other settings: other measurements

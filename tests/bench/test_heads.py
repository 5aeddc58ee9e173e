"""The head and capacity benchmarks run at a tiny size and report consistent ratios.

No speed is asserted: these machines are shared and noisy.
"""

import pytest

from repro.bench.heads import SHAPES, bench_capacity, bench_latency, method_rows
from repro.measure.latency import LatencySettings

TINY = LatencySettings(batch=8, warmup=0, min_reps=1, max_reps=1, budget_s=0.0)


def test_bench_latency_ratios_and_operator_sweep():
    r = bench_latency("cifar100", "cpu", TINY, experts=(2, 4), whole_model=False)
    methods = {m["method"]: m for m in r["methods"]}
    assert methods["dense head"]["head_x"] == 1.0
    loop = methods["sparse MoE, loop"]
    assert loop["head_x"] == loop["head"]["median_ms"] / methods["dense head"]["head"]["median_ms"]
    assert [m.head.name for m in method_rows("cifar100")] == [
        "dense",
        "sparse_moe",
        "sparse_moe",
        "soft_moe",
        "per_sample_soft_moe",
        "expert_choice",
    ]
    e2, e4 = r["sweep"]
    assert e4["loop"]["ops"]["ops"] > e2["loop"]["ops"]["ops"]
    assert e4["batched"]["ops"]["ops"] == e2["batched"]["ops"]["ops"]
    assert r["settings"]["op_batch"] == 8 and "cpu" in r["device"]


def test_bench_capacity_reports_both_rules_against_the_expert_forward():
    r = bench_capacity(batch=32, num_experts=4, features=16, hidden=8, classes=5, settings=TINY)
    assert r["capacity"] == 10  # ceil(1.25 * 32 / 4)
    assert len(r["rows"]) == 4
    for row in r["rows"]:
        assert row["of_experts"] == pytest.approx(row["ms"] / r["experts_ms"])


def test_the_command_lists_exactly_the_datasets_with_shapes():
    from repro.bench import LATENCY_DATASETS

    assert set(LATENCY_DATASETS) == set(SHAPES)

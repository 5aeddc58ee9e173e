"""The functional profile's learning check: chance + 30 points on every seed, dense and sparse rows gated."""

from repro.plan.manifest import find_manifest
from repro.spec.profiles import Profile
from repro.report.learning import learning_checks, render_learning, summary_line
import dataclasses

from repro.results.measurements import ManifestResult, Measuring, row_metric


def _result(manifest_id: str, accuracies: dict, chance: float, evidence: str = "functional", hashes=None):
    measured = Measuring()
    for row, acc in accuracies.items():
        measured.set_row(row, "accuracy", acc)
        measured.set_row(row, "chance", chance)
        runs = [
            {
                "seed": s,
                "hash": (hashes or {}).get(row, row) + str(s),
                "accuracy": a,
                "final_accuracy": a,
                "peak_accuracy": a,
                "peak_epoch": 1,
                "test_accuracy_by_epoch": [a],
                "train_accuracy_by_epoch": [a],
                "tau_by_epoch": [],
                "chance": chance,
            }
            for s, a in acc.items()
        ]
        measured.details.setdefault("runs", {})[row] = runs
    return ManifestResult(
        manifest_id,
        "t",
        "ref",
        manifest_id,
        "functional",
        measured.done(),
        [],
        {},
        profile_settings=Profile(description="t", evidence=evidence),
    )


def test_every_seed_must_reach_chance_plus_30_points_and_only_dense_and_sparse_rows_gate():
    table8 = find_manifest("table8")
    result = _result(
        "table8",
        {
            "c100_dense": {0: 0.62, 1: 0.29},  # one seed below 1% + 30 points
            "c100_per_sample_soft": {0: 0.2, 1: 0.2},  # another method: shown, not gated
            "c100_soft": {0: 0.01, 1: 0.01},  # the paper reports it collapses
            "imagenet_dense": {0: 0.5, 1: 0.45},
        },
        chance=0.01,
    )
    checks = {c.rows[0]: c for c in learning_checks([(table8, result)])}
    dense, other, soft, imnet = (
        checks[f"table8/{r}"] for r in ("c100_dense", "c100_per_sample_soft", "c100_soft", "imagenet_dense")
    )
    assert (dense.learned, dense.failed) == (False, True)
    assert (other.learned, other.failed) == (False, False) and "not a dense or sparse-MoE row" in other.status()
    assert not soft.failed and soft.status().startswith("did not learn; the paper reports this method collapses")
    assert imnet.learned and imnet.status() == "learned"
    line = summary_line(list(checks.values()))
    assert "1 / 2 dense and sparse-MoE configurations" in line and line.endswith("FAILED: table8/c100_dense")
    assert "| 62.0, 29.0 | 1.00 | 31.00 | did not learn: below chance + 30 points |" in render_learning([dense])


def test_rows_sharing_runs_are_one_line_and_other_profiles_are_not_checked():
    table4, table9 = find_manifest("table4"), find_manifest("table9")
    shared = {"r18_dense": "abc", "imagenet_dense": "abc"}
    a = _result("table4", {"r18_dense": {0: 0.6, 1: 0.6}}, 0.001, hashes=shared)
    b = _result("table9", {"imagenet_dense": {0: 0.6, 1: 0.6}}, 0.001, hashes=shared)
    checks = learning_checks([(table4, a), (table9, b)])
    assert len(checks) == 1 and checks[0].rows == ("table4/r18_dense", "table9/imagenet_dense")
    smoke = _result("table4", {"r18_dense": {0: 0.001, 1: 0.001}}, 0.001, evidence="pipeline")
    assert learning_checks([(table4, smoke), (table9, None)]) == []


def test_figure_captions_name_each_datasets_setting_and_the_stand_in():
    from repro.plan.table_plan import build_plan
    from repro.report.figures import _profile_words

    words = _profile_words("functional", build_plan(find_manifest("table9"), "functional"))
    assert "cifar100: 12 epochs, 8192 training images" in words and "imagenet: 4 epochs" in words
    assert "real digit scans standing in" in words


def test_which_heads_the_check_gates_is_a_field_of_each_heads_registry_entry():
    from repro.models import HEADS
    from repro.models.catalog import head_info

    assert sorted(e.name for e in HEADS if head_info(e.name).gated) == ["dense", "sparse_moe"]


def test_rows_training_an_alternative_reading_are_reported_and_do_not_gate():
    # table1's [[sensitivity]] rows: the reading the artifact did not choose may well not learn (PyTorch's
    # default init on the depthwise stack, tools/investigate/FINDINGS.md); the check shows it, verify-all goes on.
    table1 = find_manifest("table1")
    result = _result(
        "table1",
        {
            "dw_h512_dense": {0: 0.9, 1: 0.91},
            "dw_h512_dense__torch_init": {0: 0.1, 1: 0.11},
            "std_h512_moe__literal_capacity": {0: 0.85, 1: 0.8},
        },
        chance=0.1,
    )
    checks = {c.rows[0]: c for c in learning_checks([(table1, result)])}
    torch_init = checks["table1/dw_h512_dense__torch_init"]
    assert not torch_init.learned and not torch_init.failed and torch_init.reading == "conv-init/torch_init"
    assert torch_init.status() == (
        "did not learn under the alternative reading conv-init/torch_init: below chance + 30 points"
    )
    assert checks["table1/std_h512_moe__literal_capacity"].learned
    line = summary_line(list(checks.values()))
    assert "1 / 1 dense and sparse-MoE configurations" in line and "FAILED" not in line
    assert "under alternative readings 1 / 2 (did not learn: table1/dw_h512_dense__torch_init)" in line


def test_the_learning_table_shows_per_gate_whether_the_k1_router_moved_and_the_k_reversal_sign():
    table5 = find_manifest("table5")
    result = _result("table5", {r: {0: 0.8, 1: 0.8} for r in ("dense", "k1_moe", "k1_moe__switch_gate")}, 0.001)
    moved = {
        row_metric("k1_moe", "routers_moved"): {0: 0.0, 1: 0.0},
        row_metric("k1_moe", "router_shift"): {0: 0.0, 1: 0.0},
        row_metric("k1_moe__switch_gate", "routers_moved"): {0: 1.0, 1: 1.0},
        row_metric("k1_moe__switch_gate", "router_shift"): {0: 0.031, 1: 0.029},
    }
    result = dataclasses.replace(result, measured=result.measured.with_metrics(moved))
    checks = {c.rows[0]: c for c in learning_checks([(table5, result)])}
    fixed, switch, dense = checks["table5/k1_moe"], checks["table5/k1_moe__switch_gate"], checks["table5/dense"]
    assert fixed.router_status() == "no: every layer's router is exactly at its initialisation, on every seed"
    assert switch.router_status() == (
        "yes: every layer's router, on every seed (largest relative shift per seed 0.031, 0.029)"
    )
    assert dense.router_status() == "" and switch.reading == "moe-conv-gate/switch_gate"
    text = render_learning([fixed, switch], ["bb_moe_k_reversal (k=2 vs k=1): the sign flips under 'Switch'"])
    assert "| learned | no: every layer's router is exactly at its initialisation, on every seed |" in text
    assert "[The gate of a MoEConv2d layer: Switch: the selected expert's probability under all E]" in text
    assert text.endswith("- bb_moe_k_reversal (k=2 vs k=1): the sign flips under 'Switch'")


def test_rows_after_two_that_share_runs_keep_their_own_collapse_claims():
    # Merging two rows' line must not touch the manifest's collapse claims the later rows read.
    table8 = find_manifest("table8")
    shared = {"c100_dense": "abc", "c100_per_sample_soft": "abc"}
    accuracies = {r: {0: 0.6, 1: 0.6} for r in ("c100_dense", "c100_per_sample_soft", "c100_soft", "imagenet_dense")}
    checks = learning_checks([(table8, _result("table8", accuracies, 0.01, hashes=shared))])
    assert [c.rows for c in checks] == [
        ("table8/c100_dense", "table8/c100_per_sample_soft"),
        ("table8/c100_soft",),
        ("table8/imagenet_dense",),
    ]
    alone = {c.rows[0]: c for c in learning_checks([(table8, _result("table8", accuracies, 0.01))])}
    assert checks[1].collapse == alone["table8/c100_soft"].collapse != ()
    assert checks[0].collapse == alone["table8/c100_dense"].collapse + alone["table8/c100_per_sample_soft"].collapse

"""repro.bench.dense_twin: which row is a routed backbone's dense twin, the check that follows it, and its ratio."""

import pytest

from repro.bench import dense_twin as dt
from repro.bench import gpu
from repro.bench.gpu_calibration import Check, read_calibration
from repro.plan.manifest import load_all
from inline_manifests import inline_manifest


def _manifest(rows, comparisons):
    return inline_manifest(
        {
            "id": "t",
            "title": "t",
            "paper_ref": "test",
            "description": "test",
            "profiles": {"full": {"description": "f", "evidence": "paper"}},
            "rows": [
                {"id": i, "label": i, "dataset": d, "measures": ["flops", "accuracy"], "backbone": b, "head": h}
                for i, d, b, h in rows
            ],
            "comparisons": [
                {"id": f"c{k}", "label": "c", "row": r, "baseline": b} for k, (r, b) in enumerate(comparisons)
            ],
        },
        "t",
    )


LINEAR = {"name": "dense", "hidden": []}
R18 = {"name": "resnet18"}
MOE = {"name": "resnet18_moeconv", "top_k": 2}


def test_table5s_routed_backbone_has_its_frozen_resnet18_as_twin_and_no_other_table_has_one():
    twins = {}
    for m in load_all():
        for r in m.rows:
            if (t := dt.dense_twin(m, r)) is not None and r.role == "main":
                twins[(m.id, r.id)] = t.dense.id
    assert twins == {("table5", "k2_moe"): "dense", ("table5", "k1_moe"): "dense"}
    t5 = next(m for m in load_all() if m.id == "table5")
    twin = dt.dense_twin(t5, next(r for r in t5.rows if r.id == "k2_moe"))
    assert twin.name == "dense_twin/imagenet/table5.dense"
    assert twin.dense.backbone.params["frozen"] == ("conv1", "bn1", "layer1", "layer2")


def test_a_baseline_with_another_head_or_dataset_is_no_twin():
    m = _manifest(
        [
            ("moe", "imagenet", MOE, LINEAR),
            ("head", "imagenet", R18, {"name": "soft_moe"}),
            ("other", "cifar10", {"name": "cifar_standard"}, LINEAR),
        ],
        [("moe", "head"), ("moe", "other")],
    )
    assert dt.dense_twin(m, m.rows[0]) is None


def _routed(rate, status="passed"):
    return Check("train/imagenet/t.moe", "train", status, "", 1.0, {"images_per_s": rate} if rate else {})


@pytest.mark.parametrize(
    "device, dry_run, rate, judged, error",
    [
        ("cuda", False, 600.0, True, ""),  # 0.6x: the goal, met
        (
            "cuda",
            False,
            100.0,
            True,
            "train/imagenet/t.moe at 0.10x its dense twin's images/s (100 against 1,000); goal >= 0.6x",
        ),
        ("cpu", True, 100.0, False, ""),  # a dry run reports the ratio, unjudged
        ("cuda", True, 100.0, False, ""),
    ],
)
def test_the_ratio_is_judged_on_cuda_at_full_size_only(device, dry_run, rate, judged, error):
    result, got = dt.twin_result({"images_per_s": 1000.0}, _routed(rate), device, dry_run)
    assert result["ratio"] == pytest.approx(rate / 1000.0) and result["judged"] is judged
    assert result["routed_images_per_s"] == rate and result["goal"] == dt.GOAL and got == error


def test_a_routed_check_that_measured_nothing_gives_no_ratio_and_says_why():
    result, error = dt.twin_result({"images_per_s": 1000.0}, _routed(None, "failed"), "cuda", False)
    assert result["ratio"] is None and error == "train/imagenet/t.moe measured no images/s (failed): no ratio"
    line = dt.ratio_line({"name": "dense_twin/x", "error": error, "result": result})
    assert line == f"dense_twin/x: no ratio ({error})"


def test_the_ratio_line_names_the_paths_the_routed_layers_ran():
    paths = {
        "layer3.0.conv1": {"64x128x28x28": "sorted"},
        "layer3.0.conv2": {"64x256x14x14": "sorted", "1x256x14x14": "mixed"},  # a single-sample forward too
        "layer4.0.conv1": {"64x256x14x14": "gate-mm"},
    }
    assert dt.paths_text(paths) == "sorted x2, gate-mm x1, mixed x1" and dt.paths_text({}) == ""
    routed = Check("train/imagenet/t.moe", "train", "passed", "", 1.0, {"images_per_s": 700.0, "moe_conv_paths": paths})
    result, error = dt.twin_result({"images_per_s": 1000.0}, routed, "cuda", False)
    assert error == "" and result["routed_paths"] == "sorted x2, gate-mm x1, mixed x1"
    assert dt.ratio_line({"name": "dense_twin/x", "error": "", "result": result}) == (
        "train/imagenet/t.moe / its dense twin: 0.70x (goal >= 0.6x on a GPU: pass); "
        "MoEConv2d paths: sorted x2, gate-mm x1, mixed x1"
    )


def test_the_twin_check_runs_right_after_its_routed_model_with_its_settings(tmp_path, monkeypatch):
    m = _manifest([("dense", "imagenet", R18, LINEAR), ("moe", "imagenet", MOE, LINEAR)], [("moe", "dense")])
    runs = {r.row: r.cfg for r in gpu.paper_plans([m])[0].runs if r.seed == 0}
    planned = [gpu.Planned("train/imagenet/t.moe", m.rows[1], runs["moe"], {"t": "moe"}, 2.0)]
    trained, configs = [], []

    def train(p, settings, device, run_settings):
        trained.append((p.row.id, p.manifests, settings))
        configs.append(p.cfg)
        return {"images_per_s": {"moe": 250.0, "dense": 1000.0}[p.row.id], "train_macs_per_s": 1.0}, ""

    monkeypatch.setattr(gpu, "plan_training", lambda manifests, failures=None: planned)
    monkeypatch.setattr(gpu, "expert_choice_rows", lambda manifests: [])
    monkeypatch.setattr(gpu, "train_check", train)
    monkeypatch.setattr("repro.bench.kill_resume.run_kill_resume", lambda device, timeout, engine: {})
    fed = []

    def input_check(cfg, check, settings, device, dry_run, run_settings):
        fed.append((cfg.dataset, check))
        return {"chosen": None}, ""

    monkeypatch.setattr(gpu, "input_check", input_check)
    lines = []
    gpu.run_gpu_check("cpu", gpu.DRY_RUN, tmp_path / "gpu.json", [m], dry_run=True, log=lines.append)
    cal = read_calibration(tmp_path / "gpu.json")
    assert [c.name for c in cal.checks] == [
        "train/imagenet/t.moe",
        "dense_twin/imagenet/t.dense",
        "input_path/imagenet",
        "kill_resume",
    ]
    assert [(row, manifests) for row, manifests, _ in trained] == [("moe", {"t": "moe"}), ("dense", {})]
    assert trained[0][2] is trained[1][2] is gpu.DRY_RUN  # the same batch, precision and compilation
    assert configs == [runs["moe"], runs["dense"]]  # each its own run, as the table's plan holds it
    # the input paths feed the fastest training check's model
    assert fed == [("imagenet", "train/imagenet/t.moe")] and cal.check("input_path/imagenet").result == {"chosen": None}
    twin = cal.check("dense_twin/imagenet/t.dense")
    assert twin.status == "passed" and twin.result["ratio"] == 0.25 and twin.result["row"] == "t.dense"
    assert cal.manifests == {"t": {"row": "moe", "check": "train/imagenet/t.moe", "train_macs": 2.0}}
    assert dt.ratio_line(twin.to_dict()) == (
        "train/imagenet/t.moe / its dense twin: 0.25x (goal >= 0.6x on a GPU: not judged off a GPU at full size)"
    )

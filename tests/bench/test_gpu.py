"""`repro bench gpu`: which model each table trains, the run config, and a sequence that records failures and goes on.

The end-to-end --dry-run (slow) runs every real check at toy size on this CPU.
"""

import json
import os
import subprocess
import sys

import pytest
import torch

from checkout import REPO_ROOT
from repro.bench import gpu
from repro.bench.gpu_calibration import read_calibration
from repro.bench.dense_twin import paths_text
from inline_manifests import inline_manifest
from repro.measure.flop_check import row_flops

CPU = torch.device("cpu")


def _manifest(ident, rows, measures=("flops", "accuracy")):
    return inline_manifest(
        {
            "id": ident,
            "title": ident,
            "paper_ref": "test",
            "description": "test",
            "profiles": {
                "smoke": {"description": "s", "evidence": "pipeline"},
                "full": {"description": "f", "evidence": "paper"},
            },
            "rows": [
                {"id": i, "label": i, "dataset": d, "measures": list(measures), "backbone": b, "head": h}
                for i, d, b, h in rows
            ],
        },
        ident,
    )


def _run(manifest):
    """The first row's paper-protocol run, seed 0, as the table's plan holds it."""
    return gpu.paper_plans([manifest])[0].runs[0].cfg


STD = {"name": "cifar_standard"}
DENSE = {"name": "dense", "hidden": [1024, 256]}
WIDE_MOE = {"name": "sparse_moe", "expert_hidden": 2048}


@pytest.mark.slow  # counts four models' FLOPs
def test_each_table_trains_its_heaviest_row_and_tables_sharing_it_share_the_check():
    a = _manifest(
        "a",
        [
            ("dense", "cifar10", STD, DENSE),
            ("wide", "cifar10", STD, WIDE_MOE),
            ("small", "cifar10", {"name": "cifar_depthwise", "width": 0.72}, DENSE),
        ],
    )
    b = _manifest("b", [("same_as_wide", "cifar10", STD, WIDE_MOE)])
    flops_only = _manifest("c", [("x", "cifar10", STD, {"name": "dense", "hidden": [4096]})], measures=("flops",))
    c100 = _manifest("d", [("c100", "cifar100", STD, DENSE)])
    plan = gpu.plan_training(gpu.paper_plans([a, b, flops_only, c100]))
    assert [p.manifests for p in plan] == [{"a": "wide", "b": "same_as_wide"}, {"d": "c100"}]
    for p in plan:  # 3 x forward MACs x the recipe's images x epochs (CIFAR: 50,000 images, 50 epochs)
        assert p.train_macs == 3 * row_flops(p.row).total * 50_000 * 50
    assert plan[0].name == "train/cifar10/a.wide"
    runs = {p.row: p.cfg for p in gpu.paper_plans([a])[0].runs if p.seed == 0}
    assert {r.id: gpu.training_macs(r, runs[r.id]) for r in a.rows}["wide"] == max(
        gpu.training_macs(r, runs[r.id]) for r in a.rows
    )


@pytest.mark.slow  # counts three models four ways
def test_without_fvcore_the_torch_count_stands_in_and_equals_the_checked_count(monkeypatch):
    from repro.measure.flop_check import row_key

    m = _manifest(
        "a",
        [
            ("dense", "cifar10", STD, DENSE),
            ("moe", "cifar100", STD, WIDE_MOE),
            ("dw", "cifar10", {"name": "cifar_depthwise", "width": 0.72}, {"name": "soft_moe"}),
        ],
    )
    for row in m.rows:
        f = row_flops(row)
        assert gpu._torch_macs(row_key(row))[:2] == (f.backbone, f.head) and f.backbone + f.head == f.total

    def no_fvcore(row):
        raise ModuleNotFoundError("No module named 'fvcore'")

    monkeypatch.setattr("repro.measure.flop_check.row_flops", no_fvcore)
    assert gpu.forward_macs(m.rows[0]) == (
        row_flops(m.rows[0]).backbone,
        row_flops(m.rows[0]).head,
        "torch FlopCounterMode / 2 (no fvcore)",
    )


def test_the_check_config_is_the_paper_run_in_bf16_with_random_weights():
    m = _manifest("i", [("r18", "imagenet", {"name": "resnet18"}, DENSE)])
    planned = gpu.Planned("train/x", m.rows[0], _run(m), {"i": "r18"}, 1.0)
    cfg = gpu.check_config(planned, gpu.FULL)
    assert (cfg.batch_size, cfg.image_size, cfg.epochs, cfg.optimizer) == (256, 224, 30, "sgd")  # Section 4.1
    assert cfg.bf16 and not cfg.pretrained and cfg.backbone_lr_scale == 0.1  # the pretrained recipe's lr split
    toy = gpu.check_config(planned, gpu.DRY_RUN)
    assert (toy.batch_size, toy.image_size) == (4, 16)
    assert gpu.paper_profile(m).evidence == "paper"


def test_synthetic_batches_cycle_two_resident_batches_in_the_engine_layout():
    m = _manifest("i", [("c", "cifar100", STD, DENSE)])
    cfg = gpu.check_config(gpu.Planned("t", m.rows[0], _run(m), {}, 1.0), gpu.DRY_RUN)
    batches = gpu.SyntheticBatches(cfg, CPU, channels_last=True)
    batches.steps = 5
    seen = list(batches)
    assert len(batches) == 5 and len(seen) == 5 and seen[0][0] is seen[2][0] is seen[4][0]
    x, y = seen[1]
    assert x.shape == (4, 3, 16, 16) and x.is_contiguous(memory_format=torch.channels_last)
    assert y.dtype == torch.int64 and 0 <= int(y.min()) and int(y.max()) < 100


def _fake_sequence(monkeypatch):
    m = _manifest("a", [("wide", "cifar10", STD, WIDE_MOE)])
    planned = [
        gpu.Planned("train/one", m.rows[0], _run(m), {"a": "wide", "b": "w"}, 2.0),
        gpu.Planned("train/two", m.rows[0], _run(m), {"c": "wide"}, 1.0),
    ]
    monkeypatch.setattr(gpu, "plan_training", lambda manifests, failures=None: planned)
    monkeypatch.setattr(gpu, "expert_choice_rows", lambda manifests: [("a", m.rows[0])])

    def ec_fails(row, device):
        raise RuntimeError("index_add_(): self (BFloat16) and source (Float)\nmust have the same scalar type")

    def train(p, s, device, run_settings):
        if p.name == "train/two":
            raise torch.OutOfMemoryError("CUDA out of memory")
        return {"images_per_s": 10.0, "train_macs_per_s": 5.0, "peak_memory_bytes": 7}, ""

    monkeypatch.setattr(gpu, "expert_choice_check", ec_fails)
    monkeypatch.setattr(gpu, "train_check", train)
    monkeypatch.setattr(
        "repro.bench.kill_resume.run_kill_resume", lambda device, timeout, engine: {"resumed_from_epoch": 1}
    )
    return [m]


def test_a_failing_check_is_recorded_with_its_error_and_the_others_still_run(tmp_path, monkeypatch):
    manifests, out, lines = _fake_sequence(monkeypatch), tmp_path / "gpu.json", []
    doc = gpu.run_gpu_check("cpu", gpu.DRY_RUN, out, manifests, dry_run=True, log=lines.append)
    cal = read_calibration(out)
    assert [(c.name, c.status) for c in cal.checks] == [
        ("expert_choice_bf16/cifar10/a.wide", "failed"),
        ("train/one", "passed"),
        ("train/two", "failed"),
        ("kill_resume", "passed"),
    ]
    ec, two = cal.check("expert_choice_bf16/cifar10/a.wide"), cal.check("train/two")
    assert ec.error.startswith("RuntimeError: index_add_(): self (BFloat16) and source (Float) must have the same")
    assert "(at test_gpu.py:" in ec.error and two.error.startswith("OutOfMemoryError: CUDA out of memory")
    assert cal.images_per_s("a") == cal.images_per_s("b") == 10.0 and cal.images_per_s("c") is None
    assert cal.manifests["a"] == {"row": "wide", "check": "train/one", "train_macs": 2.0}
    assert cal.dry_run and doc["device"]["type"] == "cpu" and len(lines) == 4


def test_checks_past_the_budget_are_skipped_and_an_interrupted_file_says_not_reached(tmp_path, monkeypatch):
    manifests, out = _fake_sequence(monkeypatch), tmp_path / "gpu.json"
    from dataclasses import replace

    gpu.run_gpu_check("cpu", replace(gpu.DRY_RUN, budget_s=0.0), out, manifests, dry_run=True, log=lambda _: None)
    cal = read_calibration(out)
    assert {c.status for c in cal.checks} == {"skipped"} and "time budget of 0 s spent" in cal.checks[0].error

    def stop(row, device):
        raise KeyboardInterrupt  # the device's time limit, as far as the file can tell

    monkeypatch.setattr(gpu, "expert_choice_check", stop)
    with pytest.raises(KeyboardInterrupt):
        gpu.run_gpu_check("cpu", gpu.DRY_RUN, out, manifests, dry_run=True, log=lambda _: None)
    cal = read_calibration(out)
    assert {c.status for c in cal.checks} == {"skipped"} and cal.checks[-1].error.startswith("not reached")


@pytest.mark.slow  # spawns the CLI, which trains seven models, two kill/resume children and the EC heads
def test_dry_run_end_to_end(tmp_path):
    out = tmp_path / "gpu.json"
    # As an evaluator runs it: the suite's checkpoint-every-epoch setting (conftest) is not inherited, so the
    # kill/resume child must ask for its own checkpoints.
    env = {k: v for k, v in os.environ.items() if k != "REPRO_CHECKPOINT_SECONDS"} | {"OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "repro", "bench", "gpu", "--dry-run", "--out", str(out)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    cal = read_calibration(out)
    assert cal.dry_run and cal.device_type == "cpu"
    assert proc.returncode == 0 and not cal.failed, ([c.error for c in cal.failed], proc.stdout[-2000:])
    kinds = [c.kind for c in cal.checks]
    assert kinds.count("kill_resume") == 1 and kinds.count("expert_choice_bf16") >= 1
    assert all(c.status in ("passed", "failed") for c in cal.checks)  # nothing skipped or unreached
    assert all(c.error for c in cal.failed) and all(not c.error for c in cal.checks if c.status == "passed")
    assert cal.check("kill_resume").status == "passed", cal.check("kill_resume").error
    kr = cal.check("kill_resume").result
    assert kr["resumed_from_epoch"] == 1 and kr["matches_uninterrupted"] and kr["exact_required"]
    train = [c for c in cal.checks if c.kind == "train"]  # every one passed (no check failed, above)
    from repro.plan.manifest import load_all

    trained = {m.id for m in load_all() if any("accuracy" in r.measures for r in m.rows)}
    assert set(cal.manifests) == trained and {"table1", "table5", "ext_routers"} <= trained  # every trained table
    for c in train:
        r = c.result
        assert r["steps"] == 1
        assert (r["batch_size"], r["image_size"], r["precision"]) == (4, min(16, r["image_size"]), "bf16")
        assert r["images_per_s"] > 0
        assert r["train_macs_per_s"] == pytest.approx(3 * r["forward_macs"] * r["images_per_s"])
    twin = cal.check("dense_twin/imagenet/table5.dense")  # right after the routed ResNet-18, the same settings
    names = [c.name for c in cal.checks]
    assert names.index(twin.name) == names.index("train/imagenet/table5.k2_moe") + 1
    assert twin.result["routed_check"] == "train/imagenet/table5.k2_moe" and not twin.result["judged"]
    assert twin.result["ratio"] == pytest.approx(twin.result["routed_images_per_s"] / twin.result["images_per_s"])
    assert (twin.result["batch_size"], twin.result["image_size"]) == (4, 16)
    routed = cal.check("train/imagenet/table5.k2_moe").result
    assert len(routed["moe_conv_paths"]) == 8  # each of the eight MoEConv2d layers names the exact path it ran
    assert twin.result["routed_paths"] == paths_text(routed["moe_conv_paths"]) != ""
    assert "moe_conv_paths" not in twin.result  # the dense twin has no routed layer
    fed = cal.check("input_path/imagenet").result
    assert fed["chosen"] == "decode_cpu" and fed["paths"]["decode_cuda"]["reason"] == "no CUDA"
    for c in cal.checks:
        if c.kind == "expert_choice_bf16" and c.status == "passed":
            assert c.result["agreement_with_fp32"] >= 0.9
    assert json.loads(out.read_text())["settings"]["batch_cap"] == 4


def test_a_check_running_into_the_deadline_is_stopped_and_later_ones_are_skipped(tmp_path, monkeypatch):
    import time
    from dataclasses import replace

    manifests, out = _fake_sequence(monkeypatch), tmp_path / "gpu.json"
    monkeypatch.setattr(gpu, "expert_choice_check", lambda row, device: time.sleep(30))
    started = time.perf_counter()
    gpu.run_gpu_check("cpu", replace(gpu.DRY_RUN, deadline_s=0.5), out, manifests, dry_run=True, log=lambda _: None)
    assert time.perf_counter() - started < 20
    cal = read_calibration(out)
    first, *rest = cal.checks
    assert first.status == "failed" and "CheckTimeout: stopped at the command's deadline" in first.error
    assert [c.status for c in rest] == ["skipped"] * 3 and "time budget of 0 s" in rest[0].error


def test_a_manifest_whose_rows_cannot_be_counted_is_a_failed_check_not_a_crash(tmp_path, monkeypatch):
    manifests, out = _fake_sequence(monkeypatch), tmp_path / "gpu.json"

    def plan(ms, failures):
        failures["broken"] = ValueError("no FLOP rule for module Foo")
        return []

    monkeypatch.setattr(gpu, "plan_training", plan)
    gpu.run_gpu_check("cpu", gpu.DRY_RUN, out, manifests, dry_run=True, log=lambda _: None)
    cal = read_calibration(out)
    broken = cal.check("train/broken")
    assert broken.status == "failed" and broken.error.startswith("ValueError: no FLOP rule for module Foo")
    assert cal.manifests["broken"] == {"row": None, "check": "train/broken", "train_macs": None}
    assert cal.check("kill_resume").status == "passed" and cal.images_per_s("broken") is None


ONE_MOE_ROW = """
id = "one"
title = "one routed row"
paper_ref = "test"
description = "test"
seeds = 1

[[rows]]
id = "moe"
label = "moe"
dataset = "cifar10"
measures = ["accuracy"]
backbone = { name = "cifar_standard" }
head = { name = "sparse_moe", expert_hidden = 32 }
"""


def test_the_engine_switches_of_the_environment_reach_every_model_the_bench_builds(tmp_path, monkeypatch, one_thread):
    """Settings are read once where the command starts: REPRO_CHANNELS_LAST=0 and REPRO_DISPATCH=batched (on a
    CPU, auto gives channels-last and the loop) hold in the training check and in the kill/resume child's run."""
    from typer.testing import CliRunner

    from repro.cli import app
    from repro.core.settings import EngineSwitches

    (tmp_path / "manifests").mkdir()
    (tmp_path / "manifests" / "one.toml").write_text(ONE_MOE_ROW)
    engines = []
    monkeypatch.setattr(
        "repro.bench.kill_resume.run_kill_resume",
        lambda device, timeout, engine: engines.append(engine) or {"resumed_from_epoch": 1},
    )
    out = tmp_path / "gpu.json"
    result = CliRunner().invoke(
        app,
        ["bench", "gpu", "--dry-run", "--out", str(out)],
        env={
            "REPRO_MANIFESTS": str(tmp_path / "manifests"),
            "REPRO_CHANNELS_LAST": "0",
            "REPRO_DISPATCH": "batched",
            "COLUMNS": "200",
        },
    )
    assert result.exit_code == 0, result.output
    train = read_calibration(out).check("train/cifar10/one.moe")
    assert (train.result["channels_last"], train.result["dispatch"], train.result["compiled"]) == (
        False,
        "batched",
        False,
    )
    assert engines == [EngineSwitches(channels_last=False, dispatch="batched")]


def test_the_kill_resume_child_trains_under_the_engine_switches_it_is_given(tmp_path, monkeypatch):
    from repro.bench import kill_resume
    from repro.core.settings import EngineSwitches

    engine = EngineSwitches(channels_last=False, compile=False, small_maps=True, dispatch="loop")
    config = tmp_path / "config.json"
    config.write_text(kill_resume.config_text(kill_resume.tiny_config(), engine))
    ran = []
    monkeypatch.setattr(
        "repro.execution.records.run_one",
        lambda request, results, device, data_dir, events=None, settings=None: ran.append((request.cfg, settings)),
    )
    kill_resume._child(config, tmp_path / "results", "cpu", hold=False, reference=None)
    ((cfg, settings),) = ran
    assert cfg == kill_resume.tiny_config() and settings.engine == engine and settings.checkpoint_seconds == 0.0

"""repro.cost.gpu_reference: the shipped H200 calibration is the build of the lease's measurements, prices a GPU run's
fixed costs (data preparation, compilation) beside its epochs, and so reproduces what Table 2 took at full size."""

import json

import pytest

from checkout import REPO_ROOT, tool
from repro.cost import calibration as cal
from repro.cost import estimate as est
from repro.cost import gpu_reference
from repro.cost.wall_time import command_time
from repro.data import input_choice
from repro.plan.manifest import load_all
from repro.plan.run_config import planned_runs
from repro.plan.table_plan import build_plan, build_plans
from inline_manifests import inline_manifest

WRITER = tool("write_gpu_reference")  # tools/write_gpu_reference.py: the shipped file's writer

LEASE = REPO_ROOT / "docs" / "measurements" / "2026-12-04-h200"
DEVICE_PROFILES = REPO_ROOT / "tools" / "device" / "profiles.toml"
GOAL = 0.30


@pytest.fixture
def no_calibration(monkeypatch, tmp_path):
    monkeypatch.setattr(cal, "local_gpu_name", lambda *a: None)  # priced as no particular GPU, whatever this host has
    return tmp_path / "cache"


def test_the_shipped_calibration_reproduces_table2_at_full_synthetic(no_calibration):
    """`repro table2 --profile full_synthetic` took 154 s on the H200 (docs/device-check.md); the estimate was ~9 s
    while a run's data preparation and compilation went unpriced."""
    timings = json.loads((LEASE / "table2_full_synthetic_timings.json").read_text())["commands"]["run table2"]
    measured = sum(p["wall_s"] for p in timings["phases"] if p["table"] == "table2")
    table2 = next(m for m in load_all(profiles_file=DEVICE_PROFILES) if m.id == "table2")
    model = est.CostModel(cache=no_calibration)
    estimate = command_time(build_plans([table2], "full_synthetic"), model, verify_all=False)
    assert abs(estimate.table("table2") / measured - 1) <= GOAL, (estimate.table("table2"), measured)
    assert estimate.origin("table2") == "H200 ref. 2026-12-04"


def test_the_shipped_files_are_the_build_of_the_newest_measurement_of_each_gpu():
    configs = {
        p.cfg.hash: p.cfg
        for m in load_all(profiles_file=DEVICE_PROFILES)
        for prof in m.profiles.values()
        for p in planned_runs(m, prof)
    }
    built = WRITER.build_reference(REPO_ROOT / "docs" / "measurements", configs)
    assert json.loads(json.dumps(built)) == json.loads(gpu_reference.REFERENCE_FILE.read_text()), (
        "repro/cost/gpu_reference.json is out of date: run tools/write_gpu_reference.py"
    )
    assert WRITER.input_choices(built) == json.loads(input_choice.FILE.read_text()), (
        "repro/data/input_paths.json is out of date: run tools/write_gpu_reference.py"
    )
    shipped = gpu_reference.load()
    assert shipped.device == "NVIDIA H200" and len(shipped.images_per_s) == 10
    assert shipped.measured_in == "docs/measurements/2026-12-04-h200" and shipped.inputs == {}  # not measured there
    # the CIFAR models skipped by the first call and measured by the second are in
    assert shipped.images_per_s["table2"] == pytest.approx(32967.8, rel=1e-4)
    # compilation: the first check of a backbone less its 20 warm-up steps (cifar_standard: 15.5 s, then 0.6 s)
    standard = gpu_reference.backbone_key({"name": "cifar_standard"})
    assert shipped.compile_s[standard] == pytest.approx(15.53 - 20 * 128 / 21946.5, abs=0.01)


def _bench_doc(data_s_per_value=1e-8):
    def check(name, backbone, warmup, images_per_s, status="passed"):
        return {
            "name": name,
            "kind": "train",
            "status": status,
            "error": "",
            "seconds": 1.0,
            "result": {}
            if status == "skipped"
            else {
                "backbone": backbone,
                "batch_size": 100,
                "warmup_seconds": warmup,
                "images_per_s": images_per_s,
                "train_macs_per_s": 1e13,
            },
        }

    doc = {
        "schema": gpu_reference.SCHEMA,
        "dry_run": False,
        "device": {"name": "NVIDIA Test GPU"},
        "started": "2026-12-05T10:00:00+00:00",
        "settings": {"warmup_steps": 10},
        "checks": [
            check("a", {"name": "cifar_standard", "params": {}}, 11.0, 1000.0),
            check("b", {"name": "cifar_standard", "params": {}}, 0.5, 500.0),  # its graphs compiled by "a"
            check("c", {"name": "cifar_depthwise", "params": {}}, 21.0, 1000.0),
            check("d", {"name": "resnet18", "params": {}}, 0.0, 1.0, status="skipped"),
        ],
        "manifests": {"t": {"check": "b"}, "u": {"check": "d"}},
    }
    if data_s_per_value is not None:
        doc["data_preparation"] = {"seconds_per_value": data_s_per_value}
    return doc


def _gpu_manifest():
    rows = [
        ("s1", "cifar10", "cifar_standard"),
        ("s2", "cifar100", "cifar_standard"),
        ("d1", "cifar10", "cifar_depthwise"),
    ]
    return inline_manifest(
        {
            "id": "t",
            "title": "T",
            "paper_ref": "Table 1",
            "description": "d",
            "paper_table": "table1",
            "profiles": {
                "full": {
                    "description": "f",
                    "evidence": "pipeline",
                    "device": "cuda",
                    "seeds": 1,
                    "epochs": 2,
                    "data": "synthetic",
                    "train_samples": 1000,
                    "test_samples": 300,
                }
            },
            "rows": [
                {
                    "id": i,
                    "label": i,
                    "dataset": d,
                    "measures": ["flops", "accuracy"],
                    "backbone": {"name": b},
                    "head": {"name": "dense"},
                }
                for i, d, b in rows
            ],
        },
        "t.toml",
    )


def test_a_gpu_runs_fixed_costs_by_hand(tmp_path, monkeypatch, no_calibration):
    """Data preparation per run, compilation once per backbone and process, epochs at the measured images/s."""
    monkeypatch.setattr(est, "estimate_macs", lambda *a: {"backbone_macs": 1e6, "head_macs": 1e5})
    path = tmp_path / "bench_gpu.json"
    path.write_text(json.dumps(_bench_doc()))
    m = _gpu_manifest()
    model = est.CostModel(cache=no_calibration, calibration=path)
    device = model.device(m.profiles["full"])
    assert device.origin == "calibration file" and device.images_per_s == {"t": 500.0}
    data = (1000 + 300) * 3 * 32 * 32 * 1e-8  # per run
    epochs = 2 * (1000 + 300 / 3) / 500.0  # per run
    compile_standard, compile_dw = 11.0 - 10 * 100 / 1000.0, 21.0 - 10 * 100 / 1000.0
    cost = model.cost([build_plan(m, "full")])
    assert cost.device_seconds == pytest.approx(3 * (data + epochs) + compile_standard + compile_dw)
    assert cost.wall_seconds == pytest.approx(3 * (data + epochs) + compile_standard + compile_dw)  # one GPU
    two = est.CostModel(est.Executor(gpus=2), calibration=path, cache=no_calibration).cost([build_plan(m, "full")])
    assert two.device_seconds == pytest.approx(3 * (data + epochs) + 2 * compile_standard + compile_dw)
    slurm = est.CostModel(est.Executor("slurm"), calibration=path, cache=no_calibration).cost([build_plan(m, "full")])
    assert slurm.wall_seconds == pytest.approx(data + epochs + compile_dw)  # a task a run, each compiles its own
    # a backbone the file did not train compiles for the median of those it did
    assert device.compile_seconds({"name": "resnet18", "params": {}}) == pytest.approx(
        (compile_standard + compile_dw) / 2
    )


def test_a_calibration_without_data_preparation_borrows_the_shipped_one(tmp_path, no_calibration):
    path = tmp_path / "bench_gpu.json"
    path.write_text(json.dumps(_bench_doc(data_s_per_value=None)))
    device = cal.gpu_throughput(path)
    assert device.data_s_per_value == gpu_reference.load().data_s_per_value
    shipped = gpu_reference.load()
    assert shipped.device not in device.source.split(";")[0]  # the calibration's own GPU is another
    assert f"data preparation: the shipped {shipped.device} reference's" in device.source


@pytest.mark.parametrize(
    "change, key",
    [
        (lambda d: d.update(dry_run=True), "'dry_run'"),
        (lambda d: d["checks"][0]["result"].pop("images_per_s"), "'checks[0].result.images_per_s'"),
        (lambda d: d["settings"].pop("warmup_steps"), "'settings.warmup_steps'"),
        (lambda d: d.update(schema="other"), "'schema'"),
    ],
)
def test_a_bad_calibration_is_ignored_naming_the_file_and_the_key(tmp_path, capsys, no_calibration, change, key):
    doc = _bench_doc()
    change(doc)
    path = tmp_path / "bench_gpu.json"
    path.write_text(json.dumps(doc))
    device = cal.gpu_throughput(path)
    err = capsys.readouterr().err
    assert str(path) in err and key in err
    assert device.origin == "H200 ref. 2026-12-04"


def test_another_gpu_scales_the_references_rates_by_peak_not_its_fixed_costs(no_calibration):
    h200 = cal.gpu_throughput()
    a100 = cal.gpu_throughput(gpu="NVIDIA A100-SXM4-80GB")
    scale = 312 / 989
    assert a100.origin == f"H200 ref. x{scale:.2f} (A100)"
    assert a100.images_per_s["table2"] == pytest.approx(h200.images_per_s["table2"] * scale)
    assert (a100.compile_s, a100.data_s_per_value) == (h200.compile_s, h200.data_s_per_value)
    unknown = cal.gpu_throughput(gpu="Some GPU")
    assert unknown.images_per_s == h200.images_per_s and "Some GPU is not in the peak table" in unknown.source

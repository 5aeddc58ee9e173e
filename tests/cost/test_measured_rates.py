"""Priced from what was measured: a run's own model's rate, the slower of model and input path for a streamed
dataset, the newest measurement of each GPU, and `repro list`'s line saying where each rate came from."""

import json

import pytest

from checkout import tool
from repro.cost import calibration as cal
from repro.cost import estimate as est
from repro.cost import gpu_reference
from repro.cost.tables import rate_grid, rate_sources
from repro.data import input_choice
from repro.plan.run_config import planned_runs
from repro.plan.table_plan import plan_all
from inline_manifests import inline_manifest

WRITER = tool("write_gpu_reference")  # tools/write_gpu_reference.py: the shipped file's writer

R18 = {"name": "resnet18", "params": {}}
LINEAR = {"name": "dense", "params": {"hidden": []}}
MOE = {"name": "resnet18_moeconv", "params": {"top_k": 2}}


@pytest.fixture(autouse=True)
def no_gpu_here(monkeypatch, tmp_path):
    monkeypatch.setattr(cal, "local_gpu_name", lambda *a: None)
    monkeypatch.setattr(est, "estimate_macs", lambda *a: {"backbone_macs": 1e9, "head_macs": 1e6})


def _train(name, backbone, rate, kind="train"):
    return {
        "name": name,
        "kind": kind,
        "status": "passed",
        "error": "",
        "seconds": 1.0,
        "result": {
            "dataset": "imagenet",
            "backbone": backbone,
            "head": LINEAR,
            "batch_size": 256,
            "warmup_seconds": 30.0,
            "images_per_s": rate,
            "train_macs_per_s": 1e14,
        },
    }


def _input(chosen="decode_cuda", rate=400.0):
    paths = {
        p: {"status": "measured", "data_images_per_s": r, "ratio": r / 1000.0, "images_per_s": r}
        for p, r in (("decode_cpu", 250.0), ("decode_cuda", rate))
    }
    return {
        "name": "input_path/imagenet",
        "kind": "input_path",
        "status": "failed",
        "error": "not fed",
        "seconds": 9.0,
        "result": {"dataset": "imagenet", "chosen": chosen, "paths": paths},
    }


def _doc(device="NVIDIA Test GPU", inputs=True):
    checks = [
        _train("train/imagenet/t.moe", MOE, 100.0),
        _train("dense_twin/imagenet/t.dense", R18, 1000.0, "dense_twin"),
    ]
    return {
        "schema": gpu_reference.SCHEMA,
        "dry_run": False,
        "device": {"name": device},
        "settings": {"warmup_steps": 0},
        "started": "2026-12-20T10:00:00+00:00",
        "manifests": {"t": {"check": "train/imagenet/t.moe"}},
        "checks": checks + ([_input()] if inputs else []),
    }


def _manifest():
    rows = [("dense", R18), ("moe", MOE), ("k1", {"name": "resnet18_moeconv", "params": {"top_k": 1}})]
    return inline_manifest(
        {
            "id": "t",
            "title": "T",
            "paper_ref": "Table 5",
            "description": "d",
            "profiles": {
                "full": {
                    "description": "f",
                    "evidence": "paper",
                    "device": "cuda",
                    "seeds": 1,
                    "epochs": 1,
                    "data": "real",
                    "train_samples": 10_000,
                    "test_samples": 3_000,
                }
            },
            "rows": [
                {
                    "id": i,
                    "label": i,
                    "dataset": "imagenet",
                    "measures": ["flops", "accuracy"],
                    "backbone": {"name": b["name"], **b["params"]},
                    "head": {"name": "dense", "hidden": []},
                }
                for i, b in rows
            ],
        },
        "t.toml",
    )


def _seconds(model, m):
    device = model.device(m.profiles["full"])
    return {p.row: model.run_time(p.cfg, "t", device).compute_s for p in planned_runs(m, m.profiles["full"])}


def test_each_run_is_priced_at_its_own_models_rate_then_the_tables_and_no_faster_than_its_input(tmp_path):
    m = _manifest()
    images = est.CostModel(cache=tmp_path / "cache").run_work(planned_runs(m, m.profiles["full"])[0].cfg).images
    for inputs, feed in ((False, None), (True, 400.0)):
        path = tmp_path / f"bench_gpu_{inputs}.json"
        path.write_text(json.dumps(_doc(inputs=inputs)))
        seconds = _seconds(est.CostModel(calibration=path, cache=tmp_path / "cache"), m)
        rate = {"dense": 1000.0, "moe": 100.0, "k1": 100.0}  # k1: its table's heaviest row stands in
        assert seconds == pytest.approx({r: images / min(v, feed or v) for r, v in rate.items()})


def test_without_a_measured_rate_a_streamed_run_is_priced_no_faster_than_its_input(tmp_path):
    doc = _doc()
    doc["manifests"] = {}
    doc["checks"][0]["result"]["backbone"] = {"name": "other", "params": {}}
    doc["checks"][1]["result"]["backbone"] = {"name": "other2", "params": {}}
    path = tmp_path / "bench_gpu.json"
    path.write_text(json.dumps(doc))
    model, m = est.CostModel(calibration=path, cache=tmp_path / "cache"), _manifest()
    cfg = planned_runs(m, m.profiles["full"])[0].cfg
    w = model.run_work(cfg)
    assert model.run_time(cfg, "t", model.device(m.profiles["full"])).compute_s == pytest.approx(
        max(w.macs / 1e14, w.images / 400.0)
    )


def test_repro_list_says_which_check_priced_each_run_and_whether_the_input_was_measured(tmp_path):
    m = _manifest()
    lines = {}
    for inputs in (False, True):
        path = tmp_path / f"bench_gpu_{inputs}.json"
        path.write_text(json.dumps(_doc(inputs=inputs)))
        sources = rate_sources(plan_all([m]), est.CostModel(calibration=path, cache=tmp_path / "cache"))
        assert {(s.measured_by, s.runs, s.images_per_s) for s in sources} == {
            ("t.dense", 1, 1000.0),
            ("t.moe", 1, 100.0),
            ("t.moe*", 1, 100.0),
        }  # the models' rates
        assert {s.input for s in sources} == {"decode_cuda 400" if inputs else "unmeasured"}
        lines[inputs] = [" ".join(str(c) for c in row) for row in rate_grid(sources).cells]
    assert lines == {
        False: ["t 3 100-1,000 unmeasured dense (1), moe (1), moe* (1)"],
        True: ["t 3 100-1,000 decode_cuda 400 dense (1), moe (1), moe* (1)"],
    }


def test_the_newest_folder_of_each_gpu_newest_first(tmp_path):
    for name in ("2026-01-01-h200", "2026-02-01-h200", "2026-01-15-h100", "2026-03-01-a100"):
        (tmp_path / name).mkdir()
        if name != "2026-03-01-a100":  # no bench_gpu.json: not a measurement
            (tmp_path / name / "bench_gpu.json").write_text("{}")
    assert [f.name for f in WRITER.newest_folders(tmp_path)] == ["2026-02-01-h200", "2026-01-15-h100"]


def test_a_gpu_with_a_measurement_of_its_own_is_priced_by_it_unscaled(tmp_path, monkeypatch):
    h200, h100 = _doc("NVIDIA H200", inputs=False), _doc("NVIDIA H100 80GB HBM3")
    for doc, where in ((h200, "docs/measurements/2026-12-20-h200"), (h100, "docs/measurements/2026-12-01-h100")):
        doc["measured_in"] = where
    refs = tuple(gpu_reference.parse(d, tmp_path) for d in (h200, h100))
    monkeypatch.setattr(gpu_reference, "load_all", lambda path=None: refs)
    own = cal.gpu_throughput(gpu="H100")
    assert own.device == "NVIDIA H100 80GB HBM3" and own.images_per_s == {"t": 100.0} and own.inputs
    assert own.measured_in == "docs/measurements/2026-12-01-h100" and "x" not in own.origin
    scaled = cal.gpu_throughput(gpu="A100")  # no A100 measurement: the newest, scaled, its input path unmeasured
    assert scaled.device == "NVIDIA H200" and scaled.images_per_s["t"] == pytest.approx(100.0 * 312 / 989)
    assert scaled.inputs == {} and cal.gpu_throughput().device == "NVIDIA H200"


def test_the_input_path_a_gpus_check_chose_is_its_runs_default(tmp_path):
    doc = _doc("NVIDIA H200")
    doc["measured_in"] = "docs/measurements/2026-12-20-h200"
    choices = WRITER.input_choices({"references": [doc, {**_doc("NVIDIA L4", inputs=False), "measured_in": "x"}]})
    assert choices["gpus"] == {
        "NVIDIA H200": {
            "path": "decode_cuda",
            "ratio": 0.4,
            "measured": "docs/measurements/2026-12-20-h200: input_path/imagenet",
        }
    }
    path = tmp_path / "input_paths.json"
    path.write_text(json.dumps(choices))
    assert input_choice.measured_path("NVIDIA H200", path) == "decode_cuda"
    assert input_choice.measured_path("NVIDIA L4", path) is None
    path.write_text(json.dumps({"gpus": {"NVIDIA H200": {"path": "nvdec"}}}))
    with pytest.raises(
        input_choice.InputChoiceError,
        match=r"input_paths.json: key 'gpus.NVIDIA H200.path': "
        r"expected one of pil, decode_cpu, decode_cuda, got 'nvdec'",
    ):
        input_choice.measured_path("NVIDIA H200", path)

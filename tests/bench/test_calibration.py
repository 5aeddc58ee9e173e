"""The `repro bench gpu` file's schema: written documents read back; a malformed one names its file and key."""

import json

import pytest

from repro.bench.gpu_calibration import SCHEMA, CalibrationError, Check, read_calibration


def _train(name, images_per_s, macs, status="passed", memory=None):
    return Check(
        name,
        "train",
        status,
        "" if status == "passed" else "boom",
        1.0,
        {"images_per_s": images_per_s, "train_macs_per_s": macs, "peak_memory_bytes": memory},
    ).to_dict()


def _doc(**over):
    doc = {
        "schema": SCHEMA,
        "dry_run": False,
        "torch": "2.x",
        "cuda": "12.8",
        "git_commit": "abc",
        "started": "t",
        "wall_s": 3.0,
        "settings": {},
        "device": {"type": "cuda", "name": "GPU", "label": "cuda: GPU", "memory_bytes": 1, "capability": "9.0"},
        "manifests": {
            "t4": {"row": "r", "check": "train/a", "train_macs": 1e17},
            "t8": {"row": "s", "check": "train/a", "train_macs": 1e17},
            "t1": {"row": "q", "check": "train/b", "train_macs": 1e14},
        },
        "checks": [
            _train("train/a", 5000.0, 3e13, memory=2**33),
            _train("train/b", 20000.0, 1e13),
            _train("train/c", 100.0, 2e13, status="failed"),
            Check("kill_resume", "kill_resume", "failed", "RuntimeError: x", 2.0).to_dict(),
        ],
    }
    doc.update(over)
    return doc


def test_reads_back_figures_per_manifest_and_the_median_rate(tmp_path):
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(_doc()))
    cal = read_calibration(path)
    assert (cal.device_type, cal.device_name, cal.dry_run) == ("cuda", "GPU", False)
    assert cal.images_per_s("t4") == cal.images_per_s("t8") == 5000.0  # two tables, one model, one check
    assert cal.images_per_s("t1") == 20000.0 and cal.images_per_s("table9") is None
    assert cal.peak_memory_bytes("t4") == 2**33 and cal.peak_memory_bytes("t1") is None
    assert cal.train_macs_per_s() == 2e13  # median of 3e13, 1e13 and the eager 2e13
    assert [c.name for c in cal.failed] == ["train/c", "kill_resume"]
    assert cal.check("kill_resume").error == "RuntimeError: x"
    with pytest.raises(KeyError, match="no check named 'nope'"):
        cal.check("nope")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"schema": "repro.bench.gpu/0"}, "schema is 'repro.bench.gpu/0', expected 'repro.bench.gpu/1'"),
        ({"device": {"type": "cuda"}}, "'device' lacks name, label, memory_bytes, capability"),
        ({"checks": [{"name": "x", "kind": "train"}]}, r"checks\[0\] lacks status, error, seconds, result"),
        ({"checks": [Check("x", "speed", "passed").to_dict()]}, r"checks\[0\] \(x\) has kind 'speed'"),
        (
            {"manifests": {"t4": {"row": "r", "check": "train/zz", "train_macs": 1}}},
            "manifests.t4.check names 'train/zz'",
        ),
    ],
)
def test_a_malformed_file_names_the_file_and_the_key(tmp_path, change, message):
    path = tmp_path / "gpu.json"
    doc = _doc(**change)
    if "checks" in change and "manifests" not in change:
        doc["manifests"] = {}
    path.write_text(json.dumps(doc))
    with pytest.raises(CalibrationError, match=message) as err:
        read_calibration(path)
    assert str(path) in str(err.value)


def test_missing_top_level_keys_and_unreadable_files(tmp_path):
    path = tmp_path / "gpu.json"
    doc = _doc()
    del doc["checks"], doc["wall_s"]
    path.write_text(json.dumps(doc))
    with pytest.raises(CalibrationError, match="the top level lacks wall_s, checks"):
        read_calibration(path)
    path.write_text("{not json")
    with pytest.raises(CalibrationError, match="not a readable JSON file"):
        read_calibration(path)

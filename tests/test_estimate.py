"""repro.estimate: the cost model's arithmetic, its calibration cache, and shared runs counted once."""

import pytest

from repro import estimate as est
from repro.manifest import parse_manifest


def _manifest(rows):
    return parse_manifest({
        "id": "t", "title": "T", "paper_ref": "Table 1", "description": "d", "paper_table": "table1",
        "profiles": {"smoke": {"description": "s", "evidence": "pipeline", "seeds": 2, "epochs": 3,
                               "data": "synthetic", "train_samples": 256, "test_samples": 128, "batch_size": 32,
                               "max_image_size": 16, "pretrained": False},
                     "full": {"description": "f", "evidence": "paper"}},
        "rows": [{"id": i, "label": i, "dataset": "cifar10", "measures": ["flops", "accuracy"],
                  "backbone": {"name": "cifar_standard"}, "head": {"name": "dense", **h}} for i, h in rows],
    }, "t.toml")


@pytest.fixture
def fixed_device(monkeypatch):
    """A device of 1e9 MAC/s and models of 1e6 backbone + 1e5 head MACs per image at 32 px."""
    monkeypatch.setattr(est, "throughput", lambda device: 1e9)
    monkeypatch.setattr(est, "local_device", lambda: "cpu")
    monkeypatch.setattr(est, "flop_summary", lambda *a: {"backbone_macs": 1e6, "head_macs": 1e5})


def test_seconds_per_epoch_by_hand(fixed_device):
    cfg = next(iter(est.planned_runs(_manifest([("a", {})]), _manifest([("a", {})]).profiles["smoke"]))).cfg
    # 16 px: the backbone costs (16/32)^2 of its 32 px count; 3x (fwd + bwd) over 256 train, 1x over 128 test.
    macs = 1e6 * 0.25 + 1e5
    steps = 256 // 32 + 128 // 32 + 1
    assert est.seconds_per_epoch(cfg) == pytest.approx((3 * macs * 256 + macs * 128) / 1e9 + steps * 0.004)


def test_runs_shared_between_rows_are_counted_once(fixed_device):
    one = _manifest([("a", {})])
    two = _manifest([("a", {}), ("b", {})])  # the same model twice: the same two runs
    assert est.estimate_training(two, "smoke") == est.estimate_training(one, "smoke")
    assert est.estimate_training(one, "smoke")[1] == "2 runs, 6 epochs"
    other = _manifest([("a", {}), ("b", {"hidden": [64]})])
    assert est.estimate_training(other, "smoke")[1] == "4 runs, 12 epochs"


def test_throughput_is_measured_once_and_a_damaged_cache_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path))
    calls = []
    monkeypatch.setattr(est, "measure_throughput", lambda device: calls.append(device) or 2.5e9)
    est.throughput.cache_clear()
    (tmp_path / "throughput.json").write_text("{not json")
    assert est.throughput("cpu") == 2.5e9 and calls == ["cpu"]
    est.throughput.cache_clear()
    assert est.throughput("cpu") == 2.5e9 and calls == ["cpu"]  # read back from the repaired file
    est.throughput.cache_clear()


def test_duration_formats():
    assert [est.duration(s) for s in (5, 600, 9000)] == ["~5 s", "~10 min", "~2.5 h"]

"""repro.cost.disk: the datasets a profile downloads and the checkpoints its runs hold at once, by hand."""

import math

import pytest

from repro.cost import disk
from repro.cost.estimate import CostModel, Executor
from repro.data.sources import ARCHIVE_BYTES
from repro.plan.table_plan import build_plans
from inline_manifests import inline_manifest

PROFILES = {
    "smoke": {
        "description": "s",
        "evidence": "pipeline",
        "device": "cpu",
        "seeds": 1,
        "epochs": 1,
        "data": "synthetic",
        "train_samples": 64,
        "test_samples": 32,
        "batch_size": 32,
        "max_image_size": 16,
        "pretrained": False,
    },
    "full": {"description": "f", "evidence": "paper", "device": "cuda", "seeds": 3},
}


def _manifest(rows):
    return inline_manifest(
        {
            "id": "t",
            "title": "T",
            "paper_ref": "Table 1",
            "description": "d",
            "paper_table": "table1",
            "profiles": PROFILES,
            "rows": [
                {
                    "id": i,
                    "label": i,
                    "dataset": d,
                    "measures": ["accuracy"],
                    "backbone": {"name": "cifar_standard"},
                    "head": {"name": "dense", "hidden": [h]},
                }
                for i, d, h in rows
            ],
        }
    )


class Sized(CostModel):
    """Checkpoints of a known size: a run of head width h holds h x 1000 parameters (seed s adds s)."""

    def run_params(self, cfg):
        held = cfg.head["params"]["hidden"][0] * 1000 + cfg.seed
        return float(held), float(held)


def test_datasets_are_their_archives_as_published_and_the_decoded_cache(tmp_path):
    m = _manifest([("a", "cifar10", 8), ("b", "tiny_imagenet", 8)])
    d = disk.disk_space(build_plans([m], "full"), Sized(data_dir=tmp_path, cache=tmp_path / "cache"))
    by_name = {x.name: x for x in d.datasets}
    assert by_name["cifar10"].archive_bytes == ARCHIVE_BYTES["cifar-10-python.tar.gz"] == 170_498_071
    assert by_name["cifar10"].cache_bytes == 0  # CIFAR's pickles are read as stored
    # Tiny-ImageNet's 100,000 + 10,000 images decoded as uint8 3 x 64 x 64, with an int64 label each
    assert by_name["tiny_imagenet"].cache_bytes == 110_000 * (3 * 64 * 64 + 8) == 1_352_560_000
    assert disk.disk_space(build_plans([m], "smoke"), Sized(data_dir=tmp_path)).datasets == ()  # synthetic: nothing


def test_the_largest_checkpoints_held_at_once_are_counted(tmp_path):
    m = _manifest([("a", "cifar10", 8), ("b", "cifar10", 16)])
    one = disk.disk_space(
        build_plans([m], "full"), Sized(Executor(gpus=1), data_dir=tmp_path, cache=tmp_path / "cache")
    )
    assert one.at_once == 1 and one.largest_bytes == one.checkpoint_bytes == 4 * (16_000 + 2)
    four = disk.disk_space(
        build_plans([m], "full"), Sized(Executor(gpus=2, runs_per_gpu=2), data_dir=tmp_path, cache=tmp_path / "cache")
    )
    assert four.at_once == 4
    assert four.checkpoint_bytes == 4 * ((16_000 + 2) + (16_000 + 1) + 16_000 + (8_000 + 2))
    assert four.total == sum(x.total for x in four.datasets) + four.checkpoint_bytes
    # one epoch: no checkpoint is written
    assert disk.disk_space(build_plans([m], "smoke"), Sized(data_dir=tmp_path)).checkpoint_bytes == 0


def test_a_checkpoint_holds_the_model_and_two_moments_of_what_trains(tmp_path):
    from repro.models import Component, build_model

    cache = tmp_path / "cache"
    m = _manifest([("a", "cifar10", 8)])
    model = build_model("cifar10", Component("cifar_standard"), Component("dense", {"hidden": [8]}), image_size=32)
    params = sum(p.numel() for p in model.parameters())
    assert disk.disk_space(build_plans([m], "full"), CostModel(cache=cache)).largest_bytes == 4 * 3 * params
    uncounted = disk.disk_space(build_plans([m], "full"), CostModel(cached_only=True, data_dir=tmp_path, cache=cache))
    assert uncounted.uncounted == 0 and uncounted.largest_bytes == 4 * 3 * params  # now cached
    cold = disk.disk_space(build_plans([m], "full"), CostModel(cached_only=True, cache=tmp_path / "empty"))
    assert cold.uncounted == 1 and math.isnan(cold.checkpoint_bytes) and math.isnan(cold.total)


@pytest.mark.parametrize(
    "n, text", [(0, "0 B"), (170_498_071, "170.5 MB"), (154_642_401_280, "154.6 GB"), (float("nan"), "?")]
)
def test_sizes_read_in_decimal_units(n, text):
    assert disk.gigabytes(n) == text


def test_a_total_whose_checkpoints_are_not_counted_gives_the_data_and_says_more():
    """The appendix verify-all writes said "Disk space: at full: ? and more: CIFAR-10 170.5 MB + ...": the data's
    total was taken as the NaN total less the NaN checkpoints (found reading the appendix in an evaluator's
    walk-through)."""
    from repro.report.appendix.sections import disk_text

    cifar = disk.DatasetDisk("cifar10", "CIFAR-10", 170_500_000, 29_500_000)
    tiny = disk.DatasetDisk("tiny_imagenet", "Tiny-ImageNet", 1_600_000_000, 0)
    full = disk.DiskSpace("full", (cifar, tiny), math.nan, 1, math.nan, 80)
    assert disk_text(full).startswith("1.8 GB and more: CIFAR-10 200.0 MB + Tiny-ImageNet 1.6 GB (")
    smoke = disk.DiskSpace("smoke", (), math.nan, 1, math.nan, 52)
    assert disk_text(smoke).startswith("checkpoints only: no download (")

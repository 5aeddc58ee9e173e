"""A re-packed CIFAR folder: refused naming its files, trained with --allow-unverified-data, and marked."""

import json
import os

import pytest
from torchvision.datasets import CIFAR10
from typer.testing import CliRunner

from repro.cli import app
from test_data_cifar import make_cifar

PROFILE = """[profiles.tiny]
description = "real CIFAR-10 files, two rows, one epoch: a test of the data path"
evidence = "reduced"
device = "cpu"
data = "real"
seeds = 2
epochs = 1
batch_size = 16
max_image_size = 16
pretrained = false
include = ["table1/std_h128_dense", "table1/std_h128_moe"]
"""


@pytest.mark.slow
def test_a_repacked_cifar_folder_trains_only_when_allowed_and_says_so(tmp_path, monkeypatch):
    make_cifar(tmp_path / "data", CIFAR10, monkeypatch, per_file=16)  # 80 train / 16 test images
    monkeypatch.undo()  # torchvision's published md5s again: every file is now a re-packed copy
    monkeypatch.setenv("REPRO_DATA", str(tmp_path / "data"))
    before = dict(os.environ)
    (tmp_path / "profiles.toml").write_text(PROFILE)
    results = tmp_path / "results"
    args = ["table1", "--profiles", str(tmp_path / "profiles.toml"), "--profile", "tiny",
            "--results-dir", str(results), "--jobs", "1"]
    runner = CliRunner()

    refused = runner.invoke(app, args)
    text = " ".join(refused.output.split())
    assert refused.exit_code == 2, refused.output
    assert "data_batch_1: md5" in text and "--allow-unverified-data" in text and "nothing was trained" in text
    assert not list((results / "runs").glob("*.json")) if (results / "runs").exists() else True

    accepted = runner.invoke(app, args + ["--allow-unverified-data"])
    assert accepted.exit_code == 0, accepted.output
    # The flag reached each run on its request, not through the environment of this process.
    assert {k: v for k, v in os.environ.items() if k.startswith("REPRO")} == {
        k: v for k, v in before.items() if k.startswith("REPRO")}
    records = [json.loads(p.read_text()) for p in (results / "runs").glob("*.json") if not p.name.endswith(".failed.json")]
    assert len(records) == 4 and all(r["provenance"]["allow_unverified_data"] for r in records)
    assert {r["input"]["pipeline"] for r in records} == {"tensor_cpu"}
    # The files people copy say it too, naming the files that failed (the table, its claims, every caption).
    table_dir = results / "tiny" / "table1"
    for name in ("table1.md", "claims.md", "table1.tex"):
        text = " ".join((table_dir / name).read_text().split())
        assert "UNVERIFIED" in text and "data" in text and "md5 mismatch accepted" in text, name
        assert "allow-unverified-data" in text, name
    assert "data_batch_1: md5" in (table_dir / "table1.md").read_text()
    assert "data_batch_1: md5" in (table_dir / "claims.md").read_text()
    reported = runner.invoke(app, ["report", "--results-dir", str(results), "--profiles",
                                   str(tmp_path / "profiles.toml"), "--profile", "tiny"])
    assert reported.exit_code == 0, reported.output
    report = (results / "tiny" / "report.md").read_text()
    assert "md5 mismatch accepted; unverified: data_batch_1: md5" in report

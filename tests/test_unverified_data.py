"""A re-packed CIFAR folder: refused naming its files, trained with --allow-unverified-data, and marked.

A user-made CIFAR-10 (80 / 16 images, so every file fails torchvision's md5) is refused in at most
6 lines at 80 columns; accepted with the flag, "unverified" is in report.html's title and headline,
in every figure's stamp, in the departures each verdict names (with the numbers), beside every
verdict decided on it, in every table file, and in one-line LaTeX captions whose md5 pairs are in
a file beside them.
"""

import json
import os
import re
import tempfile
from pathlib import Path

import pytest
from PIL import Image
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
include = ["headline_cifar10/dw072_moe", "headline_cifar10/dw072_dense"]  # one gap claim
"""
COLUMNS80 = {"COLUMNS": "80", "TTY_COMPATIBLE": "0"}


@pytest.fixture
def short_data_root(tmp_path):
    """The data folder under a short path (/tmp/<8 characters>/data): the refusal's folder line fits 80 columns."""
    with tempfile.TemporaryDirectory(prefix="d", dir="/tmp") as short:
        link = Path(short) / "data"
        link.symlink_to(tmp_path / "data", target_is_directory=True)
        yield link


def _error_block(output: str) -> list[str]:
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("error: "))
    return lines[start:]


@pytest.mark.slow
def test_a_repacked_cifar_folder_trains_only_when_allowed_and_says_so(tmp_path, monkeypatch, short_data_root):
    make_cifar(tmp_path / "data", CIFAR10, monkeypatch, per_file=16)  # 80 train / 16 test images
    monkeypatch.undo()  # torchvision's published md5s again: every file is now a re-packed copy
    folder = short_data_root / "cifar-10-batches-py"
    monkeypatch.setenv("REPRO_DATA", str(short_data_root))
    before = dict(os.environ)
    (tmp_path / "profiles.toml").write_text(PROFILE)
    results = tmp_path / "results"
    args = [
        "headline_cifar10",
        "--profiles",
        str(tmp_path / "profiles.toml"),
        "--profile",
        "tiny",
        "--results-dir",
        str(results),
        "--jobs",
        "1",
    ]
    runner = CliRunner()

    refused = runner.invoke(app, args, env=COLUMNS80)
    assert refused.exit_code == 2, refused.output
    block = _error_block(refused.output)
    got = __import__("hashlib").md5((folder / "data_batch_1").read_bytes()).hexdigest()
    published = dict(CIFAR10.train_list)["data_batch_1"]
    # What failed (folder, file, both md5s), then the exact flag: at most 6 lines of at most 80 columns
    assert len(block) <= 6 and all(len(line) <= 80 for line in block), "\n".join(block)
    assert block[0] == "error: headline_cifar10: nothing was trained: CIFAR-10 fails its checksums."
    assert block[1] == f"  {folder.absolute()}: 7 of 7 files differ, e.g."
    assert block[2].split() == ["data_batch_1:", "md5", got] and block[3].split() == ["expected", published]
    assert "--allow-unverified-data" in block[4]
    text = " ".join(refused.output.split())
    assert "allow_unverified" not in text and "not here" not in text and "DatasetMissing" not in text
    assert "headline_cifar10: refused:" in text
    assert not list((results / "runs").glob("*.json")) if (results / "runs").exists() else True

    accepted = runner.invoke(app, args + ["--allow-unverified-data"])
    assert accepted.exit_code == 0, accepted.output
    # The flag reached each run on its request, not through the environment of this process.
    assert {k: v for k, v in os.environ.items() if k.startswith("REPRO")} == {
        k: v for k, v in before.items() if k.startswith("REPRO")
    }
    records = [
        json.loads(p.read_text()) for p in (results / "runs").glob("*.json") if not p.name.endswith(".failed.json")
    ]
    assert len(records) == 4 and all(r["provenance"]["allow_unverified_data"] for r in records)
    assert {r["input"]["pipeline"] for r in records} == {"tensor_cpu"}
    # The files people copy say it too: the table and its claims name the files that failed...
    table_dir = results / "tiny" / "headline_cifar10"
    for name in ("headline_cifar10.md", "claims.md"):
        text = " ".join((table_dir / name).read_text().split())
        assert "UNVERIFIED" in text and "md5 mismatch accepted" in text and "allow-unverified-data" in text, name
        assert "data_batch_1: md5" in text, name
    # ...and every caption in one line, the md5 pairs in the file beside it
    tex = (table_dir / "headline_cifar10.tex").read_text()
    captions = [line for line in tex.splitlines() if line.startswith(r"\caption{")]
    assert captions and all(
        "UNVERIFIED: 7 files fail their published md5, listed in "
        r"headline\_cifar10\_unverified\_checksums.txt"
        in c
        and "md5 " + got not in c
        for c in captions
    )
    listed = (table_dir / "headline_cifar10_unverified_checksums.txt").read_text()
    assert f"  data_batch_1: md5 {got} != {published}\n" in listed

    reported = runner.invoke(
        app,
        ["report", "--results-dir", str(results), "--profiles", str(tmp_path / "profiles.toml"), "--profile", "tiny"],
    )
    assert reported.exit_code == 0, reported.output
    report, detail = ((results / "tiny" / name).read_text() for name in ("report.md", "report-detail.md"))
    assert "md5 mismatch accepted; unverified: data_batch_1: md5" in detail  # the table's data check
    assert report.startswith("# Reproduction report on UNVERIFIED data:")
    assert detail.startswith("# Reproduction report in detail, on UNVERIFIED data:")
    # The departures each verdict names, with the numbers; the verdicts decided on the data say so beside them
    for words in (
        "1 epoch instead of the paper's 50",
        "batch 16 instead of the recipe's 128",
        "7 CIFAR-10 files fail their published md5 (unverified, accepted with --allow-unverified-data)",
        "80 train / 16 test CIFAR-10 images where the paper has 50,000 / 10,000",
    ):
        assert words in report, words
    verdicts = dict(re.findall(r"^\| headline_cifar10 \|.*?\(`(\w+)`\) \| \*\*([a-z ()]+)\*\* \|", report, re.M))
    assert verdicts["headline_w072_gap"].endswith(" (on unverified data)"), verdicts  # decided on 2 seeds
    assert verdicts["headline_w2_gap"] == "not run", verdicts  # its rows are not in the profile

    html = (results / "tiny" / "report.html").read_text()
    title = re.search(r"<title>(.*?)</title>", html, re.S).group(1)
    assert "UNVERIFIED data" in title
    headline = html[html.index('<section id="headline">') : html.index("</section>")]
    assert '<span class="unverified"' in html[html.index('id="claim-headline_cifar10-headline_w072_gap"') :]
    assert "<li>UNVERIFIED data: 7 CIFAR-10 files fail their published md5" in headline
    assert re.search(r"<h1>Reproduction report <span class=\"warn\">on UNVERIFIED data</span>", html)
    figures = sorted((results / "tiny" / "figures").glob("*.png"))
    assert figures
    for png in figures:  # every figure's stamp, on the image's own metadata
        assert "UNVERIFIED data" in Image.open(png).info["Description"], png.name

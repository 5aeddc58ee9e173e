"""`repro bench data --input jpeg`: images/s of each input path on JPEG fixtures the test writes."""

from PIL import Image

import pytest

from repro.bench.data_imagenet import bench_imagenet, write_jpeg_fixtures


def test_fixtures_are_an_image_folder_of_imagenet_sized_jpegs(tmp_path):
    folder = write_jpeg_fixtures(tmp_path / "jpegs", n=12, classes=3)
    files = sorted(folder.glob("class*/*.JPEG"))
    assert len(files) == 12 and sorted(p.name for p in folder.iterdir()) == ["class0", "class1", "class2"]
    sizes = {Image.open(p).size for p in files}
    assert sizes == {(500, 375), (375, 500)} and Image.open(files[0]).format == "JPEG"


def test_every_path_reports_images_per_second_and_its_ratio_to_pil(tmp_path):
    folder = write_jpeg_fixtures(tmp_path / "jpegs", n=32, classes=4)  # two batches per round
    rows = bench_imagenet(folder, "cpu", batch_size=16, workers=0, repeats=2)
    by_path = {r.pipeline: r for r in rows}
    assert list(by_path) == ["pil", "decode_cpu"]  # no CUDA here: no decode_cuda row
    for row in rows:
        assert row.images == 32 and len(row.rounds) == 2 and min(row.rounds) > 0
        assert row.images_per_s > 0 and row.device == "cpu" and row.workers == 0
        assert row.ratio_to_pil == row.images_per_s / by_path["pil"].images_per_s
    assert by_path["pil"].ratio_to_pil == 1.0
    assert set(rows[0].to_dict()) == {
        "pipeline",
        "device",
        "workers",
        "batch_size",
        "images",
        "images_per_s",
        "ratio_to_pil",
        "rounds",
    }


@pytest.mark.slow
def test_the_command_reports_every_cpu_path_and_its_ratio(tmp_path):
    from typer.testing import CliRunner

    from repro.cli import app

    out = CliRunner().invoke(
        app,
        [
            "bench",
            "data",
            "--input",
            "jpeg",
            "--repeats",
            "1",
            "--workers",
            "0",
            "--folder",
            str(write_jpeg_fixtures(tmp_path / "jpegs", n=16)),
        ],
    )
    assert out.exit_code == 0, out.output
    assert "pil" in out.output and "decode_cpu" in out.output and "1.00x" in out.output

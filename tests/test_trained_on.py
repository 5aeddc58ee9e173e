"""Every per-table file says what its runs trained on: synthetic, digits, the paper's dataset or unverified files."""

import dataclasses

from repro.plan.manifest import find_manifest
from repro.report.render import render_claims_md, render_tables_md, render_tables_tex
from repro.report.table_rows import build_tables
from repro.report.trained_on import trained_on
from repro.results.measurements import ManifestResult, Measured

MISMATCH = "data_batch_1: md5 0123abcd != c99cafc152244af753f735de768cd75f"


def _result(manifest, profile, data_text, checks=None, commit="1a2b3c4d5e6f7a8b+dirty"):
    """Two seeds of every training row, each run saying what it trained on as a record does."""
    measured = Measured()
    runs = {}
    for i, row in enumerate(r for r in manifest.rows if "accuracy" in r.measures):
        runs[row.id] = [
            {
                "seed": s,
                "hash": f"{i:04d}{s:012d}",
                "accuracy": 0.5,
                "final_accuracy": 0.5,
                "peak_accuracy": 0.5,
                "test_accuracy_by_epoch": [0.4, 0.5],
                "train_accuracy_by_epoch": [0.4, 0.5],
                "tau_by_epoch": [None, None],
                "data": data_text,
            }
            for s in (0, 1)
        ]
    measured.details["runs"] = runs
    if checks:
        measured.details["data_checks"] = {"summaries": ["..."], "checks": checks}
    return ManifestResult(
        manifest.id,
        manifest.title,
        manifest.paper_ref,
        manifest.paper_table,
        "mine",
        measured,
        [],
        {"git_commit": commit},
        profile,
    )


def test_synthetic_runs_say_so_with_profile_seeds_and_epochs():
    manifest = find_manifest("table1")
    profile = manifest.profiles["smoke"].for_manifest("table1", manifest.seeds)
    result = _result(manifest, profile, "synthetic CIFAR-10-shaped data: 128 train / 64 test images at 16px")
    t = trained_on(manifest, result)
    assert [s.kind for s in t.sources] == ["synthetic"]
    assert t.evidence == "mine: synthetic data, a pipeline check, not evidence"
    assert t.seeds == (0, 1) and t.epochs_text() == "2" and t.commit == "commit 1a2b3c4d5e6f+dirty"
    md = render_tables_md(manifest, build_tables(manifest, result), result)
    assert "- **Trained on**: CIFAR-10 (synthetic): synthetic CIFAR-10-shaped data" in md
    assert "- **Seeds**: 0, 1 (" in md and "- **Epochs**: 2" in md
    assert "a pipeline check, not evidence" in render_claims_md(manifest, result)


def test_unverified_files_are_named_in_the_table_the_claims_and_the_caption():
    manifest = find_manifest("table1")
    real = dataclasses.replace(manifest.profiles["smoke"], data="real", evidence="reduced")
    check = {
        "dataset": "cifar10",
        "title": "CIFAR-10",
        "path": "data/cifar-10-batches-py",
        "checksum": "md5 mismatch accepted",
        "unverified": [MISMATCH],
    }
    result = _result(manifest, real.for_manifest("table1", 2), "CIFAR-10: 80 train / 16 test images from data", [check])
    t = trained_on(manifest, result)
    assert t.unverified and t.evidence.startswith("mine: UNVERIFIED data (copies of the paper's datasets that fail")
    for text in (
        render_tables_md(manifest, build_tables(manifest, result), result),
        render_claims_md(manifest, result),
    ):
        assert "CIFAR-10 (UNVERIFIED, md5 mismatch accepted)" in text
        assert MISMATCH in text and "--allow-unverified-data" in text
    tex = render_tables_tex(manifest, build_tables(manifest, result), t)
    captions = [line for line in tex.splitlines() if line.startswith(r"\caption{")]
    assert len(captions) == len(build_tables(manifest, result))
    verified = dict(check, checksum="md5 verified", unverified=[])
    plain = render_tables_tex(
        manifest,
        build_tables(manifest, result),
        trained_on(
            manifest,
            _result(
                manifest, real.for_manifest("table1", 2), "CIFAR-10: 80 train / 16 test images from data", [verified]
            ),
        ),
    )
    plain_captions = [line for line in plain.splitlines() if line.startswith(r"\caption{")]
    for caption, other in zip(captions, plain_captions):  # the failed files counted, their md5s in the file named
        assert "UNVERIFIED: 1 file fails its published md5" in caption and "md5 0123abcd" not in caption
        assert r"listed in table1\_unverified\_checksums.txt" in caption
        assert len(caption) - len(other) < 160, caption
    assert t.checksums_file == "table1_unverified_checksums.txt"
    assert f"CIFAR-10\n  {MISMATCH}\n" in t.checksums_text()


def test_verified_real_data_and_digits_are_told_apart():
    manifest = find_manifest("table1")
    real = dataclasses.replace(manifest.profiles["smoke"], data="real", evidence="reduced")
    check = {
        "dataset": "cifar10",
        "title": "CIFAR-10",
        "path": "data/cifar-10-batches-py",
        "checksum": "md5 verified",
        "unverified": [],
    }
    t = trained_on(manifest, _result(manifest, real, "CIFAR-10: 50000 train / 10000 test images", [check]))
    assert [s.kind for s in t.sources] == ["paper"] and "the paper's dataset, md5 verified" in t.data_text()
    digits = manifest.profiles["functional"].for_manifest("table1", 2)
    t = trained_on(
        manifest, _result(manifest, digits, "real handwritten digits (scikit-learn) standing in for CIFAR-10")
    )
    assert [s.kind for s in t.sources] == ["digits"] and "learn real images, not evidence" in t.evidence


def test_a_table_that_trains_nothing_says_so():
    manifest = find_manifest("table6")
    profile = manifest.profiles["smoke"]
    result = ManifestResult(
        manifest.id,
        manifest.title,
        manifest.paper_ref,
        manifest.paper_table,
        "smoke",
        Measured(),
        [],
        {"git_commit": "abc"},
        profile,
    )
    t = trained_on(manifest, result)
    assert t.data_text() == "no training runs: FLOP counts (analytic, no data)" and t.seeds_text() == "none"
    assert (
        "Profile smoke: synthetic data, a pipeline check, not evidence; no training runs: FLOP counts" in t.sentence()
    )


def test_the_checksums_file_is_written_beside_the_tables_and_dropped_once_the_data_verifies(tmp_path):
    from repro.report.render import write_manifest_outputs

    manifest = find_manifest("table1")
    real = dataclasses.replace(manifest.profiles["smoke"], data="real", evidence="reduced").for_manifest("table1", 2)
    check = {
        "dataset": "cifar10",
        "title": "CIFAR-10",
        "path": "data/cifar-10-batches-py",
        "checksum": "md5 mismatch accepted",
        "unverified": [MISMATCH],
    }
    written = write_manifest_outputs(manifest, _result(manifest, real, "CIFAR-10", [check]), tmp_path)
    listed = tmp_path / "mine" / "table1" / "table1_unverified_checksums.txt"
    assert listed in written and f"  {MISMATCH}\n" in listed.read_text()
    verified = dict(check, checksum="md5 verified", unverified=[])
    written = write_manifest_outputs(manifest, _result(manifest, real, "CIFAR-10", [verified]), tmp_path)
    assert not listed.exists() and listed not in written

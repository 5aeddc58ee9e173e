"""The FLOP counts kept on disk: reused by the FLOP check and the "flops" measure while nothing that decides a
count has changed (the models' code, the recipes' schedules, the input shapes, torch and fvcore)."""

import pytest

from repro.measure import flop_check
from repro.plan.manifest import find_manifest


def test_a_count_is_reused_from_disk_and_redone_when_its_fingerprint_changes(tmp_path, monkeypatch):
    row = find_manifest("table6").row("cifar10_std_moe")
    first = flop_check.row_summary(row, tmp_path)
    assert any((tmp_path / "flops").glob("*.json"))  # kept in the cache folder given
    assert first["problems"] == [] and first["total_macs"] > 0
    flop_check._flops_for.cache_clear()

    def no_count(key):
        raise AssertionError("counted again")

    monkeypatch.setattr(flop_check, "_flops_for", no_count)
    assert flop_check.row_summary(row, tmp_path) == first  # from disk, in a process that never counted it
    monkeypatch.setattr(flop_check, "_fingerprint", lambda: "another torch")
    with pytest.raises(AssertionError, match="counted again"):
        flop_check.row_summary(row, tmp_path)


def test_the_fingerprint_covers_the_recipes_the_shapes_and_the_libraries(monkeypatch):
    import importlib.metadata

    before = flop_check._code_fingerprint()
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda d: "0.0" if d == "fvcore" else real(d))
    assert flop_check._code_fingerprint() != before

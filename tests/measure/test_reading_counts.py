"""repro.measure.reading_counts: a row's counts under a reading are kept in the cache folder, so a table run again
(a reused verify-all) builds no model to count them; another code fingerprint counts afresh."""

from repro.measure import flop_check, reading_counts
from repro.plan.manifest import find_manifest


def test_a_rows_counts_are_counted_once_and_read_back(tmp_path, monkeypatch):
    table6 = find_manifest("table6")
    row = next(r for r in table6.rows if "flops" in r.measures)
    counted = []
    real = reading_counts._count
    monkeypatch.setattr(reading_counts, "_count", lambda r: counted.append(r.id) or real(r))
    first = reading_counts.row_counts(row, tmp_path)
    again = reading_counts.row_counts(row, tmp_path)
    assert again == first and counted == [row.id] and first["total_macs"] > 0
    assert reading_counts.row_counts(row) == first and counted == [row.id, row.id]  # no cache folder: counted
    reading_counts._fingerprint.cache_clear()
    monkeypatch.setattr(flop_check, "_fingerprint", lambda: "another torch")
    try:
        assert reading_counts.row_counts(row, tmp_path) == first and counted == [row.id] * 3
    finally:
        reading_counts._fingerprint.cache_clear()

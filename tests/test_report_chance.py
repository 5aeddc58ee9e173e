"""The accuracy table shows chance beside each row, and says where the paper reports a collapse."""

from repro.manifest import find_manifest
from repro.report.tables import accuracy_rows_table, chance_note, collapse_claims
from repro.results import ManifestResult, Measured


def test_collapse_claims_name_the_rows_the_paper_says_collapse():
    rows = collapse_claims(find_manifest("table8"))
    assert set(rows) == {"c100_soft", "tiny_soft", "imagenet_soft"}
    assert all(rows.values())


def test_chance_note_follows_the_learned_margin():
    # CIFAR-10: the margin is 10% + 0.05 * 90% = 14.5%
    assert chance_note({0: 0.14, 1: 0.14}, 0.1, ["c"]) == "at or near chance: the paper reports this method collapses (c)"
    assert chance_note({0: 0.15, 1: 0.15}, 0.1, ["c"]) == "the paper reports this method collapses (c); it learned here"
    assert chance_note({0: 0.14, 1: 0.14}, 0.1, []) == "at or near chance: did not learn"
    assert chance_note({0: 0.15, 1: 0.14}, 0.1, []) == ""  # mean 14.5% is on the margin: learned
    assert chance_note(None, None, []) == ""


def test_accuracy_table_marks_the_collapsed_row_and_not_its_baseline():
    manifest = find_manifest("table8")
    measured = Measured()
    for row, acc in (("c100_soft", {0: 0.01, 1: 0.012}), ("c100_dense", {0: 0.6, 1: 0.62})):
        measured.set_row(row, "accuracy", acc)
        measured.set_row(row, "chance", 0.01)
    result = ManifestResult("table8", "t", "ref", "table8", "functional", measured, [], {})
    table = accuracy_rows_table(manifest, result)
    label = {r.id: r.label for r in manifest.rows}
    cells = {row[0]: dict(zip(table.columns, row)) for row in table.rows}
    soft, dense = cells[label["c100_soft"]], cells[label["c100_dense"]]
    assert soft["Chance (%)"] == "1.00" and soft["Accuracy (%)"] == "1.10 ± 0.14"
    assert soft["Note"].startswith("at or near chance: the paper reports this method collapses (")
    assert dense["Note"] == ""

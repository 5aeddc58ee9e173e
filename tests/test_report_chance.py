"""The accuracy table shows chance beside each row, and says where the paper reports a collapse."""

from repro.plan.manifest import find_manifest
from repro.report.table_rows import accuracy_rows_table, chance_note, collapse_claims
from repro.results.measurements import ManifestResult, Measuring


def test_collapse_claims_name_the_rows_the_paper_says_collapse():
    rows = collapse_claims(find_manifest("table8"))
    assert set(rows) == {"c100_soft", "tiny_soft", "imagenet_soft"}
    assert all(rows.values())


def test_chance_note_follows_the_learned_margin():
    # CIFAR-10: the margin is 10% + 0.05 * 90% = 14.5%
    assert chance_note(0.14, 0.1, ["c"]) == "at or near chance: the paper reports this method collapses (c)"
    assert chance_note(0.15, 0.1, ["c"]) == "the paper reports this method collapses (c); it learned here"
    assert chance_note(0.14, 0.1, []) == "at or near chance: did not learn"
    assert chance_note((0.15 + 0.14) / 2, 0.1, []) == ""  # mean 14.5% is on the margin: learned
    assert chance_note(None, None, []) == ""


def test_accuracy_table_marks_the_collapsed_row_and_not_its_baseline():
    manifest = find_manifest("table8")
    measured = Measuring()
    for row, acc in (("c100_soft", {0: 0.01, 1: 0.012}), ("c100_dense", {0: 0.6, 1: 0.62})):
        measured.set_row(row, "accuracy", acc)
        measured.set_row(row, "chance", 0.01)
        measured.details.setdefault("runs", {})[row] = [  # the report reads each seed's run summary
            {**run, "accuracy": acc[run["seed"]], "chance": 0.01} for run in _runs(*[SAME] * len(acc))
        ]
    result = ManifestResult("table8", "t", "ref", "table8", "functional", measured.done(), [], {})
    table = accuracy_rows_table(manifest, result)
    label = {r.id: r.label for r in manifest.rows}
    cells = {row[0]: dict(zip(table.columns, row)) for row in table.rows}
    soft, dense = cells[label["c100_soft"]], cells[label["c100_dense"]]
    assert soft["Chance (%)"] == "1.00" and soft["Accuracy (%)"] == "1.10 ± 0.14"
    assert soft["Note"].startswith("at or near chance: the paper reports this method collapses (")
    assert dense["Note"] == ""


SAME = ("cpu: x86_64, 1 intra-op thread(s)", 1, False)


def _runs(*settings):
    from repro.results.measurements import RunSummary

    return [
        RunSummary(
            seed=s,
            hash=f"h{s}",
            accuracy=0.6,
            final_accuracy=0.6,
            peak_accuracy=0.6,
            test_accuracy_by_epoch=[0.6],
            train_accuracy_by_epoch=[0.6],
            tau_by_epoch=[None],
            device=device,
            threads=threads,
            deterministic=det,
        ).to_dict()
        for s, (device, threads, det) in enumerate(settings)
    ]


def test_a_row_whose_runs_were_made_under_other_threads_or_devices_says_so():
    """Issue 22, item 8: records of one row from differently sized machines mixed in one folder without a word."""
    manifest = find_manifest("table8")
    measured = Measuring()
    same = SAME
    mixes = {
        "c100_dense": [same, ("cpu: x86_64, 2 intra-op thread(s)", 2, False)],
        "c100_soft": [same, same],
        "c100_per_sample_soft": [same, ("cuda: NVIDIA H100", 1, True)],
    }
    for row, settings in mixes.items():
        measured.set_row(row, "accuracy", {0: 0.6, 1: 0.6})
        measured.details.setdefault("runs", {})[row] = _runs(*settings)
    result = ManifestResult("table8", "t", "ref", "table8", "smoke", measured.done(), [], {})
    table = accuracy_rows_table(manifest, result)
    label = {r.id: r.label for r in manifest.rows}
    note = {row[0]: dict(zip(table.columns, row))["Note"] for row in table.rows}
    assert note[label["c100_dense"]] == (
        "runs made under 2 settings, not bit-comparable: cpu: x86_64, 1 intra-op "
        "thread(s); cpu: x86_64, 2 intra-op thread(s)"
    )
    assert "settings" not in note[label["c100_soft"]]
    assert note[label["c100_per_sample_soft"]].endswith(
        "cpu: x86_64, 1 intra-op thread(s); cuda: NVIDIA H100, 1 intra-op thread(s), deterministic"
    )

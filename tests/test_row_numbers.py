"""The report's per-row numbers (mean ± s.d. over seeds, paired gaps, the learning check) come from the table's
rows-by-seed frame (repro.report.table_rows over repro.results.frames), the frame a notebook gets."""

from fake_records import config, record

from repro.claims.stats import paired_gap
from repro.plan.manifest import find_manifest
from repro.report.learning import learning_checks
from repro.report.table_rows import row_numbers
from repro.report.table_rows import accuracy_comparisons_table, accuracy_rows_table
from repro.results.frames import result_row_seeds, row_stats
from repro.results.measurements import ManifestResult, Measuring, RunSummary
from repro.spec.profiles import Profile

ACCURACY = {"dw2_moe": (0.81, 0.85, 0.80), "dw2_dense": (0.78, 0.80, 0.79)}


def _result(evidence: str = "pipeline") -> ManifestResult:
    """headline_cifar10's two w=2 rows. The per-seed metric the claims read is written from the same runs as the
    summaries, then spoilt here, so that a number drawn from it and not from the frame shows."""
    measured = Measuring()
    for i, (row, accs) in enumerate(ACCURACY.items()):
        runs = [RunSummary.from_record(record(config(seed=s), accuracy=a)).to_dict() for s, a in enumerate(accs)]
        for run in runs:
            run["hash"] = f"{row}-{run['seed']}"
        measured.details.setdefault("runs", {})[row] = runs
        measured.set_row(row, "accuracy", {s: 0.5 for s in range(len(accs))})  # not what the runs say
        measured.set_row(row, "chance", 0.1)
    return ManifestResult(
        "headline_cifar10",
        "t",
        "ref",
        "headline_cifar10",
        "smoke",
        measured.done(),
        [],
        {},
        profile_settings=Profile(description="t", evidence=evidence),
    )


def test_the_accuracy_and_gap_cells_are_the_frames_numbers():
    manifest, result = find_manifest("headline_cifar10"), _result()
    stats = row_stats(result_row_seeds(result)).set_index("row")
    label = {r.id: r.label for r in manifest.rows}
    cells = {row[0]: dict(zip(t.columns, row)) for t in [accuracy_rows_table(manifest, result)] for row in t.rows}
    for row in ACCURACY:
        mean, sd = 100 * stats.at[row, "accuracy_mean"], 100 * stats.at[row, "accuracy_sd"]
        assert cells[label[row]]["Accuracy (%)"] == f"{mean:.2f} ± {sd:.2f}"
        assert cells[label[row]]["Seeds"] == "3" and cells[label[row]]["Chance (%)"] == "10.00"
    gaps = accuracy_comparisons_table(manifest, result)
    dw2 = next(dict(zip(gaps.columns, row)) for row in gaps.rows if row[0] == "w=2.0 (accuracy)")
    expected = paired_gap(dict(enumerate(ACCURACY["dw2_moe"])), dict(enumerate(ACCURACY["dw2_dense"])))
    assert dw2["Gap (pp)"] == f"{100 * expected.mean:+.2f} ± {100 * expected.sd:.2f}"
    assert dw2["Model acc. (%)"] == cells[label["dw2_moe"]]["Accuracy (%)"]
    assert row_numbers(result).gap("dw2_moe", "dw2_dense")["p"] == expected.p


def test_the_learning_check_reads_the_frames_seeds():
    checks = learning_checks([(find_manifest("headline_cifar10"), _result("functional"))])
    assert {c.rows[0]: c.accuracies for c in checks} == {f"headline_cifar10/{r}": a for r, a in ACCURACY.items()}

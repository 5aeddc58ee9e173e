"""Empirical claims decided again on the rows a [[sensitivity]] table trained (repro.claims.under_readings): only
where every comparison and row they read has its twin, only where those twins trained, and what the checklist and
the headline say when a trained alternative changes a verdict."""

from repro.claims import Evidence
from repro.claims.under_readings import decide_readings
from repro.plan.manifest import find_manifest
from repro.report.readings_section import readings_summary, trained_summary
from repro.report.render import alternative_only
from repro.report.table_rows import reading_notes
from repro.results.measurements import ManifestResult, Measured


def _evidence(manifest, gaps: dict[str, float], untrained: tuple[str, ...] = ()) -> Evidence:
    """Five seeds at 80% against chance 10% for every row but `untrained`; each named comparison a tight gap."""
    metrics = {
        f"rows.{r.id}.{k}": v
        for r in manifest.rows
        if r.id not in untrained
        for k, v in (("accuracy", {s: 0.8 for s in range(5)}), ("chance", 0.1))
    }
    for comp, mean in gaps.items():
        metrics[f"comparisons.{comp}.gap"] = {
            "n": 5,
            "mean": mean,
            "sd": 0.001,
            "p": 1e-4,
            "ci95": [mean - 0.001, mean + 0.001],
            "positive": 5 if mean > 0 else 0,
            "differences": {s: mean for s in range(5)},
        }
    return Evidence(
        manifest.id,
        manifest.paper_table,
        "full",
        metrics=metrics,
        kind="paper",
        comparison_rows={c.id: (c.row, c.baseline) for c in manifest.comparisons},
    )


def test_a_series_of_comparisons_is_not_decided_again_on_readings_no_table_trained():
    # _on_twins passed a gap_not_rising series (a table of lists) through unchanged, so the claim was "decided
    # again" under all 19 alternatives of table9's readings, each on the same, untrained evidence.
    t9 = find_manifest("table9")
    claim = next(c for c in t9.claims if c.id == "t9_standard_flat_or_declining")
    gaps = {c: -0.01 for cs in claim.params["series"].values() for c in cs}
    entries = [
        e
        for e in decide_readings(t9, _evidence(t9, gaps), lambda row: None)
        if e.claim == "t9_standard_flat_or_declining"
    ]
    assert entries == []


T5_GAPS = {
    "k2": 0.012,
    "k1": -0.021,
    "k2__switch_gate": 0.004,
    "k1__switch_gate": 0.009,
    "k2__head_regularisers": 0.011,
    "k1__head_regularisers": -0.015,
}


def test_a_profile_that_leaves_the_twin_rows_out_decides_nothing_again():
    # At smoke no twin row trains, yet the headline counted Table 5's five claims as decided again on them.
    t5 = find_manifest("table5")
    twins = tuple(r.id for r in t5.rows if "__" in r.id)
    gaps = {c: g for c, g in T5_GAPS.items() if "__" not in c}
    assert [
        e for e in decide_readings(t5, _evidence(t5, gaps, untrained=twins), lambda row: None) if e.kind == "trained"
    ] == []
    trained = [e for e in decide_readings(t5, _evidence(t5, T5_GAPS), lambda row: None) if e.kind == "trained"]
    # its five comparison claims, and the k = 2 layers' routing (a claim on one row: its twin row trained)
    assert {e.claim for e in trained} == {
        "bb_moe_k2_positive",
        "bb_moe_k1_negative",
        "bb_moe_k2_gap_size",
        "bb_moe_k1_gap_size",
        "bb_moe_k_reversal",
        "bb_moe_layers_active_non_uniform",
    }


def test_a_verdict_a_trained_alternative_changes_reaches_the_checklist_row_and_the_headline():
    # The k reversal keeps its sign under the Switch gate (+3.25 -> +0.45pp) but no longer matches 3.25pp: the
    # checklist row showed nothing, the readings line counted no change and the trained line spoke of signs only.
    t5 = find_manifest("table5")
    gaps = {
        "k2": 0.0117,
        "k1": -0.0208,
        "k2__head_regularisers": 0.0117,
        "k1__head_regularisers": -0.0208,
        "k2__switch_gate": 0.012,
        "k1__switch_gate": 0.0075,
    }
    entries = decide_readings(t5, _evidence(t5, gaps), lambda row: None)
    reversal = next(e for e in entries if e.claim == "bb_moe_k_reversal")
    assert reversal.chosen.status == "reproduced"
    (switch,) = reversal.changed_under()
    assert switch.alternative == "switch_gate" and switch.status == "not reproduced" and switch.value == "+0.45pp"
    assert "it keeps its sign" in reversal.sign_line()
    result = ManifestResult("table5", "", "", "table5", "full", Measured(), [], {}, readings=entries)
    note = reading_notes(result)["bb_moe_k_reversal"]
    assert note.startswith("the verdict changes with the reading: not reproduced under 'Switch")
    (line,) = alternative_only(result)["bb_moe_k_reversal"]
    assert line["verdict"] == "not reproduced under this alternative reading (chosen: reproduced)"
    assert "bb_moe_k_reversal (switch_gate)" in trained_summary(entries).split("; the measured")[0]
    assert "bb_moe_k_reversal" in readings_summary(entries, 0.0, 0).split(" verdict under one: ")[1]
    # One of each reads as one ("1 empirical claims", "1 change verdict" before).
    assert trained_summary([reversal]).startswith("Trained readings: 1 empirical claim decided again on the rows")
    headline = readings_summary([reversal], 0.0, 1)
    assert "0 analytic claims, 0 empirical claims ordered by rho and 0 claims under a reading" in headline
    assert ", 1 empirical claim on the rows trained readings gave decided under " in headline
    assert "(1 changes verdict under one: bb_moe_k_reversal)" in headline and headline.endswith("(1 model)")


EIGHT = (
    "k-warmup-form",
    "dense-dropout",
    "expert-dropout",
    "tau-step",
    "sigmoid-form",
    "lb-fraction",
    "batch-size",
    "routing-hyperparameters",
)


def test_the_eight_training_only_readings_each_decide_a_claim_again_on_rows_that_train():
    t1, temp = find_manifest("table1"), find_manifest("temperature_ablation")
    twins = {r.reading.split("/")[0] for m in (t1, temp) for r in m.rows if r.reading}
    assert set(EIGHT) <= twins
    gaps = {c.id: -0.01 for c in t1.comparisons if c.id.startswith("dw_h128")}
    entry = next(
        e
        for e in decide_readings(t1, _evidence(t1, gaps), lambda row: None)
        if e.claim == "t1_low_rho_depthwise_flips_negative" and e.kind == "trained"
    )
    assert {o.reading for o in entry.alternatives} == set(EIGHT) - {"sigmoid-form"}
    assert len(entry.alternatives) == 11  # routing-hyperparameters' four, batch-size's two, one of each other


def test_a_claim_on_rows_is_decided_again_on_the_one_row_a_reading_changes():
    # sigmoid-form applies to the sigmoid row only: the claim's linear row stays as measured, the baseline is its twin
    temp = find_manifest("temperature_ablation")
    metrics = {
        f"rows.{r.id}.{k}": v for r in temp.rows for k, v in (("accuracy", {s: 0.8 for s in range(5)}), ("chance", 0.1))
    }
    metrics.update(
        {
            f"rows.{r.id}.late_drop": {s: (0.2 if r.id.startswith("linear_low") else 0.01) + s / 1000 for s in range(5)}
            for r in temp.rows
        }
    )
    ev = Evidence("temperature_ablation", "temperature_ablation", "full", metrics=metrics, kind="paper")
    entries = {e.claim: e for e in decide_readings(temp, ev, lambda row: None) if e.kind == "trained"}
    vs_sigmoid = entries["temp_linear_low_collapses_vs_sigmoid"]
    (centred,) = vs_sigmoid.alternatives
    assert (centred.alternative, centred.status) == ("sigmoid_centred", "reproduced")
    assert "sigmoid_low__sigmoid_centred" in centred.evidence and "linear_low late_drop" not in centred.evidence
    assert set(entries) == {"temp_linear_low_collapses_vs_sigmoid"}  # the others read no sigmoid row


def test_the_readings_rows_train_at_functional_and_only_on_request_at_full():
    from repro.cost.plan import plan_profile
    from repro.plan.run_config import planned_runs

    for m in (find_manifest("table1"), find_manifest("temperature_ablation")):
        new = {r.id for r in m.rows if r.reading.split("/")[0] in EIGHT}
        functional = {run.row for run in planned_runs(m, m.profiles["functional"])}
        assert new <= functional
        assert not new & {run.row for run in planned_runs(m, m.profiles["full"])}
        assert not new & {run.row for run in planned_runs(m, m.profiles["smoke"])}
        asked = plan_profile(5, tuple(f"{m.id}/{r}" for r in new), m.profiles["full"])
        assert new == {run.row for run in planned_runs(m, asked)}  # a plan that asks for them trains them


def _table(id: str, *rows: tuple[str, tuple[str, ...]]):
    from types import SimpleNamespace

    return SimpleNamespace(id=id, rows=[SimpleNamespace(reading=r, measures=m) for r, m in rows])


def test_the_readings_table_says_where_a_reading_trains_counted_or_not():
    """A reading that changes a count and that a [[sensitivity]] table also trains (a new one a researcher adds to
    table9's Soft MoE rows) was listed as counting only, while the headline decided a claim again on its trained
    rows; a table's FLOP-only twins (table6's) train nothing; one row is 'row'."""
    from repro.report.readings_section import how_decided
    from repro.spec.readings import readings_by_id

    readings = readings_by_id()
    trains = ("flops", "accuracy")
    counted = how_decided(readings["cnn-features"], [_table("table9", ("cnn-features/gap_features", trains))])
    assert counted == (
        "counting: gap_features changes a FLOP count, so the claims that read those rows are decided again; trained "
        "too, in table9's [[sensitivity]] (1 row): the empirical claims on those rows are decided again on them"
    )
    flops_only = [_table("table6", ("cnn-features/gap_features", ("flops",)))]
    assert "trained" not in how_decided(readings["cnn-features"], flops_only)
    one = how_decided(readings["tau-step"], [_table("table1", ("tau-step/tau_per_step", trains))])
    assert one == "changes only how a model trains: decided by training, in table1's [[sensitivity]] (1 row)"
    untrained = how_decided(readings["tau-step"], [_table("table1", ("tau-step/tau_per_step", ("flops",)))])
    assert untrained == "changes only how a model trains; no table here trains it (a [[sensitivity]] table would)"

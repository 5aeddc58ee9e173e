"""The temperature ablation's claims (Section 5) on the audit's crafted late drops: the text says the sigmoid schedule
and a higher tau_min *avoid* the late collapse, so a baseline that drops as far as the artifact's own 5pp band
calls a collapse refutes the claim, however much further linear-low drops."""

import pytest

from repro.claims import evaluate, evidence_for
from repro.plan.manifest import find_manifest
from repro.results.measurements import ManifestResult, Measured

SPREAD = (-0.6, 0.4, -0.2, 0.5, -0.1, 0.3, -0.4, 0.2, 0.0, -0.1)  # pp around each mean, ten seeds


def _decided(drops_pp: dict[str, float]) -> dict[str, str]:
    manifest = find_manifest("temperature_ablation")
    metrics = {}
    for row in ("linear_default", "linear_low", "linear_high", "sigmoid_low"):
        drop = drops_pp.get(row, 0.5)
        metrics[f"rows.{row}.late_drop"] = {s: (drop + d) / 100 for s, d in enumerate(SPREAD)}
        metrics[f"rows.{row}.accuracy"] = {s: 0.80 + d / 100 for s, d in enumerate(SPREAD)}
        metrics[f"rows.{row}.chance"] = 0.10
    result = ManifestResult(
        "temperature_ablation",
        "",
        "",
        "temperature_ablation",
        "full",
        Measured(metrics),
        [],
        {"device_type": "cuda"},
        manifest.profiles["full"],
    )
    ev = evidence_for(manifest, result)
    return {c.id: evaluate(c, ev).status for c in manifest.claims}


def test_late_drops_of_20_10_and_8_pp_do_not_reproduce_avoiding_the_collapse():
    # The audit's drops: linear-low 20.4, sigmoid 10.4, linear tau_min = 0.3 8.55 pp. Both comparison claims were
    # reproduced (linear-low drops more than each), though both baselines dropped beyond the 5pp band.
    status = _decided({"linear_low": 20.4, "sigmoid_low": 10.4, "linear_high": 8.55})
    assert status == {
        "temp_linear_low_well_below_peak": "reproduced",
        "temp_linear_low_collapses_vs_sigmoid": "not reproduced",
        "temp_linear_low_collapses_vs_high_tau": "not reproduced",
    }


def test_baselines_that_stay_within_the_band_reproduce_them():
    status = _decided({"linear_low": 20.4, "sigmoid_low": 1.0, "linear_high": 0.8})
    assert set(status.values()) == {"reproduced"}


@pytest.mark.parametrize("drop", [4.9, 5.1])
def test_a_baseline_at_the_band_within_noise_leaves_the_claim_undecided(drop):
    status = _decided({"linear_low": 20.4, "sigmoid_low": drop, "linear_high": 0.8})
    assert status["temp_linear_low_collapses_vs_sigmoid"] == "inconclusive"

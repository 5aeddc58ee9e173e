"""Claims are decided in one place (repro.claims.decide), with Holm over a report there; the report only renders."""

import re

import pytest

from checkout import REPO_ROOT
from repro.claims import decided_results
from repro.plan.manifest import find_manifest
from repro.spec.profiles import Profile
from repro.results.measurements import ManifestResult, Measured, save_result

from .helpers import gap, learned


def _stored(results_dir, manifest, metrics):
    result = ManifestResult(
        manifest.id,
        manifest.title,
        manifest.paper_ref,
        manifest.paper_table,
        "full",
        Measured(metrics=metrics),
        [],
        {"device_type": "cuda"},
        Profile("p", "paper", seeds=5),
    )
    save_result(result, results_dir)


def test_decided_results_decides_every_table_and_applies_holm_over_the_whole_report(tmp_path):
    t1, t4 = find_manifest("table1"), find_manifest("table4")
    strong = gap([0.6, 0.7, 0.65, 0.62, 0.68])
    m1 = {"comparisons.std_h2048.gap": strong, **learned("std_h2048_moe", "std_h2048_dense")}
    m4 = {"comparisons.r18_h512.gap": gap([-0.6, -0.7, -0.65, -0.62, -0.68]), **learned("r18_h512_moe", "r18_dense")}
    _stored(tmp_path, t1, m1)
    _stored(tmp_path, t4, m4)
    entries = decided_results(tmp_path, "full", [t1, t4, find_manifest("table5")])
    assert entries[2][1] is None  # table5 was not run into this folder
    tested = [v for _, r in entries if r for v in r.verdicts if v.p_holm is not None]
    assert {v.claim for v in tested} == {"t1_high_rho_standard_flips_positive", "in_r18_head_loses"}
    p = sorted(v.p_value for v in tested)
    assert sorted(v.p_holm for v in tested) == [min(1, 2 * p[0]), max(min(1, 2 * p[0]), p[1])]


def test_the_report_layer_decides_nothing():
    deciding = re.compile(r"\b(evaluate|holm_adjust|decide_table|decide_family|decided_results|decide_readings)\(")
    for path in sorted((REPO_ROOT / "repro" / "report").glob("*.py")):
        assert not deciding.search(path.read_text(encoding="utf-8")), path.name


def test_deciding_returns_a_new_result_and_leaves_the_measurements_as_they_were(tmp_path):
    import dataclasses

    from repro.claims import decide_table

    t1 = find_manifest("table1")
    strong = gap([0.6, 0.7, 0.65, 0.62, 0.68])
    measured = Measured(metrics={"comparisons.std_h2048.gap": strong, **learned("std_h2048_moe", "std_h2048_dense")})
    given = ManifestResult(
        t1.id,
        t1.title,
        t1.paper_ref,
        t1.paper_table,
        "full",
        measured,
        [],
        {"device_type": "cuda"},
        Profile("p", "paper", seeds=5),
    )
    decided = decide_table(t1, given)
    assert decided is not given and len(decided.verdicts) == len(t1.claims)
    assert given.verdicts == [] and given.readings == [] and given.shown == []  # nothing written into it
    assert decided.measured is given.measured
    with pytest.raises(dataclasses.FrozenInstanceError):
        decided.verdicts = []  # type: ignore[misc]
    save_result(decided, tmp_path)
    entries = decided_results(tmp_path, "full", [t1])
    tested = [v for v in entries[0][1].verdicts if v.p_value is not None]
    assert tested and all(v.p_holm == v.p_value for v in tested)  # a family of one: Holm leaves p as it is
    assert all(v.p_holm is None for v in decided.verdicts)  # the stored verdicts were not adjusted in place

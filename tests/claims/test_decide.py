"""Claims are decided in one place (repro.claims.decide), with Holm over a report there; the report only renders."""

import re

from repro import REPO_ROOT
from repro.claims import decided_results
from repro.plan.manifest import find_manifest
from repro.spec.profiles import Profile
from repro.results.measurements import ManifestResult, Measured, save_result

from .helpers import gap, learned


def _stored(results_dir, manifest, metrics):
    result = ManifestResult(manifest.id, manifest.title, manifest.paper_ref, manifest.paper_table, "full",
                            Measured(metrics=metrics), [], {"device_type": "cuda"}, Profile("p", "paper", seeds=5))
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

"""The Artifact Appendix of a results folder whose data failed its published checksums (accepted with
--allow-unverified-data) says so, as every other output does, and awards no Results badge."""

import dataclasses

from repro.claims import decide_table
from repro.data.check_result import MD5_ACCEPTED, DataCheck
from repro.plan.manifest import find_manifest, with_profiles
from repro.plan.table_plan import plan_all
from repro.report.appendix import appendix_inputs, build_appendix, render
from repro.spec.profiles import Profile, shipped_profiles

REDUCED = "reduced_check"  # a user's profile of the paper's data at fewer seeds: evidence "reduced"


def _appendix(unverified: bool):
    from test_figures import fake_result

    profiles = {**shipped_profiles(), REDUCED: Profile(description="fewer seeds", evidence="reduced", seeds=3)}
    manifest = with_profiles(find_manifest("table2"), profiles)
    check = DataCheck(
        "cifar100",
        "CIFAR-100",
        "/data/cifar-100-python",
        100,
        50000,
        10000,
        checksum=MD5_ACCEPTED if unverified else "md5 verified",
        unverified=("train: md5 0123 != 4567",) if unverified else (),
    )
    result = fake_result(manifest, REDUCED)
    measured = result.measured.with_details(
        {"data_checks": {"summaries": [check.summary()], "checks": [check.provenance()]}}
    )
    measured = measured.with_metrics({f"rows.{r.id}.chance": 0.01 for r in manifest.rows})
    result = dataclasses.replace(
        result, measured=measured, provenance={"device_type": "cuda"}, profile_settings=manifest.profiles[REDUCED]
    )
    inputs = appendix_inputs(plan_all([manifest]))
    return build_appendix([(manifest, decide_table(manifest, result))], REDUCED, inputs, with_results=True)


def test_an_unverified_folders_appendix_says_unverified_and_gives_no_results_badge():
    appendix = _appendix(unverified=True)
    md, tex = render(appendix, "md"), render(appendix, "tex")
    assert md.startswith("# Artifact Appendix on UNVERIFIED data: ") and "on UNVERIFIED data" in tex
    assert "1 CIFAR-100 file fails its published md5 (unverified" in md
    legend = next(line for line in md.splitlines() if "Badge: Results Reproduced at a profile of kind paper" in line)
    assert "none, at any profile, on data that fails its published checksums" in legend
    assert "Results Reproduced" not in md.replace(legend, "")  # the badges' legend is the only place it appears
    assert all(r.badge == "none: the results trained on unverified data" for r in appendix.claims)
    assert any("(on unverified data)" in r.verdict for r in appendix.claims)


def test_a_verified_folders_appendix_keeps_its_badge():
    appendix = _appendix(unverified=False)
    md = render(appendix, "md")
    assert "UNVERIFIED" not in md
    # the profile's badge where the verdict earns it, and the verdict where it does not (test_stability_shown)
    for r in appendix.claims:
        expected = "Results Reproduced (reduced protocol)" if r.verdict == "reproduced" else f"none here: {r.verdict}"
        assert r.badge.startswith(expected) and "unverified" not in r.badge, (r.claim, r.badge)

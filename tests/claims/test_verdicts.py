"""evaluate (repro.claims.verdicts): missing data, GPU scope and the profile a verdict was decided on."""

import pytest

from repro.spec.profiles import Profile, RowSettings
from repro.claims import Evidence, evaluate
from repro.plan.manifest import load_all
from repro.results.measurements import COMPARISON_METRICS, ROW_METRICS

from .helpers import claim, ev, gap


def test_missing_measurement_is_not_run_with_the_reason():
    c = claim("matches_paper", metric="rows.r18_head.rho", paper="r18_head.rho")
    e = ev()
    e.missing["rows.r18_head.rho"] = "ImageNet is not present under data/imagenet"
    v = evaluate(c, e)
    assert v.status == "not run" and "ImageNet is not present" in v.evidence
    assert evaluate(c, ev()).evidence == "rows.r18_head.rho was not measured"


def test_gpu_scope_is_not_decided_on_a_cpu():
    c = claim("compare", scope="gpu", metric="rows.a.rho", relation="<", bound=1.0)
    v = evaluate(c, ev(rows__a__rho=0.5))
    assert v.status == "not run" and "needs a GPU" in v.evidence
    e = ev(rows__a__rho=0.5)
    e.device = "cuda"
    assert evaluate(c, e).status == "reproduced"


def test_empirical_claims_on_smoke_are_labelled():
    c = claim("compare", scope="empirical", metric="rows.a.rho", relation="<", bound=1.0)
    e = ev(rows__a__rho=0.5)
    e.paper_scale = False
    v = evaluate(c, e)
    assert v.status == "reproduced" and not v.paper_scale and "not a paper-scale result" in v.note


def _full_metrics(manifest):
    """Every row and comparison metric of a manifest, measured, with every row well above chance."""
    metrics = {}
    for i, r in enumerate(manifest.rows):
        for name in ROW_METRICS:
            metrics[f"rows.{r.id}.{name}"] = 0.3 + 0.01 * i
        metrics[f"rows.{r.id}.accuracy"] = {0: 0.6, 1: 0.62, 2: 0.61}
        metrics[f"rows.{r.id}.late_drop"] = {0: 0.01, 1: 0.02, 2: 0.015}
        metrics[f"rows.{r.id}.routing_top_share"] = {0: 0.6, 1: 0.4, 2: 0.7}
        metrics[f"rows.{r.id}.routing_balance"] = {0: 0.97, 1: 0.9, 2: 0.99}
        metrics[f"rows.{r.id}.train_routing_balance"] = {0: 0.999, 1: 0.998, 2: 0.999}
        metrics[f"rows.{r.id}.epoch1_accuracy"] = {0: 0.5, 1: 0.52, 2: 0.51}
        for name, value in (
            ("moe_layers", 8),
            ("layer_min_share", 0.05),
            ("layer_balance_min", 0.93),
            ("layer_balance_max", 0.97),
            ("test_experts_90", 2),
            ("train_experts_active", 8),
        ):
            metrics[f"rows.{r.id}.{name}"] = {0: value, 1: value, 2: value}
        metrics[f"rows.{r.id}.chance"] = 0.01
        metrics[f"rows.{r.id}.num_experts"] = 2 + i
    for i, c in enumerate(manifest.comparisons):
        for name in COMPARISON_METRICS:
            metrics[f"comparisons.{c.id}.{name}"] = 1.0 + 0.1 * i
        metrics[f"comparisons.{c.id}.gap"] = gap([0.5 + 0.1 * i, 0.7 + 0.1 * i, 0.6 + 0.1 * i])
    return metrics


def _evidence(manifest, kind, profile, device="cpu"):
    """The manifest's evidence, with every other table's measured as well (claims that span tables read them)."""
    from repro.claims.across import with_tables
    from repro.results.measurements import ManifestResult, Measured

    ev = Evidence(
        manifest.id,
        manifest.paper_table,
        profile,
        metrics=_full_metrics(manifest),
        device=device,
        paper_scale=kind == "paper",
        kind=kind,
        seeds=3,
        comparison_rows={c.id: (c.row, c.baseline) for c in manifest.comparisons},
    )
    others = {
        m.id: (m, ManifestResult(m.id, "", "", m.paper_table, profile, Measured(_full_metrics(m)), [], {}))
        for m in load_all()
    }
    return with_tables(ev, manifest, others)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_a_pipeline_profile_decides_every_analytic_claim_and_no_measured_one(device):
    counts = {"analytic": 0, "empirical": 0, "gpu": 0, "extension": 0}
    for manifest in load_all():
        ev = _evidence(manifest, "pipeline", "smoke", device)
        for c in manifest.claims:
            v = evaluate(c, ev)
            counts[c.scope] += 1
            if c.scope == "analytic":
                assert v.status in ("reproduced", "not reproduced", "inconclusive"), (c.id, v.evidence)
            elif c.scope == "gpu" and device == "cpu":
                assert v.status == "not run" and "needs a GPU" in v.evidence
            else:
                words = {"empirical": "empirical", "gpu": "GPU-scoped", "extension": "extension"}[c.scope]
                assert v.status == "not run" and v.failed == [] and v.p_value is None
                assert v.note == f"smoke is a pipeline check: synthetic data decides no {words} claim"
                assert v.measured and "not measured" not in v.evidence  # what was measured is still shown
    assert counts["analytic"] > 0 and counts["empirical"] > 40 and counts["gpu"] > 0


def test_a_paper_profile_decides_the_same_claims():
    for manifest in load_all():
        ev = _evidence(manifest, "paper", "full", device="cuda")
        for c in manifest.claims:
            assert evaluate(c, ev).status != "not run", c.id


def test_a_functional_profile_gives_its_reason():
    c = claim("compare", scope="empirical", metric="rows.a.rho", relation="<", bound=1.0)
    e = ev(rows__a__rho=0.5)
    e.kind, e.profile = "functional", "functional"
    v = evaluate(c, e)
    assert v.status == "not run"
    assert v.note == "functional is a functional check: real images that are not the paper's decide no empirical claim"
    assert v.evidence == "rows.a.rho = 0.5 < the bound (1)"
    assert evaluate(claim("compare", metric="rows.a.rho", relation="<", bound=1.0), e).status == "reproduced"
    missing = evaluate(claim("compare", scope="empirical", metric="rows.b.rho", relation="<", bound=1.0), e)
    assert missing.evidence == "rows.b.rho was not measured" and missing.note == v.note


def test_a_reduced_profile_names_its_seeds_and_epochs():
    c = claim("compare", scope="empirical", metric="rows.a.rho", relation="<", bound=1.0)
    e = ev(rows__a__rho=0.5)
    e.kind, e.profile, e.paper_scale, e.paper_seeds = "reduced", "quick", False, 5
    e.settings = Profile("q", "reduced", seeds=3, epochs=20)
    v = evaluate(c, e)
    assert v.status == "reproduced"
    assert v.note == (
        "decided on the 'quick' profile, which departs from the paper's protocol: "
        "3 seeds where the paper has 5; 20 epochs instead of the paper's"
    )
    e.settings = Profile("q", "reduced", seeds=3)
    assert v.note != evaluate(c, e).note and "epochs" not in evaluate(c, e).note


def test_the_note_names_every_way_the_profile_departs_from_the_paper():
    # A reduced profile that trains from scratch on a subset at a lower resolution says so, not only its seeds.
    c = claim("compare", scope="empirical", metric="rows.a.rho", relation="<", bound=1.0)
    e = ev(rows__a__rho=0.5)
    e.kind, e.profile, e.paper_scale, e.paper_seeds = "reduced", "cheap", False, 5
    e.settings = Profile(
        "c",
        "reduced",
        seeds=5,
        pretrained=False,
        train_samples=1000,
        test_samples=500,
        batch_size=64,
        max_image_size=32,
        datasets={"imagenet": RowSettings(epochs=3, max_image_size=64)},
    )
    note = evaluate(c, e).note
    for words in (
        "random initialisation where the paper fine-tunes pretrained weights",
        "1000 training images",
        "500 test images",
        "batch 64 instead of the recipe's",
        "images at most 32 px",
        "on imagenet: 3 epochs instead of the paper's, images at most 64 px",
    ):
        assert words in note, (words, note)
    assert "seed" not in note  # the paper's five seeds
    e.settings = Profile("f", "paper")
    e.kind, e.paper_scale = "paper", True
    assert evaluate(c, e).note == ""


def test_a_functional_profile_names_its_recipe_overrides():
    p = Profile(
        "f",
        "functional",
        seeds=2,
        data="digits",
        optimizer="adam",
        lr=0.001,
        backbone_lr_scale=0.0,
        pretrained_on="digits",
    )
    assert p.departures(5) == [
        "2 seeds where the paper has 5",
        "digits data standing in for the paper's datasets",
        "backbones pretrained on the digits stand-in, not ImageNet",
        "recipe optimizer adam, lr 0.001, backbone_lr_scale 0 instead of the paper's",
    ]


def test_departures_put_the_papers_numbers_beside_the_profiles():
    """With the datasets a table trains on (Manifest.trained_datasets), each setting names the paper's number."""
    table = next(m for m in load_all() if m.id == "headline_cifar10")
    assert table.trained_datasets() == ("cifar10",)
    p = Profile(
        "mine",
        "reduced",
        seeds=2,
        epochs=2,
        batch_size=40,
        train_samples=200,
        test_samples=40,
        max_image_size=16,
        pretrained=False,
        datasets={"cifar10": RowSettings(epochs=3), "imagenet": RowSettings(epochs=1)},
    )
    assert p.departures(10, table.trained_datasets()) == [
        "2 seeds where the paper has 10",
        "random initialisation where the paper fine-tunes pretrained weights",
        "2 epochs instead of the paper's 50",
        "200 training images instead of the paper's 50,000",
        "40 test images instead of the paper's 10,000",
        "batch 40 instead of the recipe's 128",
        "images at most 16 px where the paper has 32",
        "on cifar10: 3 epochs instead of the paper's 50",
    ]  # imagenet's settings: not this table's
    assert Profile("q", "reduced", epochs=4).departures(None, ["cifar10", "tiny_imagenet", "cifar10"]) == [
        "4 epochs instead of the paper's 50 (cifar10), 80 (tiny_imagenet)"
    ]


def test_a_verdict_on_unverified_data_says_so_beside_it_with_the_numbers():
    from repro.data.check_result import DataCheck

    c = claim("compare", scope="empirical", metric="rows.a.rho", relation="<", bound=1.0)
    e = ev(rows__a__rho=0.5)
    e.kind, e.profile, e.paper_scale, e.paper_seeds = "reduced", "mine", False, 10
    e.settings = Profile("mine", "reduced", seeds=2, epochs=2)
    e.datasets = ("cifar10",)
    pairs = tuple(f"data_batch_{i}: md5 {i:032x} != {i + 1:032x}" for i in range(1, 8))
    e.data = (
        DataCheck(
            "cifar10",
            "CIFAR-10",
            "data/cifar-10-batches-py",
            10,
            200,
            40,
            checksum="md5 mismatch accepted",
            unverified=pairs,
        ),
    )
    v = evaluate(c, e)
    assert v.status == "reproduced" and v.unverified_data == ["CIFAR-10"]
    assert v.status_text == "reproduced (on unverified data)"
    for words in (
        "2 epochs instead of the paper's 50",
        "7 CIFAR-10 files fail their published md5 (unverified, accepted with --allow-unverified-data)",
        "200 train / 40 test CIFAR-10 images where the paper has 50,000 / 10,000",
    ):
        assert words in v.note, (words, v.note)
    analytic = evaluate(claim("compare", scope="analytic", metric="rows.a.rho", relation="<", bound=1.0), e)
    assert analytic.unverified_data == [] and analytic.status_text == analytic.status  # FLOPs read no data
    e.data = (
        DataCheck("cifar10", "CIFAR-10", "data/cifar-10-batches-py", 10, 50_000, 10_000, checksum="md5 verified"),
    )
    verified = evaluate(c, e)
    assert verified.unverified_data == [] and "md5" not in verified.note and "images where" not in verified.note


def test_a_verdict_names_its_rule_the_rows_it_reads_and_its_tolerance():
    """The verdicts frame (repro.results.frames.verdicts) shows these; before, only the evidence text had them."""
    from repro.plan.manifest import Claim

    from .helpers import learned

    value = evaluate(
        claim("matches_paper", metric="rows.r18_head.rho", paper="r18_head.rho"), ev(rows__r18_head__rho=0.0006)
    )
    assert (value.status, value.rule, value.rows, value.tolerance) == (
        "reproduced",
        "matches_paper",
        ["r18_head"],
        0.005,
    )  # half a unit of "0.06%"
    gap_claim = Claim(
        "c", "s", "4.2", "gap_matches_paper", "empirical", {"comparison": "std_h2048", "paper": "std_h2048.gap"}
    )
    e = Evidence(
        "table1",
        "table1",
        "smoke",
        metrics={"comparisons.std_h2048.gap": gap([0.4, 0.6, 0.5, 0.45]), **learned("m", "d")},
        comparison_rows={"std_h2048": ("m", "d")},
    )
    decided = evaluate(gap_claim, e)
    assert (decided.rule, decided.rows, decided.tolerance) == ("gap_matches_paper", ["d", "m"], None)  # a sign only
    not_run = evaluate(gap_claim, Evidence("table1", "table1", "smoke", comparison_rows={"std_h2048": ("m", "d")}))
    assert not_run.status == "not run" and not_run.rows == ["d", "m"]  # what it would read, decided or not
    spread = evaluate(
        claim("equal", metrics=("rows.a.rho", "rows.b.rho"), relative_tolerance=0.01),
        ev(rows__a__rho=0.5, rows__b__rho=0.5),
    )
    assert (spread.rows, spread.tolerance) == (["a", "b"], 0.01)

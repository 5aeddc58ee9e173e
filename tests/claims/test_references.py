"""check_references (repro.claims.references): what a claim names must exist, and may_collapse is a treatment."""

from types import SimpleNamespace as NS

from repro.claims import check_references
from repro.plan.manifest import Claim
from repro.core.schema import Problems


def _manifest(*claims):
    rows = [NS(id=r) for r in ("soft", "per_sample", "dense")]
    comps = [NS(id="soft", row="soft", baseline="dense"), NS(id="per_sample", row="per_sample", baseline="dense")]
    return NS(paper_table="table8", rows=rows, comparisons=comps, claims=list(claims))


def _problems(**params):
    problems = Problems()
    check_references(_manifest(Claim("c", "s", "5", "gap_order", "empirical", params)), problems)
    return problems.items


def test_may_collapse_names_a_treatment_the_claim_compares():
    assert _problems(comparisons=("soft", "per_sample"), may_collapse=("soft",)) == []
    assert _problems(comparisons=("soft", "per_sample"), may_collapse=("dense",)) == [
        "claims[0].may_collapse: 'dense' is a baseline of this claim: a baseline must have learned"
    ]
    assert _problems(comparisons=("per_sample",), may_collapse=("soft",)) == [
        "claims[0].may_collapse: 'soft' is not a treatment row this claim compares; treatments: per_sample"
    ]
    assert (
        _problems(comparisons=("soft",), may_collapse=("sofft",))[0]
        == "claims[0].may_collapse: no row 'sofft' (did you mean 'soft'?)"
    )


def test_metric_paths_are_checked_with_the_results_vocabulary():
    assert _problems(comparisons=("soft",), metrics=("rows.soft.rho",)) == []
    assert _problems(comparisons=("soft",), metrics=("rows.sof.rho",)) == [
        "claims[0].metrics: no row 'sof' (did you mean 'soft'?)"
    ]
    (bad,) = _problems(comparisons=("soft",), metrics=("rows.soft.rhoo",))
    assert bad.startswith("claims[0].metrics: unknown metric 'rhoo' in 'rows.soft.rhoo'; allowed:")
    assert "(did you mean 'rho'?)" in bad
    (shape,) = _problems(comparisons=("soft",), metrics=("soft.rho",))
    assert shape == "claims[0].metrics: expected 'rows.<id>.<metric>' or 'comparisons.<id>.<metric>', got 'soft.rho'"


def _table(name):
    import copy

    from checkout import MANIFESTS
    from repro.core.schema import read_toml

    return copy.deepcopy(read_toml(MANIFESTS / f"{name}.toml"))


def _load_problems(doc, name):
    import pytest

    from repro.plan.manifest import parse_manifest
    from repro.core.schema import SchemaError

    with pytest.raises(SchemaError) as exc:
        parse_manifest(doc, f"{name}.toml")
    return exc.value.problems


def _claim_of(doc, claim_id):
    return next(c for c in doc["claims"] if c["id"] == claim_id)


def _paper_sign_problems(doc):
    """check_across's problems for table6 with `doc` in its place (the guard needs every manifest)."""
    from repro.claims.across import check_across
    from repro.plan.manifest import load_all, parse_manifest

    manifests = [parse_manifest(doc, "table6.toml") if m.id == "table6" else m for m in load_all()]
    return check_across(manifests).get("table6", [])


def test_a_separation_rule_reads_every_setting_whose_sign_any_table_states():
    # The threshold claim listed only table6's own stated rows: CIFAR-10 w=2.0 (+, rho 10.6%), CIFAR-100 w=0.72
    # (+), Tiny w=2.0 (+), MobileNet-V2 h=256 (-) and the Soft MoE / Expert Choice rows were neither listed nor
    # excluded. Leaving one out is refused, whichever table states its sign.
    doc = _table("table6")
    sep = _claim_of(doc, "rho_threshold_separates")
    sep["above"].remove("cifar10_dw2_moe")
    del sep["settings"]["cifar10_dw2_moe"]
    del sep["excluded"]["table9:c100_soft"]
    problems = _paper_sign_problems(doc)
    i = doc["claims"].index(sep)
    assert (
        f"claims[{i}]: separates leaves out 'headline_cifar10:dw2', whose gap sign the text states (+): list a "
        "row that counts it, or exclude it with the reason" in problems
    )
    assert any("leaves out 'table9:c100_soft', whose gap sign the text states (-)" in p for p in problems)
    assert any("'cifar10_dw2_moe': its gap sign is stated (+); list it" in p for p in problems)


def test_a_separation_rule_refuses_a_setting_on_the_wrong_side_another_model_or_an_unstated_exclusion():
    doc = _table("table6")
    sep = _claim_of(doc, "rho_threshold_separates")
    i = doc["claims"].index(sep)
    sep["below"].remove("cifar10_std_moe")
    sep["above"].append("cifar10_std_moe")
    sep["settings"]["mnv2_head"] = ["table4:mnv2_h256"]  # the h=256 model, not table6's h=512 row
    sep["excluded"]["table4:r18_dense"] = "a dense row"
    problems = _paper_sign_problems(doc)
    assert (
        f"claims[{i}]: 'cifar10_std_moe': table9:cifar10_sparse_std's stated gap sign <=0 puts it below, not "
        "above" in problems
    )
    assert any(
        p.startswith(
            f"claims[{i}]: settings.mnv2_head: 'table4:mnv2_h256' compares table4's mnv2_h256_moe, a different model"
        )
        for p in problems
    )
    assert f"claims[{i}]: excluded: 'table4:r18_dense' is no setting whose gap sign the text states" in problems


def test_the_shipped_separation_claim_reads_every_stated_setting_and_its_verdict_follows():
    from repro.claims.across import paper_signs
    from repro.plan.manifest import find_manifest, load_all

    t6 = find_manifest("table6")
    sep = next(c for c in t6.claims if c.id == "rho_threshold_separates")
    counted = {s for settings in sep.params["settings"].values() for s in settings}
    stated = paper_signs({m.id: m for m in load_all()})
    assert set(stated) == (counted - set(sep.params["excluded"])) | set(sep.params["excluded"])
    assert len(stated) == 34 and len(sep.params["below"]) + len(sep.params["above"]) == 13
    for row in ("cifar10_dw2_moe", "cifar100_dw072_moe", "tiny_dw2_moe"):
        assert row in sep.params["above"]
    assert "mnv2_h256_head" in sep.params["below"]


def test_a_sign_rule_over_comparisons_must_read_every_comparison_whose_sign_the_text_states():
    doc = _table("table1")
    rule = _claim_of(doc, "t1_sign_follows_rho")
    rule["comparisons"] = [c for c in rule["comparisons"] if c != "dw_h128"]
    problems = _load_problems(doc, "table1")
    assert any("sign_follows_rho leaves out 'dw_h128', whose gap sign the text states (-)" in p for p in problems)
    rule["excluded"] = {"dw_h128": "a reason"}
    from repro.plan.manifest import parse_manifest

    assert parse_manifest(doc, "table1.toml")  # an exclusion with its reason is accepted, and shown

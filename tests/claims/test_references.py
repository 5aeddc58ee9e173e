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
        "claims[0].may_collapse: 'dense' is a baseline of this claim: a baseline must have learned"]
    assert _problems(comparisons=("per_sample",), may_collapse=("soft",)) == [
        "claims[0].may_collapse: 'soft' is not a treatment row this claim compares; treatments: per_sample"]
    assert _problems(comparisons=("soft",), may_collapse=("sofft",))[0] == "claims[0].may_collapse: no row 'sofft' (did you mean 'soft'?)"


def test_metric_paths_are_checked_with_the_results_vocabulary():
    assert _problems(comparisons=("soft",), metrics=("rows.soft.rho",)) == []
    assert _problems(comparisons=("soft",), metrics=("rows.sof.rho",)) == ["claims[0].metrics: no row 'sof' (did you mean 'soft'?)"]
    (bad,) = _problems(comparisons=("soft",), metrics=("rows.soft.rhoo",))
    assert bad.startswith("claims[0].metrics: unknown metric 'rhoo' in 'rows.soft.rhoo'; allowed:") and "(did you mean 'rho'?)" in bad
    (shape,) = _problems(comparisons=("soft",), metrics=("soft.rho",))
    assert shape == "claims[0].metrics: expected 'rows.<id>.<metric>' or 'comparisons.<id>.<metric>', got 'soft.rho'"


def _table(name):
    import copy

    from repro import REPO_ROOT
    from repro.core.schema import read_toml

    return copy.deepcopy(read_toml(REPO_ROOT / "manifests" / f"{name}.toml"))


def _load_problems(doc, name):
    import pytest

    from repro.plan.manifest import parse_manifest
    from repro.core.schema import SchemaError

    with pytest.raises(SchemaError) as exc:
        parse_manifest(doc, f"{name}.toml")
    return exc.value.problems


def _claim_of(doc, claim_id):
    return next(c for c in doc["claims"] if c["id"] == claim_id)


def test_a_separation_rule_refuses_a_row_list_that_leaves_out_a_setting_whose_sign_the_text_states():
    # rho_threshold_separates used to list only three settings below ~7%: the standard-backbone CIFAR-10 MoE
    # (rho 8.2%, not positive by Section 4.2 and 5) and Table 1's DW h=128 (24.4%, negative) were left out.
    doc = _table("table6")
    sep = _claim_of(doc, "rho_threshold_separates")
    sep["below"] = ["r18_head", "mnv2_head", "tiny_std_moe"]
    problems = _load_problems(doc, "table6")
    for row, sign in (("cifar10_std_moe", "<=0"), ("cifar10_dw_h128_moe", "-")):
        assert any(f"separates leaves out '{row}', whose gap sign the text states ({sign})" in p for p in problems)


def test_a_separation_rule_refuses_a_setting_on_the_side_its_sign_contradicts_and_an_unstated_exclusion():
    doc = _table("table6")
    sep = _claim_of(doc, "rho_threshold_separates")
    sep["below"].remove("cifar10_std_moe")
    sep["above"].append("cifar10_std_moe")
    sep["excluded"]["cifar10_dw072_dense"] = "a dense row"
    problems = _load_problems(doc, "table6")
    assert any("'cifar10_std_moe': the text states its gap sign <=0, which puts it below, not above" in p
               for p in problems), problems
    assert any("excluded: 'cifar10_dw072_dense' has no gap sign the text states" in p for p in problems)


def test_the_shipped_separation_claim_reads_every_stated_setting_and_its_verdict_follows():
    from repro.claims.references import stated_signs
    from repro.plan.manifest import find_manifest

    t6 = find_manifest("table6")
    sep = next(c for c in t6.claims if c.id == "rho_threshold_separates")
    listed = set(sep.params["below"]) | set(sep.params["above"]) | set(sep.params["excluded"])
    assert listed == set(stated_signs(t6, "rows")) and len(listed) == 10


def test_a_sign_rule_over_comparisons_must_read_every_comparison_whose_sign_the_text_states():
    doc = _table("table1")
    rule = _claim_of(doc, "t1_sign_follows_rho")
    rule["comparisons"] = [c for c in rule["comparisons"] if c != "dw_h128"]
    problems = _load_problems(doc, "table1")
    assert any("sign_follows_rho leaves out 'dw_h128', whose gap sign the text states (-)" in p for p in problems)
    rule["excluded"] = {"dw_h128": "a reason"}
    from repro.plan.manifest import parse_manifest

    assert parse_manifest(doc, "table1.toml")  # an exclusion with its reason is accepted, and shown

"""check_references (repro.claims.references): what a claim names must exist, and may_collapse is a treatment."""

from types import SimpleNamespace as NS

from repro.claims import check_references
from repro.manifest import Claim
from repro.schema import Problems


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

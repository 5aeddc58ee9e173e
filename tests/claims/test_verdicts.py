"""evaluate (repro.claims.verdicts): missing data, GPU scope and the profile a verdict was decided on."""

from repro.claims import evaluate

from .helpers import claim, ev


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

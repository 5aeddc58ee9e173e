"""`repro compare A B` claim by claim (repro.report.compare): each claim's number, its mean, sample s.d.,
standard error and seeds on each side, B - A and whether the verdict changed; --format md for a pull request and
--format json, with the exit code of the comparison."""

import json
import math

import pytest
from fake_records import record, write_manifest_t, write_result
from test_compare import DENSE, MOE, invoke, make

from repro.plan.manifest import load_all
from repro.report.compare import compare_folders
from repro.report.compare import Spread


def gap(differences):
    return {
        "mean": sum(differences.values()) / len(differences),
        "n": len(differences),
        "differences": {str(s): d for s, d in differences.items()},
    }


def with_claims(root, moe=MOE, status="reproduced", seeds=3):
    """make()'s folder, with three claims: a gap stored per seed, one that stored no number (read on its rows'
    records), and an analytic count."""
    make(root, moe=moe, seeds=seeds, status=status)
    result = json.loads((root / "smoke" / "t" / "results.json").read_text())
    differences = {s: m - d for s, (m, d) in enumerate(zip(moe, DENSE))}
    result["verdicts"] = [
        {
            **result["verdicts"][0],
            "claim": "gap",
            "rows": ["moe", "dense"],
            "measured": {"comparisons.g.gap": gap(differences)},
        },
        {**result["verdicts"][0], "claim": "rows", "rows": ["dense"], "measured": {}},
        {
            **result["verdicts"][0],
            "claim": "flops",
            "scope": "analytic",
            "rows": [],
            "measured": {"rows.moe.rho": 0.25},
        },
    ]
    (root / "smoke" / "t" / "results.json").write_text(json.dumps(result))
    return root


def sd(xs):
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def test_spread_by_hand():
    s = Spread.of([0.50, 0.52, 0.51])
    assert (s.n, round(s.mean, 12), round(s.sd, 12), round(s.se, 12)) == (3, 0.51, 0.01, round(0.01 / math.sqrt(3), 12))
    assert Spread.of([0.5]) == Spread(1, 0.5, None, None) and Spread.of([]) is None


def test_each_claim_has_mean_sd_se_and_n_on_each_side(tmp_path):
    shifted = (0.70, 0.71, 0.69)
    a, b = with_claims(tmp_path / "a"), with_claims(tmp_path / "b", moe=shifted, status="not reproduced")
    claims = {c.claim: c for c in compare_folders(a, b).claims}
    assert set(claims) == {"gap", "rows", "flops"}
    g = claims["gap"]
    da, db = [m - d for m, d in zip(MOE, DENSE)], [m - d for m, d in zip(shifted, DENSE)]
    assert (g.a.n, g.b.n) == (3, 3) and g.quantity == "comparisons.g.gap"
    assert math.isclose(g.a.mean, sum(da) / 3) and math.isclose(g.a.sd, sd(da))
    assert math.isclose(g.a.se, sd(da) / math.sqrt(3))
    assert math.isclose(g.difference, sum(db) / 3 - sum(da) / 3)
    # No manifest decides these stored claims: their numbers are compared, never their stored statuses (issue 45)
    assert (g.status_a, g.status_b, g.changed) == ("not run", "not run", False)
    decided = compare_folders(a, b, manifests=load_all(write_manifest_t(tmp_path)))  # table t's own claim c
    assert [(c.claim, c.status_a, c.status_b, c.changed) for c in decided.claims] == [
        ("c", "reproduced", "not reproduced", True)
    ]
    rows = claims["rows"]  # no number stored: the row's accuracy over its records
    assert rows.quantity == "rows.dense.accuracy" and math.isclose(rows.a.mean, 0.51) and math.isclose(rows.a.sd, 0.01)
    flops = claims["flops"]
    assert (flops.a, flops.difference) == (Spread(None, 0.25, None, None), 0.0)


def test_a_damaged_record_leaves_its_seed_out_of_n(tmp_path):
    a, b = with_claims(tmp_path / "a"), with_claims(tmp_path / "b")
    cfg_hash = json.loads((b / "smoke" / "t" / "results.json").read_text())["details"]["runs"]["dense"][2]["hash"]
    (b / "runs" / f"{cfg_hash}.json").write_text("{")
    claims = {c.claim: c for c in compare_folders(a, b).claims}
    assert (claims["gap"].a.n, claims["gap"].b.n) == (3, 2) and claims["rows"].b.n == 2


def test_markdown_shows_the_claims_table_and_keeps_the_exit_code(tmp_path, monkeypatch):
    a, b = with_claims(tmp_path / "a"), with_claims(tmp_path / "b")
    done, lines = invoke(a, b, "--format", "md")
    assert done.exit_code == 0, done.output
    header = next(line for line in lines if line.startswith("| Claim |"))
    assert "| A mean | A sd | A se | A n | B mean | B sd | B se | B n | B - A |" in header
    row = next(line for line in lines if line.startswith("| t/rows |")).split(" | ")
    assert row[1:6] == ["rows.dense.accuracy", "0.51", "0.01", f"{0.01 / math.sqrt(3):.4g}", "3"] and row[-1] == "no |"
    changed = with_claims(tmp_path / "c", status="not reproduced")
    monkeypatch.setenv("REPRO_MANIFESTS", str(write_manifest_t(tmp_path)))  # decides claim c of table t
    done, lines = invoke(a, changed, "--format", "md")
    assert done.exit_code == 1 and any(line.startswith("| t/c |") and line.endswith("| **yes** |") for line in lines)


def test_json_lists_every_claim_with_both_sides(tmp_path):
    a, b = with_claims(tmp_path / "a"), with_claims(tmp_path / "b", seeds=2)
    done, _ = invoke(a, b, "--format", "json")
    assert done.exit_code == 1, done.output  # as today: B's rows are on fewer runs, with other accuracies
    claims = {c["claim"]: c for c in json.loads(done.output)["claims"]}
    assert claims["rows"]["a"]["n"] == 3 and claims["rows"]["b"]["n"] == 2
    assert set(claims["gap"]["a"]) == {"n", "mean", "sd", "se"} and claims["gap"]["changed"] is False
    assert invoke(a, b, "--json")[0].output == done.output


@pytest.mark.parametrize("fmt", ["text", "md", "json"])
def test_a_claim_in_one_folder_only_is_absent_on_the_other_side(tmp_path, fmt):
    a = with_claims(tmp_path / "a")
    b = make(tmp_path / "b")
    write_result(b, "u", {"dense": [record(__import__("fake_records").config(seed=0))]})
    done, _ = invoke(a, b, "--format", fmt)
    assert done.exit_code == 1  # verdicts changed: present in A, absent in B
    if fmt == "json":
        claims = json.loads(done.output)["claims"]
        assert {(c["claim"], c["status_b"]) for c in claims if c["claim"] in ("gap", "flops")} == {
            ("gap", "absent"),
            ("flops", "absent"),
        }


def test_an_unknown_format_is_refused(tmp_path):
    a = make(tmp_path / "a")
    done, _ = invoke(a, a, "--format", "html")
    assert done.exit_code == 2 and "expected one of text, md, json" in done.output

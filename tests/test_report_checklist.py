"""The checklists (claims.md, report.md): a shared finding shown in both tables and counted once, a claim
reproduced only under an alternative reading on a line of its own, and the analytic kinds apart."""

from repro.claims.under_readings import ClaimReadings, ReadingOutcome
from repro.plan.manifest import find_manifest
from repro.spec.profiles import Profile
from repro.report.render import render_claims_md, render_report
from repro.report.summary import summary_lines
from repro.results.measurements import ManifestResult, Measured, Verdict


def _result(manifest, verdicts, shown=(), readings=()):
    return ManifestResult(
        manifest.id,
        manifest.title,
        manifest.paper_ref,
        manifest.paper_table,
        "full",
        Measured(),
        list(verdicts),
        {"git_commit": "x", "time": "t", "device": "cpu", "packages": {}},
        Profile("p", "paper", seeds=5),
        readings=list(readings),
        shown=list(shown),
    )


def test_a_claim_reproduced_only_under_an_alternative_reading_says_so_on_its_own_line():
    t6 = find_manifest("table6")
    chosen = Verdict(
        "rho_backbone_moe",
        "MoEConv2d ... about 38%",
        "4.6",
        "analytic",
        "not reproduced",
        "measured 45.0% vs reported ~38%",
        kind="printed",
    )
    readings = ClaimReadings(
        "table6",
        "rho_backbone_moe",
        "s",
        "method-and-results",
        ReadingOutcome("", "", "the chosen readings", "not reproduced", "45%", "e"),
        [
            ReadingOutcome(
                "moe-conv-stride",
                "stride1",
                "stride-1 convolutions only",
                "reproduced",
                "37.9%",
                "measured 37.9% vs reported ~38%",
            )
        ],
    )
    md = render_claims_md(t6, _result(t6, [chosen], readings=[readings]))
    lines = md.splitlines()
    at = next(i for i, line in enumerate(lines) if "(`rho_backbone_moe`)" in line)
    assert "**not reproduced**" in lines[at] and "analytic (printed)" in lines[at]
    assert lines[at + 1].startswith(
        "| ↳ `rho_backbone_moe` under the alternative reading 'stride-1 convolutions "
        "only' (`moe-conv-stride`), not the chosen one | **reproduced only under an "
        "alternative reading** | | 37.9%: measured 37.9% vs reported ~38%"
    )


def test_a_shared_finding_is_shown_in_the_second_table_and_counted_in_the_first():
    t8, t9 = find_manifest("table8"), find_manifest("table9")
    own = Verdict(
        "per_sample_rescues_c100",
        "Per-sample dispatch rescues CIFAR-100",
        "5",
        "empirical",
        "reproduced",
        "gap +1.70pp",
        p_value=0.001,
        p_holm=0.01,
    )
    shown = Verdict(**{**own.to_dict(), "decided_in": "table8"})
    r8, r9 = _result(t8, [own]), _result(t9, [], shown=[shown])
    md = render_claims_md(t9, r9)
    assert "(`per_sample_rescues_c100`) *(decided in table8, counted there)* | **reproduced**" in md
    summary = summary_lines([(t8, r8), (t9, r9)], None, {})
    assert summary["counts"]["empirical"]["reproduced"] == 1 and summary["reproduced"] == 1
    report = render_report([(t8, r8), (t9, r9)], summary)
    rows = [line for line in report.splitlines() if "(`per_sample_rescues_c100`)" in line]
    assert len(rows) == 2 and rows[0].startswith("| table8 |") and "decided in table8" in rows[1]


def test_the_per_table_headline_keeps_self_tests_apart():
    t7 = find_manifest("table7")
    loop = Verdict("loop_ops_grow_with_experts", "s", "5", "analytic", "reproduced", "e", kind="self-test")
    summary = summary_lines([(t7, _result(t7, [loop]))], None, {})
    assert summary["reproduced"] == 0 and summary["counts"]["self-test"]["reproduced"] == 1
    assert any(
        line.startswith("Self-tests of this artifact's code (shown, not counted as reproductions) (1)")
        for line in summary["lines"]
    )
    report = render_report([(t7, _result(t7, [loop]))], summary)
    assert "| table7 | – | – | 1 / 0 / 0 / 0 | – | – | – |" in report


def test_the_tables_regenerated_count_the_extension_beside_the_papers():
    """verify-all said "12 tables" and the report "Tables regenerated: 11 / 11": the extension's table was left
    out of the count without a word."""
    t7, ext = find_manifest("table7"), find_manifest("ext_routers")
    summary = summary_lines([(t7, _result(t7, []))], None, {}, [(ext, _result(ext, [])), (ext, None)])
    assert summary["lines"][0] == "Tables regenerated: 1 / 1 of the paper's, and 1 / 2 beyond it"
    assert summary_lines([(t7, _result(t7, []))], None, {})["lines"][0] == "Tables regenerated: 1 / 1"


def test_report_md_is_the_summary_and_links_each_section_of_report_detail_md(tmp_path):
    """Issue 49: report.md was 1,464 lines at smoke, the claims checklist in its first tenth. Now it holds the
    headline, the checklist and the figures, then a link to each section of report-detail.md, which holds them."""
    import re

    from repro.report.render import DETAIL, md_anchor, render_report_detail

    manifests = [find_manifest(i) for i in ("table6", "table7")]
    entries = [(m, _result(m, [])) for m in manifests]
    summary = summary_lines(entries, None, {})
    sections = [("Where the time went", "a table"), ("Compute per claim and table", "another")]
    report, detail = render_report(entries, summary, sections), render_report_detail(entries, sections)
    assert "## Claims checklist" in report and "## Provenance" not in report
    assert not [m.id for m in manifests if f"## {m.id}: " in report]  # each table's section: in the detail
    headings = re.findall(r"^## (.*)$", detail, re.M)
    assert headings == [f"{m.id}: {m.title}" for m in manifests] + [t for t, _ in sections] + ["Provenance"]
    links = re.findall(rf"\]\({re.escape(DETAIL)}#([^)]+)\)", report)
    assert links == [md_anchor(h) for h in headings]
    assert md_anchor("table4: ImageNet-1K head-only MoE (rho < 1%)") == "table4-imagenet-1k-head-only-moe-rho--1"

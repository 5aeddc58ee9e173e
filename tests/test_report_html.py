"""report.html from fabricated results of real manifests: self-contained, every claim a line, numbers linked."""

import dataclasses
import json
import re
from html.parser import HTMLParser

import pytest

from repro.plan.manifest import find_manifest
from repro.claims import decide_table, decided_results
from repro.cost.taken import for_report
from repro.plan.table_plan import plan_all
from repro.report.summary import write_report
from repro.results.measurements import save_result
from test_figures import fake_result


class Page(HTMLParser):
    """Every element's tag and attributes, in document order."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, {k: v or "" for k, v in attrs}))

    def all(self, tag: str, cls: str | None = None) -> list[dict[str, str]]:
        return [a for t, a in self.elements if t == tag and (cls is None or cls in a.get("class", "").split())]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    manifests = [find_manifest(i) for i in ("headline_cifar10", "table2", "table6")]
    for m in manifests[:2]:  # table6 is not run: its claims are listed apart, not counted as decided
        result = dataclasses.replace(
            fake_result(m),
            provenance={"git_commit": "0123456789abcdef", "time": "t", "device": "cpu", "packages": {}},
            profile_settings=m.profiles["smoke"].for_manifest(m.id, m.seeds),
        )
        save_result(decide_table(m, result), results)  # as the pipeline stores it: claims decided
        for runs in result.measured.details["runs"].values():
            for run in runs:
                (results / "runs").mkdir(exist_ok=True)
                (results / "runs" / f"{run['hash']}.json").write_text("{}")
    write_report(
        decided_results(results, "smoke", manifests),
        results,
        "smoke",
        for_report(results, "smoke", plan_all(manifests)),
    )
    path = results / "smoke" / "report.html"
    return results, path.read_text(encoding="utf-8"), manifests


def test_it_is_self_contained(report):
    _, text, _ = report
    assert "http://" not in text and "https://" not in text
    page = Page(text)
    images = page.all("img")
    assert images and all(a["src"].startswith("data:image/png;base64,") for a in images)
    assert not page.all("script") and not page.all("link") and not page.all("iframe")


def test_every_claim_is_one_line_with_its_evidence_folded_below(report):
    results, text, manifests = report
    stored = sum(len(json.loads(p.read_text())["verdicts"]) for p in (results / "smoke").glob("*/results.json"))
    page = Page(text)
    claims = page.all("details", "claim")
    count = next(a for a in page.all("p") if a.get("id") == "claim-count")
    assert len(claims) == stored == int(count["data-claims"]) > 0
    not_run = sum(a["data-status"] == "not run" for a in claims)
    assert int(count["data-not-run"]) == not_run > 0  # "88 claims decided" once counted these too
    assert f"{len(claims) - not_run} decided from its results, {not_run} not run at this profile" in text
    assert {a["data-status"] for a in claims} <= {"reproduced", "not reproduced", "inconclusive", "not run"}
    assert len(page.all("div", "pending")) == len(manifests[2].claims)  # table6: not run into this folder
    first = text[text.index('<details class="claim') :]
    summary = first[first.index("<summary>") : first.index("</summary>")]
    assert 'class="verdict"' in summary and 'class="evidence"' in summary  # the line: verdict, measured vs reported


def test_numbers_link_to_their_run_records_and_claims_to_their_figures(report):
    results, text, _ = report
    page = Page(text)
    ids = {a["id"] for _, a in page.elements if "id" in a}
    hrefs = [a["href"] for a in page.all("a")]
    internal = [h for h in hrefs if h.startswith("#")]
    assert internal and all(h[1:] in ids for h in internal)
    appendix = [a["href"] for a in page.all("a", "appendix")]  # the other files the page links: the appendix
    traces = [h for h in hrefs if h.split("#")[0] == "trace.html"]  # and each table row's trace (test_trace.py)
    assert traces and (results / "smoke" / "trace.html").is_file()
    records = [h for h in hrefs if not h.startswith("#") and h not in appendix and h not in traces]
    assert records and all(re.fullmatch(r"\.\./runs/[0-9a-f]{16}\.json", h) for h in records)
    assert all((results / "smoke" / h).resolve().is_file() for h in records)
    assert any(a["href"] == "#fig-gap_vs_rho" for a in page.all("a", "fig"))
    assert page.all("a", "run")  # table cells: each number's runs


def test_the_first_screen_has_the_headline_per_group_and_per_table(report):
    results, text, manifests = report
    page = Page(text)
    scopes = {
        v["scope"] for p in (results / "smoke").glob("*/results.json") for v in json.loads(p.read_text())["verdicts"]
    }
    assert {a["data-group"] for a in page.all("div", "group")} == scopes == {"empirical"}  # a group per scope decided
    per_table = text[text.index('class="per-table"') : text.index("</table>", text.index('class="per-table"'))]
    assert all(f'href="#claims-{m.id}"' in per_table for m in manifests)
    # colour per verdict
    assert '<td class="skip" data-label="not run">' in per_table and "not run into this folder" in per_table
    assert text.index('id="headline"') < text.index('id="claims"')
    assert "smoke: synthetic data, a pipeline check, not evidence · commit 0123456789ab" in text


def test_it_links_the_artifact_appendix_written_beside_it(report):
    results, text, manifests = report
    links = [a["href"] for a in Page(text).all("a", "appendix")]
    assert links == ["artifact-appendix.md", "artifact-appendix.tex"]
    assert all((results / "smoke" / h).is_file() for h in links)
    appendix = (results / "smoke" / "artifact-appendix.md").read_text()
    assert all(f"`{m.id}/{c.id}`" in appendix for m in manifests for c in m.claims)  # every claim, table6's too
    assert "](artifact-appendix.md)" in (results / "smoke" / "report.md").read_text()

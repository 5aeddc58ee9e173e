"""Text from a manifest or a results folder reaches Markdown, HTML, LaTeX and report.html's images only as text
(issue 45, item 5 and the low cases): no raw HTML in any Markdown file the artifact writes, no image in report.html
but the report's own figures, no character LaTeX would misprint."""

import base64
import dataclasses
import json
import os

import pytest
from markdown_it import MarkdownIt

from repro.claims import decide_table, decided_results
from repro.core.schema import read_toml
from repro.cost.taken import for_report
from repro.plan.manifest import parse_manifest, with_profiles
from repro.plan.table_plan import plan_all
from repro.report.html import _markdown
from repro.report.summary import write_report
from repro.results.measurements import save_result
from repro.spec.profiles import all_profiles
from checkout import MANIFESTS
from test_figures import fake_result

EVIL = "<b onmouseover=alert(1)>evil</b> ![x](/etc/passwd)"
TEXT_KEYS = ("title", "description", "label", "notes", "statement", "text", "section", "paper_ref")


def _taint(doc):
    if isinstance(doc, dict):
        return {k: f"{v} {EVIL}" if k in TEXT_KEYS and isinstance(v, str) else _taint(v) for k, v in doc.items()}
    return [_taint(x) for x in doc] if isinstance(doc, list) else doc


def _html(tokens):
    for t in tokens:
        if t.type in ("html_inline", "html_block"):
            yield t.type, t.content
        if t.type == "image":
            yield t.type, str(t.attrGet("src"))
        yield from _html(t.children or [])


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """Every text field of a real manifest, the provenance and the timings' machine carry raw HTML and an image."""
    doc = _taint(read_toml(MANIFESTS / "headline_cifar10.toml"))
    manifest = with_profiles(parse_manifest(doc, "headline_cifar10.toml"), all_profiles()[0])
    results = tmp_path_factory.mktemp("results")
    provenance = {"git_commit": "0123", "time": EVIL, "device": EVIL, "packages": {EVIL: EVIL}}
    result = dataclasses.replace(
        fake_result(manifest),
        provenance=provenance,
        profile_settings=manifest.profiles["smoke"].for_manifest(manifest.id, manifest.seeds),
    )
    save_result(decide_table(manifest, result), results)
    timings = {
        "schema": 1,
        "commands": {
            "run t": {
                "command": EVIL,
                "profile": "smoke",
                "started": EVIL,
                "wall_s": 1.0,
                "cpu_s": 1.0,
                "machine": {"cpu": EVIL, "cores": EVIL},
                "phases": [{"phase": EVIL, "wall_s": 1.0, "cpu_s": 1.0}],
            }
        },
    }
    (results / "smoke" / "timings.json").write_text(json.dumps(timings))
    write_report(
        decided_results(results, "smoke", [manifest]),
        results,
        "smoke",
        for_report(results, "smoke", plan_all([manifest])),
    )
    return results


def test_no_markdown_file_holds_raw_html_or_an_image_but_the_figures(report):
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    files = sorted(report.rglob("*.md"))
    assert {f.name for f in files} >= {"report.md", "claims.md", "headline_cifar10.md", "artifact-appendix.md"}
    for file in files:
        found = [
            (kind, text)
            for kind, text in _html(md.parse(file.read_text()))
            if not (kind == "image" and text.startswith("figures/"))
        ]
        assert found == [], file


def test_report_html_shows_the_text_and_embeds_no_file_of_the_machine(report):
    page = (report / "smoke" / "report.html").read_text()
    assert "<b onmouseover" not in page and "&lt;b onmouseover=alert(1)&gt;evil&lt;/b&gt;" in page
    passwd = base64.b64encode(open("/etc/passwd", "rb").read()[:30]).decode() if os.path.exists("/etc/passwd") else "~"
    assert passwd[:24] not in page


def test_the_image_rule_inlines_only_the_reports_own_figures(tmp_path):
    figures = tmp_path / "figures"
    figures.mkdir()
    (figures / "gap.png").write_bytes(b"\x89PNG fake")
    (tmp_path / "secret.png").write_bytes(b"secret")
    os.symlink(tmp_path / "secret.png", figures / "linked.png")
    html = _markdown(tmp_path).render(
        "![a](figures/gap.png) ![b](/etc/passwd) ![c](figures/../secret.png) ![d](secret.png) "
        "![e](figures/linked.png) ![f](figures/none.png)"
    )
    assert html.count("<img ") == 1 and base64.b64encode(b"\x89PNG fake").decode() in html
    assert base64.b64encode(b"secret").decode() not in html
    for name in ("/etc/passwd", "figures/../secret.png", "secret.png"):
        assert f"(image {name} not shown: not one of this report's figures)" in html
    assert "<em>e (figure file missing)</em>" in html and "<em>f (figure file missing)</em>" in html


def test_the_latex_tables_print_what_the_text_says(report):
    for tex in (
        report / "smoke" / "headline_cifar10" / "headline_cifar10.tex",
        report / "smoke" / "artifact-appendix.tex",
    ):
        lines = [line for line in tex.read_text().splitlines() if "onmouseover" in line]
        assert lines and all("$<$b onmouseover=alert(1)$>$evil$<$/b$>$" in line for line in lines), tex
        assert not {"<", ">"} & set("".join(lines).replace("$<$", "").replace("$>$", "")), tex  # never ¡ ¿

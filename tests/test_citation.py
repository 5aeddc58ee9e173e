"""CITATION.cff validates against the Citation File Format schema (cffconvert), cites the paper as its reference,
agrees with pyproject.toml, and codemeta.json is what cffconvert generates from it. cffconvert runs where
tests/tool_python.py says (tests/citation_check.py)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from citation_check import check

from repro.results.package import CITATION_FILE

ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def _committed() -> dict:
    """cffconvert's summary of the committed CITATION.cff (tests/citation_check.py), once per session."""
    return check(ROOT / CITATION_FILE)


def _pyproject() -> dict:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_citation_file_validates():
    found = _committed()
    assert found["error"] is None, found["error"]
    assert found["cffversion"] == "1.2.0"


def test_an_invalid_citation_file_fails_validation(tmp_path):
    """The check is real: the same file with a date that is not one fails it, with jsonschema's ValidationError."""
    text = (
        (ROOT / CITATION_FILE)
        .read_text(encoding="utf-8")
        .replace("version: 0.1.0", "date-released: yesterday\nversion: 0.1.0")
    )
    (tmp_path / CITATION_FILE).write_text(text, encoding="utf-8")
    found = check(tmp_path / CITATION_FILE)
    assert found["schema_error"], found["error"]


def test_citation_agrees_with_pyproject_and_cites_the_paper():
    found = _committed()
    assert found["error"] is None, found["error"]
    citation = found["cff"]
    project = _pyproject()
    assert str(citation["version"]) == project["version"]
    assert citation["license"] == project["license"]["text"]
    (paper,) = citation["references"]
    assert paper["url"] == "https://arxiv.org/abs/2605.15484"
    assert [a["family-names"] for a in paper["authors"]] == ["Sun", "Harn", "He", "Qin"]


def test_codemeta_is_generated_from_the_citation_file():
    found = _committed()
    assert found["error"] is None, found["error"]
    committed = json.loads((ROOT / "codemeta.json").read_text(encoding="utf-8"))
    assert committed == json.loads(found["codemeta"]), (
        "codemeta.json is stale: regenerate it with `cffconvert -f codemeta -i CITATION.cff -o codemeta.json`"
    )


def test_the_appendix_says_how_to_cite_and_deposit_the_artifact():
    from repro.plan.table_plan import plan_all
    from repro.plan.manifest import load_all
    from repro.report.appendix import appendix_inputs, build_appendix, render

    manifests = load_all()
    inputs = appendix_inputs(plan_all(manifests))  # the caches only: no model is built here
    md = render(build_appendix([(m, None) for m in manifests], "smoke", inputs, with_results=False), "md")
    line = next(line for line in md.splitlines() if "Publicly available" in line)
    assert f"cite it with {CITATION_FILE} (codemeta.json beside it)" in line and "`repro package`" in line
    assert (ROOT / CITATION_FILE).is_file() and (ROOT / "codemeta.json").is_file()

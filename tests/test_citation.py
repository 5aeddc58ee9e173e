"""CITATION.cff validates against the Citation File Format schema (cffconvert), cites the paper as its reference,
agrees with pyproject.toml, and codemeta.json is what cffconvert generates from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.results.package import CITATION_FILE

cffconvert = pytest.importorskip("cffconvert", reason="cffconvert is in the dev extra")
from cffconvert.citation import Citation  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _citation(text: str) -> Citation:
    return Citation(text, src=CITATION_FILE)


def _pyproject() -> dict:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_citation_file_validates():
    citation = _citation((ROOT / CITATION_FILE).read_text(encoding="utf-8"))
    citation.validate()  # raises on any schema error
    assert citation.cffversion == "1.2.0"


def test_an_invalid_citation_file_fails_validation():
    """The check is real: the same file with a date that is not one fails it."""
    from jsonschema.exceptions import ValidationError

    text = (ROOT / CITATION_FILE).read_text(encoding="utf-8").replace("version: 0.1.0", "date-released: yesterday\n"
                                                                       "version: 0.1.0")
    with pytest.raises(ValidationError):
        _citation(text).validate()


def test_citation_agrees_with_pyproject_and_cites_the_paper():
    citation = _citation((ROOT / CITATION_FILE).read_text(encoding="utf-8")).cffobj
    project = _pyproject()
    assert str(citation["version"]) == project["version"]
    assert citation["license"] == project["license"]["text"]
    (paper,) = citation["references"]
    assert paper["url"] == "https://arxiv.org/abs/2605.15484"
    assert [a["family-names"] for a in paper["authors"]] == ["Sun", "Harn", "He", "Qin"]


def test_codemeta_is_generated_from_the_citation_file():
    citation = _citation((ROOT / CITATION_FILE).read_text(encoding="utf-8"))
    committed = json.loads((ROOT / "codemeta.json").read_text(encoding="utf-8"))
    assert committed == json.loads(citation.as_codemeta()), (
        "codemeta.json is stale: regenerate it with `cffconvert -f codemeta -i CITATION.cff -o codemeta.json`")


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

"""Validate a CITATION.cff with cffconvert, for tests/test_citation.py: whether it validates against the Citation
File Format schema (and whether a failure is a schema error), its content and the codemeta.json cffconvert
generates from it.

The validator runs in the validators' python where $REPRO_VALIDATORS_PYTHON names one (tests/tool_python.py):
there this file is the script, `python citation_check.py CITATION_FILE`, printing `summarise`'s JSON. So it
imports only the standard library at its top.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path


def summarise(path: str) -> dict:
    """{"error": None or "Type: message" of validation, "schema_error": whether that error is jsonschema's
    ValidationError, "cffversion", "cff": the file's content, "codemeta": cffconvert's codemeta.json text}."""
    from cffconvert.citation import Citation
    from jsonschema.exceptions import ValidationError

    citation = Citation(Path(path).read_text(encoding="utf-8"), src=Path(path).name)
    error, schema_error = None, False
    try:
        citation.validate()  # raises on any schema error
    except Exception as exc:
        error, schema_error = f"{type(exc).__name__}: {exc}", isinstance(exc, ValidationError)
    found = {"error": error, "schema_error": schema_error, "cffversion": citation.cffversion}
    if error is None:
        found.update(cff=citation.cffobj, codemeta=citation.as_codemeta())
    return found


def check(path: Path) -> dict:
    """`summarise` of the file, run where tests/tool_python.py says (skipped where no python has cffconvert)."""
    from tool_python import summary

    return summary(sys.modules[__name__], [str(path)], ("cffconvert",))


if __name__ == "__main__":
    with contextlib.redirect_stdout(sys.stderr):  # stdout holds the summary alone
        found = summarise(*sys.argv[1:])
    print(json.dumps(found, default=str))

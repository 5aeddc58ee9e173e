"""The findings of the paper's text that no claim tests, each with its section and why: data, not prose in a template.

repro/spec/untested.toml lists them; the report and the Artifact Appendix render them under "Findings not tested".
Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from repro.core.registry import closest
from repro.core.schema import Problems, SchemaError, from_dict, read_toml

SHIPPED_UNTESTED = Path(__file__).with_name("untested.toml")


@dataclass(frozen=True)
class UntestedFinding:
    section: str  # where the text states it
    finding: str  # our paraphrase
    why: str  # why no claim decides it


def parse_untested(data: dict[str, Any], path: str | Path) -> tuple[UntestedFinding, ...]:
    """Validate the list; raise SchemaError naming `path`, the key and what was expected, every problem at once."""
    problems = Problems()
    for key in data:
        if key != "findings":
            problems.add(key, f"unknown key{closest(key, ['findings'])}; the file holds [[findings]] tables")
    raw = data.get("findings", [])
    if not isinstance(raw, list):
        problems.add("findings", "expected an array of tables ([[findings]])")
        raw = []
    out = []
    for i, item in enumerate(raw):
        finding = from_dict(UntestedFinding, item, f"findings[{i}]", problems)
        if finding is None:
            continue
        for f in fields(UntestedFinding):
            if not str(getattr(finding, f.name)).strip():
                problems.add(f"findings[{i}].{f.name}", "expected text, got an empty string")
        out.append(finding)
    if problems.items:
        raise SchemaError(path, problems.items)
    return tuple(out)


@lru_cache(maxsize=1)
def shipped_untested() -> tuple[UntestedFinding, ...]:
    return parse_untested(read_toml(SHIPPED_UNTESTED), SHIPPED_UNTESTED)

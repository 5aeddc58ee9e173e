"""Validation of a manifest's claims: every row, comparison, metric path and paper key they name exists."""

from __future__ import annotations

from typing import Any, Iterable, Protocol

from repro.claims.core import ClaimLike
from repro.paper import paper_value
from repro.registry import closest
from repro.results import COMPARISON_METRICS, ROW_METRICS, parse_metric_path

# Which claim parameters name what: paper keys, rows, comparisons, metric paths, row metrics.
PAPER_KEYS = ("paper", "threshold")
ROW_KEYS = ("below", "above", "rows", "row", "baseline")
COMPARISON_KEYS = ("comparison", "comparisons", "minus")
PATH_KEYS = ("metric", "other", "numerator", "denominator", "metrics")


class _Identified(Protocol):
    id: str


class ManifestLike(Protocol):
    """The fields of repro.manifest.Manifest read here (claims never import manifests)."""

    paper_table: str
    rows: Iterable[_Identified]
    comparisons: Iterable[_Identified]
    claims: Iterable[ClaimLike]


class ProblemSink(Protocol):
    def add(self, path: str, message: str) -> Any: ...


def check_references(manifest: ManifestLike, problems: ProblemSink) -> None:
    """Every metric path, row and paper key a claim names must exist; each miss is added to problems."""
    rows = {r.id for r in manifest.rows}
    comps = {c.id for c in manifest.comparisons}
    table = manifest.paper_table
    for i, claim in enumerate(manifest.claims):
        for key, value in claim.params.items():
            refs = value if isinstance(value, (list, tuple)) else [value]
            for ref in refs:
                if not isinstance(ref, str):
                    continue
                where = f"claims[{i}].{key}"
                if key in PAPER_KEYS:
                    if paper_value(table, ref) is None:
                        problems.add(where, f"paper_tables/{table}.toml has no value '{ref}'")
                elif key in ROW_KEYS:
                    if ref not in rows:
                        problems.add(where, f"no row '{ref}'{closest(ref, sorted(rows))}")
                elif key in COMPARISON_KEYS:
                    if ref not in comps:
                        problems.add(where, f"no comparison '{ref}'{closest(ref, sorted(comps))}")
                elif key in PATH_KEYS:
                    _check_metric_path(ref, rows, comps, where, problems)
                elif key == "row_metric" and ref not in ROW_METRICS:
                    problems.add(where, f"unknown metric '{ref}'{closest(ref, sorted(ROW_METRICS))}")


def _check_metric_path(path: str, rows: set[str], comps: set[str], where: str, problems: ProblemSink) -> None:
    try:
        kind, ident, _ = parse_metric_path(path)
    except ValueError as bad:
        hint = closest(path.rsplit(".", 1)[-1], sorted(ROW_METRICS | COMPARISON_METRICS))
        problems.add(where, f"{bad}{hint}")
        return
    ids = rows if kind == "rows" else comps
    if ident not in ids:
        problems.add(where, f"no {kind[:-1]} '{ident}'{closest(ident, sorted(ids))}")

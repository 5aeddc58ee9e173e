"""Validation of a manifest's claims: every row, comparison, metric path and paper key they name exists."""

from __future__ import annotations

from typing import Any, Iterable, Protocol

from repro.claims.core import ClaimLike
from repro.paper import paper_value
from repro.registry import closest
from repro.results import COMPARISON_METRICS, ROW_METRICS, parse_metric_path

# Which claim parameters name what: paper keys, rows, comparisons, metric paths, row metrics.
PAPER_KEYS = ("paper", "threshold")
ROW_KEYS = ("below", "above", "rows", "row", "baseline", "may_collapse")
COMPARISON_KEYS = ("comparison", "comparisons", "minus")
PATH_KEYS = ("metric", "other", "numerator", "denominator", "metrics")


class _Identified(Protocol):
    id: str


class _ComparisonLike(Protocol):
    id: str
    row: str
    baseline: str


class ManifestLike(Protocol):
    """The fields of repro.manifest.Manifest read here (claims never import manifests)."""

    paper_table: str
    rows: Iterable[_Identified]
    comparisons: Iterable[_ComparisonLike]
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
        _check_may_collapse(claim, {c.id: (c.row, c.baseline) for c in manifest.comparisons}, f"claims[{i}]", problems)


def _check_may_collapse(claim: ClaimLike, pairs: dict[str, tuple[str, str]], where: str, problems: ProblemSink) -> None:
    """A row allowed to sit at chance must be a treatment the claim compares, never a baseline."""
    named = [claim.params.get(k) for k in ("comparison", "minus")] + list(claim.params.get("comparisons") or ())
    compared = [pairs[c] for c in named if isinstance(c, str) and c in pairs]
    treatments = {row for row, _ in compared} | {claim.params.get("row")}
    baselines = {base for _, base in compared} | {claim.params.get("baseline")}
    for ref in claim.params.get("may_collapse") or ():
        if ref in baselines:
            problems.add(f"{where}.may_collapse", f"'{ref}' is a baseline of this claim: a baseline must have learned")
        elif ref not in treatments:
            problems.add(f"{where}.may_collapse", f"'{ref}' is not a treatment row this claim compares; "
                         f"treatments: {', '.join(sorted(t for t in treatments if t))}")


def _check_metric_path(path: str, rows: set[str], comps: set[str], where: str, problems: ProblemSink) -> None:
    try:
        kind, ident, _ = parse_metric_path(path)
    except ValueError as bad:
        # the shape is right but the metric is not: suggest the closest one
        hint = closest(path.rsplit(".", 1)[-1], sorted(ROW_METRICS | COMPARISON_METRICS)) if path.count(".") == 2 else ""
        problems.add(where, f"{bad}{hint}")
        return
    ids = rows if kind == "rows" else comps
    if ident not in ids:
        problems.add(where, f"no {kind[:-1]} '{ident}'{closest(ident, sorted(ids))}")

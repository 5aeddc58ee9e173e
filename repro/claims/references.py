"""Validation of a manifest's claims: every row, comparison, metric path and paper key they name exists."""

from __future__ import annotations

from typing import Any, Iterable, Protocol

from repro.claims.core import ClaimLike
from repro.spec.paper import paper_value, why_no_value
from repro.core.registry import closest
from repro.results.measurements import COMPARISON_METRICS, ROW_METRICS, parse_metric_path

# Which claim parameters name what: paper keys, rows, comparisons, metric paths, row metrics.
PAPER_KEYS = ("paper", "threshold")
ROW_KEYS = ("below", "above", "rows", "row", "baseline", "may_collapse")
COMPARISON_KEYS = ("comparison", "comparisons", "minus", "others", "deficit", "series")
PATH_KEYS = ("metric", "other", "numerator", "denominator", "metrics")


# Read-only members (properties), as the frozen dataclasses of repro.plan.manifest have.
class _Identified(Protocol):
    @property
    def id(self) -> str: ...


class _ComparisonLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def row(self) -> str: ...
    @property
    def baseline(self) -> str: ...


class ManifestLike(Protocol):
    """The fields of repro.plan.manifest.Manifest read here (claims never import manifests)."""

    @property
    def id(self) -> str: ...
    @property
    def paper_table(self) -> str: ...
    @property
    def rows(self) -> Iterable[_Identified]: ...
    @property
    def comparisons(self) -> Iterable[_ComparisonLike]: ...
    @property
    def claims(self) -> Iterable[ClaimLike]: ...


class ProblemSink(Protocol):
    def add(self, path: str, message: str) -> Any: ...


def check_references(manifest: ManifestLike, problems: ProblemSink) -> None:
    """Every metric path, row and paper key a claim names must exist; each miss is added to problems. A reference
    to another manifest's row or comparison ("<manifest>:<id>") is checked with every manifest at hand
    (repro.claims.across.check_across)."""
    rows = {r.id for r in manifest.rows}
    comps = {c.id for c in manifest.comparisons}
    table = manifest.paper_table
    for i, claim in enumerate(manifest.claims):
        for key, value in claim.params.items():
            for ref in param_refs(value):
                if not isinstance(ref, str):
                    continue
                where = f"claims[{i}].{key}"
                if key in PAPER_KEYS:
                    if paper_value(table, ref) is None:
                        problems.add(where, why_no_value(table, ref))
                elif ":" in ref and key in ROW_KEYS + COMPARISON_KEYS:
                    continue  # another manifest's: repro.claims.across
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
        check_stated_signs(claim, manifest, f"claims[{i}]", problems)
        own = {c.id for c in manifest.claims} - {claim.id}
        for j, ref in enumerate(getattr(claim, "derived_from", ())):
            if ":" not in ref and ref not in own:  # "<manifest>:<claim>": repro.claims.across
                problems.add(
                    f"claims[{i}].derived_from[{j}]",
                    f"'{ref}' is no other claim of {manifest.id}{closest(ref, sorted(own))}",
                )


def param_refs(value: Any) -> list[Any]:
    """The ids a parameter names: itself, its items, or the items of a table of lists (GapNotRising.series)."""
    if isinstance(value, dict):
        return [ref for v in value.values() for ref in param_refs(v)]
    return list(value) if isinstance(value, (list, tuple)) else [value]


# Rules that split or order settings by the sign of their gap: they must read every setting whose sign the
# text states. separates lists rows (a setting's sign: "<row>.gap" in the paper table); the others comparisons.
SIGN_RULES = {"separates": "rows", "sign_follows_rho": "comparisons", "monotonic_in_rho": "comparisons"}


def stated_signs(manifest: ManifestLike, kind: str) -> dict[str, str]:
    """Row or comparison id -> the gap sign the paper's text states for it ("<id>.gap" in the paper table)."""
    ids = [r.id for r in manifest.rows] if kind == "rows" else [c.id for c in manifest.comparisons]
    values = {i: paper_value(manifest.paper_table, f"{i}.gap") for i in ids}
    return {i: pv.implied_sign for i, pv in values.items() if pv is not None and pv.implied_sign is not None}


def check_stated_signs(claim: ClaimLike, manifest: ManifestLike, where: str, problems: ProblemSink) -> None:
    """A separation or sign rule refuses a list that leaves out a setting whose gap sign the text states
    (unless `excluded` names it with a reason), and a row put on the side its stated sign contradicts."""
    kind = SIGN_RULES.get(claim.rule)
    if kind is None or claim.params.get("stated_signs") == "paper":
        return  # a claim over the whole paper's settings: checked with every manifest (repro.claims.across)
    signs = stated_signs(manifest, kind)
    excluded = claim.params.get("excluded") or {}
    for ref in excluded:
        if ref not in signs:
            problems.add(
                f"{where}.excluded",
                f"'{ref}' has no gap sign the text states: only a stated setting "
                f"needs excluding; stated: {', '.join(sorted(signs)) or 'none'}",
            )
    if kind == "rows":
        sides = {r: "below" for r in claim.params.get("below") or ()} | {
            r: "above" for r in claim.params.get("above") or ()
        }
        for ref, side in sides.items():
            want = "above" if signs.get(ref) == "+" else "below" if signs.get(ref) in ("-", "<=0") else side
            if want != side:
                problems.add(
                    f"{where}.{side}",
                    f"'{ref}': the text states its gap sign {signs[ref]}, which puts it {want}, not {side}",
                )
    else:
        sides = {c: "comparisons" for c in claim.params.get("comparisons") or ()}
    for ref, sign in signs.items():
        if ref not in sides and ref not in excluded:
            lists = "below or above" if kind == "rows" else "comparisons"
            problems.add(
                where,
                f"{claim.rule} leaves out '{ref}', whose gap sign the text states ({sign}): "
                f"list it in {lists}, or in excluded with the reason",
            )


def claim_rows(claim: ClaimLike, comparisons: Iterable[_ComparisonLike]) -> tuple[str, ...]:
    """Every row a claim's rule reads: named, through the comparisons it names, or in its metric paths."""
    rows, comps = set(), set()
    for key, value in claim.params.items():
        refs = [v for v in param_refs(value) if isinstance(v, str)]
        if key in ROW_KEYS:
            rows.update(refs)
        elif key in COMPARISON_KEYS:
            comps.update(refs)
        elif key in PATH_KEYS:
            for path in refs:
                kind, ident, _ = parse_metric_path(path)
                (rows if kind == "rows" else comps).add(ident)
    for comp in comparisons:
        if comp.id in comps:
            rows.update((comp.row, comp.baseline))
    return tuple(sorted(rows))


def _check_may_collapse(claim: ClaimLike, pairs: dict[str, tuple[str, str]], where: str, problems: ProblemSink) -> None:
    """A row allowed to sit at chance must be a treatment the claim compares, never a baseline."""
    named = [claim.params.get(k) for k in ("comparison", "minus", "deficit")]
    named += [c for k in ("comparisons", "others", "series") for c in param_refs(claim.params.get(k) or ())]
    compared = [pairs[c] for c in named if isinstance(c, str) and c in pairs]
    treatments = {row for row, _ in compared} | {claim.params.get("row")}
    baselines = {base for _, base in compared} | {claim.params.get("baseline")}
    for ref in claim.params.get("may_collapse") or ():
        if ref in baselines:
            problems.add(f"{where}.may_collapse", f"'{ref}' is a baseline of this claim: a baseline must have learned")
        elif ref not in treatments:
            problems.add(
                f"{where}.may_collapse",
                f"'{ref}' is not a treatment row this claim compares; "
                f"treatments: {', '.join(sorted(t for t in treatments if t))}",
            )


def _check_metric_path(path: str, rows: set[str], comps: set[str], where: str, problems: ProblemSink) -> None:
    try:
        kind, ident, _ = parse_metric_path(path)
    except ValueError as bad:
        # the shape is right but the metric is not: suggest the closest one
        metrics = sorted(ROW_METRICS | COMPARISON_METRICS)
        hint = closest(path.rsplit(".", 1)[-1], metrics) if path.count(".") == 2 else ""
        problems.add(where, f"{bad}{hint}")
        return
    if ":" in ident:
        return  # another manifest's row or comparison: repro.claims.across
    ids = rows if kind == "rows" else comps
    if ident not in ids:
        problems.add(where, f"no {kind[:-1]} '{ident}'{closest(ident, sorted(ids))}")

"""Claims under every reading the text leaves open: which readings reproduce them.

Three kinds of claim are decided again, one reading varied at a time (the others as chosen):

    analytic      the rows it reads (claim_rows) counted again under each alternative that changes a count,
                  by `recount` (the caller's: the claims layer counts nothing), comparisons derived again
    ordered by rho  an empirical claim whose rule orders measured gaps by the rows' rho (RHO_ORDERED_RULES):
                  the same recount of rho, the gaps as measured. A reading that moves rho reorders the gaps
                  without any training (the pooled-features reading puts Table 1's DW h = 128 below std h = 512)
    trained       an empirical claim every comparison of which a manifest's [[sensitivity]] table trained under
                  an alternative ("<comparison>__<alternative>"): the claim decided on those twins instead
    metric        a claim a reading of what it measures names (applies.claims): decided on the same evidence
                  with the rule parameters of each alternative (which metric "routing entropy" is)

An alternative that changes only how a model trains (Reading.training_only) changes no count: for the first
two kinds it is named, not recounted; it is what the third kind decides. Torch-free.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from repro.claims.core import Evidence, pct
from repro.claims.references import COMPARISON_KEYS, ROW_KEYS, claim_rows
from repro.claims.verdicts import evaluate
from repro.results.measurements import Measured, Status, Verdict, comparison_metric, derive_comparisons, row_metric

Recount = Callable[[Any], "dict[str, Any] | None"]  # a varied row (repro.plan.manifest.Row) -> its row metrics
FRACTIONS = frozenset({"rho", "rho_all_ops", "head_share", "flops_reduction", "flops_ratio"})
# Rules that sort measured gaps by the compared rows' rho: a reading that moves rho can reorder them.
RHO_ORDERED_RULES = frozenset({"monotonic_in_rho", "sign_follows_rho"})
Kind = Literal["analytic", "ordered by rho", "trained", "metric"]


@dataclass
class ReadingOutcome:
    """One claim decided under one alternative reading (or, with `reading` empty, under the chosen ones)."""

    reading: str
    alternative: str
    label: str
    status: Status
    value: str  # the number the claim reads, as shown, when there is one
    evidence: str
    failed: list[str] = field(default_factory=list)
    order: str = ""  # a rho-ordered claim's settings in the order their rho puts them, under this reading


@dataclass
class ClaimReadings:
    """A claim and its verdict under the chosen readings and under each alternative of those that touch it."""

    manifest: str
    claim: str
    statement: str
    source: str  # Verdict.source: the explainer's claims are marked
    chosen: ReadingOutcome
    alternatives: list[ReadingOutcome] = field(default_factory=list)
    training_only: list[str] = field(default_factory=list)  # readings touching its rows that change only training
    kind: Kind = "analytic"

    def line(self) -> str:
        """'reproduced under ...; not reproduced under ...', the chosen readings and every alternative."""
        groups: dict[str, list[str]] = {}
        for o in [self.chosen, *self.alternatives]:
            name = "the chosen readings" if not o.reading else f"'{o.label}' ({o.reading})"
            groups.setdefault(o.status, []).append(name + (f" ({o.value})" if o.value else ""))
        return f"{self.claim}: " + "; ".join(f"{status} under {', '.join(names)}" for status, names in groups.items())

    @property
    def depends(self) -> bool:
        """True when some alternative reading changes the verdict: an alternative not run (not counted when the table
        ran, its twins not trained) has no verdict to differ, as in changed_under."""
        return any(o.status != self.chosen.status and o.status != "not run" for o in self.alternatives)

    def only_under(self) -> str:
        """'reproduced only under ...' when the chosen readings do not reproduce the claim and an alternative
        does: what the checklist says beside its verdict. '' otherwise."""
        if self.chosen.status == "reproduced":
            return ""
        names = [
            f"'{o.label}' ({o.reading}/{o.alternative}){f', {o.value}' if o.value else ''}"
            for o in self.alternatives
            if o.status == "reproduced"
        ]
        return f"reproduced under the alternative reading {' and '.join(names)}" if names else ""

    def changed_under(self) -> list[ReadingOutcome]:
        """The decided alternatives under which the verdict differs from the chosen readings' verdict, for a claim
        decided on trained rows or under a reading of what it measures: what the checklist says on the claim's row
        beside its verdict (a counted claim says only `only_under`: its many layouts would flood the row)."""
        if self.kind not in ("trained", "metric"):
            return []
        return [o for o in self.alternatives if o.status != self.chosen.status and o.status != "not run"]

    def note(self) -> str:
        """One line for the claim's checklist row: 'reproduced only under ...', else the alternatives under which
        a trained or re-read claim's verdict changes; '' when neither."""
        if only := self.only_under():
            return only
        changed = [
            f"{o.status} under '{o.label}' ({o.reading}/{o.alternative}){f', {o.value}' if o.value else ''}"
            for o in self.changed_under()
        ]
        return f"the verdict changes with the reading: {'; '.join(changed)}" if changed else ""

    def sign_line(self) -> str:
        """For a trained claim: the sign of its measured number under the chosen readings and each alternative,
        and whether it keeps it. '' when the numbers are not signed values."""
        outcomes = [self.chosen, *self.alternatives]
        signs = [o.value[:1] for o in outcomes]
        if self.kind != "trained" or not all(sign in "+-" and sign for sign in signs):
            return ""
        parts = [f"{o.value} " + (f"under {o.alternative}" if o.reading else "as chosen") for o in outcomes]
        flipped = [o.alternative for o, sign in zip(self.alternatives, signs[1:]) if sign != signs[0]]
        verdict = (
            f"the sign flips under {', '.join(flipped)}"
            if flipped
            else "it keeps its sign under every trained alternative"
        )
        return f"{self.claim} ({self.statement}): {', '.join(parts)}: {verdict}"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ClaimReadings:
        return cls(
            **{
                **d,
                "chosen": ReadingOutcome(**d["chosen"]),
                "alternatives": [ReadingOutcome(**o) for o in d["alternatives"]],
            }
        )


def shown_value(verdict: Verdict) -> str:
    """The one number a verdict rests on, as a reader checks it: '38.8%', '14.2x', a gap's mean '+0.75pp'; '' for
    several."""
    gaps = [v for v in verdict.measured.values() if isinstance(v, dict) and isinstance(v.get("mean"), (int, float))]
    if len(verdict.measured) == 1 and len(gaps) == 1:  # a gap or a difference of gaps: its mean, signed
        return pct(gaps[0]["mean"])
    numbers = {k: v for k, v in verdict.measured.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    if len(numbers) != 1:
        return ""
    ((key, value),) = numbers.items()
    if key == "ratio":
        return f"{value:.2f}x"
    metric = key.rsplit(".", 1)[-1]
    return f"{100 * value:.3g}%" if metric in FRACTIONS else f"{value:.4g}"


def _outcome(reading: str, alternative: str, label: str, v: Verdict) -> ReadingOutcome:
    return ReadingOutcome(reading, alternative, label, v.status, shown_value(v), v.evidence, list(v.failed))


def recounted_claims(manifest: Any) -> list[Any]:
    """The claims whose verdict a reading can move by a count alone: analytic ones, and those ordered by rho."""
    return [c for c in manifest.claims if c.scope == "analytic" or c.rule in RHO_ORDERED_RULES]


def decide_readings(manifest: Any, evidence: Evidence, recount: Recount, trained: bool = True) -> list[ClaimReadings]:
    """Each analytic claim, and each empirical claim ordered by rho, under each alternative of the readings that
    apply to the rows it reads; with `trained`, each empirical claim under each alternative a [[sensitivity]]
    table trained for all its comparisons; each claim a reading of what it measures names, under its alternatives.

    `recount(row)` gives a varied row's metrics, or None where they were not counted (then that alternative
    is `not run`)."""
    rows = {r.id: r for r in manifest.rows}
    out = []
    for claim in manifest.claims:
        kind: Kind | Literal[""] = (
            "analytic" if claim.scope == "analytic" else "ordered by rho" if claim.rule in RHO_ORDERED_RULES else ""
        )
        counted = _recounted(claim, kind, manifest, evidence, recount, rows) if kind else None
        if counted is not None:
            out.append(counted)
        if trained and claim.scope != "analytic":
            entry = _trained(claim, manifest, evidence)
            if entry is not None:
                out.append(entry)
        entry = _measured_otherwise(claim, manifest, evidence)
        if entry is not None and counted is not None:  # one entry per counted claim: its re-read alternatives too
            counted.alternatives += entry.alternatives
        elif entry is not None:
            out.append(entry)
    return out


def reread_claims(manifest: Any) -> list[Any]:
    """The claims a reading of what they measure names (repro/spec/readings.toml applies.claims)."""
    return [c for c in manifest.claims if any(r.applies_to_claim(manifest.id, c.id) for r in manifest.readings)]


def _measured_otherwise(claim: Any, manifest: Any, evidence: Evidence) -> ClaimReadings | None:
    readings = [r for r in manifest.readings if r.applies_to_claim(manifest.id, claim.id)]
    if not readings:
        return None
    entry = _chosen(claim, manifest, evidence, "metric")
    for reading in readings:
        for alt in reading.alternatives:
            v = evaluate(dataclasses.replace(claim, params=reading.claim_params(manifest.id, claim, alt)), evidence)
            entry.alternatives.append(_outcome(reading.id, alt.id, alt.label, v))
    return entry


def _chosen(claim: Any, manifest: Any, evidence: Evidence, kind: Kind) -> ClaimReadings:
    verdict = evaluate(claim, evidence)
    return ClaimReadings(
        manifest.id,
        claim.id,
        claim.statement,
        verdict.source,
        _outcome("", "", "the chosen readings", verdict),
        kind=kind,
    )


def _recounted(
    claim: Any, kind: Kind, manifest: Any, evidence: Evidence, recount: Recount, rows: dict[str, Any]
) -> ClaimReadings:
    entry = _chosen(claim, manifest, evidence, kind)
    read = [rows[r] for r in claim_rows(claim, manifest.comparisons) if r in rows]
    for reading in manifest.readings:
        varied = [row for row in read if reading.applies_to(row)]
        if not varied:
            continue
        for alt in reading.alternatives:
            if reading.training_only(alt):  # nothing an evaluation forward executes changes
                entry.training_only += [reading.id] if reading.id not in entry.training_only else []
                continue
            counted = [recount(reading.vary(row, alt)) for row in varied]
            counts = [c for c in counted if c is not None]
            if len(counts) < len(counted):
                entry.alternatives.append(
                    ReadingOutcome(
                        reading.id,
                        alt.id,
                        alt.label,
                        "not run",
                        "",
                        f"not counted when {manifest.id} ran: run `repro {manifest.id}` again",
                    )
                )
                continue
            under = _under(evidence, manifest, varied, counts)
            entry.alternatives.append(
                _with_order(claim, under, _outcome(reading.id, alt.id, alt.label, evaluate(claim, under)))
            )
    entry.chosen = _with_order(claim, evidence, entry.chosen)
    return entry


def _with_order(claim: Any, evidence: Evidence, outcome: ReadingOutcome) -> ReadingOutcome:
    """A rho-ordered claim's settings in the order their rho puts them under this reading: what a reading moves,
    shown even where no gap was measured (then the claim is `not run`)."""
    if claim.rule not in RHO_ORDERED_RULES:
        return outcome
    rhos = {c: evidence.get(comparison_metric(c, "rho")) for c in claim.params.get("comparisons", ())}
    if any(r is None for r in rhos.values()):
        return outcome
    order = " < ".join(f"{c} {100 * r:.3g}%" for c, r in sorted(rhos.items(), key=lambda kv: kv[1]))
    return dataclasses.replace(outcome, order=order)


def _trained(claim: Any, manifest: Any, evidence: Evidence) -> ClaimReadings | None:
    """The claim decided on each alternative's twins of every comparison and row it reads, where those twins trained
    at this profile; None where no alternative's did (a profile that leaves the [[sensitivity]] rows out decides
    nothing again)."""
    comparisons = {c.id for c in manifest.comparisons}
    rows = {r.id: r for r in manifest.rows}
    entry = None
    for reading in manifest.readings:
        for alt in reading.alternatives:
            twins = _on_twins(claim.params, reading, alt.id, comparisons, rows)
            if twins is None:
                continue
            params, substituted = twins
            trained = [evidence.rows_of(r) if r in comparisons else (r,) for r in substituted]
            if not all(
                evidence.get(row_metric(r, "accuracy")) is not None
                for pair in trained
                for r in pair
                if r.endswith(f"__{alt.id}")
            ):
                continue  # its rows were not trained here
            entry = entry or _chosen(claim, manifest, evidence, "trained")
            v = evaluate(dataclasses.replace(claim, params=params), evidence)
            entry.alternatives.append(_outcome(reading.id, alt.id, alt.label, v))
    return entry


def _on_twins(
    params: dict[str, Any], reading: Any, alternative: str, comparisons: set[str], rows: dict[str, Any]
) -> tuple[dict[str, Any], list[str]] | None:
    """(the claim's parameters with every comparison and row it names replaced by its twin under the alternative,
    "<id>__<alternative>"; the twins), or None unless every comparison it names has a twin and every row it names
    that the reading applies to has one, and at least one was replaced. Lists and tables of lists (a series) are
    walked item by item; another table's ids ("<table>:<id>") and rows the reading leaves alone stay as they are."""
    substituted: list[str] = []

    def twin(ref: Any, is_comparison: bool) -> Any:
        if isinstance(ref, dict):
            return {k: twin(v, is_comparison) for k, v in ref.items()}
        if isinstance(ref, (list, tuple)):
            return type(ref)(twin(v, is_comparison) for v in ref)
        if not isinstance(ref, str):
            return ref
        name = f"{ref}__{alternative}"
        if is_comparison:
            if name not in comparisons:
                raise KeyError(ref)
        elif name not in rows:
            if ref in rows and reading.applies_to(rows[ref]):
                raise KeyError(ref)  # a row the alternative changes, untrained: the claim would mix two readings
            return ref
        substituted.append(name)
        return name

    try:
        out = {
            key: twin(value, key in COMPARISON_KEYS) if key in COMPARISON_KEYS or key in ROW_KEYS else value
            for key, value in params.items()
        }
    except KeyError:
        return None
    return (out, substituted) if substituted else None


def _under(evidence: Evidence, manifest: Any, varied: list, counts: list[dict[str, Any]]) -> Evidence:
    """The evidence with the varied rows' metrics counted again under the alternative, keeping their ids."""
    recounted = {
        row_metric(row.id, metric): value for row, metrics in zip(varied, counts) for metric, value in metrics.items()
    }
    measured = Measured(metrics={**evidence.metrics, **recounted}, missing=dict(evidence.missing))
    ids = {row.id for row in varied}
    measured = derive_comparisons([c for c in manifest.comparisons if c.row in ids or c.baseline in ids], measured)
    return dataclasses.replace(evidence, metrics=measured.metrics)

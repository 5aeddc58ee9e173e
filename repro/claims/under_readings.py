"""Every analytic claim under every reading the text leaves open: which readings reproduce it.

For each analytic claim, the rows it reads (claim_rows); each reading (repro/spec/readings.toml) that applies
to one of them; for each of its alternatives, those rows under it (Reading.vary), their metrics counted
again by `recount` (the caller's: the claims layer counts nothing), the comparisons derived again, and
the claim decided on that evidence, under its own row ids. One reading varies at a time, the others keep
their chosen values. An alternative that changes only how a model trains (Reading.training_only)
changes no count an analytic claim reads: it is named, not recounted. Torch-free.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

from repro.claims.core import Evidence
from repro.claims.references import claim_rows
from repro.claims.verdicts import evaluate
from repro.results.measurements import Measured, Status, Verdict, derive_comparisons

Recount = Callable[[Any], "dict[str, Any] | None"]  # a varied row (repro.plan.manifest.Row) -> its row metrics
FRACTIONS = frozenset({"rho", "rho_all_ops", "head_share", "flops_reduction", "flops_ratio"})


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

    def line(self) -> str:
        """'reproduced under ...; not reproduced under ...', the chosen readings and every alternative."""
        groups: dict[str, list[str]] = {}
        for o in [self.chosen, *self.alternatives]:
            name = "the chosen readings" if not o.reading else f"'{o.label}' ({o.reading})"
            groups.setdefault(o.status, []).append(name + (f" ({o.value})" if o.value else ""))
        return f"{self.claim}: " + "; ".join(f"{status} under {', '.join(names)}" for status, names in groups.items())

    @property
    def depends(self) -> bool:
        """True when some alternative reading changes the verdict."""
        return any(o.status != self.chosen.status for o in self.alternatives)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ClaimReadings:
        return cls(**{**d, "chosen": ReadingOutcome(**d["chosen"]),
                      "alternatives": [ReadingOutcome(**o) for o in d["alternatives"]]})


def shown_value(verdict: Verdict) -> str:
    """The one number an analytic verdict rests on, as a reader checks it: '38.8%', '14.2x'; '' for several."""
    numbers = {k: v for k, v in verdict.measured.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    if len(numbers) != 1:
        return ""
    (key, value), = numbers.items()
    if key == "ratio":
        return f"{value:.2f}x"
    metric = key.rsplit(".", 1)[-1]
    return f"{100 * value:.3g}%" if metric in FRACTIONS else f"{value:.4g}"


def _outcome(reading: str, alternative: str, label: str, v: Verdict) -> ReadingOutcome:
    return ReadingOutcome(reading, alternative, label, v.status, shown_value(v), v.evidence, list(v.failed))


def decide_readings(manifest: Any, evidence: Evidence, recount: Recount) -> list[ClaimReadings]:
    """Each analytic claim of the manifest under each alternative of the readings that apply to its rows.

    `recount(row)` gives a varied row's metrics, or None where they were not counted (then that alternative
    is `not run`)."""
    rows = {r.id: r for r in manifest.rows}
    out = []
    for claim in manifest.claims:
        if claim.scope != "analytic":
            continue
        verdict = evaluate(claim, evidence)
        entry = ClaimReadings(manifest.id, claim.id, claim.statement, verdict.source,
                              _outcome("", "", "the chosen readings", verdict))
        read = [rows[r] for r in claim_rows(claim, manifest.comparisons) if r in rows]
        for reading in manifest.readings:
            varied = [row for row in read if reading.applies_to(row)]
            if not varied:
                continue
            for alt in reading.alternatives:
                if reading.training_only(alt):  # nothing an evaluation forward executes changes
                    entry.training_only += [reading.id] if reading.id not in entry.training_only else []
                    continue
                counts = [recount(reading.vary(row, alt)) for row in varied]
                if any(c is None for c in counts):
                    entry.alternatives.append(ReadingOutcome(
                        reading.id, alt.id, alt.label, "not run", "",
                        f"not counted when {manifest.id} ran: run `repro {manifest.id}` again"))
                    continue
                v = evaluate(claim, _under(evidence, manifest, varied, counts))
                entry.alternatives.append(_outcome(reading.id, alt.id, alt.label, v))
        out.append(entry)
    return out


def _under(evidence: Evidence, manifest: Any, varied: list, counts: list[dict[str, Any]]) -> Evidence:
    """The evidence with the varied rows' metrics counted again under the alternative, keeping their ids."""
    measured = Measured(metrics=dict(evidence.metrics), missing=dict(evidence.missing))
    for row, metrics in zip(varied, counts):
        for metric, value in metrics.items():
            measured.set_row(row.id, metric, value)
    ids = {row.id for row in varied}
    derive_comparisons([c for c in manifest.comparisons if c.row in ids or c.baseline in ids], measured)
    return dataclasses.replace(evidence, metrics=measured.metrics)

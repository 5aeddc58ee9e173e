"""The readings section: every reading the text leaves open, and the claims decided under each, as report.md
shows it (and `repro readings` prints).

Renders what repro.claims.decide decided (ManifestResult.readings); computes nothing. Torch-free.
"""

from __future__ import annotations

from typing import Any

from repro.spec.readings import Reading, ReadingsFile, all_readings
from repro.results.measurements import READINGS_DETAIL


def readings_entries(entries: list[tuple[Any, Any]]) -> list[Any]:
    """Every decided ClaimReadings of the report's results, in manifest order."""
    return [c for _, r in entries if r is not None for c in r.readings]


def readings_cost(entries: list[tuple[Any, Any]]) -> tuple[float, int]:
    """(CPU-seconds, distinct models) the tables spent counting the readings' alternatives."""
    details = [r.measured.details.get(READINGS_DETAIL, {}) for _, r in entries if r is not None]
    return sum(d.get("cpu_seconds", 0.0) for d in details), sum(d.get("models", 0) for d in details)


def own_readings(manifests: list[Any] | None) -> ReadingsFile | None:
    """The readings file of one's own the manifests were read with (--readings, $REPRO_READINGS), if any."""
    return next((m.own_readings for m in manifests or () if m.own_readings is not None), None)


def shown_readings(manifests: list[Any]) -> list[Reading]:
    """The readings that apply to a row of any of the manifests, in repro/spec/readings.toml's order, then in the
    order of the file of one's own they were read with."""
    applying = {r.id for m in manifests for r in m.readings}
    return [r for r in all_readings(own_readings(manifests)) if r.id in applying]


def own_line(own: ReadingsFile, shown: list[Reading], code: str = "`") -> str:
    """Where the readings of one's own come from, as the report states it: the file's path and sha256 as read, the
    ids it declares and those these tables use (`code`: what the path and digest are set in; "" on a terminal)."""
    used = [r.id for r in shown if own.declares(r.id)]
    return (
        f"Readings of your own ({len(own.readings)}: {', '.join(r.id for r in own.readings)}) were read from "
        f"{code}{own.path}{code} (sha256 {code}{own.sha256}{code}), added to the shipped ones; "
        f"{'these tables use ' + ', '.join(used) if used else 'no table here uses one'}."
    )


def trained_rows(reading: Reading, manifests: list[Any]) -> dict[str, int]:
    """Per table that trains the reading's alternatives: how many [[sensitivity]] rows it has for them that train
    (a row that measures only FLOPs, as table6's, counts the alternative and trains nothing)."""
    counts = {
        m.id: sum(1 for r in m.rows if r.reading.startswith(f"{reading.id}/") and "accuracy" in r.measures)
        for m in manifests
    }
    return {table: n for table, n in counts.items() if n}


def how_decided(reading: Reading, manifests: list[Any]) -> str:
    """How the alternatives of a reading are decided: counted (the claims they can move, decided again) or
    trained (the [[sensitivity]] rows that train them), in words; a counted one that a table also trains says so."""
    counted = [a.id for a in reading.alternatives if not reading.training_only(a)]
    trained = trained_rows(reading, manifests)
    if reading.applies.claims:
        return f"the claims it names decided again on the same measurements: {', '.join(reading.applies.claims)}"
    parts = []
    where = ", ".join(f"{m}'s [[sensitivity]] ({n} row{'' if n == 1 else 's'})" for m, n in trained.items())
    if counted:
        parts.append(
            f"counting: {', '.join(counted)} {'changes' if len(counted) == 1 else 'change'} a FLOP count, "
            "so the claims that read those rows are decided again"
        )
    if len(counted) < len(reading.alternatives):
        parts.append(
            "changes only how a model trains: decided by training, in " + where
            if where
            else "changes only how a model trains; no table here trains it (a [[sensitivity]] table would)"
        )
    elif where:
        parts.append(f"trained too, in {where}: the empirical claims on those rows are decided again on them")
    return "; ".join(parts)


def readings_summary(claims: list[Any], cpu_seconds: float, models: int) -> str:
    """One headline line: the claims decided again under each kind of reading and those whose verdict one changes,
    trained ones included (Table 5's reversal under the Switch gate is a changed verdict, whatever its sign)."""
    depends = [c.claim for c in claims if c.depends]
    alternatives = sum(len(c.alternatives) for c in claims)
    kinds = {k: sum(1 for c in claims if c.kind == k) for k in ("analytic", "ordered by rho", "metric", "trained")}
    trained = (
        f", {_n(kinds['trained'], 'empirical claim')} on the rows trained readings gave" if kinds["trained"] else ""
    )
    return (
        f"Readings: {_n(kinds['analytic'], 'analytic claim')}, {_n(kinds['ordered by rho'], 'empirical claim')} "
        f"ordered by rho and {_n(kinds['metric'], 'claim')} under a reading of what they measure{trained} decided "
        f"under {_n(alternatives, 'alternative')} ({len(depends)} {'changes' if len(depends) == 1 else 'change'} "
        f"verdict under one: {', '.join(depends) or 'none'}); counted in {cpu_seconds:.1f} CPU-s "
        f"({_n(models, 'model')})"
    )


def _n(count: int, noun: str) -> str:
    """'1 claim', '2 claims': a count with its noun."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def trained_lines(claims: list[Any]) -> list[str]:
    """One line per claim decided again on the rows a [[sensitivity]] table trained: the sign of its measured
    number under each reading, and whether it keeps it (Table 5's k = 2 vs k = 1 under each gate)."""
    return [line for c in claims if c.kind == "trained" and (line := c.sign_line())]


def trained_summary(claims: list[Any]) -> str:
    """One headline line: how many empirical claims the trained alternatives decided again, under which alternatives
    the verdict changes, and which measured numbers change sign under one ('' when none was decided again)."""
    trained = [c for c in claims if c.kind == "trained"]
    if not trained:
        return ""
    flips, changes = [], []
    for c in trained:
        under = [
            o.alternative
            for o in c.alternatives
            if o.value[:1] in ("+", "-") and c.chosen.value[:1] in ("+", "-") and o.value[0] != c.chosen.value[0]
        ]
        flips += [f"{c.claim} ({', '.join(under)})"] if under else []
        changed = [o.alternative for o in c.changed_under()]
        changes += [f"{c.claim} ({', '.join(changed)})"] if changed else []
    return (
        f"Trained readings: {_n(len(trained), 'empirical claim')} decided again on the rows their alternatives "
        f"trained; the verdict changes under an alternative for {', '.join(changes) or 'none'}; "
        f"the measured number changes sign under an alternative for {', '.join(flips) or 'none'}"
    )


def render_readings(claims: list[Any], cpu_seconds: float, models: int, manifests: list[Any] | None = None) -> str:
    from repro.report.render import render

    own = own_readings(manifests)
    readings = all_readings(own)
    counted = [c for c in claims if c.kind != "trained"]
    trained = [c for c in claims if c.kind == "trained"]
    training_only = sorted({r for c in counted for r in c.training_only})
    intro = (
        "Each choice the paper's text leaves open is declared once, in `repro/spec/readings.toml` (or a file of your "
        "own), with the value "
        "this artifact chose and each alternative as a configuration override. Every analytic claim, and every "
        "empirical claim that orders measured gaps by rho, is decided again under every alternative of each "
        "reading that applies to the rows it reads (one reading at a time, the others as chosen), by counting "
        "those rows again; an empirical claim ordered by rho keeps the gaps as measured and takes rho under the "
        "alternative. A reading of what a claim measures (which metric 'routing entropy' is) decides the claims "
        f"it names again on the same measurements. {_n(len(readings), 'reading')}; "
        f"{readings_summary(claims, cpu_seconds, models).removeprefix('Readings: ')}."
    )
    outro = (
        "Readings that change only how a model trains leave every count these claims read unchanged, so they "
        f"cannot move these verdicts: {', '.join(training_only) or 'none'}. Their alternatives are decided by "
        "training: a manifest's `[[sensitivity]]` rows (`<row>__<alternative>`), which `repro plan` prices and "
        "a profile can include; the functional profile trains table1's and table5's. The empirical claims "
        "whose every comparison such rows trained are decided again on them below."
    )
    shown = shown_readings(manifests) if manifests else []
    listed = [(r, how_decided(r, manifests or []), own is not None and own.declares(r.id)) for r in shown]
    if own is not None:
        intro += " " + own_line(own, shown)
    signs = trained_lines(trained)
    return render(
        "readings.md.j2", entries=counted, trained=trained, signs=signs, listed=listed, intro=intro, outro=outro
    )

"""The readings table: every analytic claim under every reading the text leaves open, as report.md shows it.

Renders what repro.claims.decide decided (ManifestResult.readings); computes nothing. Torch-free.
"""

from __future__ import annotations

from typing import Any

from repro.spec.readings import shipped_readings
from repro.results.measurements import READINGS_DETAIL


def readings_entries(entries: list[tuple[Any, Any]]) -> list[Any]:
    """Every decided ClaimReadings of the report's results, in manifest order."""
    return [c for _, r in entries if r is not None for c in r.readings]


def readings_cost(entries: list[tuple[Any, Any]]) -> tuple[float, int]:
    """(CPU-seconds, distinct models) the tables spent counting the readings' alternatives."""
    details = [r.measured.details.get(READINGS_DETAIL, {}) for _, r in entries if r is not None]
    return sum(d.get("cpu_seconds", 0.0) for d in details), sum(d.get("models", 0) for d in details)


def readings_summary(claims: list[Any], cpu_seconds: float, models: int) -> str:
    depends = [c.claim for c in claims if c.depends]
    alternatives = sum(len(c.alternatives) for c in claims)
    return (f"Readings: {len(claims)} analytic claims decided under {alternatives} alternative readings "
            f"({len(depends)} change verdict under one: {', '.join(depends) or 'none'}); counting the "
            f"alternatives took {cpu_seconds:.1f} CPU-s ({models} models)")


def render_readings(claims: list[Any], cpu_seconds: float, models: int) -> str:
    from repro.report.render import environment

    readings = shipped_readings()
    trained = sorted({r for c in claims for r in c.training_only})
    intro = ("Each choice the paper's text leaves open is declared once, in `repro/spec/readings.toml`, with the value "
             "this artifact chose and each alternative as a configuration override. Every analytic claim is decided "
             "again under every alternative of each reading that applies to the rows it reads (one reading at a time, "
             f"the others as chosen), by counting those rows again. {len(readings)} readings; "
             f"{readings_summary(claims, cpu_seconds, models).removeprefix('Readings: ')}.")
    outro = ("Readings that change only how a model trains leave every count an analytic claim reads unchanged, so "
             f"they cannot move these verdicts: {', '.join(trained) or 'none'}. Their alternatives are decided by "
             "training: a manifest's `[[sensitivity]]` rows (`<row>__<alternative>`), which `repro plan` prices and "
             "a profile can include; the functional profile trains table1's.")
    return environment().get_template("readings.md.j2").render(entries=claims, intro=intro, outro=outro)

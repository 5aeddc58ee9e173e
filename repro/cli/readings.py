"""`repro readings [ID...]`: every analytic claim under every reading the text leaves open, without a run.

The logic is below the command line: repro.measure.readings counts the rows the tables' analytic claims
read, and each alternative of the readings that apply to them (repro/readings.toml); repro.claims.readings
decides the claims on each. This prints, claim by claim, which readings reproduce it, and exits 0 whatever
the verdicts: it informs, it does not gate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from repro.cli.common import ManifestsOpt, console, load_some


def readings(ids: list[str] = typer.Argument(None, help="Manifest ids (default: every one with analytic claims)."),
             manifests_dir: Optional[Path] = ManifestsOpt,
             verbose: bool = typer.Option(False, "--verbose", "-v", help="Also print each verdict's evidence.")) -> None:
    """Every analytic claim under every alternative reading (repro/readings.toml): which readings reproduce it."""
    from rich.markup import escape
    from rich.table import Table

    from repro.measure.readings import readings_for
    from repro.report.readings import readings_summary

    claims, cpu, models = [], 0.0, 0
    for m in load_some(ids, manifests_dir):
        if any(c.scope == "analytic" for c in m.claims):
            entries, detail = readings_for(m)
            claims += entries
            cpu, models = cpu + detail["cpu_seconds"], models + detail["models"]
    table = Table("Claim", "Reading", "Under", "Verdict", "Value", *(["Evidence"] if verbose else []),
                  title="Analytic claims under each reading the text leaves open")
    colours = {"reproduced": "green", "not reproduced": "red", "inconclusive": "yellow", "not run": "dim"}
    for e in claims:
        for o in [e.chosen, *e.alternatives]:
            table.add_row(f"{e.manifest}/{e.claim}" if o is e.chosen else "", o.reading or "(as chosen)",
                          escape(o.label if o.reading else ""), f"[{colours[o.status]}]{o.status}[/]", o.value,
                          *([escape(o.evidence)] if verbose else []))
    console.print(table)
    for e in claims:
        console.print(e.line(), markup=False)
    console.print(readings_summary(claims, cpu, models), markup=False)

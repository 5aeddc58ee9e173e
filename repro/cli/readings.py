"""`repro readings [ID...]`: every analytic claim under every reading the text leaves open, without a run.

The logic is below the command line: repro.measure.reading_counts counts the rows the tables' analytic claims
read, and each alternative of the readings that apply to them (repro/spec/readings.toml); repro.claims.under_readings
decides the claims on each. This prints, claim by claim, which readings reproduce it, and exits 0 whatever
the verdicts: it informs, it does not gate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from repro.cli.common import ManifestsOpt, load_some, print_grid, show


def readings(ids: list[str] = typer.Argument(None, help="Manifest ids (default: every one with analytic claims)."),
             manifests_dir: Optional[Path] = ManifestsOpt,
             verbose: bool = typer.Option(False, "--verbose", "-v", help="Also print each verdict's evidence.")) -> None:
    """Every analytic claim under every alternative reading (repro/spec/readings.toml): which readings reproduce it."""
    from rich.text import Text

    from repro.measure.reading_counts import readings_for
    from repro.report.readings_section import readings_summary
    from repro.core.terminal import Column, Grid

    claims, cpu, models = [], 0.0, 0
    for m in load_some(ids, manifests_dir):
        if any(c.scope == "analytic" for c in m.claims):
            entries, detail = readings_for(m)
            claims += entries
            cpu, models = cpu + detail["cpu_seconds"], models + detail["models"]
    # One section per claim (its id printed whole above its readings), so no id is cut at 80 columns.
    grid = Grid([Column("Reading"), Column("Verdict"), Column("Value", right=True), Column("Under", prose=True, drop=2),
                 *([Column("Evidence", prose=True, drop=1)] if verbose else [])])
    colours = {"reproduced": "green", "not reproduced": "red", "inconclusive": "yellow", "not run": "dim"}
    for e in claims:
        grid.section(f"{e.manifest}/{e.claim}")
        for o in [e.chosen, *e.alternatives]:
            grid.add(o.reading or "(as chosen)", Text(o.status, style=colours[o.status]), o.value,
                     o.label if o.reading else "", *([o.evidence] if verbose else []))
    print_grid(grid, "Analytic claims under each reading the text leaves open")
    for e in claims:
        show(e.line())
    show(readings_summary(claims, cpu, models))

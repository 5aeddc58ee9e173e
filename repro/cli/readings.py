"""`repro readings [ID...]`: every reading the text leaves open, and the claims decided under each, without a run.

The logic is below the command line: repro/spec/readings.toml declares the readings; repro.measure.reading_counts counts
the rows the tables' analytic and rho-ordered claims read, and each alternative of the readings that apply to
them; repro.claims.under_readings decides the claims on each. This prints the readings (what was chosen, the
alternatives, and how each is decided), then, claim by claim, which readings reproduce it, and exits 0 whatever
the verdicts: it informs, it does not gate.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from repro.cli.common import load_some, print_grid, show
from repro.cli.options import MANIFESTS, READINGS, verbose_option
from repro.core.terminal import Column, Grid
from repro.plan.manifest import Manifest

if TYPE_CHECKING:
    from repro.claims.under_readings import ClaimReadings

KINDS = {"ordered by rho": " (empirical, ordered by rho)", "metric": " (under each reading of what it measures)"}


def readings(
    ids: Optional[list[str]] = typer.Argument(None, help="Manifest ids (default: every one)."),
    manifests_dir: Optional[Path] = MANIFESTS,
    readings_file: Optional[Path] = READINGS,
    verbose: bool = verbose_option(
        "Also list the readings, what each alternative is, the order by rho, each verdict's evidence and the prose."
    ),
) -> None:
    """Every reading the text leaves open (repro/spec/readings.toml), and the claims decided again under each."""
    from rich.text import Text

    from repro.claims.under_readings import recounted_claims, reread_claims
    from repro.measure.reading_counts import readings_for
    from repro.report.readings_section import own_line, own_readings, readings_summary, shown_readings

    manifests = load_some(ids, manifests_dir, readings=readings_file)
    own = own_readings(manifests)
    where = f"repro/spec/readings.toml and {own.path}" if own is not None else "repro/spec/readings.toml"
    if verbose:
        _list_readings(manifests, where)
    claims: list[ClaimReadings] = []
    # Counted as the report counts them: the paper's tables in one line, the extension's apart.
    cost: dict[bool, tuple[float, int]] = {False: (0.0, 0), True: (0.0, 0)}  # (CPU seconds, models counted)
    for m in manifests:
        if recounted_claims(m) or reread_claims(m):
            entries, detail = readings_for(m)
            claims += entries
            seconds, models = cost[m.is_extension()]
            cost[m.is_extension()] = (seconds + detail["cpu_seconds"], models + detail["models"])
    extensions = {m.id for m in manifests if m.is_extension()}
    grid = _by_reading(claims) if verbose else _by_claim(claims)
    print_grid(grid, f"Claims under each reading the text leaves open ({where})")
    paper = [e for e in claims if e.manifest not in extensions]
    beyond = [e for e in claims if e.manifest in extensions]
    if paper or not beyond:
        show(readings_summary(paper, *cost[False]))
    if beyond:
        show(
            "Beyond the paper (extension tables, counted apart as the report counts them): "
            + readings_summary(beyond, *cost[True]).removeprefix("Readings: ")
        )
    show(_by_training(manifests))
    if own is not None:
        show(own_line(own, shown_readings(manifests), code=""))
    if not verbose:
        show(
            Text(
                "-v: the readings themselves, what each alternative is, the order by rho and the evidence", style="dim"
            )
        )
        return
    for e in claims:
        show(e.line())
    if any(e.kind != "analytic" for e in claims):
        show(
            "An empirical or GPU-scoped claim needs the table's measurements: here it is `not run` (a claim ordered "
            "by rho shows the order each reading puts its settings in); the report decides it on what its run "
            "measured."
        )


COLOURS = {"reproduced": "green", "not reproduced": "red", "inconclusive": "yellow", "not run": "dim"}


def _by_claim(claims: list[ClaimReadings]) -> Grid:
    """One line per claim: its verdict as chosen, how many alternative readings it was decided under, and those
    that give another verdict (the lines -v lists each reading on)."""
    from rich.text import Text

    grid = Grid(
        [
            Column("Claim"),
            Column("As chosen"),
            Column("Readings", right=True),
            Column("Another verdict under", prose=True, drop=1),
        ]
    )
    for e in claims:
        other = [f"{o.reading}/{o.alternative}: {o.status}" for o in e.alternatives if o.status != e.chosen.status]
        grid.add(
            f"{e.manifest}/{e.claim}",
            Text(e.chosen.status, style=COLOURS[e.chosen.status]),
            str(len(e.alternatives)),
            "; ".join(other),
        )
    return grid


def _by_reading(claims: list[ClaimReadings]) -> Grid:
    """One section per claim (its id printed whole above its readings, so no id is cut at 80 columns), a line per
    reading: its verdict, value, what the alternative is, the order by rho and the evidence."""
    from rich.text import Text

    grid = Grid(
        [
            Column("Reading"),
            Column("Verdict"),
            Column("Value", right=True),
            Column("Under", prose=True, drop=3),
            Column("Order by rho", prose=True, drop=2),
            Column("Evidence", prose=True, drop=1),
        ]
    )
    for e in claims:
        grid.section(f"{e.manifest}/{e.claim}" + KINDS.get(e.kind, ""))
        for o in [e.chosen, *e.alternatives]:
            grid.add(
                f"{o.reading}/{o.alternative}" if o.reading else "(as chosen)",
                Text(o.status, style=COLOURS[o.status]),
                o.value,
                o.label if o.reading else "",
                o.order,
                o.evidence,
            )
    return grid


def _by_training(manifests: list[Manifest]) -> str:
    """One line: the readings that change only how a model trains, which no count decides: the ones a
    [[sensitivity]] table trains (the report decides its claims on those rows) and the ones none does."""
    from repro.report.readings_section import shown_readings, trained_rows

    trained: list[str] = []
    untrained: list[str] = []
    for r in shown_readings(manifests):
        if not all(r.training_only(a) for a in r.alternatives):
            continue
        tables = trained_rows(r, manifests)
        (trained if tables else untrained).append(f"{r.id} ({', '.join(tables)})" if tables else r.id)
    return (
        f"Decided by training, not counted here: {', '.join(trained) or 'none'} (their [[sensitivity]] rows; "
        f"the report decides their claims on them); trained by no table: {', '.join(untrained) or 'none'}"
    )


def _list_readings(manifests: list[Manifest], where: str) -> None:
    """Every reading that applies to the manifests: the value chosen, the alternatives, how each is decided."""
    from repro.report.readings_section import how_decided, shown_readings

    listed = Grid(
        [
            Column("Reading"),
            Column("Chosen", prose=True),
            Column("Alternatives", prose=True, drop=2),
            Column("Decided by", prose=True, drop=1),
        ]
    )
    for r in shown_readings(manifests):
        listed.add(
            r.id, r.chosen.label, "; ".join(f"{a.id}: {a.label}" for a in r.alternatives), how_decided(r, manifests)
        )
    print_grid(listed, f"Readings the text leaves open ({where})")

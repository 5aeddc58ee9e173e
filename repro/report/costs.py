"""The report's compute section: per claim and per table, the device-hours its runs took beside the estimate.

It renders what the cost stage computed (repro.cost.taken.ComputeTaken, from the command's plans and the cost
model it fitted once): the report plans nothing, fits nothing and counts nothing.
"""

from __future__ import annotations

from repro.cost.taken import ComputeTaken


def compute_section(taken: ComputeTaken, profile: str) -> str:
    """The section: time taken per claim and table beside the estimate, and each table's wall time estimated
    against measured."""
    from repro.report.render import render

    if not taken.lines:
        return "No training runs at this profile."
    return render(
        "compute.md.j2", lines=taken.lines, profile=profile, source=taken.source, walls=taken.walls, fitted=taken.fitted
    )

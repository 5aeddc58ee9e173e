"""A table as data (rows of formatted cells) and the cell formats every table builder shares."""

from __future__ import annotations

from dataclasses import dataclass, field

from repro.plan.manifest import Manifest
from repro.spec.paper import paper_value


@dataclass
class Table:
    key: str  # unique within the manifest, e.g. "flops"
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    groups: dict[int, str] = field(default_factory=dict)  # row index -> group heading before it
    # (row index, column index) -> the run records the cell's number came from, as (label, run hash):
    # report.html links the number to each record; Markdown and LaTeX leave it out.
    links: dict[tuple[int, int], tuple[tuple[str, str], ...]] = field(default_factory=dict)
    # row index -> the manifest row or comparison it shows: report.html links the row to its trace (trace.html)
    ids: dict[int, str] = field(default_factory=dict)

    def add(self, cells: list[str], id: str = "", links: dict[int, tuple[tuple[str, str], ...]] | None = None) -> None:
        """A row; `id`: the manifest row or comparison it shows; `links`: column index -> the run records behind it."""
        i = len(self.rows)
        if id:
            self.ids[i] = id
        self.links.update({(i, column): runs for column, runs in (links or {}).items()})
        self.rows.append(cells)

    def heading(self, text: str) -> None:
        """A group heading before the next row, unless the table has it already."""
        if text not in self.groups.values():
            self.groups[len(self.rows)] = text


def mmac(n: float | None) -> str:
    return "" if n is None else f"{n / 1e6:,.3f}"


def pct(x: float | None, digits: int = 2) -> str:
    return "" if x is None else f"{100 * x:.{digits}f}%"


def pct_auto(x: float | None) -> str:
    """Percent with enough digits to show small fractions such as 0.06%."""
    if x is None:
        return ""
    return pct(x, 3 if abs(x) < 0.01 else 2)


def reported(manifest: Manifest, key: str) -> str:
    pv = paper_value(manifest.paper_table, key)
    if pv is None:
        return ""
    return pv.printed + (" (explainer)" if pv.source == "explainer-and-summary" else "")

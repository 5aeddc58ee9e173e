"""Tables that fit the terminal: an id, a path or a number is printed whole; prose wraps, or moves below.

A Step is one instruction: what to do, and the shell command that does it, printed on a line of its
own however wide, so that it pastes whole. A Grid is a table as data: columns, and rows of cells
(plain strings, or rich Text for a colour), optionally under section headings. A column holds either
values a user reads or types next (an id, a path, a number: printed whole, on one line, never cut)
or prose (wrapped at words). `fit` lays a Grid out at a width, 80 columns or a pipe's default
included: when the columns do not fit side by side, those with a `drop` rank leave the table in
rising order of rank and their cells are listed below it, one line per row; a grid whose kept
columns alone are too wide is printed as one block of "header: value" lines per row.

What is printed may come from files someone else made (a file name in runs/, a record's field), so every
line and cell is `printable`: a control character (ESC starts a terminal's escape sequences) or a bidirectional
override shows as "?" and steers nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rich import box
from rich.cells import cell_len
from rich.console import RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

GAP = 2  # cells between two columns
# C0 controls but newline and tab, DEL, C1 controls, and the bidirectional embeddings, overrides and isolates.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: Text | str) -> Text:
    """`text` with every control character shown as "?" (one for one, so its styles stay where they were)."""
    line = text.copy() if isinstance(text, Text) else Text(text)
    if CONTROL.search(line.plain):
        line.plain = CONTROL.sub("?", line.plain)
    return line


MIN_PROSE = 20  # a prose column narrower than this reads badly: it leaves the table instead
INDENT = 2  # the rows of a sectioned grid, under their heading


@dataclass(frozen=True)
class Step:
    say: str  # what to do (prose)
    command: str = ""  # the command that does it: one line, never wrapped


# A line of a message that is a command to paste: two spaces, then a program. wrap_words leaves it whole, however
# wide (the terminal folds it on screen; a copy of it is one line).
COMMAND_LINE = re.compile(r"^  (?:python|pip|curl|wget|repro|docker|git|torchrun|sbatch|srun|tar|unzip|cp|mkdir)\b")


def as_lines(steps: list[Step]) -> str:
    """Steps for an error message: what to do as prose, each command on a line of its own, indented by two
    spaces ("say\n  command\nsay"), which print_words never wraps."""
    lines = []
    for s in steps:
        lines += [s.say] if s.say else []
        lines += [f"  {s.command}"] if s.command else []
    return "\n".join(lines)


# A number and the unit after it stay on one line ("~10 min", "1.7 s", "24 GPU-hours").
UNIT_AFTER_NUMBER = re.compile(
    r"~?[\d.,]*\d (?:s|ms|min|h|%|pp|GB|GiB|MiB|CPU-s|GPU-h|CPU-h|GPU-hours|CPU-hours)"
    r"(?![\w-])"
)


def wrap_words(text: Text, width: int) -> list[Text]:
    """Lines of at most `width` cells broken at spaces only, never between a number and its unit: a word
    wider than that (a path, a URL) is a line of its own, whole, and so is a command line (COMMAND_LINE)."""
    out: list[Text] = []
    for line in text.split("\n", allow_blank=True):
        if COMMAND_LINE.match(line.plain):
            out.append(line)  # a command to paste: whole
            continue
        offsets, start = [], 0
        glued = {m.start() + m.group().index(" ") + 1 for m in UNIT_AFTER_NUMBER.finditer(line.plain)}
        words = list(re.finditer(r"\S+", line.plain))
        for i, word in enumerate(words):
            if word.start() > start and cell_len(line.plain[start : word.end()]) > width:
                at = word.start()
                if at in glued and i > 0 and words[i - 1].start() > start:  # take the number along
                    at = words[i - 1].start()
                offsets.append(at)
                start = at
        for part in line.divide(offsets):
            part.rstrip()
            out.append(part)
    return out


def print_words(console, text: Text | str) -> None:
    """Prose on `console`: wrapped at words (wrap_words), never cut."""
    for line in wrap_words(printable(text), console.width):
        console.print(line, soft_wrap=True, highlight=False)


@dataclass(frozen=True)
class Column:
    header: str
    prose: bool = False  # wraps at words; otherwise an id, path or number, printed whole on one line
    drop: int = 0  # 0: always in the table; else it leaves (to below the table) in rising order when too wide
    right: bool = False  # numbers line up on the right


def number_columns(*headers: str) -> list[Column]:
    """Columns of numbers, lined up on the right."""
    return [Column(h, right=True) for h in headers]


@dataclass
class Grid:
    """Columns, and rows of cells; a row may instead be a section heading (`section`): a line of its own
    above the rows under it (a table's id above its claims), so that the rows need not repeat it."""

    columns: list[Column]
    rows: list[list[Text] | Text] = field(default_factory=list)

    def add(self, *cells: str | Text) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"a row of {len(cells)} cells in a grid of {len(self.columns)} columns")
        self.rows.append([printable(c if isinstance(c, Text) else str(c)) for c in cells])

    def section(self, heading: str | Text) -> None:
        self.rows.append(printable(heading if isinstance(heading, Text) else Text(heading, style="bold")))

    @property
    def cells(self) -> list[list[Text]]:
        return [r for r in self.rows if isinstance(r, list)]

    @property
    def sectioned(self) -> bool:
        return any(isinstance(r, Text) for r in self.rows)

    def column(self, header: str) -> list[str]:
        """The plain text of one column's cells (tests read tables this way)."""
        i = [c.header for c in self.columns].index(header)
        return [row[i].plain for row in self.cells]


@dataclass
class Layout:
    """A grid laid out at a width: what to print in order (section headings, and tables whose columns line
    up from one section to the next), then the lines that go below (the dropped columns' cells; when even
    the kept columns do not fit, every row as a block of "header: value" lines)."""

    parts: list[Text | RenderableType]
    below: list[Text]
    dropped: list[str]  # headers of the columns that left the table


def _lines(cell: Text) -> list[str]:
    return cell.plain.splitlines() or [""]


def _whole(cells: list[Text], header: str) -> int:
    """An id, path or number column: its widest value, and the header's longest word (headers wrap)."""
    widths = [cell_len(line) for c in cells for line in _lines(c)]
    return max(widths + [cell_len(w) for w in header.split()] + [1])


def _prose(cells: list[Text], header: str) -> tuple[int, int]:
    """(least, most) width of a prose column: its longest word or MIN_PROSE; its longest line."""
    most = max([cell_len(line) for c in cells for line in _lines(c)] + [cell_len(header)])
    words = [cell_len(w) for c in cells for w in c.plain.split()] + [cell_len(w) for w in header.split()]
    return min(most, max(words + [MIN_PROSE])), most


def _widths(grid: Grid, keep: list[int], width: int) -> list[int] | None:
    """Column widths of the kept columns within `width`, or None when they do not fit."""
    least, most = [], []
    for i in keep:
        col, cells = grid.columns[i], [r[i] for r in grid.cells]
        lo, hi = _prose(cells, col.header) if col.prose else (_whole(cells, col.header),) * 2
        least.append(lo)
        most.append(hi)
    room = width - GAP * (len(keep) - 1) - sum(least)
    if room < 0:
        return None
    widths = list(least)
    growing = [k for k in range(len(keep)) if widths[k] < most[k]]
    while room > 0 and growing:  # share what is left evenly among the prose columns that want more
        share = max(1, room // len(growing))
        for k in list(growing):
            extra = min(share, most[k] - widths[k], room)
            widths[k] += extra
            room -= extra
            if widths[k] >= most[k]:
                growing.remove(k)
            if room == 0:
                break
    return widths


def _table(grid: Grid, keep: list[int], widths: list[int], header: bool) -> Table:
    table = Table(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True, expand=False, show_header=header
    )
    for i, w in zip(keep, widths):
        col = grid.columns[i]
        table.add_column(col.header, width=w, justify="right" if col.right else "left", overflow="fold")
    return table


def fit(grid: Grid, width: int) -> Layout:
    indent = INDENT if grid.sectioned else 0  # rows under a heading are indented below it
    keep = list(range(len(grid.columns)))
    ranks = sorted({c.drop for c in grid.columns if c.drop})
    widths = _widths(grid, keep, width - indent)
    while widths is None and ranks:
        rank = ranks.pop(0)
        keep = [i for i in keep if grid.columns[i].drop != rank]
        widths = _widths(grid, keep, width - indent)
    if widths is None:
        return Layout([], _blocks(grid), [c.header for c in grid.columns])
    dropped = [i for i in range(len(grid.columns)) if i not in keep]
    parts: list[Text | RenderableType] = []
    below: list[Text] = []
    table, heading, key = None, None, ""
    if grid.sectioned:  # the column headers once, above every section
        parts.append(Padding(_table(grid, keep, widths, True), (0, 0, 0, indent), expand=False))
    for row in grid.rows:
        if isinstance(row, Text):
            parts.append(row)
            table, heading = None, row
            continue
        if table is None:
            table = _table(grid, keep, widths, header=not grid.sectioned)
            parts.append(Padding(table, (0, 0, 0, indent), expand=False) if indent else table)
        table.add_row(*(row[i] for i in keep))
        key = row[keep[0]].plain.strip() or key  # a continued row (an empty first cell) belongs to the one above
        details = [Text.assemble(f"{grid.columns[i].header}: ", row[i]) for i in dropped if row[i].plain]
        if details:
            if heading is not None:
                below.append(heading)
                heading = None
            below.append(Text.assemble(key, "  ", Text("; ").join(details)))
    return Layout(parts, below, [grid.columns[i].header for i in dropped])


def print_grid(console, grid: Grid) -> None:
    """The grid laid out at the console's width, then what went below it."""
    layout = fit(grid, console.width)
    for part in layout.parts:
        if isinstance(part, Text):
            print_words(console, part)
        else:
            console.print(part)
    for line in layout.below:
        print_words(console, line)


def _blocks(grid: Grid) -> list[Text]:
    """Every row as "header: value" lines, a blank line between rows: for a width no table fits."""
    out: list[Text] = []
    for row in grid.rows:
        if out:
            out.append(Text(""))
        if isinstance(row, Text):
            out.append(row)
            continue
        out += [Text.assemble(f"{c.header}: ", cell) for c, cell in zip(grid.columns, row) if cell.plain]
    return out

"""How a table's columns are set in LaTeX so that the table fits the text block it is put in.

A table is a `tabularx` as wide as the line. The first column (the row's label) and every column with a cell
longer than WRAP characters (a note, a reading's name) wrap at words, sharing what the other columns leave by the
length of their longest cell; the other columns (numbers, ids) are set whole, on one line, and their headers are
broken into lines no wider than their widest cell. Widths are measured in characters of the plain text: an
estimate of the set width, which is all the split needs, since LaTeX sets the wrapping columns' widths itself.
"""

from __future__ import annotations

from dataclasses import dataclass

WRAP = 24  # a column with a longer cell wraps; a shorter one is set whole
MOST = 80  # a wrapping column's share grows with its longest cell up to this many characters
# What a table needs of the line, estimated: a character at \small (9 pt; a digit of Computer Modern is half an em),
# the \tabcolsep either side of a column (the template sets 4 pt), and the fewest characters a wrapping column can
# hold without breaking its words.
CHAR_PT = 4.5
PAD_PT = 8.0
WRAP_LEAST = 12
PORTRAIT_PT = 345.0  # the text of a portrait page in LaTeX's article class (10 pt), one column
PT_PER_CM = 28.45


@dataclass(frozen=True)
class TexColumns:
    spec: str  # the tabularx column specification
    headers: list[list[str]]  # each column's header as lines (plain text; the template escapes them)
    min_width_pt: float = 0.0  # the line it needs: the whole columns set, each wrapping one WRAP_LEAST wide

    def width_note(self, standalone: str) -> str:
        """A comment for a table a portrait page's line is too narrow for ('' where it fits): a tabularx as wide
        as the line leaves its wrapping columns a few letters each there, and its whole columns stick out."""
        if self.min_width_pt <= PORTRAIT_PT:
            return ""
        return (
            f"% This table needs a line of about {self.min_width_pt / PT_PER_CM:.1f} cm, more than a portrait page's "
            f"text (article: {PORTRAIT_PT / PT_PER_CM:.1f} cm): set it in landscape (pdflscape) or a two-column "
            f"table*, as {standalone} does (landscape A4)"
        )


def _wrapped(header: str, width: int) -> list[str]:
    """The header's words in lines of at most `width` characters (a longer word: a line of its own)."""
    lines: list[str] = []
    for word in header.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def tex_columns(columns: list[str], rows: list[list[str]]) -> TexColumns:
    longest = [max([len(str(row[i])) for row in rows] + [0]) for i in range(len(columns))]
    wraps = [i == 0 or n > WRAP for i, n in enumerate(longest)]
    weights = {i: max(min(longest[i], MOST), len(columns[i]), 1) for i in range(len(columns)) if wraps[i]}
    total = sum(weights.values())
    # tabularx shares the free width among X columns by \hsize factors that must add up to their count
    shares = {i: round(len(weights) * w / total, 2) for i, w in weights.items()}
    shares[max(shares)] = round(len(weights) - sum(v for i, v in shares.items() if i != max(shares)), 2)
    spec, headers = [], []
    chars = 0
    for i, header in enumerate(columns):
        if wraps[i]:
            spec.append(rf">{{\raggedright\arraybackslash\hsize={shares[i]:.2f}\hsize}}X")
            headers.append([header])
            chars += WRAP_LEAST
        else:
            spec.append("r")
            headers.append(_wrapped(header, max([longest[i]] + [len(w) for w in header.split()])))
            chars += max([longest[i]] + [len(line) for line in headers[-1]])
    return TexColumns("".join(spec), headers, chars * CHAR_PT + PAD_PT * len(columns))

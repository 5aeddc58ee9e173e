"""Text as LaTeX sees it: every special character escaped, the symbols tables use mapped, the rest refused.

One table of what the LaTeX writers can print (the tables, the standalone document, the Artifact Appendix),
so that a manifest is checked against the same table when it is loaded (repro.plan.manifest): a label the
writers could not print is refused before any run starts, not after training. `<`, `>` and `|` are mapped
to math mode, since LaTeX's default font encoding prints them as ¡, ¿ and —. A line break becomes a space:
in a `%` comment it would end the comment, and in a table cell a blank line ends the table.
"""

from __future__ import annotations

import re
from typing import Any

SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": "$<$",
    ">": "$>$",
    "|": "$|$",
    "\n": " ",
    "\r": " ",
    "\t": " ",
}
UNICODE = {
    "ρ": r"$\rho$",
    "τ": r"$\tau$",
    "κ": r"$\kappa$",
    "λ": r"$\lambda$",
    "Δ": r"$\Delta$",
    "±": r"$\pm$",
    "×": r"$\times$",
    "→": r"$\to$",
    "≤": r"$\leq$",
    "≥": r"$\geq$",
    "≈": r"$\approx$",
    "−": "-",
    "–": "--",
    "—": "---",
    "…": r"\ldots{}",
    "’": "'",
    "“": "``",
    "”": "''",
}
_MAPPED = re.compile("|".join(re.escape(k) for k in [*SPECIAL, *UNICODE]))


def printable(ch: str) -> bool:
    """Whether the writers can print `ch`: printable ASCII, or a character with a mapping."""
    return " " <= ch <= "~" or ch in SPECIAL or ch in UNICODE


def unmappable(text: str) -> list[str]:
    """The distinct characters of `text` the writers cannot print, in order of first appearance."""
    return list(dict.fromkeys(ch for ch in text if not printable(ch)))


def latex_escape(text: Any, strict: bool = True) -> str:
    """Escape every LaTeX special character and map the symbols tables use to math mode. A character with no
    mapping raises ValueError, unless not `strict` (text from outside: a data path), where it becomes '?'."""
    s = str(text)
    bad = unmappable(s)
    if bad and strict:
        raise ValueError(f"no LaTeX mapping for {''.join(bad)!r} in {s!r}")
    out = _MAPPED.sub(lambda m: SPECIAL.get(m.group(0)) or UNICODE[m.group(0)], s)
    return "".join(ch if " " <= ch <= "~" else "?" for ch in out)

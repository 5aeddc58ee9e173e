"""The numbers the paper's text reports, loaded from repro/paper_tables/*.toml (package data).

Each value is keyed "<row or comparison id>.<metric>" within its table, the same
ids the table's manifest uses, and records the number as printed, where it
comes from, and its statistics when the text gives them. Cells the text does not
give are absent: nothing here is estimated.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from repro.core.package_data import shipped
from repro.core.registry import closest
from repro.core.schema import Problems, SchemaError, from_dict, read_toml

_NUMBER = re.compile(r"\d*\.\d+|\d+")  # the printed value is the first; what follows (± s.d., p, d) is not it
Source = Literal["method-and-results", "explainer-and-summary", "abstract-and-references"]


@dataclass(frozen=True)
class PaperValue:
    key: str  # "<row or comparison id>.<metric>"
    section: str  # the paper section the number is stated in
    source: Source = "method-and-results"  # which text file of ../shared/paper holds it
    printed: str = ""  # the number exactly as printed, e.g. "0.06%", "~38%", "p<10^-5"
    value: float | None = None
    unit: str = ""  # "%", "ms", "x", "pp" (percentage points), or "" for plain numbers
    approx: bool = False  # printed with "~", "approximately", "roughly"
    sd: float | None = None
    n: int | None = None  # seeds
    p: float | None = None
    p_relation: Literal["=", "<"] = "="
    d: float | None = None  # Cohen's d
    # For findings stated by sign only; "<=0": the text says only that no gain appears (flat or negative).
    sign: Literal["+", "-", "<=0"] | None = None
    positive_seeds: int | None = None  # seeds with a positive gap, when stated
    note: str = ""

    def __post_init__(self) -> None:
        if self.value is None and self.sign is None and self.p is None and self.d is None:
            raise ValueError(f"paper value '{self.key}' carries no number and no sign")

    @property
    def number(self) -> float:
        """The printed value, for the rules that compare with it; a value stated by sign, p or d alone has none."""
        if self.value is None:
            raise ValueError(f"paper value '{self.key}' states no value, only its sign or statistics")
        return self.value

    @property
    def row(self) -> str:
        return self.key.rsplit(".", 1)[0]

    @property
    def metric(self) -> str:
        return self.key.rsplit(".", 1)[1]

    @property
    def decimals(self) -> int:
        """Decimal places of the printed value, its first number (0.06% -> 2; "+1.17% (p=1.2x10^-4)" -> 2,
        never the p-value's), the precision it claims."""
        number = _NUMBER.search(self.printed) if self.value is not None else None  # "p<10^-4" prints no value
        return len(number.group(0).partition(".")[2]) if number else 0

    @property
    def tolerance(self) -> float:
        """Half a unit in the last printed digit; a full unit for approximate values."""
        unit = 10.0 ** (-self.decimals)
        return unit if self.approx else unit / 2

    @property
    def implied_sign(self) -> str | None:
        if self.sign:
            return self.sign
        if self.value is not None and self.value != 0 and self.metric in ("gap", "gap_size", "reversal"):
            return "+" if self.value > 0 else "-"
        return None


@dataclass(frozen=True)
class PaperTable:
    table: str
    title: str
    section: str
    values: tuple[PaperValue, ...] = ()
    notes: str = ""

    def get(self, key: str) -> PaperValue | None:
        return next((v for v in self.values if v.key == key), None)


PAPER_TABLES = shipped("repro", "paper_tables")  # one file per table of the paper: what its text reports


def load_paper_table(path: Path) -> PaperTable:
    problems = Problems()
    table = from_dict(PaperTable, read_toml(path), "", problems)
    if problems.items or table is None:  # a value that did not convert is None: check nothing further
        raise SchemaError(path, problems.items or ["expected a table"])
    if table.table != path.stem:
        problems.add("table", f"must equal the file name '{path.stem}'")
    keys = [v.key for v in table.values]
    for i, key in enumerate(keys):
        if key.count(".") < 1:
            problems.add(f"values[{i}].key", f"expected '<row>.<metric>', got {key!r}")
        if keys.index(key) != i:
            problems.add(f"values[{i}].key", f"duplicate key {key!r}")
    if problems.items:
        raise SchemaError(path, problems.items)
    return table


@lru_cache(maxsize=None)
def _load(path: Path) -> PaperTable:
    return load_paper_table(path)


def paper_table(name: str) -> PaperTable | None:
    """One table's reported values; a damaged file fails only the manifests that use it."""
    path = PAPER_TABLES / f"{name}.toml"
    return _load(path) if path.is_file() else None


def paper_tables() -> dict[str, PaperTable]:
    """Every table that loads (for the audit and figures); a damaged one is skipped with a warning."""
    out = {}
    for path in sorted(PAPER_TABLES.glob("*.toml")):
        try:
            out[path.stem] = _load(path)
        except SchemaError as exc:
            _warn_once(str(exc))
    return out


@lru_cache(maxsize=None)
def _warn_once(message: str) -> None:
    print(f"warning: skipping a damaged paper table: {message}", file=sys.stderr)


def paper_value(table: str, key: str) -> PaperValue | None:
    t = paper_table(table)
    return t.get(key) if t else None


def why_no_value(table: str, key: str) -> str:
    """Why `paper_value(table, key)` is None, and what to do: the table's file is missing, or it has no such key
    (the closest one named)."""
    t = paper_table(table)
    if t is None:
        return (
            f"repro/paper_tables/{table}.toml does not exist: the values the paper reports for this table go there, "
            f"one [[values]] entry each, keyed '<row or comparison>.<metric>' (repro/paper_tables/README.md)"
        )
    keys = [v.key for v in t.values]
    return f"repro/paper_tables/{table}.toml has no value '{key}'{closest(key, keys)}"

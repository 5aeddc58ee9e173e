"""A results folder's frames written as files for notebooks and spreadsheets (`repro export`). Torch-free.

Four files, named by frame: runs, history, verdicts and readings (repro.results.frames), each as CSV, Parquet or JSON
(an array of one object per row). Parquet needs pyarrow, which is optional (`pip install pyarrow`, or the
package's `parquet` extra): `missing_package` says so before anything is read. The four are replaced as a set
(repro.core.fsutil.FolderWriter.replace_set): an interrupt leaves the old four or the new four, never a mix.

A CSV cell is text a spreadsheet may run: one that starts with =, +, -, @, a tab or a carriage return is
written with a ' before it (OWASP's advice on CSV injection), so `=HYPERLINK(...)` in a record's field reads
as text. Number columns are numbers and are never prefixed.
"""

from __future__ import annotations

import importlib.util
import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from repro.core.fsutil import FolderWriter, encode_text
from repro.results.frames import Folder, history, readings, runs, verdicts

if TYPE_CHECKING:
    import pandas as pd

Format = Literal["csv", "parquet", "json"]
FORMATS: tuple[str, ...] = ("csv", "parquet", "json")
FRAMES = {"runs": runs, "history": history, "verdicts": verdicts, "readings": readings}
NEEDS = {"parquet": "pyarrow"}  # format -> the package that writes it
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet may read as the start of a formula


def missing_package(fmt: str) -> str | None:
    """The package `fmt` needs that is not installed, or None."""
    package = NEEDS.get(fmt)
    return package if package is not None and importlib.util.find_spec(package) is None else None


@dataclass(frozen=True)
class Written:
    path: Path
    rows: int


def export_frames(
    folder: Folder, out: Path, fmt: Format, profile: str | None = None, root: Path | None = None
) -> list[Written]:
    """Write runs, history, verdicts and readings of `folder` (only `profile`'s, when given) into `out` as `fmt`,
    as one set, never outside `root` (default: `out`)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format '{fmt}'; expected one of {', '.join(FORMATS)}")
    files: dict[str | Path, bytes] = {}
    written = []
    for name, build in FRAMES.items():
        frame = build(folder, profile)
        path = Path(out) / f"{name}.{fmt}"
        if fmt == "csv":
            files[path] = encode_text(inert_cells(frame).to_csv(index=False))
        elif fmt == "json":
            files[path] = encode_text(frame.to_json(orient="records", indent=1))
        else:
            buffer = io.BytesIO()
            frame.to_parquet(buffer, index=False)
            files[path] = buffer.getvalue()
        written.append(Written(path, len(frame)))
    FolderWriter(Path(root or out)).replace_set(files)
    return written


def inert_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with every text cell that a spreadsheet would run as a formula prefixed with '."""

    def inert(value):
        return f"'{value}" if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value

    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    out = frame.copy()
    for column in out.columns:  # text columns, whether pandas holds them as object or as its string type
        if not is_numeric_dtype(out[column]) and not is_bool_dtype(out[column]):
            out[column] = out[column].map(inert)
    return out

"""A results folder's frames written as files for notebooks and spreadsheets (`repro export`). Torch-free.

Four files, named by frame: runs, history, verdicts and readings (repro.results.frames), each as CSV, Parquet or JSON
(an array of one object per row). Parquet needs pyarrow, which is optional (`pip install pyarrow`, or the
package's `parquet` extra): `missing_package` says so before anything is read. Each file is written whole
(repro.core.fsutil), so a reader never sees half of one.
"""

from __future__ import annotations

import importlib.util
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from repro.core.fsutil import atomic_write_bytes, atomic_write_text
from repro.results.frames import Folder, history, readings, runs, verdicts

Format = Literal["csv", "parquet", "json"]
FORMATS: tuple[str, ...] = ("csv", "parquet", "json")
FRAMES = {"runs": runs, "history": history, "verdicts": verdicts, "readings": readings}
NEEDS = {"parquet": "pyarrow"}  # format -> the package that writes it


def missing_package(fmt: str) -> str | None:
    """The package `fmt` needs that is not installed, or None."""
    package = NEEDS.get(fmt)
    return package if package is not None and importlib.util.find_spec(package) is None else None


@dataclass(frozen=True)
class Written:
    path: Path
    rows: int


def export_frames(folder: Folder, out: Path, fmt: Format, profile: str | None = None) -> list[Written]:
    """Write runs, history, verdicts and readings of `folder` (only `profile`'s, when given) into `out` as `fmt`."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format '{fmt}'; expected one of {', '.join(FORMATS)}")
    written = []
    for name, build in FRAMES.items():
        frame = build(folder, profile)
        path = Path(out) / f"{name}.{fmt}"
        if fmt == "csv":
            atomic_write_text(path, frame.to_csv(index=False))
        elif fmt == "json":
            atomic_write_text(path, frame.to_json(orient="records", indent=1))
        else:
            buffer = io.BytesIO()
            frame.to_parquet(buffer, index=False)
            atomic_write_bytes(path, buffer.getvalue())
        written.append(Written(path, len(frame)))
    return written

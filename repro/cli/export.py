"""`repro export`: a results folder's runs, epochs, verdicts and readings as CSV, Parquet or JSON files
(repro.results.export). The verdicts are decided again from each table's measurements by the current manifests
and rules, as `repro report` decides them (repro.claims.decided_folder): a status stored in a results.json is
never exported as a verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, cast

import typer

from repro.cli.common import fail, profiles_file, refuse_a_file, settings
from repro.cli.options import MANIFESTS, PROFILES, READ_RESULTS, READINGS, profile_option


def export(
    profile: Optional[str] = profile_option("Only this profile's tables and runs. Default: every run."),
    fmt: str = typer.Option("csv", "--format", help="csv, parquet (needs pyarrow) or json."),
    out: Optional[Path] = typer.Option(None, "--out", help="Folder to write into. Default: <results>/export."),
    results_dir: Optional[Path] = READ_RESULTS,
    manifests_dir: Optional[Path] = MANIFESTS,
    profiles: Optional[Path] = PROFILES,
    readings: Optional[Path] = READINGS,
) -> None:
    """Every run, epoch and verdict as CSV, Parquet or JSON."""
    from repro.claims import decided_folder
    from repro.cli.common import load_every, making, print_grid, show, show_unusable, write_failed
    from repro.core.fsutil import WriteFailed
    from repro.core.schema import SchemaError
    from repro.core.terminal import Column, Grid
    from repro.results.export import FORMATS, Format, export_frames, missing_package
    from repro.results.frames import FolderError, read_folder
    from repro.results.measurements import RUNS_FOLDER, profiles_present
    from repro.spec.profiles import all_profiles

    try:  # read by profile name, the results need no definition; the file is checked as every command checks it
        all_profiles(profiles_file(profiles))
    except SchemaError as exc:
        fail(str(exc))
    if fmt not in FORMATS:
        fail(f"--format {fmt}: expected one of {', '.join(FORMATS)}")
    if (package := missing_package(fmt)) is not None:
        fail(f"--format {fmt} needs {package} (pip install {package}); or use --format csv")
    manifests = load_every(
        manifests_dir, profiles, readings=readings
    )  # bad input is reported before the folder is read
    given = results_dir  # the folder named on the command line: the hints below name it again
    results_dir = results_dir or settings().results
    out = out or results_dir / "export"
    if out.exists() and not out.is_dir():
        fail(f"--out {out} is a file; give a folder")
    if not results_dir.exists():  # read_folder's words ("not a folder of results") did not say it was missing
        fail(
            f"no results in {results_dir}: the folder does not exist; run a table or "
            f"`{making(['verify-all'], profile, given)}` first"
        )
    refuse_a_file(results_dir)
    if (refused := _unwritable(out)) is not None:  # before the folder is read and its verdicts decided
        fail(f"cannot write in {refused}; choose a folder this user can write with --out")
    if profile is not None and results_dir.is_dir() and profile not in profiles_present(results_dir):
        fail(
            f"no results of profile '{profile}' in {results_dir} (profiles with results: "
            f"{', '.join(profiles_present(results_dir)) or 'none'})"
        )
    try:
        folder = read_folder(results_dir, profile)
    except FolderError as exc:
        fail(str(exc))
    if not folder.records.records:
        unusable = len(folder.records.unusable)
        fail(
            f"no usable run record in {results_dir / RUNS_FOLDER}"
            + (f" ({unusable} unusable)" if unusable else "")
            + f"; run a table or `{making(['verify-all'], profile, given)}` first"
        )
    folder, undecided = decided_folder(folder, manifests)
    try:  # never outside the results folder, or outside --out when it names another
        root = results_dir if out.absolute().is_relative_to(results_dir.absolute()) else out
        written = export_frames(folder, out, cast(Format, fmt), profile, root)  # fmt is one of FORMATS (above)
    except WriteFailed as exc:
        write_failed(exc)
    show(f"{results_dir}{f' (profile {profile})' if profile else ''} as {fmt}, written to {out}:")
    grid = Grid([Column("File"), Column("Rows", right=True)])
    for w in written:
        grid.add(w.path.name, f"{w.rows:,}")
    print_grid(grid)
    show("Columns and units: docs/results-data.md")
    if undecided:
        show(
            f"Not decided: {', '.join(undecided)}: no manifest of that id here decides its claims, so they are "
            "exported as not run (--manifests names the folder that decides them)"
        )
    show_unusable(folder.records.unusable, "left out, as `repro run` would set them aside")


def _unwritable(out: Path) -> str | None:
    """Where a file cannot be created on the way to `out` (the nearest folder of it, or above it, that exists), and
    why; None where one can. A read-only results folder failed only at the first file, after the whole read."""
    from repro.core.fsutil import cannot_create_in

    folder = out
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    why = cannot_create_in(folder)
    return None if why is None else f"{folder}: {why}"

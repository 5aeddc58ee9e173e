"""`repro compare A B`: two results folders on one screen (repro.report.compare), as Markdown claim by claim
(repro.report.compare.markdown) or as JSON, with an exit code.

Exit 0: no row differs beyond seed noise, no verdict changed, and every row that differs at all was made by
the same runs (same run hashes: a GPU's nondeterminism); 1: otherwise, e.g. the same rows trained on another
thread count; 2: bad input (a folder without usable run records, no profile or row in common), in one line.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from repro.cli.common import ExitCode, fail
from repro.cli.options import MANIFESTS, PROFILES, READINGS, profile_option

SHOWN_ROWS = 12  # rows that differ, on the screen; --json lists every row
SHOWN_LINES = 5  # runs in one folder only, and unusable records, named one per line; the rest counted
FORMATS = ("text", "md", "json")


def compare(
    a: Path = typer.Argument(..., help="Results folder A."),
    b: Path = typer.Argument(..., help="Results folder B, compared with A."),
    profile: Optional[str] = profile_option("Only this profile. Default: every profile in both."),
    fmt: str = typer.Option(
        "text",
        "--format",
        help="text (this screen), md (Markdown: each claim's mean, "
        "sd, se and n on each side, for a pull request) or json (every row, run, claim "
        "and verdict, for scripts).",
    ),
    as_json: bool = typer.Option(False, "--json", help="The same as --format json."),
    manifests_dir: Optional[Path] = MANIFESTS,
    profiles: Optional[Path] = PROFILES,
    readings: Optional[Path] = READINGS,
) -> None:
    """Two results folders: what differs beyond seed noise, claim by claim."""
    import json

    from repro.cli.common import load_every
    from repro.report.compare import ALPHA, CompareError, compare_folders
    from repro.report.compare import markdown

    fmt = "json" if as_json else fmt
    if fmt not in FORMATS:
        fail(f"--format {fmt}: expected one of {', '.join(FORMATS)}")
    manifests = load_every(
        manifests_dir, profiles, readings=readings
    )  # each folder's verdicts are decided again by these
    try:
        result = compare_folders(a, b, profile, manifests)
    except CompareError as exc:
        fail(str(exc))
    if fmt == "json":
        sys.stdout.write(json.dumps(result.to_dict(), indent=1) + "\n")
    elif fmt == "md":
        sys.stdout.write(markdown(result, ALPHA))
    else:
        _show(result)
    raise typer.Exit(ExitCode.FAILED if result.differs else ExitCode.OK)


def _pct(x: float) -> str:
    return f"{100 * x:.2f}"


def _show(result) -> None:
    from rich.text import Text

    from repro.cli.common import print_grid, show
    from repro.core.terminal import Column, Grid
    from repro.report.compare import ALPHA

    for which, path, unusable in (("A", result.a, result.unusable_a), ("B", result.b, result.unusable_b)):
        show(f"{which}: {path}" + (f" ({len(unusable)} unusable run record(s) left out)" if unusable else ""))
        for file, why in list(unusable.items())[:SHOWN_LINES]:
            show(f"  {file}: {why}")
    several = len(result.profiles) > 1
    differ = sorted(
        (r for r in result.rows if r.difference != 0), key=lambda r: (not r.beyond_noise, -abs(r.difference), r.name)
    )
    beyond = result.beyond_noise
    show(
        f"Profile {', '.join(result.profiles)}: {len(result.rows)} rows in both, {len(differ)} differ, "
        f"{len(beyond)} beyond seed noise (Welch's t over seeds, Holm over the rows, alpha {ALPHA})"
    )
    for note, count in _settings(result.rows).items():
        show(f"{count} of them made under other settings: {note}")
    if differ:
        grid = Grid(
            [
                Column("Row"),
                Column("A %", right=True),
                Column("B %", right=True),
                Column("B-A pp", right=True),
                Column("p Holm", right=True),
                Column("Note", prose=True, drop=1),
            ]
        )
        for r in differ[:SHOWN_ROWS]:
            p = "" if r.p_holm is None else f"{r.p_holm:.2g}"
            note = ("beyond noise" + ("; " if r.settings else "")) if r.beyond_noise else ""
            grid.add(
                Text(f"{r.profile}/" * several + r.name, style="bold red" if r.beyond_noise else ""),
                _pct(r.mean_a),
                _pct(r.mean_b),
                f"{100 * r.difference:+.2f}",
                p,
                note + r.settings,
            )
        print_grid(grid)
        if len(differ) > SHOWN_ROWS:
            show(f"and {len(differ) - SHOWN_ROWS} more rows that differ within seed noise (--json lists every row)")
    for which, runs in (("A", result.only_a), ("B", result.only_b)):
        if runs:
            show(
                f"Runs only in {which}: {len(runs)}: "
                + ", ".join(runs[:SHOWN_LINES])
                + (f" and {len(runs) - SHOWN_LINES} more" if len(runs) > SHOWN_LINES else "")
            )
    if result.verdicts:
        grid = Grid([Column("Verdict changed"), Column("A"), Column("B")])
        for v in result.verdicts:
            grid.add(f"{v.profile}/" * several + f"{v.table}/{v.claim}", v.status_a, v.status_b)
        print_grid(grid)
    else:
        show("No verdict changed.")
    show(
        f"{len({(c.profile, c.table, c.claim) for c in result.claims})} claims: each one's mean, sd, se and seeds on "
        "each side with --format md or --format json"
    )
    if result.differs:
        other = sum(r.other_runs_differ for r in result.rows)
        reasons = [
            f"{len(result.beyond_noise)} row(s) beyond seed noise" if result.beyond_noise else "",
            f"{other} row(s) on other runs with other accuracies" if other else "",
            f"{len(result.verdicts)} verdict(s) changed" if result.verdicts else "",
        ]
        show(f"Differs: exit 1 ({'; '.join(r for r in reasons if r)})")
    else:
        show("Same: no row beyond seed noise or on other runs, no verdict changed: exit 0")


def _settings(rows) -> dict[str, int]:
    """How many compared rows were made under each difference of settings (device, threads, versions)."""
    out: dict[str, int] = {}
    for r in rows:
        if r.settings:
            out[r.settings] = out.get(r.settings, 0) + 1
    return out

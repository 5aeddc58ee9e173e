"""`repro package`: one archive of a results profile folder, ready to deposit (repro.results.package)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from repro.cli.common import fail, making, paste, refuse_a_file, settings, show
from repro.cli.options import PROFILE, READ_RESULTS


def package(
    profile: Optional[str] = PROFILE,
    results_dir: Optional[Path] = READ_RESULTS,
    out: Optional[Path] = typer.Option(
        None,
        "--out",
        help="The archive (.tar.gz). Default: repro-<profile>-<commit>.tar.gz in <results>/<profile>/package/.",
    ),
    allow_dirty: bool = typer.Option(
        False,
        "--allow-dirty",
        help="Pack HEAD's source even though tracked files differ from it (the archive then says less than it seems).",
    ),
) -> None:
    """One archive of a results folder: its RO-Crate, tables, report, appendix, run records, citation and source."""
    from repro.cli.common import write_failed
    from repro.core.fsutil import WriteFailed
    from repro.results.acting import acting
    from repro.results.actions import CRATE_FILE
    from repro.results.measurements import profile_dir, profiles_present
    from repro.results.package import PackageError, build_package

    given = results_dir  # the folder named on the command line: the hint below names it again
    profile = profile or settings().profile
    results_dir = results_dir or settings().results
    refuse_a_file(results_dir)
    if profile not in profiles_present(results_dir):
        # the command that makes them: at this profile and into this folder (a bare `repro verify-all` made smoke's)
        make = making(["verify-all"], profile, given)
        fail(
            f"no results of profile '{profile}' in {results_dir} (profiles with results: "
            f"{', '.join(profiles_present(results_dir)) or 'none'}); run `{make}` first"
        )
    if out is not None and not out.name.endswith(".tar.gz"):
        fail(f"--out {out}: expected a file name ending in .tar.gz")
    folder = profile_dir(results_dir, profile)
    inside = out is None or out.resolve().is_relative_to(folder.resolve())
    try:
        if inside:  # an archive in the folder is one of its files: the package is an action of its crate
            with acting("package", folder, image=settings().image):
                made = build_package(folder, out, allow_dirty=allow_dirty)
        else:
            made = build_package(folder, out, allow_dirty=allow_dirty)
    except PackageError as exc:
        fail(str(exc))
    except WriteFailed as exc:
        write_failed(exc)
    if made.dirty:
        show(
            f"warning: {len(made.dirty)} tracked file(s) differ from HEAD; the archive holds HEAD's source "
            f"(commit {made.commit[:12]}), not theirs"
        )
    show(
        f"wrote {made.files} files ({made.size / 2**20:.1f} MiB): profile {profile}, {made.records} run records, "
        f"the source at commit {made.commit[:12]}, CITATION.cff and codemeta.json; its crate unpacks with it:"
    )
    paste(str(made.path))
    paste(f"sha256 {made.sha256}")
    if inside:
        show(f"The archive and its sha256 are in {folder / CRATE_FILE}.")
    else:  # the folder's crate lists the folder's files only
        show(f"The archive is outside {folder}, so its crate does not list it: keep the sha256 above with it.")

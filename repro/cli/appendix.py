"""`repro appendix`: the Artifact Appendix of a profile, in Markdown or LaTeX, from the configuration and a
results folder."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Optional

import typer

from repro.cli.common import (
    check_profile,
    fail,
    load_every,
    manifests_folder,
    read_files,
    refuse_a_file,
    settings,
    show,
)
from repro.cli.options import DATA, MANIFESTS, PROFILE, PROFILES, READINGS, RESULTS
from repro.core.fsutil import FolderWriter, WriteFailed
from repro.plan.manifest import Manifest


def appendix(
    profile: Optional[str] = PROFILE,
    fmt: str = typer.Option(
        "md", "--format", "-f", help="md (Markdown) or tex (LaTeX, booktabs: a document pdflatex compiles)."
    ),
    out: Optional[Path] = typer.Option(
        None, "--out", help="The file to write. Default: artifact-appendix.<format> in <results>/<profile>/."
    ),
    results_dir: Optional[Path] = RESULTS,
    manifests_dir: Optional[Path] = MANIFESTS,
    profiles: Optional[Path] = PROFILES,
    readings: Optional[Path] = READINGS,
    data_dir: Optional[Path] = DATA,
) -> None:
    """The Artifact Appendix (ACM / cTuning): checklist, description, installation, workflow, and one row per claim
    with its command, hardware, cost, expected result and badge; with results of the profile in the folder, the
    verdict there and the run records behind it."""
    from repro.claims import decided_results
    from repro.cost.fit import folder_estimate
    from repro.plan.table_plan import plan_all
    from repro.report.appendix import APPENDIX_NAME, FORMATS, appendix_inputs, build_appendix, render
    from repro.results.acting import acting
    from repro.results.measurements import ManifestResult, profile_dir, profiles_present

    if fmt not in FORMATS:
        fail(f"--format: expected {' or '.join(FORMATS)}, got {fmt!r}")
    profile = profile or settings().profile
    manifests = load_every(manifests_dir, profiles, readings=readings)
    if not manifests:
        from repro.plan.manifest import manifests_dir as manifests_in

        fail(
            f"no manifest in {manifests_in(manifests_folder(manifests_dir))}: an appendix has one row per claim of the "
            "manifests there"
        )
    check_profile(manifests, profile)
    results_dir = results_dir or settings().results
    refuse_a_file(results_dir)  # read, and written into unless --out names a file
    with_results = profile in profiles_present(results_dir)
    entries: list[tuple[Manifest, ManifestResult | None]]
    entries = decided_results(results_dir, profile, manifests) if with_results else [(m, None) for m in manifests]
    plans = plan_all(manifests)  # once: the cost model and every row of the appendix read them
    # The estimate `repro list` gives: it counts the model sizes the caches lack (imports torch)
    inputs = appendix_inputs(plans, folder_estimate(settings(), results_dir, plans, data_dir=data_dir))
    text = render(build_appendix(entries, profile, inputs, with_results), fmt)
    path = out or profile_dir(results_dir, profile) / f"{APPENDIX_NAME}.{fmt}"
    # Written into a profile folder (the default): recorded there as an action of its RO-Crate.
    folder = profile_dir(results_dir, profile)
    inside = folder.is_dir() and path.resolve().is_relative_to(folder.resolve())
    try:
        recorded = acting("appendix", folder, read_files(manifests, profiles), settings().image)
        with recorded if inside else contextlib.nullcontext():  # never through a link below the folder written
            FolderWriter(out.parent if out else results_dir).write_text(path, text)
    except OSError as exc:  # WriteFailed says what to free or change
        fail(str(exc) if isinstance(exc, WriteFailed) else f"cannot write {path}: {exc.strerror or exc}")
    claims = sum(len(m.claims) for m in manifests)
    where = f"verdicts from {results_dir}" if with_results else f"no results of profile '{profile}' in {results_dir}"
    show(f"wrote {path}: {claims} claims, profile {profile}; {where}")

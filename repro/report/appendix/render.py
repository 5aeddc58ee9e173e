"""The appendix in Markdown and in LaTeX (booktabs, a document of its own), and where it is written.

`write_appendix` puts both beside each report (<results>/<profile>/artifact-appendix.md and .tex), from the
results the report was rendered from; `repro appendix` writes one, from a results folder or none. Both read the
command's plans and its cost model as the command fitted it to the folder's run records (repro.cost.fit), so its
figures are labelled as `repro list` labels them. In a report nothing is counted (torch-free where the caches
hold the counts); `repro appendix` counts what the caches lack.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from repro.core.fsutil import FolderWriter, encode_text
from repro.cost.disk import gigabytes
from repro.cost.estimate import CostModel
from repro.plan.manifest import Manifest
from repro.plan.table_plan import Plans
from repro.report.appendix.build import Appendix, Inputs, build_appendix
from repro.report.appendix.container import read_container, read_package
from repro.report.render import environment, latex_escape
from repro.results.measurements import ManifestResult, profile_dir

if TYPE_CHECKING:
    from repro.cost.fit import FolderFit

APPENDIX_NAME = "artifact-appendix"  # <results>/<profile>/artifact-appendix.md and .tex
Format = Literal["md", "tex"]
FORMATS: tuple[Format, ...] = ("md", "tex")


def tex(text: Any) -> str:
    """Prose for LaTeX: specials escaped, and `code` spans set in typewriter type."""
    parts = str(text).split("`")
    return "".join(tt(p) if i % 2 else latex_escape(p) for i, p in enumerate(parts))


def tt(text: Any) -> str:
    """Typewriter text that may break after a '/', '_' or '-' (ids, paths, hashes, commands)."""
    escaped = latex_escape(text)
    return r"\texttt{" + re.sub(r"(/|\\_|-)", r"\1\\allowbreak{}", escaped) + "}"


def size_text(n: int | None) -> str:
    return "not recorded" if n is None else gigabytes(n)


def render(appendix: Appendix, fmt: Format) -> str:
    env = environment()
    env.filters.update(tex=tex, tt=tt, bytes=size_text)
    return env.get_template(f"artifact_appendix.{fmt}.j2").render(a=appendix)


def appendix_inputs(plans: Plans, folder: FolderFit | None = None, model: CostModel | None = None) -> Inputs:
    """The plans, the cost model as `folder` fitted it (else `model`, else a cold one from the caches: nothing is
    counted), the container files and the package."""
    from repro.cost.wall_time import Rates
    from repro.results.provenance import git_commit, source_checkout

    if folder is not None:
        model, rates, notes = folder.model, folder.rates, tuple(folder.describe())
    else:
        model, rates, notes = model or CostModel(cached_only=True), Rates(), ()
    root = source_checkout()
    return Inputs(plans, model, rates, read_container(root), read_package(root), git_commit(), notes)


def write_appendix(
    entries: list[tuple[Manifest, ManifestResult | None]],
    results_dir: Path,
    profile: str,
    plans: Plans,
    folder: FolderFit | None = None,
) -> list[Path]:
    """<results>/<profile>/artifact-appendix.md and .tex, with each claim's verdict in these results; `plans` and
    `folder` (the cost model fitted to the folder) as the command built them."""
    appendix = build_appendix(entries, profile, appendix_inputs(plans, folder), with_results=True)
    out = profile_dir(results_dir, profile)
    files = {out / f"{APPENDIX_NAME}.{fmt}": encode_text(render(appendix, fmt)) for fmt in FORMATS}
    return FolderWriter(results_dir).replace_set(files)

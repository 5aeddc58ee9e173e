"""The prose parts of the appendix, each a list of items or steps worded from the facts (repro.report.appendix.parts).

Every value comes from the configuration: the manifests, the profiles, the readings, the container files, the
package, the cost model. The one sentence typed here is the abstract's framing (FRAMING).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import get_args

from repro.claims.headline import claim_counts
from repro.claims.verdicts import DECIDING_KINDS, EXPLAINER, reference_source
from repro.core.terminal import Step
from repro.cost.disk import DiskSpace, gigabytes
from repro.cost.estimate import duration
from repro.execution.options import EXECUTORS
from repro.plan.manifest import Manifest
from repro.report.appendix.claim_rows import BADGES
from repro.report.appendix.container import Package
from repro.report.appendix.parts import Facts, Item
from repro.report.readings_section import own_readings
from repro.results.measurements import Status
from repro.results.package import CITATION_FILE, CODEMETA_FILE
from repro.spec.readings import all_readings

FRAMING = (
    "This appendix describes the artifact that reproduces, claim by claim, the findings of the paper below, "
    "and how an evaluator runs it."
)


def paper_title(package: Package) -> str:
    """The paper the package reproduces: the quoted title in its description, with the arXiv id after it."""
    match = re.search(r"'(.+)'\s*(\(.*\))?", package.description)
    return f"{match.group(1)} {match.group(2) or ''}".strip() if match else package.description


def abstract(f: Facts) -> list[str]:
    return [
        FRAMING,
        f"{paper_title(f.inputs.package)}.",
        f"It decides {f.counts.total} claims of {len(f.manifests)} tables from its manifests. {f.counts.line()}.",
        f"This appendix is written for the {f.profile} profile: {f.badge_words()}.",
    ]


def disk_text(d: DiskSpace) -> str:
    """The disk a profile needs, in one line: the total, each data set, the checkpoints."""
    data = " + ".join(f"{x.title} {gigabytes(x.total)}" for x in d.datasets) or "no download"
    unsized = [f for x in d.datasets for f in x.unsized]
    if d.uncounted:
        ckpt = f"checkpoints not counted ({d.uncounted} model sizes not cached: `repro appendix` counts them)"
    elif d.checkpoint_bytes:
        ckpt = (
            f"checkpoints {gigabytes(d.checkpoint_bytes)} ({d.at_once} run(s) at once, the largest "
            f"{gigabytes(d.largest_bytes)})"
        )
    else:
        ckpt = "no checkpoint (one-epoch runs)"
    data_bytes = sum(x.total for x in d.datasets)  # the total less checkpoints not counted (NaN): the data alone
    total = (
        gigabytes(d.total)
        if d.total == d.total
        else (f"{gigabytes(data_bytes)} and more" if d.datasets else "checkpoints only")
    )
    left = f"; {', '.join(unsized)} not sized" if unsized else ""
    return f"{total}: {data} (archives as published, reference; decoded caches){left}; {ckpt}"


def checklist(f: Facts) -> list[Item]:
    ms, container, package = f.manifests, f.inputs.container, f.inputs.package
    gpu = container.gpu_compose
    downloads = sum(a.size_bytes or 0 for d in f.datasets if f.shown[0] in d.profiles for a in d.archives)
    return [
        Item(
            "Algorithm",
            f"heads {', '.join(sorted({r.head.name for m in ms for r in m.rows}))}; backbones "
            f"{', '.join(sorted({r.backbone.name for m in ms for r in m.rows}))}",
        ),
        Item("Program", f"`repro`, the command line of the Python package {package.name} {package.version}"),
        Item(
            "Data sets",
            ", ".join(d.title for d in f.datasets)
            + "; "
            + f.per_profile({p: f"{f.profiles[p].data} data" for p in f.shown}),
        ),
        Item(
            "Run-time environment",
            f"the image {container.dockerfile} builds on {container.base_image}, or Python "
            f"{package.python} with the packages of pyproject.toml",
        ),
        Item("Hardware", f.per_profile({p: f.device_words(p) for p in f.shown})),
        Item("Metrics", ", ".join(sorted({x for m in ms for r in m.rows for x in r.measures}))),
        Item(
            "Output",
            "results/<profile>/: report.md, report.html, artifact-appendix.md and .tex, and per table "
            "<table>/results.json, <table>.md, <table>.tex, claims.md; the run records results/runs/",
        ),
        Item("Experiments", f"{f.counts.total} claims in {len(ms)} tables. {f.counts.line()}"),
        Item("Disk space", f.per_profile(f.disk)),
        Item(
            "Time to prepare",
            f"the downloads of the paper's protocol ({gigabytes(downloads)}, bandwidth-bound, not "
            "priced); "
            + f.per_profile({p: f"{duration(f.verify_all[p].prepare_s)} of start-up and FLOP checks" for p in f.shown}),
        ),
        Item("Time to run", f.per_profile({p: f"{f.verify_all[p].wall}, {f.verify_all[p].device}" for p in f.shown})),
        Item(
            "Publicly available",
            f"the source tree at commit {f.inputs.commit}; the image "
            f"{gpu.image.default if gpu and gpu.image else container.dockerfile}; cite it "
            f"with {CITATION_FILE} ({CODEMETA_FILE} beside it); deposit the archive "
            "`repro package` writes (an RO-Crate of the results, run records, this appendix, "
            "the citation file and the source at that commit) in an archive that gives it a "
            "DOI",
        ),
        Item(
            "Licences",
            f"code: {package.licence or container.licence_label}; data: each source's terms (Data sets below)",
        ),
        Item("Workflow framework", f"`repro` with the executors {', '.join(EXECUTORS)}"),
    ]


def hardware(f: Facts) -> list[Item]:
    container = f.inputs.container
    gpu = container.gpu_compose
    out = [Item(p, f.device_words(p)) for p in f.shown]
    gpu_claims = claim_counts(f.manifests, "gpu")
    out.append(
        Item("GPU-scoped claims", f"{gpu_claims.total} ({gpu_claims.breakdown()}), decided only on an NVIDIA GPU")
    )
    if gpu is not None and gpu.gpus is not None:  # gpu_compose is the service that reserves GPUs
        out.append(
            Item(
                "Container",
                f"{gpu.file} reserves {gpu.gpus.default} GPU(s) (${gpu.gpus.name})"
                + (f", {gpu.shm_size} of shared memory" if gpu.shm_size else ""),
            )
        )
    out += [Item("Without a GPU", f"{c.file} drops the reservation") for c in container.cpu_overrides]
    return out


def software(f: Facts) -> list[Item]:
    container, package = f.inputs.container, f.inputs.package
    return [
        Item("Base image", container.base_image),
        Item("Python", package.python),
        Item("Packages", ", ".join(package.dependencies)),
        Item("This artifact", f"{package.name} {package.version}, commit {f.inputs.commit}"),
    ]


def installation(f: Facts) -> list[Step]:
    container, package = f.inputs.container, f.inputs.package
    gpu = container.gpu_compose
    out = []
    if gpu is not None:
        out.append(
            Step(
                f"Build the image (optional build arguments: {', '.join(gpu.build_args)}):",
                f"docker compose -f {gpu.file} build",
            )
        )
    install = " ".join(shlex.quote(a) for a in container.install)
    return out + [
        Step(f"Or, without Docker, in a Python {package.python} environment:", f"pip install {install}"),
        Step("Check the data sets and weights; it prints the commands that fill what is missing:", "repro data"),
    ]


def workflow(f: Facts) -> list[Step]:
    gpu = f.inputs.container.gpu_compose
    out = [Step("What each profile costs on this machine:", "repro list")]
    out += [
        Step(
            f"Every table at {p}, the report and this appendix ({f.verify_all[p].wall}; {f.verify_all[p].device}):",
            f"repro verify-all --profile {p}",
        )
        for p in f.shown
    ]
    out += [
        Step("One table at a time: the command in each claim's row.", ""),
        Step("The report and this appendix again, from the results:", f"repro report --profile {f.profile}"),
        Step(
            "This appendix alone (Markdown or LaTeX; with results in --results-dir, the verdicts there):",
            f"repro appendix --profile {f.profile} --format tex",
        ),
    ]
    if gpu is not None:
        out.append(
            Step(
                "In the container, on a GPU host:",
                f"docker compose -f {gpu.file} run {gpu.service} verify-all --profile {f.shown[0]}",
            )
        )
        for c in f.inputs.container.cpu_overrides:
            default = c.default("REPRO_PROFILE") or gpu.default("REPRO_PROFILE")  # the override's, else the service's
            on_cpu = f.profile if f.profiles[f.profile].device == "cpu" else default or f.profile
            out.append(
                Step(
                    "In the container, without a GPU:",
                    f"docker compose -f {gpu.file} -f {c.file} run {gpu.service} verify-all --profile {on_cpu}",
                )
            )
    return out


def evaluation(f: Facts) -> list[str]:
    full, here = f.shown[0], f.profile
    return [
        f"{f.counts.total} claims, one row each. {f.counts.line()}. Analytic claims are decided at every "
        f"profile; the others only by profiles that are evidence of kind {' or '.join(sorted(DECIDING_KINDS))}, "
        f"GPU-scoped ones only on a GPU. Verdicts: {', '.join(get_args(Status))}.",
        f"Cost: the cost model's estimate for the runs and counts of the rows a claim reads, at {full} (the "
        f"paper's protocol)"
        + (f" and at {here}" if here != full else "")
        + ", labelled fitted (to run records), measured (a benchmark or calibration file) or reference.",
        "Stability, beside a decided empirical verdict: the share of 1,000 bootstrap resamples of the seeds (paired "
        "where the rule is) that the same rule decides the same way; below 0.8 the verdict is called unstable.",
        "Badge: "
        + "; ".join(f"{badge} at a profile of kind {kind}" for kind, badge in BADGES.items())
        + "; none, at any profile, on data that fails its published checksums; with results, a Results badge "
        "stands only beside a reproduced verdict ('none here: <verdict>' beside another), and an unstable one "
        "says so.",
    ]


def customisation(f: Facts) -> list[Item]:
    own = own_readings(f.manifests)
    readings = all_readings(own)
    gpu = f.inputs.container.gpu_compose
    out = [
        Item(
            "Profiles",
            "; ".join(f"{n} ({p.evidence}, device {p.device}, {p.data} data)" for n, p in f.profiles.items()),
        ),
        Item("Profiles of your own", "--profiles FILE or $REPRO_PROFILES: [profiles.<name>] tables"),
        Item(
            "Manifests",
            f"--manifests DIR or $REPRO_MANIFESTS ({len(f.manifests)} tables here, in {_folder(f.manifests)})",
        ),
        Item(
            "Readings",
            f"{len(readings)} choices the text leaves open ({', '.join(r.id for r in readings)}); "
            "`repro readings` decides every analytic claim under each alternative",
        ),
        Item(
            "Readings of your own",
            "--readings FILE or $REPRO_READINGS: [[readings]] tables, added to the shipped ones"
            + (f"; read here from {own.path} (sha256 {own.sha256})" if own is not None else ""),
        ),
        Item(
            "A GPU budget",
            "`repro plan --gpu-hours N --out FILE` writes the profiles that decide the most claims within it",
        ),
        Item("Executors", "--executor " + " or ".join(EXECUTORS)),
    ]
    if gpu is not None:
        variables = [v for v in (gpu.image, gpu.gpus) if v is not None and v.name]
        out.append(Item("Container", ", ".join(f"${v.name} (default {v.default})" for v in variables)))
    return out


def notes(f: Facts) -> list[str]:
    model = f.inputs.model
    explainer = sum(reference_source(c, m.paper_table) == EXPLAINER for m in f.manifests for c in m.claims)
    return [
        f"Cost figures from: {'; '.join(sorted({model.device(f.profiles[p]).source for p in f.shown}))}.",
        *[f"Fitted: {line}." for line in f.inputs.cost_notes],
        f"{sum(len(m.assumptions) for m in f.manifests)} assumptions where the paper is silent, listed in each "
        "table's claims.md.",
        f"{explainer} claims are judged against numbers that only the AI-written explainer prints; the report "
        "counts them apart.",
        f"Generated by `repro appendix --profile {f.profile}` from commit {f.inputs.commit}.",
    ]


def _folder(manifests: list[Manifest]) -> str:
    return ", ".join(sorted({str(Path(m.path).parent) for m in manifests if m.path})) or "memory"

"""The appendix as data, section by section, in the ACM / cTuning order. Every field comes from the configuration.

    abstract        the framing sentence (the one line typed here) and what the manifests hold
    checklist       the meta-information: algorithm, program, data sets, run-time environment, hardware,
                    metrics, output, experiments, disk space, time to prepare and to run, availability,
                    licences, workflow framework
    description     hardware (the profiles' devices, the cost model's devices, the compose file's reservation),
                    software (the Dockerfile's base image, pyproject.toml), data sets (repro.data.sources:
                    archives, checksums, sizes; the pretrained weights torchvision publishes)
    installation    the compose build, or the Dockerfile's pip install; `repro data` for the data
    workflow        the commands, each with the cost model's time for it
    evaluation      one row per claim (repro.report.appendix.claim_rows)
    customisation   profiles, manifests, readings, budgets, executors, the compose file's variables
    notes           where the cost figures come from, the assumptions, the explainer's claims
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from repro.claims.verdicts import DECIDING_KINDS, EXPLAINER, reference_source
from repro.core.terminal import Step
from repro.cost.claim_cost import claim_cost
from repro.cost.disk import DiskSpace, disk_space, gigabytes
from repro.cost.estimate import CostModel, device_time, duration
from repro.cost.plan import BASE_PROFILE
from repro.cost.wall_time import Rates, command_time
from repro.data.sources import Archive, dataset_source
from repro.execution.options import EXECUTORS
from repro.plan.manifest import Manifest
from repro.plan.recipes import planned_runs
from repro.report.appendix.claim_rows import BADGES, ClaimRow, claim_row
from repro.report.appendix.container import Container, Package
from repro.results.measurements import ManifestResult, Status
from repro.spec.readings import shipped_readings

FRAMING = ("This appendix describes the artifact that reproduces, claim by claim, the findings of the paper below, "
           "and how an evaluator runs it.")
PREPARE_PHASES = ("start-up", "FLOP check")  # of `repro verify-all` (repro.cost.wall_time): before any table


@dataclass(frozen=True)
class Item:
    name: str
    value: str


@dataclass(frozen=True)
class DatasetEntry:
    title: str
    archives: tuple[Archive, ...]
    checked_files: int  # files whose md5 the loader checks at every read
    checksum_note: str
    cache: str  # the decoded copy repro caches, as text ('' for none)
    profiles: tuple[str, ...]  # the profiles that train on it


@dataclass(frozen=True)
class WeightsEntry:
    backbones: tuple[str, ...]
    file: str
    url: str
    sha256_prefix: str
    profiles: tuple[str, ...]


@dataclass
class Appendix:
    profile: str
    full: str  # the paper's protocol, whose cost every row shows
    title: str
    abstract: list[str]
    checklist: list[Item]
    hardware: list[Item]
    software: list[Item]
    datasets: list[DatasetEntry]
    weights: list[WeightsEntry]
    installation: list[Step]
    workflow: list[Step]
    evaluation: list[str]
    claims: list[ClaimRow]
    customisation: list[Item]
    notes: list[str]
    with_results: bool


@dataclass(frozen=True)
class Inputs:
    """What the appendix is built from besides the manifests."""

    model: CostModel
    rates: Rates
    container: Container
    package: Package
    commit: str
    cost_notes: tuple[str, ...] = ()  # what the cost model was fitted to (repro.cost.fit.FolderFit.describe)


def paper_title(package: Package) -> str:
    """The paper the package reproduces: the quoted title in its description, with the arXiv id after it."""
    match = re.search(r"'(.+)'\s*(\(.*\))?", package.description)
    return f"{match.group(1)} {match.group(2) or ''}".strip() if match else package.description


def _verify_all(manifests: list[Manifest], profile: str, model: CostModel, rates: Rates) -> tuple[str, str, float]:
    """(wall time and basis, device time, the seconds before any table) of `repro verify-all --profile <profile>`."""
    mine = [m for m in manifests if profile in m.profiles]
    t = command_time(mine, profile, model, rates)
    cost = model.cost([(m, profile) for m in mine])
    before = sum(p.seconds for p in t.parts if p.phase in PREPARE_PHASES)
    device = device_time(cost.device_seconds, cost.kind) + f" in {cost.runs} runs" if cost.runs else "no training"
    return f"{duration(t.seconds)} wall ({t.basis()})", device, before


def _disk_text(d: DiskSpace) -> str:
    data = " + ".join(f"{x.title} {gigabytes(x.total)}" for x in d.datasets) or "no download"
    unsized = [f for x in d.datasets for f in x.unsized]
    if d.uncounted:
        ckpt = f"checkpoints not counted ({d.uncounted} model sizes not cached: `repro appendix` counts them)"
    elif d.checkpoint_bytes:
        ckpt = (f"checkpoints {gigabytes(d.checkpoint_bytes)} ({d.at_once} run(s) at once, the largest "
                f"{gigabytes(d.largest_bytes)})")
    else:
        ckpt = "no checkpoint (one-epoch runs)"
    total = gigabytes(d.total) if d.total == d.total else f"{gigabytes(d.total - d.checkpoint_bytes)} and more"
    left = f"; {', '.join(unsized)} not sized" if unsized else ""
    return f"{total}: {data} (archives as published, reference; decoded caches){left}; {ckpt}"


def _profiles_of(manifests: list[Manifest]) -> dict:
    return manifests[0].profiles if manifests else {}


def _runs_by_profile(manifests: list[Manifest]) -> dict[str, list]:
    out: dict[str, dict] = {}
    for m in manifests:
        for name, prof in m.profiles.items():
            for p in planned_runs(m, prof):
                out.setdefault(name, {}).setdefault(p.cfg.hash, p.cfg)
    return {name: list(runs.values()) for name, runs in out.items()}


def _datasets(manifests: list[Manifest], runs: dict[str, list], model: CostModel) -> list[DatasetEntry]:
    from repro.data.sizes import decoded_cache_bytes

    names = sorted({r.dataset for m in manifests for r in m.rows if "accuracy" in r.measures})
    out = []
    for name in names:
        source = dataset_source(name)
        users = tuple(p for p, cfgs in runs.items() if any(c.dataset == name and c.data == "real" for c in cfgs))
        cache = decoded_cache_bytes(name, model.data_dir)
        out.append(DatasetEntry(source.title, source.archives, len(source.checked_files), source.checksum_note,
                                gigabytes(cache) if cache else "", users))
    return out


def _weights(runs: dict[str, list]) -> list[WeightsEntry]:
    from repro.models.weights import HASH_PREFIX, published_url

    files: dict[str, tuple[str, set, set]] = {}
    for name, cfgs in runs.items():
        for cfg in cfgs:
            if cfg.torchvision_weights:
                url = published_url(cfg.backbone["name"])
                entry = files.setdefault(url, (url, set(), set()))
                entry[1].add(cfg.backbone["name"])
                entry[2].add(name)
    out = []
    for url, backbones, profiles in files.values():
        file = url.rsplit("/", 1)[-1]
        match = HASH_PREFIX.search(file)
        out.append(WeightsEntry(tuple(sorted(backbones)), file, url, match.group(1) if match else "",
                                tuple(sorted(profiles))))
    return sorted(out, key=lambda w: w.file)


def _device_words(manifest: Manifest, profile: str, model: CostModel) -> str:
    prof = manifest.profiles[profile]
    thr = model.device(prof)
    where = "the CPU" if prof.device == "cpu" else "a CUDA GPU" if prof.device == "cuda" else "a GPU when one is present"
    return f"{where}; priced on {thr.device} ({thr.source})"


def build_appendix(entries: list[tuple[Manifest, ManifestResult | None]], profile: str, inputs: Inputs,
                   with_results: bool) -> Appendix:
    manifests = [m for m, _ in entries]
    model, rates, container, package = inputs.model, inputs.rates, inputs.container, inputs.package
    profiles = _profiles_of(manifests)
    full = BASE_PROFILE
    wanted = [profile] if profile == full else [full, profile]
    device = model.device(profiles[full]).device if profiles else ""
    rows = []
    for m, result in entries:
        for c in m.claims:
            costs = {p: claim_cost(m, c, p, model, rates) for p in wanted}
            rows.append(claim_row(m, c, profile, costs, device, result, with_results))
    runs = _runs_by_profile(manifests)
    time = {p: _verify_all(manifests, p, model, rates) for p in wanted}
    disk = {p: _disk_text(disk_space(manifests, p, model)) for p in wanted}
    datasets, weights = _datasets(manifests, runs, model), _weights(runs)
    scopes = Counter(c.scope for m in manifests for c in m.claims)
    n_claims = sum(scopes.values())
    scope_text = ", ".join(f"{n} {s}" for s, n in sorted(scopes.items()))
    title = paper_title(package)
    gpu = container.gpu_compose
    per_profile = lambda values: "; ".join(f"at {p}: {values[p]}" for p in wanted)  # noqa: E731

    heads = sorted({r.head.name for m in manifests for r in m.rows})
    backbones = sorted({r.backbone.name for m in manifests for r in m.rows})
    metrics = sorted({x for m in manifests for r in m.rows for x in r.measures})
    data_kinds = {p: profiles[p].data for p in wanted}
    downloads = sum(a.size_bytes or 0 for d in datasets if full in d.profiles for a in d.archives)
    checklist = [
        Item("Algorithm", f"heads {', '.join(heads)}; backbones {', '.join(backbones)}"),
        Item("Program", f"`repro`, the command line of the Python package {package.name} {package.version}"),
        Item("Data sets", ", ".join(d.title for d in datasets) + "; " + per_profile(
            {p: f"{k} data" for p, k in data_kinds.items()})),
        Item("Run-time environment", f"the image {container.dockerfile} builds on {container.base_image}, or Python "
                                     f"{package.python} with the packages of pyproject.toml"),
        Item("Hardware", per_profile({p: _device_words(manifests[0], p, model) for p in wanted}) if manifests else ""),
        Item("Metrics", ", ".join(metrics)),
        Item("Output", f"results/<profile>/: report.md, report.html, artifact-appendix.md and .tex, and per table "
                       f"<table>/results.json, <table>.md, <table>.tex, claims.md; the run records results/runs/"),
        Item("Experiments", f"{n_claims} claims in {len(manifests)} tables ({scope_text})"),
        Item("Disk space", per_profile(disk)),
        Item("Time to prepare", f"the downloads of the paper's protocol ({gigabytes(downloads)}, bandwidth-bound, not "
                                "priced); " + per_profile({p: f"{duration(time[p][2])} of start-up and FLOP checks"
                                                           for p in wanted})),
        Item("Time to run", per_profile({p: f"{time[p][0]}, {time[p][1]}" for p in wanted})),
        Item("Publicly available", f"the source tree at commit {inputs.commit}; the image "
                                   f"{gpu.image.default if gpu and gpu.image else container.dockerfile}"),
        Item("Licences", f"code: {package.licence or container.licence_label}; data: each source's terms "
                         "(Data sets below)"),
        Item("Workflow framework", f"`repro` with the executors {', '.join(EXECUTORS)}"),
    ]
    hardware = [Item(p, _device_words(manifests[0], p, model)) for p in wanted] if manifests else []
    hardware.append(Item("GPU-scoped claims", f"{scopes.get('gpu', 0)}, decided only on an NVIDIA GPU"))
    if gpu is not None:
        hardware.append(Item("Container", f"{gpu.file} reserves {gpu.gpus.default} GPU(s) (${gpu.gpus.name})"
                                          + (f", {gpu.shm_size} of shared memory" if gpu.shm_size else "")))
    for c in container.cpu_overrides:
        hardware.append(Item("Without a GPU", f"{c.file} drops the reservation"))
    software = [Item("Base image", container.base_image), Item("Python", package.python),
                Item("Packages", ", ".join(package.dependencies)),
                Item("This artifact", f"{package.name} {package.version}, commit {inputs.commit}")]

    install = " ".join(shlex.quote(a) for a in container.install)
    installation = []
    if gpu is not None:
        installation.append(Step(f"Build the image (optional build arguments: {', '.join(gpu.build_args)}):",
                                 f"docker compose -f {gpu.file} build"))
    installation += [Step(f"Or, without Docker, in a Python {package.python} environment:", f"pip install {install}"),
                     Step("Check the data sets and weights; it prints the commands that fill what is missing:",
                          "repro data")]
    workflow = [Step("What each profile costs on this machine:", "repro list")]
    for p in wanted:
        workflow.append(Step(f"Every table at {p}, the report and this appendix ({time[p][0]}; {time[p][1]}):",
                             f"repro verify-all --profile {p}"))
    workflow += [Step("One table at a time: the command in each claim's row.", ""),
                 Step("The report and this appendix again, from the results:", f"repro report --profile {profile}"),
                 Step("This appendix alone (Markdown or LaTeX; with --results-dir, the verdicts there):",
                      f"repro appendix --profile {profile} --format tex")]
    if gpu is not None:
        workflow.append(Step("In the container, on a GPU host:", f"docker compose -f {gpu.file} run {gpu.service} "
                                                                 f"verify-all --profile {full}"))
        for c in container.cpu_overrides:
            cpu_profile = profile if profiles[profile].device == "cpu" else c.default("REPRO_PROFILE") or profile
            workflow.append(Step("In the container, without a GPU:", f"docker compose -f {gpu.file} -f {c.file} run "
                                                                     f"{gpu.service} verify-all --profile {cpu_profile}"))

    statuses = Status.__args__  # the verdicts a claim can get
    evaluation = [
        f"{n_claims} claims ({scope_text}), one row each. Analytic claims are decided at every profile; the others "
        f"only by profiles that are evidence of kind {' or '.join(sorted(DECIDING_KINDS))}, GPU-scoped ones only on "
        f"a GPU. Verdicts: {', '.join(statuses)}.",
        f"Cost: the cost model's estimate for the runs and counts of the rows a claim reads, at {full} (the "
        f"paper's protocol)" + (f" and at {profile}" if profile != full else "")
        + ", labelled fitted (to run records), measured (a benchmark or calibration file) or reference.",
        "Badge: " + "; ".join(f"{BADGES[kind]} at a profile of kind {kind}" for kind in BADGES) + ".",
    ]
    readings = shipped_readings()
    customisation = [Item("Profiles", "; ".join(f"{n} ({p.evidence}, device {p.device}, {p.data} data)"
                                               for n, p in profiles.items())),
                     Item("Profiles of your own", "--profiles FILE or $REPRO_PROFILES: [profiles.<name>] tables"),
                     Item("Manifests", f"--manifests DIR or $REPRO_MANIFESTS ({len(manifests)} tables here, in "
                                       f"{_folder(manifests)})"),
                     Item("Readings", f"{len(readings)} choices the text leaves open ({', '.join(r.id for r in readings)}); "
                                      "`repro readings` decides every analytic claim under each alternative"),
                     Item("A GPU budget", "`repro plan --gpu-hours N --out FILE` writes the profiles that decide the "
                                          "most claims within it"),
                     Item("Executors", "--executor " + " or ".join(EXECUTORS))]
    if gpu is not None:
        variables = [v for v in (gpu.image, gpu.gpus) if v is not None and v.name]
        customisation.append(Item("Container", ", ".join(f"${v.name} (default {v.default})" for v in variables)))
    explainer = sum(reference_source(c, m.paper_table) == EXPLAINER for m in manifests for c in m.claims)
    notes = [f"Cost figures from: {'; '.join(sorted({model.device(profiles[p]).source for p in wanted}))}.",
             *[f"Fitted: {line}." for line in inputs.cost_notes],
             f"{sum(len(m.assumptions) for m in manifests)} assumptions where the paper is silent, listed in each "
             "table's claims.md.",
             f"{explainer} claims are judged against numbers that only the AI-written explainer prints; the report "
             "counts them apart.",
             f"Generated by `repro appendix --profile {profile}` from commit {inputs.commit}."]
    abstract = [FRAMING, f"{title}.", f"It decides {n_claims} claims of {len(manifests)} tables ({scope_text}) from "
                f"its manifests. This appendix is written for the {profile} profile: "
                f"{BADGES.get(profiles[profile].evidence, '') if profiles else ''}."]
    return Appendix(profile, full, title, abstract, checklist, hardware, software, datasets, weights, installation,
                    workflow, evaluation, rows, customisation, notes, with_results)


def _folder(manifests: list[Manifest]) -> str:
    folders = sorted({str(Path(m.path).parent) for m in manifests if m.path})
    return ", ".join(folders) or "memory"

"""`repro bench gpu`: one prepared device check, written to a JSON the cost model calibrates from.

The sequence, each step a check that records its own failure and lets the rest go on:

    expert_choice_bf16/<dataset>/<manifest>.<row>
        each Expert Choice head of the manifests, forward + backward at the paper's batch under
        bf16 autocast, its eval output against fp32 (repro.bench.expert_choice_bf16)
    train/<dataset>/<manifest>.<row>
        per manifest with accuracy rows, its heaviest model (most training multiply-adds over the
        paper's protocol, as the table's plan at its paper profile holds the run: repro.plan.table_plan),
        trained for `steps` steps at the paper's batch through
        repro.train.engine's Engine and repro.train.loop's train_epoch: bf16 autocast, channels-last, the
        compiled backbone on CUDA; images/s and peak memory. Manifests sharing a model share its check.
    dense_twin/<dataset>/<manifest>.<row>
        right after a routed backbone's check, its dense twin trained the same way, and the ratio of
        their images/s (repro.bench.dense_twin)
    input_path/<dataset>
        per dataset streamed from image folders (ImageNet), its input paths fed to its fastest model
        measured, against that model's rate on device-resident batches (repro.bench.input_paths)
    kill_resume
        save -> SIGKILL -> resume of a tiny run (repro.bench.kill_resume); last, so that a time
        budget running out costs this check before any figure the cost model reads

A training check's batches are synthetic and resident on the device, so its figures are the model's step
alone; the input_path check measures what feeding it costs. Steps stop early past a per-model time budget,
and checks are skipped past the whole budget, so the command fits the device time it is given.
The file is rewritten after every check: a run stopped from outside leaves the checks done so far.
Every model is built and trained under the command's engine switches (repro.core.settings), as train_run
takes them: a switch set where the command starts (REPRO_COMPILE=0, REPRO_DISPATCH=loop) holds in every check.
The schema and its reader: repro.bench.gpu_calibration.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import importlib.util
import json
import math
import platform
import signal
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass, replace
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

from repro.bench.dense_twin import dense_twin, twin_job
from repro.bench.gpu_calibration import SCHEMA, Check
from repro.bench.gpu_train import SyntheticBatches, Trainer  # noqa: F401 (SyntheticBatches: part of this API)
from repro.bench.input_paths import DRY_INPUT, FULL_INPUT, InputSettings, input_check
from repro.bench.expert_choice_bf16 import expert_choice_check, expert_choice_rows
from repro.measure.timing import cpu_threads, error_line, synchronize
from repro.data.specs import get_dataset
from repro.core.devices import device_label
from repro.core.settings import Settings
from repro.core.fsutil import atomic_write_json
from repro.plan.manifest import Manifest, Row
from repro.plan.run_config import RunConfig
from repro.plan.table_plan import TablePlan, build_plan
from repro.spec.profiles import Profile

PAPER = Profile(description="the paper's protocol", evidence="paper")


@dataclass(frozen=True)
class GpuSettings:
    steps: int = 300  # timed training steps per model
    warmup_steps: int = 20  # untimed, after compilation
    chunk_steps: int = 50  # the per-model budget is checked between chunks
    model_budget_s: float = 30.0  # timed steps stop past this, per model
    budget_s: float = 450.0  # checks not begun by then are skipped (a device command gets 600 s; an ImageNet
    # model's check takes about two minutes, most of it compiling)
    batch_cap: int | None = None  # toy sizes for --dry-run
    image_cap: int | None = None
    child_timeout_s: float = 240.0  # each kill/resume child process
    deadline_s: float = 570.0  # a check still running then is stopped, so the file is complete before 600 s
    precision: str = "bf16"
    input_paths: InputSettings = FULL_INPUT  # the input_path check's folder and passes


FULL = GpuSettings()
# No device time at stake: a loaded CPU may take longer, and every check still runs.
DRY_RUN = GpuSettings(
    steps=1,
    warmup_steps=1,
    chunk_steps=1,
    model_budget_s=10.0,
    budget_s=1800.0,
    batch_cap=4,
    image_cap=16,
    child_timeout_s=300.0,
    deadline_s=3600.0,
    input_paths=DRY_INPUT,
)


# --------------------------------------------------------------------------- what to train
@dataclass(frozen=True)
class Planned:
    """A model to train: the heaviest row of one or more manifests."""

    name: str
    row: Row
    cfg: RunConfig  # the row's paper-protocol run, seed 0, as the table's plan holds it
    manifests: dict[str, str]  # manifest id -> its row id for this model
    train_macs: float  # multiply-adds of one paper-protocol run: 3 x forward x images x epochs


def paper_profile(manifest: Manifest) -> Profile:
    return next((p for p in manifest.profiles.values() if p.evidence == "paper"), PAPER)


def paper_plans(manifests: list[Manifest]) -> list[TablePlan]:
    """Each manifest's plan at its paper-protocol profile (the paper's recipes alone where it holds none)."""
    out = []
    for m in manifests:
        name = next((n for n, p in m.profiles.items() if p.evidence == "paper"), None)
        out.append(build_plan(m, name) if name is not None else build_plan(m, "paper", PAPER))
    return out


def forward_macs(row: Row) -> tuple[float, float, str]:
    """(backbone, head) multiply-adds per image at the paper's resolution, and the counter used:
    repro.models.flops's checked count, or where fvcore is not installed (the GPU machine's image lacks it)
    torch's FlopCounterMode / 2, which the FLOP check holds equal to it."""
    from repro.measure.flop_check import row_flops, row_key

    if _have_fvcore():  # else each count would build its model before failing
        try:
            f = row_flops(row)
            return float(f.backbone), float(f.head), "repro.models.flops"
        except ImportError:
            pass
    return _torch_macs(row_key(row))


def _have_fvcore() -> bool:
    try:
        return importlib.util.find_spec("fvcore") is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules, as a test blocks it
        return False


@lru_cache(maxsize=None)
def _torch_macs(key: str) -> tuple[float, float, str]:
    from torch.utils.flop_counter import FlopCounterMode

    from repro.measure.flop_check import counted_batch
    from repro.models import Component, build_model
    from repro.models.flops import expected_head_macs
    from repro.spec.recipes import at_last_epoch

    spec = json.loads(key)
    model = build_model(spec["dataset"], Component(**spec["backbone"]), Component(**spec["head"]))
    model = at_last_epoch(model, spec["dataset"]).eval()
    x = torch.randn(1, *get_dataset(spec["dataset"]).input_shape)  # (1, C, H, W)
    counts = []
    for part in (model, model.backbone):
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            part(x)
        counts.append(counter.get_total_flops() / 2)
    total, backbone = counts
    head = expected_head_macs(model.head, counted_batch(spec["dataset"]))  # as the checked count reports it
    return backbone, total - backbone if head is None else float(head), "torch FlopCounterMode / 2 (no fvcore)"


def training_macs(row: Row, cfg: RunConfig) -> float:
    """Multiply-adds of the row's planned run: 3 x forward x its training images x its epochs."""
    return 3.0 * sum(forward_macs(row)[:2]) * (cfg.train_samples or get_dataset(row.dataset).train_size) * cfg.epochs


def plan_training(plans: list[TablePlan], failures: dict[str, BaseException] | None = None) -> list[Planned]:
    """Each table's heaviest planned run (seed 0 of its plan, paper_plans); one entry per distinct model,
    heaviest first. A table whose rows cannot be counted goes into `failures` (if given; else the error
    propagates)."""
    from repro.measure.flop_check import row_key

    by_model: dict[str, Planned] = {}
    for plan in plans:
        m, cfgs = plan.manifest, {p.row: p.cfg for p in plan.runs if p.seed == 0}
        rows = [r for r in m.rows if r.id in cfgs]
        if not rows:
            continue
        try:
            macs = {r.id: training_macs(r, cfgs[r.id]) for r in rows}
        except Exception as exc:  # recorded as that manifest's failed check
            if failures is None:
                raise
            failures[m.id] = exc
            continue
        row = max(rows, key=lambda r: macs[r.id])
        key = row_key(row)
        if key not in by_model:
            by_model[key] = Planned(f"train/{row.dataset}/{m.id}.{row.id}", row, cfgs[row.id], {}, macs[row.id])
        by_model[key].manifests[m.id] = row.id
    return sorted(by_model.values(), key=lambda p: -p.train_macs)


def check_config(p: Planned, s: GpuSettings) -> RunConfig:
    """The paper's run of the row, in bf16, at most the toy caps; random weights (speed does not depend on them)."""
    cfg = p.cfg
    return replace(
        cfg,
        bf16=True,
        pretrained=False,
        batch_size=min(cfg.batch_size, s.batch_cap or cfg.batch_size),
        image_size=min(cfg.image_size, s.image_cap or cfg.image_size),
    )


# --------------------------------------------------------------------------- training throughput
def train_check(
    p: Planned, s: GpuSettings, device: torch.device, run_settings: Settings = Settings()
) -> tuple[dict[str, Any], str]:
    """(result, error): images/s and memory of `p` trained through repro.train.loop under the command's settings;
    error names a compile fallback."""
    from repro.train.engine import paths_ran

    cfg = check_config(p, s)
    started = time.perf_counter()
    trainer = Trainer(cfg, device, run_settings)
    batches = trainer.synthetic()
    batches.steps = s.warmup_steps
    trainer.epoch(batches)
    warmup_s = time.perf_counter() - started  # building and compiling the model, and the warm-up steps
    done, timed_from = 0, time.perf_counter()
    while done < s.steps and (done == 0 or time.perf_counter() - timed_from < s.model_budget_s):
        batches.steps = min(s.chunk_steps, s.steps - done)
        entry = trainer.epoch(batches)
        done += batches.steps
    synchronize(device)
    timed_s = time.perf_counter() - timed_from
    if not math.isfinite(entry["train_loss"]):
        raise FloatingPointError(f"training loss {entry['train_loss']} after {done} steps")
    spec, (backbone_macs, head_macs, counter) = get_dataset(cfg.dataset), forward_macs(p.row)
    macs = backbone_macs * (cfg.image_size / spec.image_size) ** 2 + head_macs
    images_per_s = done * cfg.batch_size / timed_s
    engine, error = trainer.engine, trainer.compile_error
    result = {
        "manifests": sorted(p.manifests),
        "dataset": cfg.dataset,
        "backbone": cfg.backbone,
        "head": cfg.head,
        "batch_size": cfg.batch_size,
        "image_size": cfg.image_size,
        "precision": s.precision,
        "channels_last": engine.channels_last,
        "compiled": trainer.compiled,
        "compile_error": error,
        "dispatch": engine.dispatch,
        "forward_macs": macs,
        "flop_counter": counter,
        "steps": done,
        "timed_seconds": timed_s,
        "warmup_seconds": warmup_s,
        "images_per_s": images_per_s,
        "train_macs_per_s": 3 * macs * images_per_s,
        "peak_memory_bytes": torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None,
        "final_loss": entry["train_loss"],
        **paths_ran(trainer.model),  # which exact MoEConv2d path each routed layer ran (a routed model only)
    }
    return result, f"compilation failed, trained eagerly: {error}" if error else ""


# --------------------------------------------------------------------------- the sequence
def device_info(device: torch.device) -> dict[str, Any]:
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return {
            "type": "cuda",
            "name": props.name,
            "label": device_label(device),
            "memory_bytes": props.total_memory,
            "capability": f"{props.major}.{props.minor}",
        }
    return {
        "type": device.type,
        "name": platform.processor() or platform.machine(),
        "label": device_label(device),
        "memory_bytes": None,
        "capability": None,
    }


def _where(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    return f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""


class CheckTimeout(BaseException):
    """The whole command's deadline came while a check was running. Not an Exception, so that no
    fallback on the way (compile_backbone's, for one) can swallow it."""


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise CheckTimeout in this (main) thread after `seconds`; elsewhere, or on a platform without SIGALRM,
    no limit."""
    if not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise CheckTimeout(f"stopped at the command's deadline, after {seconds:.0f} s of this check")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _input_job(
    dataset: str,
    planned: list[Planned],
    jobs: list[tuple[Check, Any]],
    s: GpuSettings,
    device: torch.device,
    dry_run: bool,
    run_settings: Settings,
) -> tuple[dict[str, Any], str]:
    """The input paths of a streamed dataset, fed to its fastest model measured (repro.bench.input_paths)."""
    by_name = {p.name: p for p in planned if p.row.dataset == dataset}
    done = [c for c, _ in jobs if c.name in by_name and c.result.get("images_per_s")]
    if not done:
        raise RuntimeError(f"no {dataset} model's training check measured images/s to feed")
    fastest = max(done, key=lambda c: c.result["images_per_s"])
    return input_check(
        check_config(by_name[fastest.name], s), fastest.name, s.input_paths, device, dry_run, run_settings=run_settings
    )


def _reraise(exc: BaseException) -> tuple[dict[str, Any], str]:
    raise exc  # a planning failure, reported where that manifest's training check would be


def _free(device: torch.device) -> None:
    if "torch._dynamo" in sys.modules:  # compiled graphs of the last model hold its memory
        torch._dynamo.reset()
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def run_gpu_check(
    device: str,
    settings: GpuSettings,
    out: Path,
    manifests: list[Manifest],
    dry_run: bool,
    log: Callable[[str], None] = print,
    run_settings: Settings = Settings(),
) -> dict[str, Any]:
    """Run every check in order, rewriting `out` after each; return the document written. `run_settings`: the
    command's (its engine switches, cache and weights folders), under which every model is built and trained.

    On a CPU everything runs on one intra-op thread: the toy sizes gain nothing from a second,
    and on a shared machine it waits for descheduled peers (repro.measure.timing)."""
    dev = torch.device(device)
    with cpu_threads(dev, 1):
        return _run_checks(dev, settings, out, manifests, dry_run, log, run_settings)


def _run_checks(
    dev: torch.device,
    settings: GpuSettings,
    out: Path,
    manifests: list[Manifest],
    dry_run: bool,
    log: Callable[[str], None],
    run_settings: Settings,
) -> dict[str, Any]:
    from repro.bench.kill_resume import run_kill_resume
    from repro.results.provenance import git_commit

    device = str(dev)
    began, t0 = dt.datetime.now(dt.timezone.utc), time.perf_counter()
    unplanned: dict[str, BaseException] = {}
    plans = paper_plans(manifests)
    planned = plan_training(plans, unplanned)  # FLOP counts, on the host, before any device work
    first_runs = {(plan.id, r.row): r.cfg for plan in plans for r in plan.runs if r.seed == 0}  # a twin's, too
    jobs: list[tuple[Check, Callable[[], tuple[dict[str, Any], str]]]] = []
    for manifest_id, row in expert_choice_rows(manifests):

        def expert_choice(row: Row = row) -> tuple[dict[str, Any], str]:
            return expert_choice_check(row, dev), ""

        jobs.append(
            (Check(f"expert_choice_bf16/{row.dataset}/{manifest_id}.{row.id}", "expert_choice_bf16"), expert_choice)
        )
    by_id = {m.id: m for m in manifests}
    for p in planned:
        routed = Check(p.name, "train")
        jobs.append((routed, partial(train_check, p, settings, dev, run_settings)))
        for twin in filter(None, (dense_twin(by_id[m], p.row) for m in p.manifests if m in by_id)):

            def train(row: Row, p: Planned = p, table: str = twin.manifest) -> tuple[dict[str, Any], str]:
                cfg = first_runs[(table, row.id)]  # the twin's own run, as its table's plan holds it
                return train_check(replace(p, name=p.name, row=row, cfg=cfg, manifests={}), settings, dev, run_settings)

            jobs.append((Check(twin.name, "dense_twin"), twin_job(twin, routed, train, dev.type, dry_run)))
    for dataset in sorted({p.row.dataset for p in planned if not get_dataset(p.row.dataset).in_memory}):
        jobs.append(
            (
                Check(f"input_path/{dataset}", "input_path"),
                partial(_input_job, dataset, planned, jobs, settings, dev, dry_run, run_settings),
            )
        )
    for manifest_id, exc in unplanned.items():
        jobs.append((Check(f"train/{manifest_id}", "train"), partial(_reraise, exc)))
    # last: the figures the cost model reads come first when the time budget runs out
    jobs.append(
        (
            Check("kill_resume", "kill_resume"),
            lambda: (run_kill_resume(device, settings.child_timeout_s, run_settings.engine), ""),
        )
    )
    for check, _ in jobs:
        check.error = "not reached: the command stopped before this check"
    doc = {
        "schema": SCHEMA,
        "dry_run": dry_run,
        "device": device_info(dev),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "git_commit": git_commit(),
        "started": began.isoformat(timespec="seconds"),
        "wall_s": 0.0,
        "settings": asdict(settings),
        "manifests": {
            **{
                m: {"row": r, "check": p.name, "train_macs": p.train_macs}
                for p in planned
                for m, r in p.manifests.items()
            },
            **{m: {"row": None, "check": f"train/{m}", "train_macs": None} for m in unplanned},
        },
        "checks": [c.to_dict() for c, _ in jobs],
    }

    def write() -> None:
        doc["wall_s"] = time.perf_counter() - t0
        doc["checks"] = [c.to_dict() for c, _ in jobs]
        atomic_write_json(out, doc)

    write()
    for check, run in jobs:
        if time.perf_counter() - t0 > min(settings.budget_s, settings.deadline_s):
            budget = min(settings.budget_s, settings.deadline_s)
            check.status, check.error = "skipped", f"time budget of {budget:.0f} s spent before it began"
        else:
            began_check = time.perf_counter()
            try:
                with _deadline(settings.deadline_s - (began_check - t0)):
                    check.result, error = run()
                check.status, check.error = ("failed" if error else "passed"), error
            except (Exception, CheckTimeout) as exc:  # a failing step is a failed check; the others still run
                check.status, check.error = "failed", error_line(exc) + _where(exc)
            check.seconds = time.perf_counter() - began_check
            _free(dev)
        log(f"{check.status:>7}  {check.name}  {check.seconds:.1f} s  {check.error}")
        write()
    return doc

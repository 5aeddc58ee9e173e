"""The "accuracy" measure: a table's planned runs -> run records -> per-seed metrics and paired gaps.

The plan holds one run per training row and seed of the profile (repro.plan.table_plan). Before any
training, every dataset and pretrained weight file the runs need is checked,
so a missing one fails the table in seconds with a message that says where to
put it; then `check_memory` refuses a table whose runs would not fit the device's
memory (repro.train.memory). Comparisons become MoE - dense gaps paired by seed (repro.claims.stats).
"""

from __future__ import annotations

import math
from typing import Sequence

from repro.measure.measurer import Context, Measurement
from repro.plan.run_config import PlannedRun, RunConfig
from repro.plan.table_plan import TablePlan
from repro.results.measurements import Measuring, RunSummary, comparison_metric, row_metric
from repro.results.timings import add_runs, phase


def preflight(configs: list[RunConfig], ctx: Context) -> list:
    """Fail before any training when a dataset is missing or wrong, or a pretrained weight file is missing.

    Each dataset is checked once per table by its content (classes, split sizes, one decoded batch,
    checksums); the checks (repro.data.check.DataCheck) are returned for the report and the table's files.
    """
    from repro.models.weights import require_all_weights

    real = [c.dataset for c in configs if c.data == "real"]
    checks = []
    if real:  # the checker decodes images with torch: not imported for synthetic and digit data
        from repro.data.check import check_datasets

        checks = check_datasets(real, ctx.data_dir, ctx.allow_unverified_data)
    for check in checks:
        check.raise_if_failed()
    require_all_weights({c.backbone["name"] for c in configs if c.torchvision_weights}, ctx.settings.weights)
    return checks


def check_memory(planned: Sequence[PlannedRun], ctx: Context) -> None:
    """Refuse the table (MemoryRefused, one line) before any run when a run of its plan yet to train here would
    not fit the device's memory; runs another machine trains (Slurm) are not checked here."""
    import json

    from repro.execution.files import record_path

    if not planned or not ctx.train or (ctx.executor is not None and ctx.executor.executor != "local"):
        return
    models = {}  # one run of each model yet to train: a table whose runs are all recorded checks nothing (torch-free)
    for p in planned:
        c = p.cfg
        key = json.dumps([c.dataset, c.backbone, c.head, c.batch_size, c.image_size, c.optimizer], sort_keys=True)
        if key not in models and not record_path(ctx.results_dir, c).is_file():
            models[key] = p
    if not models:
        return
    from repro.core.devices import resolve_device
    from repro.train.memory import MemoryRefused, device_memory, memory_problem

    device = resolve_device(ctx.device)
    limit, problems = device_memory(device), []
    for p in models.values():
        if (problem := memory_problem(p.cfg, p.label, device, limit, ctx.settings.cache)) is not None:
            problems.append(problem)
    if problems:
        more = f" ({len(problems) - 1} more model(s) of this table likewise)" if len(problems) > 1 else ""
        raise MemoryRefused(problems[0] + more)


def pretrain_stand_in_weights(configs: list[RunConfig], ctx: Context) -> None:
    """Make the digit-stand-in weights the runs start from (repro.train.digit_weights) before any run trains,
    in this process with all its threads, so that no training worker waits idle for another's."""
    from rich.markup import escape

    from repro.execution.files import record_path
    from repro.runtime.locks import LockSettings
    from repro.train import digit_weights

    def say(text: str) -> None:
        if ctx.progress is not None:
            ctx.progress.log(escape(text))
        else:
            print(text, flush=True)

    needed = sorted(
        {
            (digit_weights.base_backbone(c.backbone["name"]), c.dataset, c.image_size)
            for c in configs
            if c.digit_weights and not record_path(ctx.results_dir, c).is_file()
        }
    )
    for backbone, dataset, size in needed:
        digit_weights.ensure(
            backbone,
            dataset,
            size,
            log=say,
            cache=ctx.settings.cache,
            lock_settings=LockSettings(job=ctx.settings.launch.slurm),
        )


def routing_at_test_time(routing: dict) -> tuple[float, float] | None:
    """(top share, balance) of a run's test-time top-1 routing (the record's test_usage_by_class, classes x E):
    the most used expert's share of the test images, and the usage's entropy / log E. None without routing."""
    table = routing.get("test_usage_by_class")
    if not table:
        return None
    usage = [sum(col) for col in zip(*table)]  # (E,) test images per expert
    total, e = sum(usage), len(usage)
    if total == 0 or e < 2:
        return None
    shares = [u / total for u in usage]
    return max(shares), -sum(p * math.log(p) for p in shares if p > 0) / math.log(e)


TEST_COVER, TRAIN_ACTIVE = 0.9, 0.01  # "concentrates on" / "active": the bands of headline_cifar10's routing-spread


def routing_spread(routing: dict) -> dict[str, int]:
    """How many experts a run's head uses (Section 5): the fewest that take TEST_COVER of its test-time top-1
    images (test_usage_by_class), and how many take at least TRAIN_ACTIVE of the last training epoch's dispatches
    (expert_usage). Each left out without its routing."""
    out = {}
    table = routing.get("test_usage_by_class")
    usage = sorted((sum(col) for col in zip(*table)), reverse=True) if table else []
    if sum(usage) > 0:
        covered = [sum(usage[: i + 1]) for i in range(len(usage))]
        out["test_experts_90"] = next(i + 1 for i, c in enumerate(covered) if c >= TEST_COVER * covered[-1])
    train = routing.get("expert_usage") or []
    if sum(train) > 0:
        out["train_experts_active"] = sum(u >= TRAIN_ACTIVE * sum(train) for u in train)
    return out


def routing_p_entropy(routing: dict) -> float | None:
    """H(p_bar) / log E of a run's head over its last training epoch (the record's routing_entropy, E its experts):
    'routing entropy' read as the entropy of the routing probabilities p. None without routing."""
    h, usage = routing.get("routing_entropy"), routing.get("expert_usage")
    if h is None or not usage or len(usage) < 2:
        return None
    return h / math.log(len(usage))


def routers_moved(router_shift: dict[str, float]) -> tuple[float, float] | None:
    """(largest shift, share of layers moved) of a run's backbone MoE routers (RunSummary.router_shift, each
    layer's summed over the epochs): whether Table 5's k = 1 router left its initialisation. None without one."""
    if not router_shift:
        return None
    shifts = list(router_shift.values())
    return max(shifts), sum(v > 0 for v in shifts) / len(shifts)


def _balance(usage: list[float]) -> float | None:
    """The usage's entropy over log E (1: every expert equally often); None with no usage or one expert."""
    total, e = sum(usage), len(usage)
    if total <= 0 or e < 2:
        return None
    shares = [u / total for u in usage]
    return -sum(p * math.log(p) for p in shares if p > 0) / math.log(e)


def routing_in_training(routing: dict) -> dict[str, float]:
    """Row metrics of a run's last training epoch (Section 4.6): the head's dispatch balance, and over the
    backbone's MoE layers their number, the least-used expert's share of its layer and the lowest and highest
    layer balance. Empty without routing."""
    out = {}
    if (head := _balance(routing.get("expert_usage") or [])) is not None:
        out["train_routing_balance"] = head
    layers = [layer["expert_usage"] for layer in (routing.get("layers") or {}).values() if sum(layer["expert_usage"])]
    if layers:
        balances = [_balance(u) or 0.0 for u in layers]
        out.update(
            moe_layers=len(layers),
            layer_min_share=min(min(u) / sum(u) for u in layers),
            layer_balance_min=min(balances),
            layer_balance_max=max(balances),
        )
    return out


def measure_accuracy(plan: TablePlan, ctx: Context) -> Measurement:
    from repro.execution.runs import DataOptions, RunRequest, execute_runs
    from repro.claims.stats import paired_gap

    out, manifest, planned = Measuring(), plan.manifest, plan.runs
    data_checks = []  # a rebuild trains nothing, so it needs no data (its records say what they trained on)
    if ctx.train:
        with phase("data checks", manifest.id):
            data_checks = preflight([p.cfg for p in planned], ctx)
            check_memory(planned, ctx)
        with phase("stand-in pretraining", manifest.id):
            pretrain_stand_in_weights([p.cfg for p in planned], ctx)
    data = DataOptions(ctx.allow_unverified_data, ctx.workers)
    batch = execute_runs(
        [RunRequest(p.cfg, p.label, data) for p in planned],
        ctx.results_dir,
        ctx.device,
        ctx.data_dir,
        ctx.jobs,
        ctx.progress,
        options=ctx.executor,
        train=ctx.train,
        settings=ctx.settings,
    )
    records, errors = batch.records, batch.errors
    add_runs(manifest.id, [records[h] for h in batch.trained if h in records])
    per_row: dict[str, dict[int, float]] = {}
    late_drop: dict[str, dict[int, float]] = {}  # peak - final test accuracy: the late collapse of Section 5
    epoch1: dict[str, dict[int, float]] = {}  # test accuracy after the first epoch (Section 4.5)
    chance: dict[str, float] = {}
    routing: dict[str, dict[str, dict[int, float]]] = {}  # row -> metric -> seed -> value (Section 5.3)
    runs: dict[str, list[dict]] = {}
    for p in planned:
        h = p.cfg.hash
        if h in batch.submitted:
            continue
        if h in errors:
            out.problems.append(f"{p.label} ({h}) failed: {errors[h].splitlines()[0]}")
            continue
        summary = RunSummary.from_record(records[h])
        per_row.setdefault(p.row, {})[p.seed] = summary.accuracy
        late_drop.setdefault(p.row, {})[p.seed] = summary.peak_accuracy - summary.final_accuracy
        if summary.test_accuracy_by_epoch:
            epoch1.setdefault(p.row, {})[p.seed] = summary.test_accuracy_by_epoch[0]
        if summary.chance is not None:
            chance[p.row] = summary.chance
        shares = routing_at_test_time(summary.routing)
        if shares is not None:
            for metric, value in zip(("routing_top_share", "routing_balance"), shares):
                routing.setdefault(p.row, {}).setdefault(metric, {})[p.seed] = value
        if (p_entropy := routing_p_entropy(summary.routing)) is not None:
            routing.setdefault(p.row, {}).setdefault("routing_p_entropy", {})[p.seed] = p_entropy
        moved = routers_moved(summary.router_shift)
        if moved is not None:
            for metric, value in zip(("router_shift", "routers_moved"), moved):
                routing.setdefault(p.row, {}).setdefault(metric, {})[p.seed] = value
        for metric, value in {**routing_in_training(summary.routing), **routing_spread(summary.routing)}.items():
            routing.setdefault(p.row, {}).setdefault(metric, {})[p.seed] = value
        runs.setdefault(p.row, []).append(summary.to_dict())
    for row in manifest.rows:
        if "accuracy" not in row.measures:
            continue
        if row.id in per_row:
            out.set_row(row.id, "accuracy", per_row[row.id])
            out.set_row(row.id, "late_drop", late_drop[row.id])
            if row.id in epoch1:
                out.set_row(row.id, "epoch1_accuracy", epoch1[row.id])
            if row.id in chance:
                out.set_row(row.id, "chance", chance[row.id])
            for metric, values in routing.get(row.id, {}).items():
                out.set_row(row.id, metric, values)
        elif (left_out := plan.left_out.get(row.id)) is not None:
            out.missing[row_metric(row.id, "accuracy")] = (
                f"{row.id} is not trained under profile '{plan.profile_name}' (left out by {left_out})"
            )
        else:
            out.missing[row_metric(row.id, "accuracy")] = f"every run of {row.id} failed"
    for comp in manifest.comparisons:
        a, b = per_row.get(comp.row), per_row.get(comp.baseline)
        if a and b and set(a) & set(b):
            out.set_comparison(comp.id, "gap", paired_gap(a, b).to_dict())
        elif any(r.id in (comp.row, comp.baseline) and "accuracy" in r.measures for r in manifest.rows):
            out.missing[comparison_metric(comp.id, "gap")] = next(
                (
                    out.missing[row_metric(r, "accuracy")]
                    for r in (comp.row, comp.baseline)
                    if row_metric(r, "accuracy") in out.missing and r in plan.left_out
                ),
                f"no seed has both {comp.row} and {comp.baseline} finished",
            )
    out.details["runs"] = runs
    if data_checks:  # the lines for the report, and the checks themselves for each table's provenance
        out.details["data_checks"] = {
            "summaries": [c.summary() for c in data_checks],
            "checks": [c.provenance() for c in data_checks],
        }
    # Submitted runs are not failures: the table waits for them (repro.pipeline.execute).
    return Measurement(out.done(), batch.counts, dict(batch.submitted))

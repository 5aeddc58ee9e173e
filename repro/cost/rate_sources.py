"""Where each GPU rate `repro list` prices with came from: the measured check per table, or multiply-adds.

A GPU run is priced (repro.cost.estimate.CostModel.run_time) at, in this order:

    model     the images/s a check measured for its very model (dataset, backbone, head)
    table     the images/s of its table's heaviest row
    MACs      its multiply-adds at the median measured rate

and a run that streams its dataset from image folders at no more than its input path's measured rate, which
may be unmeasured. One line per table and way, with the runs it prices; torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass

from repro.cost.calibration import Throughput
from repro.cost.estimate import CostModel
from repro.core.terminal import Column, Grid
from repro.data.specs import get_dataset
from repro.plan.run_config import RunConfig
from repro.plan.table_plan import Plans


@dataclass(frozen=True)
class RateSource:
    manifest: str
    runs: int
    images_per_s: float | None  # the model's rate; None: priced by multiply-adds
    measured_by: str  # the check, "<manifest>.<row>*" (its table's heaviest row, standing in), or "MACs"
    input: str  # the input path's rate, "unmeasured", or "" where the run reads its data from memory


def _short(check: str) -> str:
    return check.rsplit("/", 1)[-1]  # "train/imagenet/table5.k2_moe" -> "table5.k2_moe"


def _source(cfg: RunConfig, manifest_id: str, device: Throughput, model: CostModel) -> tuple[float | None, str, str]:
    rate = device.model_rate(cfg.dataset, cfg.backbone, cfg.head)
    if rate:
        from repro.cost.gpu_reference import model_key

        by = _short(device.model_checks[model_key(cfg.dataset, cfg.backbone, cfg.head)])
    elif device.images_per_s.get(manifest_id):
        rate, by = device.images_per_s[manifest_id], _short(device.rate_checks.get(manifest_id, manifest_id)) + "*"
    else:
        by = "MACs"
    feed, text = model.input_rate(cfg, device), ""
    if cfg.data == "real" and not get_dataset(cfg.dataset).in_memory:
        text = f"{device.inputs[cfg.dataset].path} {feed:,.0f}" if feed else "unmeasured"
    return rate, by, text


def rate_sources(plans: Plans, model: CostModel) -> list[RateSource]:
    """Per manifest, its GPU profiles' distinct runs (as its plans hold them) grouped by the rate and check that
    price them."""
    out = []
    for m in plans.manifests:
        groups: dict[tuple[float | None, str, str], set[str]] = {}
        for name in m.profiles:
            plan = plans.of(m.id, name)
            device = model.device(plan.profile)
            if device.kind != "gpu" or not device.measured_in:  # only a GPU priced by a calibration's figures
                continue
            for p in plan.runs:
                groups.setdefault(_source(p.cfg, m.id, device, model), set()).add(p.cfg.hash)
        for (rate, by, text), runs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            out.append(RateSource(m.id, len(runs), rate, by, text))
    return out


def rate_grid(sources: list[RateSource]) -> Grid:
    """One line per table: its runs, the range of their rates, its input path and the checks behind them."""
    grid = Grid([Column("Table"), Column("Runs", right=True), Column("Images/s", right=True),
                 Column("Input /s", right=True), Column("Measured by", prose=True, drop=1)])
    for manifest in dict.fromkeys(s.manifest for s in sources):
        mine = [s for s in sources if s.manifest == manifest]
        rates = sorted(s.images_per_s for s in mine if s.images_per_s is not None)
        span = "-" if not rates else f"{rates[0]:,.0f}" + (f"-{rates[-1]:,.0f}" if rates[-1] != rates[0] else "")
        inputs = ", ".join(dict.fromkeys(s.input for s in mine if s.input))
        runs: dict[str, int] = {}
        for s in mine:  # a check's runs together, whatever their input
            runs[s.measured_by] = runs.get(s.measured_by, 0) + s.runs
        grid.add(manifest, str(sum(runs.values())), span, inputs,
                 ", ".join(f"{by.removeprefix(manifest + '.')} ({n})" for by, n in runs.items()))
    return grid


NOTE = ("Measured by: the `repro bench gpu` checks whose images/s price the table's runs (how many in brackets): a "
        "run's own model, else (*) its table's heaviest row standing in, else MACs: multiply-adds at the median "
        "measured rate. Input: the images/s of the input path chosen for a dataset streamed from image folders; "
        "such a run is priced at the lesser of the two, or at its model's rate where the input is unmeasured.")

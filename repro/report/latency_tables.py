"""Latency tables (Table 7): per-row timings, slowdowns against a baseline, operator calls against E.

Built from what rows measured (results' "latency" details and metrics), never
from a manifest's name. Absolute times carry the device they were measured on;
the paper's values sit in their own column, labelled with what they time.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from repro.data.specs import get_dataset
from repro.plan.manifest import Comparison, Manifest, Row
from repro.spec.paper import paper_table
from repro.report.cells import Table
from repro.results.measurements import COMPARISON_METRICS, ROW_METRICS, ManifestResult

WHAT = {
    "latency_ms": "head",
    "model_latency_ms": "model",
    "backbone_latency_ms": "backbone",
    "slowdown": "head",
    "model_slowdown": "model",
}


def ms(x: float | None) -> str:
    if x is None:
        return ""
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}" if x >= 1 else f"{x:.3f}"


def times(x: float | None) -> str:
    return "" if x is None else f"{x:.1f}x" if x < 100 else f"{x:.0f}x"


def paper_cells(manifest: Manifest, ident: str, metrics: frozenset[str]) -> str:
    """The values the paper reports for a row or comparison (its `metrics`), with what they time."""
    table = paper_table(manifest.paper_table)
    values = [v for v in table.values if v.row == ident and v.metric in metrics] if table else []
    return "; ".join(f"{v.printed} ({WHAT.get(v.metric, v.metric)})" for v in values)


def _setup_notes(result: ManifestResult) -> list[str]:
    s = result.measured.details.get("latency_setup", {})
    return [
        f"Measured on {s.get('device', '?')}, profile '{result.profile}': batch {s.get('batch')}, "
        f"{s.get('warmup')} warm-up call(s), {s.get('min_reps')}-{s.get('max_reps')} repetitions per timing "
        f"(median; IQR = interquartile range). Absolute times belong to this device; ratios are the headline.",
        f"Operator calls: non-view aten operators of one head forward at batch {s.get('op_batch')} "
        "(the same on every device); host syncs: those among them that wait for the device.",
    ]


def latency_table(manifest: Manifest, result: ManifestResult) -> Table | None:
    lat = result.measured.details.get("latency", {})
    rows = [r for r in manifest.rows if r.id in lat]
    if not rows:
        return None
    flops = result.measured.details.get("flops", {})

    def time(part: str) -> Callable[[Row], str]:
        return lambda r: ms(lat[r.id][part]["median_ms"])

    def head_macs(r: Row) -> str:
        macs = flops.get(r.id, {}).get("head_macs")
        return "" if macs is None else f"{macs / 1e6:.3f}"

    columns: dict[str, Callable[[Row], str]] = {
        "Method": lambda r: r.label,
        "Head ms": time("head"),
        "Head IQR ms": lambda r: f"{ms(lat[r.id]['head']['p25_ms'])}–{ms(lat[r.id]['head']['p75_ms'])}",
        "Ops / forward": lambda r: str(lat[r.id]["ops"]["ops"]),
        "Host syncs": lambda r: str(lat[r.id]["ops"]["host_syncs"]),
        "Head MMAC / image": head_macs,
        "Backbone ms": time("backbone"),
        "Model ms": time("model"),
        "Paper": lambda r: paper_cells(manifest, r.id, ROW_METRICS),
    }
    table = Table("latency", f"{manifest.title}: latency per batch", list(columns))
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        groups.setdefault((r.role, r.dataset), []).append(r)
    for (role, dataset), members in sorted(groups.items(), key=lambda kv: kv[0][0] != "main"):
        first = lat[members[0].id]
        heading = (
            f"{get_dataset(dataset).title}: head on D = {first['head_features']} features, "
            f"whole model at {first['image_size']} px"
        )
        table.heading(heading if role == "main" else f"Sensitivity — {heading}")
        for r in members:
            table.add([cell(r) for cell in columns.values()], r.id)
    table.notes = _setup_notes(result) + [
        "Head MMAC / image: multiply-adds of the head per image (routed heads: what one image executes), "
        "from the FLOP count of the same row."
    ]
    return table


def slowdown_table(manifest: Manifest, result: ManifestResult) -> Table | None:
    measured = result.measured
    comps = [c for c in manifest.comparisons if measured.comparison(c.id, "slowdown") is not None]
    if not comps:
        return None

    def ops(c: Comparison) -> str:
        ops_a, ops_b = measured.row(c.row, "op_calls"), measured.row(c.baseline, "op_calls")
        return times(ops_a / ops_b) if ops_a and ops_b else ""

    columns: dict[str, Callable[[Comparison], str]] = {
        "Comparison": lambda c: c.label,
        "Head x": lambda c: times(measured.comparison(c.id, "slowdown")),
        "Model x": lambda c: times(measured.comparison(c.id, "model_slowdown")),
        "Ops x": ops,
        "Paper": lambda c: paper_cells(manifest, c.id, COMPARISON_METRICS),
    }
    notes = [
        "Head x: the row's head latency over the baseline's head latency; Model x: the same for the "
        "whole model (backbone + head), the reading this reproduction gives the paper's ratios."
    ]
    table = Table("slowdowns", "Latency over the baseline's (x)", list(columns), notes=notes)
    for c in comps:
        table.add([cell(c) for cell in columns.values()], c.id)
    return table


def _sweep_key(row: Row) -> str:
    params = {k: v for k, v in row.head.params.items() if k != "num_experts"}
    return json.dumps([row.dataset, row.backbone.key(), row.head.name, params], sort_keys=True)


def _sweep_label(row: Row, d: dict[str, Any]) -> str:
    params = ", ".join(f"{k}={v}" for k, v in sorted(row.head.params.items()) if k not in ("num_experts", "dispatch"))
    dispatch = f", {d['dispatch']} dispatch" if d.get("dispatch") else ""
    return f"{get_dataset(row.dataset).title}, {row.backbone.name}: {row.head.name}{dispatch} ({params})"


def op_scaling_table(manifest: Manifest, result: ManifestResult) -> Table | None:
    """Rows that differ only in the number of experts, side by side."""
    lat = result.measured.details.get("latency", {})
    sweeps: dict[str, dict[int, Any]] = {}
    labels: dict[str, str] = {}
    for r in manifest.rows:
        if r.id in lat and lat[r.id]["num_experts"] is not None:
            sweeps.setdefault(_sweep_key(r), {})[lat[r.id]["num_experts"]] = lat[r.id]
            labels.setdefault(_sweep_key(r), _sweep_label(r, lat[r.id]))
    sweeps = {k: v for k, v in sweeps.items() if len(v) > 1}
    if not sweeps:
        return None
    experts = sorted({e for v in sweeps.values() for e in v})
    table = Table(
        key="op_scaling",
        title="Operator calls and head latency against the number of experts E",
        columns=["Head", *[f"E={e}" for e in experts], "Ops per extra expert"],
    )
    for key, by_e in sweeps.items():
        es = sorted(by_e)
        slope = (by_e[es[-1]]["ops"]["ops"] - by_e[es[0]]["ops"]["ops"]) / (es[-1] - es[0])
        cells = [
            f"{by_e[e]['ops']['ops']} ops ({by_e[e]['ops']['host_syncs']} syncs), {ms(by_e[e]['head']['median_ms'])} ms"
            if e in by_e
            else ""
            for e in experts
        ]
        table.add([labels[key], *cells, f"{slope:.1f}"])
    table.notes = _setup_notes(result)[1:] + [
        "Ops per extra expert: (ops at the largest E - ops at the smallest) / (difference in E)."
    ]
    return table

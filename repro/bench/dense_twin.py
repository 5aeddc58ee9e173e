"""The dense twin of a routed backbone, trained right after it in `repro bench gpu`, and the ratio of their rates.

A manifest's comparison whose baseline row has the same dataset and head but another backbone compares a
routed backbone with the dense network it replaces (Table 5: ResNet-18 with eight MoEConv2d layers against
ResNet-18 with the same frozen layers). When the routed row is the model a training check measures, the
twin is trained next with the same settings (batch, precision, channels-last, compilation: one
repro.bench.gpu.train_check each), and the check reports

    ratio = routed images/s / dense twin images/s

On CUDA at full size the check passes when ratio >= GOAL; a dry run, or a device that is not a GPU,
reports the ratio without judging it (toy sizes say nothing of a GPU's kernels).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

from repro.bench.gpu_calibration import Check
from repro.plan.manifest import Manifest, Row

GOAL = 0.6  # a routed backbone at >= 0.6x its dense twin's images/s (issue 46)


@dataclass(frozen=True)
class Twin:
    manifest: str
    routed: Row  # the row a training check measures
    dense: Row  # its comparison's baseline: same dataset and head, the dense backbone

    @property
    def name(self) -> str:
        return f"dense_twin/{self.dense.dataset}/{self.manifest}.{self.dense.id}"


def dense_twin(manifest: Manifest, routed: Row) -> Twin | None:
    """The dense twin of `routed` in `manifest`, if one of its comparisons has one (the first such)."""
    rows = {r.id: r for r in manifest.rows}
    for c in manifest.comparisons:
        base = rows.get(c.baseline)
        if c.row != routed.id or base is None:
            continue
        if base.dataset == routed.dataset and base.head == routed.head and base.backbone.name != routed.backbone.name:
            return Twin(manifest.id, routed, base)
    return None


def judged(device_type: str, dry_run: bool) -> bool:
    return device_type == "cuda" and not dry_run


def twin_result(dense: dict[str, Any], routed: Check, device_type: str, dry_run: bool) -> tuple[dict[str, Any], str]:
    """(result, error) of a twin check from the twin's training result and the routed model's check.

    The result is the twin's training result with "routed_check", "routed_images_per_s", "routed_paths" (the
    routed model's MoEConv2d paths, paths_text), "ratio", "goal" and "judged" added; the error says why the ratio
    fails the goal, or that the routed model was not measured."""
    routed_rate = routed.result.get("images_per_s")
    out = {
        **dense,
        "routed_check": routed.name,
        "routed_images_per_s": routed_rate,
        "routed_paths": paths_text(routed.result.get("moe_conv_paths") or {}),
        "goal": GOAL,
        "judged": judged(device_type, dry_run),
        "ratio": None,
    }
    if not routed_rate:
        return out, f"{routed.name} measured no images/s ({routed.status}): no ratio"
    out["ratio"] = routed_rate / dense["images_per_s"]
    if out["judged"] and out["ratio"] < GOAL:
        return out, (
            f"{routed.name} at {out['ratio']:.2f}x its dense twin's images/s "
            f"({routed_rate:,.0f} against {dense['images_per_s']:,.0f}); goal >= {GOAL}x"
        )
    return out, ""


def twin_job(
    twin: Twin, routed: Check, train: Callable[[Row], tuple[dict[str, Any], str]], device_type: str, dry_run: bool
) -> Callable[[], tuple[dict[str, Any], str]]:
    """The check's body: train the twin with `train` (the routed model's settings), then compare."""

    def run() -> tuple[dict[str, Any], str]:
        dense, error = train(twin.dense)
        result, verdict = twin_result(
            {**dense, "row": f"{twin.manifest}.{twin.dense.id}"}, routed, device_type, dry_run
        )
        return result, "; ".join(e for e in (error, verdict) if e)

    return run


def paths_text(paths: dict[str, dict[str, str]]) -> str:
    """'sorted x6, mixed x2': how many routed layers' last calls ran each exact MoEConv2d path, from a training
    result's "moe_conv_paths" ({layer: {input shape: path}}, repro.train.engine.paths_ran); "" for none."""
    counts = Counter(path for shapes in paths.values() for path in shapes.values())
    return ", ".join(f"{path} x{n}" for path, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def ratio_line(check: dict[str, Any]) -> str:
    """One line for the command's output: the ratio, the goal judged or not, and the routed layers' paths."""
    r = check["result"]
    if r.get("ratio") is None:
        return f"{check['name']}: no ratio ({check['error']})"
    verdict = ("pass" if r["ratio"] >= r["goal"] else "FAIL") if r["judged"] else "not judged off a GPU at full size"
    paths = f"; MoEConv2d paths: {r['routed_paths']}" if r.get("routed_paths") else ""
    return f"{r['routed_check']} / its dense twin: {r['ratio']:.2f}x (goal >= {r['goal']}x on a GPU: {verdict}){paths}"

"""`repro rho --all`: the head-only MoE's rho on every torchvision CNN, and the paper's settings beside them.

Each model is counted three ways like any other (repro.rho.analysis); a model that cannot take
the input size is skipped with the reason, not fatal. The paper's settings are Table 6's rows
as this artifact counts them (repro.measure.flop_check, cached on disk), with the rho the paper prints.
"""

from __future__ import annotations

from pathlib import Path

from repro.core.settings import DEFAULT_CACHE
from repro.rho.analysis import Request, analyse
from repro.rho.model_list import ModelSpec, RhoInputError
from repro.rho.networks import Network
from repro.rho.paper_settings import Reference, Setting, settings_manifest


def count_one(
    spec: ModelSpec, setting: Setting, size: tuple[int, int], classes: int, request: Request, reference: Reference
) -> dict:
    """A torchvision CNN's total MACs and head-only rho, or why it was skipped."""
    try:
        analysis = analyse(Network(spec, setting, size, classes), request, reference)
    except RhoInputError as exc:
        return {"model": spec.name, "family": spec.family, "skipped": str(exc)}
    head = analysis.results[0]
    return {
        "model": spec.name,
        "family": spec.family,
        "total_macs": head.total_macs,
        "routed_macs": head.routed_macs,
        "rho": head.rho,
        "zone": head.zone,
        "modules_checked": head.modules_checked,
        "problems": list(head.problems),
    }


def setting_points(
    reference: Reference, cache: Path = DEFAULT_CACHE, manifests: Path | None = None, readings: Path | None = None
) -> list[dict]:
    """The paper's settings as counted here (each count kept in the cache folder `cache`): total MACs and rho,
    with the rho the paper prints (Table 6 read from `manifests` with the readings file `readings`)."""
    from repro.measure.flop_check import flop_summary

    manifest = settings_manifest(manifests, readings)
    points = []
    for s in reference.settings:
        row = manifest.row(s.row)
        summary = flop_summary(row.dataset, row.backbone, row.head, cache)
        points.append(
            {
                "row": s.row,
                "side": s.side,
                "total_macs": summary["total_macs"],
                "rho": summary["rho"],
                "paper": s.printed,
                "paper_rho": s.value,
                "from_explainer": s.from_explainer,
                "problems": summary["problems"],
            }
        )
    return points

"""The paper's thresholds and its own settings (Table 6), read from the package's manifests/ and paper_tables/.

Nothing here is typed in. The ~7% threshold is the paper value that Table 6's `separates`
claim tests (Sections 4.6, 5.3), and the rows that claim puts either side of it are the
settings listed for reference, each with the rho the paper prints for it, if any. The 1%
floor is the bound of Table 6's `compare` claims that head-only rho stays below 1% (Section
4.5; Section 5.3: at rho <= 1% routing consistently hurts). The defaults of a model's MoE
(dataset, h, k, E) come from the Table 6 rows of the same dataset.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from repro.data.specs import get_dataset
from repro.plan.manifest import Manifest, Row, find_manifest, load_all
from repro.models import Component
from repro.models.configs import MoEConvBackboneConfig, SparseMoEConfig
from repro.spec.paper import paper_table
from repro.rho.model_list import ModelSpec, RhoInputError
from repro.core.schema import SchemaError

SETTINGS_MANIFEST = "table6"  # the paper's FLOP decomposition: its settings and their rho
TORCHVISION_DATASET = "imagenet"  # torchvision's classifiers are ImageNet-1K models
MOE_HEAD = "sparse_moe"  # the paper's sparse top-k head (repro.models.sparse_moe)

Zone = Literal["below_floor", "below_threshold", "above_threshold"]


@dataclass(frozen=True)
class Bound:
    value: float  # a fraction of FLOPs
    printed: str  # as the paper prints it: "~7%", "1%"
    section: str


@dataclass(frozen=True)
class PaperSetting:
    row: str
    label: str
    side: Literal["below", "above"]  # of the threshold, as Table 6's claim places it
    printed: str  # the rho the paper prints for it; "" when the text gives none
    value: float | None  # the same as a fraction
    from_explainer: bool  # the number is in the AI-written explainer, not the paper's text


@dataclass(frozen=True)
class Reference:
    threshold: Bound  # where routing starts to help
    floor: Bound  # below it, routing consistently hurt
    settings: tuple[PaperSetting, ...]

    def zone(self, rho: float) -> Zone:
        if rho < self.floor.value:
            return "below_floor"
        return "below_threshold" if rho < self.threshold.value else "above_threshold"

    def describe(self, zone: Zone) -> str:
        return {
            "below_floor": "where head-only routing consistently hurt accuracy in the paper",
            "below_threshold": "above that floor but under the threshold the paper puts between settings where "
            "routing hurt and where it helped",
            "above_threshold": "at or above the threshold: the range where routing helped in the paper",
        }[zone]


def _percent(value: float) -> str:
    return f"{value * 100:g}%"


@lru_cache(maxsize=4)
def settings_manifest(manifests: Path | None = None, readings: Path | None = None) -> Manifest:
    """Table 6's manifest, from the folder `manifests` (the command's $REPRO_MANIFESTS) or the package's, with the
    readings of the file `readings` (its $REPRO_READINGS) added to the shipped ones."""
    try:
        return find_manifest(SETTINGS_MANIFEST, manifests, readings_file=readings)
    except (KeyError, SchemaError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) else str(exc)
        raise RhoInputError(
            f"repro rho reads the paper's settings from the '{SETTINGS_MANIFEST}' manifest: {message}"
        ) from None


def load_reference(manifests: Path | None = None, readings: Path | None = None) -> Reference:
    manifest = settings_manifest(manifests, readings)
    table = paper_table(manifest.paper_table or manifest.id)
    separates = next((c for c in manifest.claims if c.rule == "separates"), None)
    printed_threshold = table.get(separates.params["threshold"]) if table and separates else None
    floors = [
        c
        for c in manifest.claims
        if c.rule == "compare"
        and c.params.get("relation") == "<"
        and str(c.params.get("metric", "")).endswith(".rho")
        and "bound" in c.params
    ]
    if (
        separates is None
        or printed_threshold is None
        or printed_threshold.value is None
        or printed_threshold.unit != "%"
        or not floors
    ):
        raise RhoInputError(
            f"{manifest.path}: expected a 'separates' claim whose threshold paper_tables/ gives in "
            "percent, and a 'compare' claim bounding a rho from above "
            "(the paper's threshold and floor)"
        )
    threshold = Bound(printed_threshold.value / 100, printed_threshold.printed, printed_threshold.section)
    floor = Bound(float(floors[0].params["bound"]), _percent(float(floors[0].params["bound"])), floors[0].section)
    settings = []
    for side in ("below", "above"):
        for row_id in separates.params[side]:
            printed = table.get(f"{row_id}.rho") if table else None
            rho = printed.value / 100 if printed and printed.value is not None and printed.unit == "%" else None
            settings.append(
                PaperSetting(
                    row_id,
                    manifest.row(row_id).label,
                    side,
                    printed.printed if printed else "",
                    rho,
                    printed is not None and printed.source == "explainer-and-summary",
                )
            )
    return Reference(threshold, floor, tuple(settings))


@dataclass(frozen=True)
class Setting:
    """What a model is counted at by default: a dataset's resolution and classes, and the paper's MoE sizes."""

    dataset: str
    backbone_params: dict[str, Any]  # registry backbones: the parameters of the Table 6 row that uses it
    head_params: dict[str, Any]  # the sparse MoE head's: expert_hidden, top_k (and num_experts when set)
    source_row: str  # the manifest row these come from
    route_experts: int
    route_top_k: int

    @property
    def size(self) -> tuple[int, int]:
        side = get_dataset(self.dataset).image_size
        return side, side

    @property
    def classes(self) -> int:
        return get_dataset(self.dataset).num_classes


def _first_row(rows: list[Row], backbone: str) -> Row | None:
    return next((r for r in rows if r.backbone.name == backbone), None)


def _every_row(manifests: Path | None, readings: Path | None) -> list[Row]:
    try:
        return [r for m in load_all(manifests, readings_file=readings) for r in m.rows]
    except SchemaError as exc:
        raise RhoInputError(str(exc)) from None


def _sparse_row(dataset: str, manifests: Path | None, readings: Path | None) -> Row | None:
    rows = settings_manifest(manifests, readings).rows
    return next((r for r in rows if r.dataset == dataset and r.head.name == MOE_HEAD and r.role == "main"), None)


def default_setting(spec: ModelSpec, manifests: Path | None = None, readings: Path | None = None) -> Setting:
    """A torchvision model: Table 6's ImageNet head-only row. A registry backbone: the first row using it
    (Table 6 first, then the other manifests), with the head of its dataset's head-only row when it has none;
    ImageNet's setting for a backbone no manifest uses."""
    backbone = Component(spec.name)
    if spec.source == "torchvision":
        dataset = TORCHVISION_DATASET
    else:
        rows = list(settings_manifest(manifests, readings).rows)
        row = _first_row(rows, spec.name) or _first_row(_every_row(manifests, readings), spec.name)
        dataset = row.dataset if row else TORCHVISION_DATASET
        backbone = row.backbone if row else backbone
        if row is not None and row.head.name == MOE_HEAD:
            return _setting(dataset, backbone, row)
    head_row = _sparse_row(dataset, manifests, readings)
    return _setting(dataset, backbone, head_row)


def _setting(dataset: str, backbone: Component, head_row: Row | None) -> Setting:
    head = dict(head_row.head.params) if head_row else {}
    keep: dict[str, Any] = {k: head[k] for k in ("expert_hidden", "top_k", "num_experts") if k in head}
    conv = MoEConvBackboneConfig()
    return Setting(dataset, dict(backbone.params), keep, head_row.id if head_row else "", conv.num_experts, conv.top_k)


def head_config(setting: Setting, experts: int | None, hidden: int | None, top_k: int | None) -> dict[str, Any]:
    """The head's parameters with the command's overrides, validated torch-free (ConfigError on bad values)."""
    params = dict(setting.head_params)
    for key, value in (("num_experts", experts), ("expert_hidden", hidden), ("top_k", top_k)):
        if value is not None:
            params[key] = value
    cfg = SparseMoEConfig(**params)
    return {"num_experts": cfg.num_experts, "expert_hidden": cfg.expert_hidden, "top_k": cfg.top_k}

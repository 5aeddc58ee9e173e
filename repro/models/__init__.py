"""Models as named, validated building blocks: backbones and heads by registry name.

`Component`, the `BACKBONES` / `HEADS` registries and their configs
(repro.models.configs) need no torch; `build_model` imports the builders.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.models.catalog import BACKBONES, HEADS

if TYPE_CHECKING:
    from repro.models.classifier import Classifier


@dataclass(frozen=True)
class Component:
    """A registry name and the keyword arguments its builder takes."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    def key(self) -> dict[str, Any]:
        return {"name": self.name, "params": dict(sorted(self.params.items()))}


def build_model(
    dataset: str, backbone: Component, head: Component, pretrained: bool | Path = False, image_size: int | None = None
) -> Classifier:
    """The model for `dataset` (its classes; its resolution unless `image_size` overrides it)."""
    from repro.data.specs import get_dataset
    from repro.models.classifier import Classifier

    spec = get_dataset(dataset)
    size = image_size or spec.image_size
    body = BACKBONES.get(backbone.name).builder((spec.channels, size, size), pretrained=pretrained, **backbone.params)
    top = HEADS.get(head.name).builder(body.out_features, spec.num_classes, **head.params)
    return Classifier(body, top)


def __getattr__(name: str) -> Any:
    if name == "Classifier":  # torch: imported on first use only
        from repro.models.classifier import Classifier

        return Classifier
    raise AttributeError(f"module 'repro.models' has no attribute {name!r}")


__all__ = ["BACKBONES", "HEADS", "Classifier", "Component", "build_model"]

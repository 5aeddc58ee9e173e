"""Models as named, validated building blocks: backbones and heads by registry name.

Importing this package registers every backbone and head.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


from repro.data.specs import get_dataset
from repro.models import (  # noqa: F401  (registration side effects)
    expert_choice,
    moe_conv,
    per_sample_soft_moe,
    soft_moe,
    sparse_moe,
)
from repro.models.backbones import BACKBONES
from repro.models.classifier import Classifier
from repro.models.heads import HEADS


@dataclass(frozen=True)
class Component:
    """A registry name and the keyword arguments its builder takes."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    def key(self) -> dict[str, Any]:
        return {"name": self.name, "params": dict(sorted(self.params.items()))}


def build_model(dataset: str, backbone: Component, head: Component, pretrained: bool = False,
                image_size: int | None = None) -> Classifier:
    """The model for `dataset` (its classes; its resolution unless `image_size` overrides it)."""
    spec = get_dataset(dataset)
    size = image_size or spec.image_size
    body = BACKBONES.get(backbone.name).builder((spec.channels, size, size), pretrained=pretrained, **backbone.params)
    top = HEADS.get(head.name).builder(body.out_features, spec.num_classes, **head.params)
    return Classifier(body, top)


__all__ = ["BACKBONES", "HEADS", "Classifier", "Component", "build_model"]

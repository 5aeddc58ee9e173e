"""Pretrained torchvision weights: where they are cached, and a clear error when they are not."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
import torchvision

ARCHS = {"resnet18": "ResNet18_Weights", "mobilenet_v2": "MobileNet_V2_Weights", "resnet18_moeconv": "ResNet18_Weights"}


class WeightsMissing(RuntimeError):
    """Pretrained weights are needed but not in the cache, and cannot be downloaded here."""


@dataclass(frozen=True)
class WeightsStatus:
    backbone: str
    path: Path
    url: str

    @property
    def present(self) -> bool:
        return self.path.is_file()

    def message(self) -> str:
        return (f"pretrained ImageNet weights for '{self.backbone}' are not cached at {self.path} "
                f"(TORCH_HOME={torch.hub.get_dir().rsplit('/hub', 1)[0]}). On a machine with internet run\n"
                f"  TORCH_HOME=<dir> python -c \"import torch; torch.hub.load_state_dict_from_url('{self.url}')\"\n"
                f"and copy <dir>/hub/checkpoints/{self.path.name} to {self.path.parent}/ "
                "(in the container: the torch-cache volume).")


def weights_status(backbone: str) -> WeightsStatus:
    url = getattr(torchvision.models, ARCHS[backbone]).IMAGENET1K_V1.url
    return WeightsStatus(backbone, Path(torch.hub.get_dir()) / "checkpoints" / url.rsplit("/", 1)[-1], url)


def require_weights(backbone: str) -> Path:
    status = weights_status(backbone)
    if not status.present:
        raise WeightsMissing(status.message())
    return status.path

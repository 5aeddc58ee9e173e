"""The models `repro rho` counts, as data readable without torch.

torchvision's classification models grouped by the torchvision module that builds them. A
CNN family names the attribute that holds its classifier (the part a head-only MoE replaces);
a transformer family says why it is left out. tests/rho/test_catalog.py checks this table
against torchvision.models.list_models(), so a torchvision release that adds a model fails
the test instead of going uncounted. It is a copy because a misspelt name must be refused in
well under a second, before torch is imported.

The registry's backbones (repro.models.catalog) are counted too; resnet18 and mobilenet_v2
are in both, and the registry builds them from torchvision, so they are the same networks.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

from repro.models.catalog import BACKBONES


@dataclass(frozen=True)
class Family:
    module: str  # torchvision.models.<module> builds these
    classifier: str  # the attribute holding the classifier ("" for a family left out)
    models: tuple[str, ...]
    excluded: str = ""  # why `repro rho` does not count the family; "" for a CNN


_ATTENTION = (
    "a transformer: its attention multiplies activations by activations, which repro.models.flops does "
    "not count analytically and which no MoEConv2d bank can route; the paper studies CNNs"
)
FAMILIES: tuple[Family, ...] = (
    Family("alexnet", "classifier", ("alexnet",)),
    Family("convnext", "classifier", ("convnext_tiny", "convnext_small", "convnext_base", "convnext_large")),
    Family("densenet", "classifier", ("densenet121", "densenet161", "densenet169", "densenet201")),
    Family(
        "efficientnet",
        "classifier",
        (
            "efficientnet_b0",
            "efficientnet_b1",
            "efficientnet_b2",
            "efficientnet_b3",
            "efficientnet_b4",
            "efficientnet_b5",
            "efficientnet_b6",
            "efficientnet_b7",
            "efficientnet_v2_s",
            "efficientnet_v2_m",
            "efficientnet_v2_l",
        ),
    ),
    Family("googlenet", "fc", ("googlenet",)),
    Family("inception", "fc", ("inception_v3",)),
    Family("mnasnet", "classifier", ("mnasnet0_5", "mnasnet0_75", "mnasnet1_0", "mnasnet1_3")),
    Family("mobilenetv2", "classifier", ("mobilenet_v2",)),
    Family("mobilenetv3", "classifier", ("mobilenet_v3_small", "mobilenet_v3_large")),
    Family(
        "regnet",
        "fc",
        (
            "regnet_x_400mf",
            "regnet_x_800mf",
            "regnet_x_1_6gf",
            "regnet_x_3_2gf",
            "regnet_x_8gf",
            "regnet_x_16gf",
            "regnet_x_32gf",
            "regnet_y_400mf",
            "regnet_y_800mf",
            "regnet_y_1_6gf",
            "regnet_y_3_2gf",
            "regnet_y_8gf",
            "regnet_y_16gf",
            "regnet_y_32gf",
            "regnet_y_128gf",
        ),
    ),
    Family(
        "resnet",
        "fc",
        (
            "resnet18",
            "resnet34",
            "resnet50",
            "resnet101",
            "resnet152",
            "resnext50_32x4d",
            "resnext101_32x8d",
            "resnext101_64x4d",
            "wide_resnet50_2",
            "wide_resnet101_2",
        ),
    ),
    Family(
        "shufflenetv2", "fc", ("shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "shufflenet_v2_x1_5", "shufflenet_v2_x2_0")
    ),
    Family("squeezenet", "classifier", ("squeezenet1_0", "squeezenet1_1")),
    Family("vgg", "classifier", ("vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn")),
    Family("vision_transformer", "", ("vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14"), _ATTENTION),
    Family("swin_transformer", "", ("swin_t", "swin_s", "swin_b", "swin_v2_t", "swin_v2_s", "swin_v2_b"), _ATTENTION),
    Family("maxvit", "", ("maxvit_t",), "a hybrid whose blocks end in window and grid attention: " + _ATTENTION),
)


@dataclass(frozen=True)
class ModelSpec:
    """A model `repro rho` can count: where it comes from and, for torchvision, where its classifier sits."""

    name: str
    source: Literal["torchvision", "registry"]
    family: str  # the torchvision module, or "registry"
    classifier: str = ""  # torchvision only


class RhoInputError(ValueError):
    """Input `repro rho` refuses, with the message to show (no traceback)."""


def torchvision_cnns() -> list[ModelSpec]:
    """Every torchvision CNN, family by family."""
    return [ModelSpec(m, "torchvision", f.module, f.classifier) for f in FAMILIES if not f.excluded for m in f.models]


def registry_backbones() -> list[ModelSpec]:
    """The registry's backbones that torchvision does not also provide."""
    tv = {s.name for s in torchvision_cnns()}
    return [ModelSpec(n, "registry", "registry") for n in BACKBONES.names() if n not in tv]


def known_names() -> list[str]:
    return sorted({s.name for s in torchvision_cnns() + registry_backbones()})


def did_you_mean(word: str, options: list[str], n: int = 3) -> str:
    """' (did you mean 'a', 'b' or 'c'?)' with up to n close names, or ''."""
    matches = difflib.get_close_matches(word, options, n=n, cutoff=0.6)
    if not matches:
        return ""
    quoted = [f"'{m}'" for m in matches]
    names = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f" (did you mean {names}?)"


def resolve_model(name: str) -> ModelSpec:
    """The model called `name`; a transformer or an unknown name is refused, naming the closest models."""
    for spec in torchvision_cnns() + registry_backbones():
        if spec.name == name:
            return spec
    for family in FAMILIES:
        if name in family.models:
            raise RhoInputError(f"'{name}' ({family.module}) is not counted: it is {family.excluded}")
    raise RhoInputError(
        f"unknown model '{name}'{did_you_mean(name, known_names())}; `repro rho --list` names all {len(known_names())}"
    )

"""The models `repro rho` knows, against torchvision itself; names refused with the closest ones."""

import subprocess
import sys

import pytest
import torch
import torchvision
from torch import nn
from torchvision.models import get_model_builder, list_models

from checkout import REPO_ROOT
from repro.rho.model_list import (
    FAMILIES,
    RhoInputError,
    did_you_mean,
    registry_backbones,
    resolve_model,
    torchvision_cnns,
)

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")  # torchvision's notes on default initialisation


def test_every_torchvision_classification_model_is_in_one_family():
    listed = [m for f in FAMILIES for m in f.models]
    assert len(listed) == len(set(listed))
    assert sorted(listed) == sorted(list_models(module=torchvision.models))
    for family in FAMILIES:
        for name in family.models:
            assert get_model_builder(name).__module__ == f"torchvision.models.{family.module}", name


def test_left_out_families_are_the_attention_ones_and_say_why():
    left_out = {f.module for f in FAMILIES if f.excluded}
    assert left_out == {"vision_transformer", "swin_transformer", "maxvit"}
    assert all("attention" in f.excluded for f in FAMILIES if f.excluded)
    assert len(torchvision_cnns()) == 68


@pytest.mark.parametrize("family", [f for f in FAMILIES if not f.excluded], ids=lambda f: f.module)
def test_each_cnn_family_holds_its_class_scores_in_the_named_classifier(family):
    try:
        with torch.device("meta"):
            net = torchvision.models.get_model(family.models[0], weights=None, num_classes=37)
    except NotImplementedError:  # RegNet computes its widths with tensors while it builds
        net = torchvision.models.get_model(family.models[0], weights=None, num_classes=37)
    classifier = getattr(net, family.classifier)
    last = [m for m in classifier.modules() if isinstance(m, (nn.Linear, nn.Conv2d))][-1]
    assert (last.out_features if isinstance(last, nn.Linear) else last.out_channels) == 37


def test_registry_backbones_that_torchvision_provides_are_counted_as_torchvision():
    names = {s.name for s in registry_backbones()}
    assert "resnet18" not in names and "mobilenet_v2" not in names
    assert {"cifar_standard", "cifar_depthwise", "tiny_standard", "tiny_depthwise", "resnet18_moeconv"} <= names
    assert resolve_model("resnet18").source == "torchvision"
    assert resolve_model("cifar_depthwise").source == "registry"


def test_unknown_names_are_refused_with_the_closest():
    with pytest.raises(RhoInputError) as info:
        resolve_model("convnext_tnyi")
    assert "'convnext_tiny'" in str(info.value) and "did you mean" in str(info.value)
    with pytest.raises(RhoInputError, match="transformer"):
        resolve_model("swin_t")
    assert did_you_mean("resnet181", ["resnet18", "resnet101", "vgg11"]) == " (did you mean 'resnet18' or 'resnet101'?)"
    assert did_you_mean("zzz", ["resnet18"]) == ""


@pytest.mark.slow
def test_the_command_module_imports_no_torch():
    code = "import sys, repro.cli.rho; print([m for m in ('torch', 'torchvision') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"

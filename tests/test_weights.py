"""Pretrained weights: one map, every missing file at once, local files checked against the published hash."""

import hashlib
import os

import pytest
import torch
import torchvision

from repro.core.settings import Settings
from repro.models import weights as W
from repro.models import BACKBONES


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch-home"))  # torch.hub's cache: torch reads it
    return tmp_path


def _weights_folders(value: str) -> tuple:
    """The folders $REPRO_WEIGHTS names, as the command's settings hold them."""
    return Settings.read({"REPRO_WEIGHTS": value}).weights


def _fake(folder, stem: str, payload: bytes):
    """A file named as torchvision names its weights: <stem>-<sha256 prefix>.pth."""
    prefix = hashlib.sha256(payload).hexdigest()[:8]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}-{prefix}.pth"
    path.write_bytes(payload)
    return path


def test_each_backbones_weights_are_a_field_of_its_registry_entry_and_name_real_torchvision_weights():
    assert W.weights_for("resnet18_moeconv") == W.weights_for("resnet18") == "ResNet18_Weights"
    assert W.weights_for("cifar_standard") is None
    assert W.pretrained_backbones() == {
        "mobilenet_v2": "MobileNet_V2_Weights",
        "resnet18": "ResNet18_Weights",
        "resnet18_moeconv": "ResNet18_Weights",
    }
    for backbone, enum in W.pretrained_backbones().items():
        assert BACKBONES.get(backbone).info.weights == enum
        assert getattr(torchvision.models, enum).IMAGENET1K_V1.url.endswith(".pth")


def test_every_missing_file_is_listed_at_once(empty_cache):
    with pytest.raises(W.WeightsMissing) as info:
        W.require_all_weights(["resnet18", "mobilenet_v2", "resnet18_moeconv", "cifar_standard"])
    text = str(info.value)
    assert text.startswith("2 pretrained weights files cannot be used")
    assert "'resnet18', 'resnet18_moeconv'" in text
    assert "resnet18-f37072fd.pth" in text and "mobilenet_v2-b0353104.pth" in text
    assert "REPRO_WEIGHTS" in text
    assert W.require_all_weights(["cifar_standard", "tiny_standard"]) == {}  # nothing pretrained: nothing needed


def test_a_file_that_fails_the_published_hash_is_refused_by_name(empty_cache, monkeypatch):
    folder = empty_cache / "mine"
    folder.mkdir()
    bad = folder / "resnet18-f37072fd.pth"
    bad.write_bytes(b"not the published weights")
    status = W.weights_status("resnet18", _weights_folders(str(folder)))
    assert status.found and not status.present and status.path == bad
    with pytest.raises(
        W.WeightsMissing,
        match=r"resnet18-f37072fd\.pth.*does not start with the published prefix "
        r"f37072fd",
    ):
        W.require_weights("resnet18", _weights_folders(str(folder)))


@pytest.mark.parametrize("layout", ["folder", "hub_folder", "file"])
def test_a_local_file_or_folder_with_the_right_hash_is_used(empty_cache, monkeypatch, layout):
    folder = empty_cache / "mine"
    path = _fake(folder / "hub" / "checkpoints" if layout == "hub_folder" else folder, "resnet18", b"weights v1")
    monkeypatch.setattr(W, "weights_url", lambda b: f"https://download.pytorch.org/models/{path.name}")
    source = path if layout == "file" else folder
    assert W.require_all_weights(["resnet18"], sources=[source]) == {"resnet18": path}
    assert W.require_weights("resnet18", _weights_folders(f"{empty_cache / 'elsewhere'}{os.pathsep}{source}")) == path


def test_the_torch_hub_cache_is_checked_too(empty_cache, monkeypatch):
    cached = _fake(empty_cache / "torch-home" / "hub" / "checkpoints", "resnet18", b"cached")
    monkeypatch.setattr(W, "weights_url", lambda b: f"https://download.pytorch.org/models/{cached.name}")
    assert W.require_weights("resnet18") == cached
    cached.write_bytes(b"cached, then damaged")
    with pytest.raises(W.WeightsMissing, match=str(cached)):
        W.require_weights("resnet18")


def test_a_pretrained_backbone_loads_the_checked_file(empty_cache, monkeypatch):
    torch.manual_seed(0)
    reference = torchvision.models.mobilenet_v2(weights=None)
    import io

    buf = io.BytesIO()
    torch.save(reference.state_dict(), buf)
    path = _fake(empty_cache / "mine", "mobilenet_v2", buf.getvalue())
    monkeypatch.setattr(W, "weights_url", lambda b: f"https://download.pytorch.org/models/{path.name}")
    found = W.require_weights("mobilenet_v2", _weights_folders(str(path.parent)))  # what a run starts from
    assert found == path
    body = BACKBONES.get("mobilenet_v2").builder((3, 32, 32), pretrained=found)
    for name, tensor in reference.features.state_dict().items():
        assert torch.equal(body.net.features.state_dict()[name], tensor)


def test_the_published_url_is_torchvisions_and_is_cached_per_version(tmp_path, monkeypatch):
    import json

    from repro.models.weights import published_url, weights_url

    url = "https://download.pytorch.org/models/resnet18-f37072fd.pth"
    assert published_url("resnet18", tmp_path) == weights_url("resnet18") == url
    cached = json.loads((tmp_path / "sources" / "weights.json").read_text())
    assert cached["urls"] == {"resnet18": weights_url("resnet18")}
    cached["urls"]["resnet18"] = "https://example.org/resnet18-00000000.pth"  # read back, not asked again
    (tmp_path / "sources" / "weights.json").write_text(json.dumps(cached))
    assert published_url("resnet18", tmp_path) == "https://example.org/resnet18-00000000.pth"
    cached["torchvision"] = "0.0"  # another torchvision: its own URL again
    (tmp_path / "sources" / "weights.json").write_text(json.dumps(cached))
    assert published_url("resnet18", tmp_path) == weights_url("resnet18")

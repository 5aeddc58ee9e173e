"""Tiny-ImageNet read from a small copy of the official zip's layout."""

import pytest
import torch
from PIL import Image

from repro.data.layout import DatasetMissing
from repro.data.tiny_imagenet import tiny_imagenet_files, tiny_imagenet_tensors

# wnids.txt lists classes unsorted; indices follow the sorted order: n01 -> 0, n02 -> 1, n03 -> 2.
WNIDS = ["n03", "n01", "n02"]
COLOURS = {"n01": (250, 10, 10), "n02": (10, 250, 10), "n03": (10, 10, 250)}
VAL = [("val_0.JPEG", "n02"), ("val_1.JPEG", "n03"), ("val_2.JPEG", "n01"), ("val_3.JPEG", "n02")]


def make_tiny_imagenet(root, per_class=2):
    """Solid-colour 64x64 JPEGs, one colour per class; n03's second image is greyscale."""
    folder = root / "tiny-imagenet-200"
    (folder / "val" / "images").mkdir(parents=True)
    (folder / "wnids.txt").write_text("\n".join(WNIDS) + "\n")
    for w in WNIDS:
        images = folder / "train" / w / "images"
        images.mkdir(parents=True)
        (folder / "train" / w / f"{w}_boxes.txt").write_text("")
        for i in range(per_class):
            image = Image.new("RGB", (64, 64), COLOURS[w])
            (image.convert("L") if (w, i) == ("n03", 1) else image).save(images / f"{w}_{i}.JPEG")
    lines = []
    for file, w in VAL:
        Image.new("RGB", (64, 64), COLOURS[w]).save(folder / "val" / "images" / file)
        lines.append(f"{file}\t{w}\t0\t0\t63\t63")
    (folder / "val" / "val_annotations.txt").write_text("\n".join(lines) + "\n")
    return folder


def test_val_labels_come_from_the_annotations_file(tmp_path):
    images, labels = tiny_imagenet_tensors(make_tiny_imagenet(tmp_path).parent, train=False)
    assert images.shape == (4, 3, 64, 64) and images.dtype == torch.uint8
    assert labels.tolist() == [1, 2, 0, 1]
    assert labels[2] == 0  # val_2.JPEG is annotated n01, the first sorted wnid
    red = images[2].float().mean((1, 2))  # (C,): JPEG keeps a solid colour to within a few levels
    assert (red - torch.tensor(COLOURS["n01"]).float()).abs().max() < 6


def test_train_images_take_their_folder_class(tmp_path):
    images, labels = tiny_imagenet_tensors(make_tiny_imagenet(tmp_path).parent, train=True, workers=2)
    assert labels.tolist() == [0, 0, 1, 1, 2, 2]
    means = images.float().mean((2, 3))  # (N, C)
    for i, w in enumerate(["n01", "n01", "n02", "n02", "n03"]):
        assert (means[i] - torch.tensor(COLOURS[w]).float()).abs().max() < 6
    grey = means[5]  # greyscale JPEG decoded to 3 equal channels
    assert grey[0] == grey[1] == grey[2]


def test_file_listing_matches_layout(tmp_path):
    folder = make_tiny_imagenet(tmp_path)
    paths, labels = tiny_imagenet_files(folder, train=False)
    assert [p.name for p in paths] == [f for f, _ in VAL]
    assert all(p.parent == folder / "val" / "images" for p in paths)


def test_wrong_image_size_is_named(tmp_path):
    folder = make_tiny_imagenet(tmp_path)
    Image.new("RGB", (32, 32)).save(folder / "val" / "images" / "val_1.JPEG")
    with pytest.raises(ValueError, match=r"val_1\.JPEG.*64x64"):
        tiny_imagenet_tensors(tmp_path, train=False)


def test_missing_annotations_are_named(tmp_path):
    (make_tiny_imagenet(tmp_path) / "val" / "val_annotations.txt").unlink()
    with pytest.raises(DatasetMissing, match="val/val_annotations.txt"):
        tiny_imagenet_tensors(tmp_path, train=False)

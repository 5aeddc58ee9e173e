"""ImageFolder trees (ImageNet's train/val and any other) through the streaming loader."""

import numpy as np
import pytest
import torch
from PIL import Image

from repro.data.imagenet import image_folder, image_folder_loader, image_folder_loaders, imagenet_loader
from repro.data.layout import DatasetMissing

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
COLOURS = {"bird": (200, 40, 0), "cat": (0, 100, 255)}  # sorted: bird -> 0, cat -> 1


def make_tree(root, sizes=((40, 30), (50, 50), (36, 64))):
    """Solid-colour images of mixed sizes: any crop or resize leaves the colour unchanged."""
    for cls, colour in COLOURS.items():
        (root / cls).mkdir(parents=True)
        for i, size in enumerate(sizes):
            Image.new("RGB", size, colour).save(root / cls / f"{i}.png")
    return root


def expected(colour):
    return (torch.tensor(colour) / 255 - torch.tensor(MEAN)) / torch.tensor(STD)


def test_eval_batches_are_resized_centre_cropped_and_normalised(tmp_path):
    loader = image_folder_loader(make_tree(tmp_path), 4, train=False, image_size=32, workers=0)
    batches = list(loader)
    assert len(loader) == 2 and [len(y) for _, y in batches] == [4, 2]
    x = torch.cat([b[0] for b in batches])  # (6, 3, 32, 32)
    y = torch.cat([b[1] for b in batches])
    assert x.shape == (6, 3, 32, 32) and x.dtype == torch.float32
    assert y.tolist() == [0, 0, 0, 1, 1, 1]
    for i, cls in enumerate(["bird"] * 3 + ["cat"] * 3):
        assert torch.allclose(x[i], expected(COLOURS[cls]).view(3, 1, 1).expand(3, 32, 32), atol=1e-5)


def test_train_batches_are_shuffled_random_resized_crops(tmp_path):
    loader = image_folder_loader(make_tree(tmp_path), 6, train=True, image_size=24, workers=0, seed=0)
    x, y = next(iter(loader))
    assert x.shape == (6, 3, 24, 24) and sorted(y.tolist()) == [0, 0, 0, 1, 1, 1]
    for xi, yi in zip(x, y):  # labels still match the images' colours after the shuffle
        colour = COLOURS[["bird", "cat"][yi]]
        assert torch.allclose(xi[:, 0, 0], expected(colour), atol=1e-5)


def test_set_epoch_replays_order_and_crops_with_workers(tmp_path):
    rng = np.random.default_rng(0)
    for cls in COLOURS:
        (tmp_path / cls).mkdir()
        for i in range(4):
            Image.fromarray(rng.integers(0, 256, (48, 48, 3), dtype=np.uint8)).save(tmp_path / cls / f"{i}.png")

    def make():
        return image_folder_loader(tmp_path, 4, train=True, image_size=16, workers=1, seed=3)

    first = make()
    epochs = [[x for x, _ in first] for _ in range(2)]
    assert not torch.equal(epochs[0][0], epochs[1][0])
    resumed = make()
    resumed.set_epoch(1)
    assert all(torch.equal(a, b) for a, b in zip(epochs[1], [x for x, _ in resumed]))


def test_image_folder_numbers_classes_in_sorted_order(tmp_path):
    dataset = image_folder(make_tree(tmp_path), train=False, image_size=32)
    assert dataset.class_to_idx == {"bird": 0, "cat": 1} and len(dataset) == 6
    image, label = dataset[4]
    assert image.dtype == torch.uint8 and image.shape == (3, 32, 32) and label == 1
    with pytest.raises(FileNotFoundError, match="<class>"):
        image_folder(tmp_path / "absent")


def test_image_folder_subset_is_seeded_and_stratified(tmp_path):
    make_tree(tmp_path, sizes=[(10, 10)] * 5)
    dataset = image_folder(tmp_path, n=4, seed=0)
    assert sorted(dataset.targets) == [0, 0, 1, 1]
    assert dataset.samples == image_folder(tmp_path, n=4, seed=0).samples
    assert [label for _, label in dataset.samples] == dataset.targets


def test_imagenet_loader_reads_the_train_and_val_trees(tmp_path):
    for split in ("train", "val"):
        for i in range(1000):
            folder = tmp_path / "imagenet" / split / f"n{i:08d}"
            folder.mkdir(parents=True)
            Image.new("RGB", (8, 8), (i % 256, 0, 0)).save(folder / "a.png")
    val = imagenet_loader(tmp_path, "val", 250, image_size=8, workers=0)
    assert len(val) == 4
    x, y = next(iter(val))
    assert y.tolist() == list(range(250))
    assert torch.allclose(x[7, 0], torch.full((8, 8), expected((7, 0, 0))[0].item()), atol=1e-5)
    assert len(imagenet_loader(tmp_path, "train", 300, image_size=8, workers=0)) == 3  # drops 100
    train, test = image_folder_loaders("imagenet", tmp_path, 100, 8, train_samples=300, test_samples=150, workers=0)
    assert (len(train), len(test)) == (3, 2)
    labels = torch.cat([y for _, y in test])
    assert len(labels) == 150 and labels.unique().numel() == 150  # one image per class: 150 classes


def test_imagenet_loader_without_data_says_how_to_fill(tmp_path):
    with pytest.raises(DatasetMissing, match="ILSVRC2012_img_train.tar"):
        imagenet_loader(tmp_path, "train", 8)
    with pytest.raises(ValueError, match="load_tensors"):
        image_folder_loaders("cifar10", tmp_path, 8)

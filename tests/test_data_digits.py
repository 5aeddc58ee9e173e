"""The digits stand-in: real scans, dataset-shaped, balanced, deterministic, disjoint splits, chance 1 / K."""

import pytest
import torch

from repro.data import digits
from repro.data.specs import DATASETS
from repro.plan.run_config import RunConfig
from repro.train.run_data import make_data


@pytest.mark.parametrize(
    "name,size,d", [("cifar10", 16, 1), ("cifar100", 16, 2), ("tiny_imagenet", 24, 3), ("imagenet", 24, 3)]
)
def test_shape_dtype_balance_and_chance(name, size, d):
    spec = DATASETS[name]
    n = 3 * spec.num_classes + 7
    x, y = digits.digits_tensors(name, n, size, "train")
    assert x.shape == (n, spec.channels, size, size) and x.dtype == torch.uint8 and y.dtype == torch.int64
    counts = torch.bincount(y, minlength=spec.num_classes)
    assert len(counts) == spec.num_classes and counts.min() == 3 and counts.max() == 4  # balanced to within one
    assert digits.digits_per_image(spec.num_classes) == d
    assert digits.chance(name) == pytest.approx(1 / spec.num_classes)
    if d == 1:
        assert torch.equal(x[:, 0], x[:, 1]) and torch.equal(x[:, 1], x[:, 2])  # a grey digit
    else:
        assert not x[:, d:].any()  # channels past the number's digits are black


def test_deterministic():
    a = digits.digits_tensors("cifar100", 500, 16, "test")
    b = digits.digits_tensors("cifar100", 500, 16, "test")
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    c = digits.digits_tensors("cifar100", 500, 16, "train")
    assert not torch.equal(a[0], c[0])


def test_pools_are_disjoint_and_cover_every_scan():
    train, test = digits.pools("train"), digits.pools("test")
    for d in range(10):
        assert not set(train[d].tolist()) & set(test[d].tolist())
    every = torch.cat(train + test)
    assert len(every) == 1797 and len(set(every.tolist())) == 1797
    assert digits.pool_size("test") == 539  # 30% of each digit's scans, rounded
    _, labels = digits._scans()
    assert all((labels[train[d]] == d).all() and (labels[test[d]] == d).all() for d in range(10))


def _scan_set(split: str) -> set[bytes]:
    scans, _ = digits._scans()
    return {scans[i].numpy().tobytes() for p in digits.pools(split) for i in p.tolist()}


@pytest.mark.parametrize("name", ["cifar100", "tiny_imagenet", "imagenet"])
def test_each_channel_is_a_scan_of_its_split_showing_the_labels_digit(name):
    # At the scans' own 8 px, channel p of every image is a scan verbatim.
    scans, labels = digits._scans()
    by_bytes = {scans[i].numpy().tobytes(): int(labels[i]) for i in range(len(labels))}
    d = digits.digits_per_image(DATASETS[name].num_classes)
    for split in ("train", "test"):
        own = _scan_set(split)
        x, y = digits.digits_tensors(name, 300, 8, split)
        for img, label in zip(x, y.tolist()):
            cells = [img[p].numpy().tobytes() for p in range(d)]
            assert all(c in own for c in cells)
            assert [by_bytes[c] for c in cells] == [label // 10 ** (d - 1 - p) % 10 for p in range(d)]


def test_a_split_smaller_than_the_class_count_draws_distinct_random_classes():
    _, y = digits.digits_tensors("imagenet", 300, 8, "test")
    assert len(set(y.tolist())) == 300 and y.max() > 900 and y.min() < 100


def test_a_test_split_smaller_than_the_class_count_holds_only_trained_classes():
    _, train = digits.digits_tensors("imagenet", 512, 8, "train")
    _, test = digits.digits_tensors("imagenet", 500, 8, "test")
    assert len(set(train.tolist())) == 512 and len(set(test.tolist())) == 500
    assert set(test.tolist()) <= set(train.tolist())


def test_a_scan_repeats_only_after_its_whole_pool_is_used():
    x, y = digits.digits_tensors("cifar10", None, 8, "train")  # 8 px: the scans verbatim
    scans, _ = digits._scans()
    assert len(y) == digits.pool_size("train") == 1258
    for d, pool in enumerate(digits.pools("train")):
        used = {img.numpy().tobytes() for img in x[y == d, 0]}
        available = {scans[i].numpy().tobytes() for i in pool.tolist()}
        assert used <= available
        assert len(used) == min(int((y == d).sum()), len(available))


def test_make_data_digits_drops_flips_and_records_the_class_count():
    cfg = RunConfig(
        dataset="cifar100",
        backbone={"name": "cifar_standard", "params": {}},
        head={"name": "dense", "params": {}},
        seed=0,
        epochs=1,
        batch_size=32,
        optimizer="adam",
        lr=1e-3,
        momentum=0.0,
        schedule="constant",
        backbone_lr_scale=1.0,
        bf16=False,
        data="digits",
        train_samples=200,
        test_samples=100,
        image_size=16,
        pretrained=False,
        metric="final",
    )
    data = make_data(cfg, torch.device("cpu"), None)
    assert data.classes == 100 and 1 / data.classes == digits.chance("cifar100")
    assert data.train.flip is False and data.test.flip is True
    x, y = next(iter(data.test))
    assert x.shape == (32, 3, 16, 16) and x.dtype == torch.float32
    assert "CIFAR-100" in data.source and "2-digit" in data.source

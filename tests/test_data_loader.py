"""TensorLoader (order, coverage, determinism, resume) and seeded subsets."""

import torch

from repro.data.augment import normalize
from repro.data.loader import TensorLoader, subset

MEAN, STD = (0.5, 0.5, 0.5), (0.25, 0.25, 0.25)


def labelled_images(n=100, classes=10, size=32):
    """Image i is filled with the value i + 1, label i % classes: a batch shows which images it holds."""
    ids = torch.arange(n)
    images = (ids + 1).to(torch.uint8).view(n, 1, 1, 1).expand(n, 3, size, size).contiguous()
    return images, ids % classes


def ids_of(x):
    """Recover each image's id from its normalised centre pixel (no crop reaches it)."""
    return torch.round((x[:, 0, 16, 16] * STD[0] + MEAN[0]) * 255).long() - 1


def test_test_batches_keep_order_and_cover_everything():
    images, labels = labelled_images(100)
    loader = TensorLoader(images, labels, 32, train=False, mean=MEAN, std=STD)
    batches = list(loader)
    assert len(loader) == len(batches) == 4 and [len(y) for _, y in batches] == [32, 32, 32, 4]
    x = torch.cat([b[0] for b in batches])
    assert torch.equal(x, normalize(images, MEAN, STD))  # not augmented
    assert torch.equal(torch.cat([y for _, y in batches]), labels)


def test_train_batches_shuffle_keep_labels_aligned_and_drop_the_partial_batch():
    images, labels = labelled_images(100)
    loader = TensorLoader(images, labels, 32, train=True, mean=MEAN, std=STD, seed=0)
    batches = list(loader)
    assert len(loader) == len(batches) == 3 and all(x.shape == (32, 3, 32, 32) for x, _ in batches)
    ids = torch.cat([ids_of(x) for x, _ in batches])
    assert ids.unique().numel() == 96  # each image at most once
    assert not torch.equal(ids, torch.arange(96))  # shuffled
    assert torch.equal(torch.cat([y for _, y in batches]), ids % 10)
    zero = (0 - MEAN[0]) / STD[0]
    assert any((x == zero).any() for x, _ in batches)  # some crops show the zero padding
    loader = TensorLoader(images, labels, 32, train=True, mean=MEAN, std=STD, drop_last=False)
    assert torch.equal(torch.cat([ids_of(x) for x, _ in loader]).sort().values, torch.arange(100))


def test_a_split_smaller_than_a_batch_still_yields_it():
    images, labels = labelled_images(10)
    loader = TensorLoader(images, labels, 32, train=True, mean=MEAN, std=STD)
    assert len(loader) == 1 and len(next(iter(loader))[1]) == 10


def test_same_seed_same_batches_and_set_epoch_replays_an_epoch():
    images, labels = labelled_images(100)

    def make(seed):
        return TensorLoader(images, labels, 25, train=True, mean=MEAN, std=STD, seed=seed)

    first, again, other = make(0), make(0), make(1)
    epochs = [[x for x, _ in first] for _ in range(3)]
    assert all(torch.equal(a, b) for a, b in zip(epochs[0], [x for x, _ in again]))
    assert not torch.equal(epochs[0][0], epochs[1][0])  # each pass is a new epoch
    assert not torch.equal(epochs[0][0], next(iter(other))[0])
    resumed = make(0)
    resumed.set_epoch(2)
    assert all(torch.equal(a, b) for a, b in zip(epochs[2], [x for x, _ in resumed]))


def test_channels_last_output_and_thread_count_left_alone(two_threads):
    images, labels = labelled_images(40)
    threads = torch.get_num_threads()
    loader = TensorLoader(images, labels, 16, train=True, mean=MEAN, std=STD, channels_last=True)
    for x, _ in loader:
        assert x.is_contiguous(memory_format=torch.channels_last)
        assert torch.get_num_threads() == threads


def test_for_dataset_uses_the_dataset_statistics():
    images, labels = labelled_images(8)
    loader = TensorLoader.for_dataset("cifar100", images, labels, 8, train=False)
    assert loader.mean == (0.5071, 0.4865, 0.4409) and loader.std == (0.2673, 0.2564, 0.2762)


def test_subset_is_seeded_stratified_and_optional():
    images, labels = labelled_images(250, classes=10)
    labels = torch.where(torch.arange(250) < 150, 0, labels)  # class 0 dominates: 160 of 250
    x, y = subset(images, labels, 50, seed=0)
    assert torch.bincount(y, minlength=10).tolist() == [5] * 10
    assert torch.equal(y, labels[ids_of(normalize(x, MEAN, STD))])  # images travel with their labels
    x2, y2 = subset(images, labels, 50, seed=0)
    assert torch.equal(x, x2) and not torch.equal(x, subset(images, labels, 50, seed=1)[0])
    assert torch.bincount(subset(images, labels, 50, seed=0, stratified=False)[1], minlength=10)[0] > 20
    assert subset(images, labels, None)[0] is images


def reference_epoch(images, labels, batch_size, seed, epoch, padding=4):
    """The same epoch image by image: pad, crop at the drawn offset, mirror, normalise (torchvision's order)."""
    from repro.data.augment import draw_crop_flip
    from repro.data.loader import epoch_generator

    g = epoch_generator(seed, epoch)
    order = torch.randperm(len(labels), generator=g)
    dy, dx, flips = draw_crop_flip(len(labels), padding, g)
    out = []
    for b in range(len(labels) // batch_size):
        xs = []
        for k in range(b * batch_size, (b + 1) * batch_size):
            padded = torch.nn.functional.pad(images[order[k]], (padding,) * 4)
            crop = padded[:, dy[k] : dy[k] + 32, dx[k] : dx[k] + 32]
            xs.append(crop.flip(-1) if flips[k] else crop)
        out.append((normalize(torch.stack(xs), MEAN, STD), labels[order[b * batch_size : (b + 1) * batch_size]]))
    return out


def test_batches_equal_the_image_by_image_reference_in_both_crop_forms(monkeypatch):
    """The CPU (grouped copies) and GPU (one gather) forms give the same batches, bit for bit."""
    import repro.data.loader as loader_module
    from repro.data.augment import crop_flip_gather

    images = torch.randint(0, 256, (64, 3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    labels = torch.arange(64) % 10
    expected = reference_epoch(images, labels, 16, seed=5, epoch=1)
    for form in ("grouped", "gather"):
        if form == "gather":
            monkeypatch.setattr(loader_module, "crop_flip", crop_flip_gather)
        loader = TensorLoader(images, labels, 16, train=True, mean=MEAN, std=STD, seed=5)
        loader.set_epoch(1)
        got = list(loader)
        assert len(got) == 4
        assert all(torch.equal(x, ex) and torch.equal(y, ey) for (x, y), (ex, ey) in zip(got, expected))


def test_bf16_output_is_the_float32_batch_rounded_once():
    images, labels = labelled_images(48)

    def make(dtype):
        return TensorLoader(images, labels, 16, train=True, mean=MEAN, std=STD, seed=2, dtype=dtype, channels_last=True)

    for (x32, y32), (x16, y16) in zip(make(torch.float32), make(torch.bfloat16)):
        assert x16.dtype == torch.bfloat16 and x16.is_contiguous(memory_format=torch.channels_last)
        assert torch.equal(x16, x32.to(torch.bfloat16)) and torch.equal(y16, y32)
    test = TensorLoader(images, labels, 16, train=False, mean=MEAN, std=STD, dtype=torch.bfloat16)
    assert all(x.dtype == torch.bfloat16 for x, _ in test)
    assert test.pipeline == "tensor_cpu"


def test_the_split_is_moved_to_the_device_once():
    images, labels = labelled_images(32)
    loader = TensorLoader(images, labels, 16, train=True, mean=MEAN, std=STD, device="meta")
    assert loader.images.device.type == "meta" and loader.labels.device.type == "meta"
    assert loader.pipeline == "tensor_meta"

"""CIFAR through torchvision's own classes, on small files in CIFAR's pickle format."""

import hashlib
import pickle
from urllib.error import URLError

import numpy as np
import pytest
import torch
from torchvision.datasets import CIFAR10, CIFAR100

from repro.data.layout import DatasetInvalid, DatasetMissing, DatasetUnverified
from repro.data.tensors import load_tensors


def _write(path, obj):
    path.write_bytes(pickle.dumps(obj))
    return hashlib.md5(path.read_bytes()).hexdigest()


def make_cifar(root, cls, monkeypatch, per_file=4, classes=10):
    """A CIFAR folder whose image n has every pixel of channel c equal to (n + 10 c) % 256 and label n % classes.

    Returns the (train, test) images the files hold; torchvision's md5 lists are
    patched to the fixture's files (only in this test).
    """
    folder = root / cls.base_folder
    folder.mkdir(parents=True)
    label_key = "labels" if cls is CIFAR10 else "fine_labels"
    lists, written, n = {}, {}, 0
    for split, files in (("train", cls.train_list), ("test", cls.test_list)):
        lists[split], written[split] = [], []
        for name, _ in files:
            ids = np.arange(n, n + per_file)
            n += per_file
            data = (ids[:, None, None] + 10 * np.arange(3)[None, :, None]) % 256  # (n, C, 1)
            data = np.broadcast_to(data, (per_file, 3, 1024)).reshape(per_file, 3072).astype(np.uint8)
            md5 = _write(folder / name, {"data": data, label_key: (ids % classes).tolist()})
            lists[split].append([name, md5])
            written[split].append(torch.from_numpy(data.reshape(per_file, 3, 32, 32)))
    meta = dict(cls.meta)
    meta["md5"] = _write(folder / meta["filename"], {meta["key"]: [f"c{i}" for i in range(classes)]})
    monkeypatch.setattr(cls, "train_list", lists["train"])
    monkeypatch.setattr(cls, "test_list", lists["test"])
    monkeypatch.setattr(cls, "meta", meta)
    return torch.cat(written["train"]), torch.cat(written["test"])


@pytest.mark.parametrize("name, cls, classes", [("cifar10", CIFAR10, 10), ("cifar100", CIFAR100, 100)])
def test_loads_both_splits_through_torchvision(tmp_path, monkeypatch, name, cls, classes):
    train, test = make_cifar(tmp_path, cls, monkeypatch, classes=classes)
    images, labels = load_tensors(name, tmp_path, "train")
    assert images.dtype == torch.uint8 and images.shape == (4 * len(cls.train_list), 3, 32, 32)
    assert labels.dtype == torch.int64
    assert torch.equal(images, train)
    ids = train[:, 0, 0, 0].long()  # channel 0 holds the image's running number
    assert torch.equal(labels, ids % classes)
    assert torch.equal(images[1, :, 5, 7], torch.tensor([1, 11, 21], dtype=torch.uint8))  # CHW, not HWC
    images, labels = load_tensors(name, tmp_path, "test")
    assert torch.equal(images, test) and len(labels) == len(test)


def test_a_changed_file_fails_the_md5_check(tmp_path, monkeypatch):
    make_cifar(tmp_path, CIFAR10, monkeypatch)
    with open(tmp_path / "cifar-10-batches-py" / "data_batch_3", "ab") as f:
        f.write(b"\0")
    with pytest.raises(DatasetUnverified, match="md5") as err:
        load_tensors("cifar10", tmp_path, "train")
    assert "cifar-10-batches-py" in str(err.value)


def test_missing_cifar_names_the_folder(tmp_path):
    with pytest.raises(DatasetMissing, match="cifar-100-python"):
        load_tensors("cifar100", tmp_path, "test")


def test_failed_download_says_how_to_fill(tmp_path, monkeypatch):
    def offline(self):
        raise URLError("no network")

    monkeypatch.setattr(CIFAR10, "download", offline)
    with pytest.raises(DatasetMissing, match=r"download failed.*no network") as err:
        load_tensors("cifar10", tmp_path, "train", download=True)
    assert "download=True" in str(err.value) and str(tmp_path / "cifar-10-batches-py") in str(err.value)


class _Runs:
    """Pickles as a call of os.system: what a hostile batches.meta or data batch holds."""

    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        import os

        return os.system, (self.command,)


@pytest.mark.parametrize("file", ["batches.meta", "data_batch_2"])
def test_a_pickle_that_calls_a_function_is_refused_without_running_it(tmp_path, monkeypatch, file):
    """Issue 41, item 1: a batches.meta whose pickle called os.system(...) ran it under --allow-unverified-data,
    which the md5 error itself tells the user to pass."""
    from repro.data.check import check_dataset

    make_cifar(tmp_path, CIFAR10, monkeypatch)
    marker = tmp_path / "ran"
    path = tmp_path / "cifar-10-batches-py" / file
    hostile = _Runs(f"touch {marker}")
    path.write_bytes(pickle.dumps({"data": hostile, "labels": [0], "label_names": hostile}))
    check = check_dataset("cifar10", tmp_path, allow_unverified=True)
    assert not marker.exists()
    assert not check.ok and f"{path}: cannot read it as a CIFAR pickle" in check.problems[0]
    assert "it names posix.system, which a CIFAR batch never holds; refused without running it" in check.problems[0]
    if file.startswith("data"):  # the loader reads the batches (the meta file only the check reads)
        with pytest.raises(DatasetInvalid, match="posix.system"):
            load_tensors("cifar10", tmp_path, "train", allow_unverified=True)
    assert not marker.exists()


def test_pickles_of_protocol_2_as_cifar_ships_them_load(tmp_path, monkeypatch):
    """CIFAR's files are Python 2 pickles (protocol 2): NumPy's _reconstruct and, for bytes, _codecs.encode."""
    train, _ = make_cifar(tmp_path, CIFAR10, monkeypatch)
    folder = tmp_path / "cifar-10-batches-py"
    for name, _ in CIFAR10.train_list:
        entry = pickle.loads((folder / name).read_bytes())
        (folder / name).write_bytes(pickle.dumps({**entry, "batch_label": b"training batch"}, protocol=2))
    images, _ = load_tensors("cifar10", tmp_path, "train", allow_unverified=True)
    assert torch.equal(images, train)

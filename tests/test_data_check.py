"""The per-table data check looks at content: classes, split sizes, one decoded batch, md5s by file."""

import hashlib
import pickle

import pytest
import torch
from PIL import Image
from rich.text import Text
from torchvision.datasets import CIFAR10

from repro.data import cifar
from repro.data.check import DatasetInvalid, check_dataset, check_datasets
from repro.data.cifar import DatasetUnverified
from repro.data.layout import DatasetMissing, how_to_fill, require, status
from repro.data.tensors import load_tensors
from test_data_cifar import make_cifar


def renders_verbatim(message):
    """rich takes [..] for markup: a message must come out of console.print with every character."""
    return Text.from_markup(message).plain == message


def corrupt(folder, name):
    with open(folder / name, "ab") as f:
        f.write(b"\0")
    return hashlib.md5((folder / name).read_bytes()).hexdigest()


def test_a_good_cifar_folder_states_classes_and_split_sizes(tmp_path, monkeypatch):
    make_cifar(tmp_path, CIFAR10, monkeypatch)  # 5 train files + 1 test file of 4 images each
    check = check_dataset("cifar10", tmp_path)
    assert check.ok and check.classes == 10 and (check.train_size, check.test_size) == (20, 4)
    assert check.checksum == "md5 verified" and check.unverified == ()
    assert check.sizes() == "20 train / 4 test"
    assert check.notes == ("split sizes differ from the paper's 50,000 train / 10,000 test",)
    assert check.summary().startswith("CIFAR-10: 10 classes, 20 train / 4 test, one batch decoded, md5 verified")
    assert check.raise_if_failed() is check


def test_our_reader_gives_torchvisions_arrays(tmp_path, monkeypatch):
    make_cifar(tmp_path, CIFAR10, monkeypatch)
    for train in (True, False):
        theirs = CIFAR10(str(tmp_path), train=train)
        images, labels = load_tensors("cifar10", tmp_path, "train" if train else "test")
        assert torch.equal(images, torch.from_numpy(theirs.data).permute(0, 3, 1, 2))  # HWC -> CHW
        assert labels.tolist() == theirs.targets


def test_an_md5_mismatch_names_the_file_and_is_refused_unless_allowed(tmp_path, monkeypatch):
    make_cifar(tmp_path, CIFAR10, monkeypatch)
    folder = tmp_path / "cifar-10-batches-py"
    expected = dict(CIFAR10.train_list)["data_batch_3"]
    got = corrupt(folder, "data_batch_3")
    line = f"data_batch_3: md5 {got} != {expected}"

    refused = check_dataset("cifar10", tmp_path)
    assert not refused.ok and refused.unverified == (line,)
    message = refused.problems[0]
    # What failed (the file, both md5s), then the flag; no Python API; at most 6 lines
    assert f"  data_batch_3: md5 {got}\n" in message and f"expected {expected}\n" in message
    assert "1 of 7 files differ\n" in message and "Add --allow-unverified-data to train on them" in message
    assert "allow_unverified" not in message and "not here" not in message and len(message.splitlines()) <= 6
    with pytest.raises(DatasetUnverified) as err:
        refused.raise_if_failed()
    assert str(err.value) == message and not isinstance(err.value, DatasetMissing)
    with pytest.raises(DatasetUnverified) as err:  # the loaders say the same, naming the file
        load_tensors("cifar10", tmp_path, "train")
    assert f"  data_batch_3: md5 {got}\n" in str(err.value) and "1 of 6 files differ" in str(err.value)
    assert load_tensors("cifar10", tmp_path, "test")[0].shape == (4, 3, 32, 32)  # the test split is intact

    accepted = check_dataset("cifar10", tmp_path, allow_unverified=True)
    assert accepted.ok and accepted.checksum == "md5 mismatch accepted"
    assert f"unverified: {line}" in accepted.summary()
    assert accepted.provenance()["unverified"] == [line] and accepted.provenance()["train_size"] == 20


def test_allow_unverified_loads_without_computing_an_md5(tmp_path, monkeypatch):
    written, _ = make_cifar(tmp_path, CIFAR10, monkeypatch)
    corrupt(tmp_path / "cifar-10-batches-py", "data_batch_1")  # a trailing byte after the pickle: still loads

    def no_md5(*args):
        raise AssertionError("md5 computed although the data was accepted unverified")

    monkeypatch.setattr(cifar.hashlib, "md5", no_md5)
    images, _ = load_tensors("cifar10", tmp_path, "train", allow_unverified=True)
    assert torch.equal(images, written)


def test_an_unreadable_pickle_is_named(tmp_path, monkeypatch):
    make_cifar(tmp_path, CIFAR10, monkeypatch)
    (tmp_path / "cifar-10-batches-py" / "test_batch").write_bytes(b"not a pickle")
    check = check_dataset("cifar10", tmp_path, allow_unverified=True)
    assert not check.ok and str(tmp_path / "cifar-10-batches-py" / "test_batch") in check.problems[0]


@pytest.mark.parametrize("meta", [b"garbage", pickle.dumps([1, 2]), pickle.dumps({"other": []})])
def test_a_malformed_meta_file_is_invalid_not_missing(tmp_path, monkeypatch, meta):
    """The folder is there: a malformed batches.meta is named, with what was expected, and never 'not here'."""
    make_cifar(tmp_path, CIFAR10, monkeypatch)
    (tmp_path / "cifar-10-batches-py" / "batches.meta").write_bytes(meta)
    check = check_dataset("cifar10", tmp_path, allow_unverified=True)
    assert not check.ok and not check.missing
    with pytest.raises(DatasetInvalid) as err:
        check.raise_if_failed()
    assert not isinstance(err.value, DatasetMissing)
    text = str(err.value)
    assert text.startswith("CIFAR-10 cannot be used as it is:\n  ") and "batches.meta: " in text
    assert "DatasetMissing" not in text and "DatasetInvalid" not in text


def test_pickles_with_bytes_keys_are_read_as_the_cifar_sites_loader_reads_them(tmp_path, monkeypatch):
    """Issue 49: a batches.meta re-pickled after a load with encoding='bytes' holds b'label_names' (and batches
    b'data', b'labels'); it was refused with "no 'label_names' entry" although the names are there."""
    make_cifar(tmp_path, CIFAR10, monkeypatch)
    folder = tmp_path / "cifar-10-batches-py"
    for path in folder.iterdir():
        entry = pickle.loads(path.read_bytes())
        path.write_bytes(
            pickle.dumps({k.encode(): [n.encode() for n in v] if k == "label_names" else v for k, v in entry.items()})
        )
    assert pickle.loads((folder / "batches.meta").read_bytes())[b"label_names"][:2] == [b"c0", b"c1"]
    assert cifar.class_names("cifar10", folder) == [f"c{i}" for i in range(10)]
    check = check_dataset("cifar10", tmp_path, allow_unverified=True)
    assert check.ok and check.classes == 10 and (check.train_size, check.test_size) == (20, 4), check.problems


def make_tiny(root, wnids, per_class=1, val=3):
    folder = root / "tiny-imagenet-200"
    (folder / "val" / "images").mkdir(parents=True)
    (folder / "wnids.txt").write_text("\n".join(wnids) + "\n")
    for k, w in enumerate(wnids):
        (folder / "train" / w / "images").mkdir(parents=True)
        for i in range(per_class):
            Image.new("RGB", (64, 64), (k % 256, 0, 0)).save(folder / "train" / w / "images" / f"{w}_{i}.JPEG")
    lines = []
    for i in range(val):
        Image.new("RGB", (64, 64), (0, i, 0)).save(folder / "val" / "images" / f"val_{i}.JPEG")
        lines.append(f"val_{i}.JPEG\t{wnids[i % len(wnids)]}\t0\t0\t63\t63")
    (folder / "val" / "val_annotations.txt").write_text("\n".join(lines) + "\n")
    return folder


def test_tiny_imagenet_with_10_wnids_passes_presence_but_not_the_check(tmp_path):
    make_tiny(tmp_path, [f"n{i:08d}" for i in range(10)])
    assert status("tiny_imagenet", tmp_path).present  # today's check only looks for the listed folders
    check = check_dataset("tiny_imagenet", tmp_path)
    assert not check.ok and check.classes == 10
    assert check.problems[0].startswith("10 classes found, Tiny-ImageNet has 200")
    with pytest.raises(DatasetInvalid, match="10 classes found"):
        check.raise_if_failed()


def test_a_complete_tiny_imagenet_passes_and_states_its_sizes(tmp_path):
    make_tiny(tmp_path, [f"n{i:08d}" for i in range(200)], val=4)
    check = check_dataset("tiny_imagenet", tmp_path)
    assert check.ok and check.classes == 200 and check.sizes() == "200 train / 4 val"
    assert check.checksum == "no checksum published"


def test_a_zero_byte_image_is_named_by_the_check(tmp_path):
    folder = make_tiny(tmp_path, [f"n{i:08d}" for i in range(200)], val=4)
    (folder / "val" / "images" / "val_2.JPEG").write_bytes(b"")
    check = check_dataset("tiny_imagenet", tmp_path)
    assert not check.ok
    assert f"{folder / 'val' / 'images' / 'val_2.JPEG'}: cannot decode this image (0 bytes" in check.problems[0]


def test_an_annotation_with_an_unknown_wnid_is_named_with_its_line(tmp_path):
    folder = make_tiny(tmp_path, [f"n{i:08d}" for i in range(200)], val=4)
    with open(folder / "val" / "val_annotations.txt", "a") as f:
        f.write("val_9.JPEG\tn99999999\t0\t0\t1\t1\n")
    check = check_dataset("tiny_imagenet", tmp_path)
    assert not check.ok and "val_annotations.txt, line 5" in check.problems[0] and "n99999999" in check.problems[0]


def test_imagenet_folders_are_counted_and_a_batch_decoded(tmp_path):
    for split, n in (("train", 2), ("val", 1)):
        for i in range(1000):
            folder = tmp_path / "imagenet" / split / f"n{i:08d}"
            folder.mkdir(parents=True)
            for j in range(n if i < 8 else 1):
                Image.new("RGB", (6, 5), (i % 256, 0, 0)).save(folder / f"{j}.JPEG")
    check = check_dataset("imagenet", tmp_path)
    assert check.ok and check.classes == 1000 and check.sizes() == "1,008 train / 1,000 val"
    (tmp_path / "imagenet" / "train" / "n00000003" / "0.JPEG").write_bytes(b"")
    check = check_dataset("imagenet", tmp_path)
    assert not check.ok and "n00000003/0.JPEG: cannot decode this image (0 bytes" in check.problems[0]


def test_missing_data_is_a_failed_check_that_says_how_to_fill(tmp_path):
    (check,) = check_datasets(["imagenet", "imagenet"], tmp_path)  # once per dataset, not per row
    assert not check.ok and "ILSVRC2012_img_train.tar" in check.problems[0]
    with pytest.raises(DatasetMissing):
        check.raise_if_failed()


def test_every_data_message_survives_rich_markup(tmp_path, monkeypatch):
    messages = [how_to_fill(name, tmp_path) for name in ("cifar10", "cifar100", "tiny_imagenet", "imagenet")]
    for name in ("cifar10", "tiny_imagenet", "imagenet"):
        with pytest.raises(DatasetMissing) as err:
            require(name, tmp_path)
        messages.append(str(err.value))
    assert "(data root: the given path, else $REPRO_DATA, else ./data)" in messages[-1]
    assert "tv.datasets.ImageNet(" in messages[3] and "split='val')" in messages[3]
    make_cifar(tmp_path, CIFAR10, monkeypatch)
    corrupt(tmp_path / "cifar-10-batches-py", "test_batch")
    messages += list(check_dataset("cifar10", tmp_path).problems)
    messages.append(check_dataset("cifar10", tmp_path, allow_unverified=True).summary())
    for message in messages:
        assert renders_verbatim(message), message

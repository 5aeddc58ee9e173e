"""Data root, cache dir, and the presence checks behind `repro data` and the pre-flight."""

from pathlib import Path

import pytest

from repro.core.settings import Settings
from repro.data.layout import TINY_IMAGENET_URL, DatasetMissing, data_root, data_status, dataset_dir, require, status


def test_data_root_precedence(tmp_path):
    """--data-dir, else $REPRO_DATA (the command's settings), else ./data; the library takes the one it is given."""
    assert data_root(None) == Path("data") == data_root(Settings.read({}).data)
    assert data_root(Settings.read({"REPRO_DATA": str(tmp_path / "env")}).data) == tmp_path / "env"
    assert data_root(tmp_path / "arg") == tmp_path / "arg"
    assert data_root("~/somewhere") == Path.home() / "somewhere"


def test_cache_dir_precedence(tmp_path):
    assert Settings.read({"XDG_CACHE_HOME": str(tmp_path / "xdg")}).cache == tmp_path / "xdg" / "repro"
    assert Settings.read({}).cache == Path.home() / ".cache" / "repro" == Settings().cache
    both = {"REPRO_CACHE": str(tmp_path / "c"), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert Settings.read(both).cache == tmp_path / "c"


def test_empty_root_reports_every_dataset_missing(tmp_path):
    statuses = data_status(tmp_path)
    assert [s.name for s in statuses] == ["cifar10", "cifar100", "tiny_imagenet", "imagenet"]
    assert not any(s.present for s in statuses)
    assert [s.path for s in statuses] == [
        tmp_path / f for f in ("cifar-10-batches-py", "cifar-100-python", "tiny-imagenet-200", "imagenet")
    ]
    assert [s.name for s in data_status(tmp_path, ["tiny_imagenet"])] == ["tiny_imagenet"]


@pytest.mark.parametrize(
    "name, folder, hint",
    [
        ("cifar10", "cifar-10-batches-py", "torchvision.datasets.CIFAR10("),
        ("cifar100", "cifar-100-python", "torchvision.datasets.CIFAR100("),
        ("tiny_imagenet", "tiny-imagenet-200", TINY_IMAGENET_URL),
        ("imagenet", "imagenet", "ILSVRC2012_img_val.tar"),
    ],
)
def test_require_names_dataset_folder_and_fill(tmp_path, name, folder, hint):
    with pytest.raises(DatasetMissing) as err:
        require(name, tmp_path)
    message = str(err.value)
    assert str(tmp_path / folder) in message and hint in message
    assert isinstance(err.value, RuntimeError)


def test_cifar_lists_the_missing_batch(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for f in ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_5", "test_batch", "batches.meta"]:
        (folder / f).write_bytes(b"x")
    assert status("cifar10", tmp_path).missing == ["data_batch_4"]
    (folder / "data_batch_4").write_bytes(b"x")
    assert require("cifar10", tmp_path) == folder


def test_tiny_imagenet_lists_what_is_missing(tmp_path):
    folder = tmp_path / "tiny-imagenet-200"
    (folder / "val" / "images").mkdir(parents=True)
    (folder / "wnids.txt").write_text("n01\nn02\n")
    (folder / "train" / "n01" / "images").mkdir(parents=True)
    assert status("tiny_imagenet", tmp_path).missing == ["val/val_annotations.txt", "train/n02/images/"]
    (folder / "val" / "val_annotations.txt").write_text("")
    (folder / "train" / "n02" / "images").mkdir(parents=True)
    assert status("tiny_imagenet", tmp_path).present


def test_imagenet_needs_a_thousand_class_folders_in_both_splits(tmp_path):
    folder = tmp_path / "imagenet"
    for i in range(1000):
        (folder / "train" / f"n{i:08d}").mkdir(parents=True)
    (folder / "val").mkdir()
    (folder / "val" / "ILSVRC2012_val_00000001.JPEG").write_bytes(b"")  # flat val: not yet sorted
    missing = status("imagenet", tmp_path).missing
    assert missing == ["val/<wnid>/ (1000 class folders expected, 0 found)"]
    for i in range(1000):
        (folder / "val" / f"n{i:08d}").mkdir()
    assert status("imagenet", tmp_path).present


def test_each_datasets_storage_and_folder_are_fields_of_its_spec():
    from repro.data.layout import cifar_class
    from repro.data.specs import DATASETS

    for spec in DATASETS.values():
        assert dataset_dir(spec.name, "/d") == Path("/d") / spec.folder
        if spec.storage == "cifar_pickles":  # the folder torchvision's class reads and downloads into
            assert cifar_class(spec).base_folder == spec.folder
        assert spec.in_memory == (spec.storage != "image_folders")
    assert {s.storage for s in DATASETS.values()} == {"cifar_pickles", "tiny_imagenet_files", "image_folders"}

"""load_tensors: split names, what it refuses, and the cache of decoded Tiny-ImageNet."""

import pytest
import torch

import repro.data.tensors as tensors
from repro.data.tensors import load_tensors
from test_data_tiny_imagenet import make_tiny_imagenet


def test_imagenet_is_not_loaded_into_memory(tmp_path):
    with pytest.raises(ValueError, match="image_folder_loader"):
        load_tensors("imagenet", tmp_path, "train")


def test_unknown_split_and_dataset(tmp_path):
    with pytest.raises(ValueError, match="'train' or 'test'"):
        load_tensors("cifar10", tmp_path, "validation")
    with pytest.raises(KeyError, match="did you mean 'cifar10'"):
        load_tensors("cifar-10", tmp_path, "train")


def test_cache_is_written_then_read_instead_of_decoding(tmp_path, monkeypatch):
    make_tiny_imagenet(tmp_path / "data")
    cache = tmp_path / "cache"
    images, labels = load_tensors("tiny_imagenet", tmp_path / "data", "val", cache=cache)
    files = sorted(p.name for p in cache.iterdir())
    assert len(files) == 1 and files[0].startswith("tiny_imagenet-test-") and files[0].endswith(".pt")

    def no_decoding(*args, **kwargs):
        raise AssertionError("decoded although the cache holds the split")

    monkeypatch.setattr(tensors, "tiny_imagenet_tensors", no_decoding)
    cached_images, cached_labels = load_tensors("tiny_imagenet", tmp_path / "data", "test", cache=cache)
    assert torch.equal(cached_images, images) and torch.equal(cached_labels, labels)
    with pytest.raises(AssertionError, match="decoded"):  # train has no cache entry yet
        load_tensors("tiny_imagenet", tmp_path / "data", "train", cache=cache)


def test_changed_source_files_invalidate_the_cache(tmp_path):
    folder = make_tiny_imagenet(tmp_path / "data")
    cache = tmp_path / "cache"
    _, labels = load_tensors("tiny_imagenet", tmp_path / "data", "test", cache=cache)
    annotations = folder / "val" / "val_annotations.txt"
    annotations.write_text(annotations.read_text().replace("val_2.JPEG\tn01", "val_2.JPEG\tn03"))
    _, relabelled = load_tensors("tiny_imagenet", tmp_path / "data", "test", cache=cache)
    assert labels[2] == 0 and relabelled[2] == 2
    assert len(list(cache.iterdir())) == 2


def test_unwritable_cache_warns_and_still_loads(tmp_path):
    make_tiny_imagenet(tmp_path / "data")
    cache = tmp_path / "cache"
    cache.write_text("a file where the cache folder should be")
    with pytest.warns(UserWarning, match="REPRO_CACHE"):
        _, labels = load_tensors("tiny_imagenet", tmp_path / "data", "test", cache=cache)
    assert labels.tolist() == [1, 2, 0, 1]

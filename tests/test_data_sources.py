"""repro.data.sources: each dataset's archives, checksums and sizes, read from torchvision and cached."""

import subprocess
import sys

import pytest

from repro.data import sources


@pytest.fixture
def cache(tmp_path):
    return tmp_path


def test_cifar_archives_carry_the_published_md5_and_the_files_checked_at_load(cache):
    c10 = sources.dataset_source("cifar10", cache)
    (archive,) = c10.archives
    # as the source's download page prints it (www.cs.toronto.edu/~kriz/cifar.html, "CIFAR-10 python version")
    assert (archive.file, archive.md5) == ("cifar-10-python.tar.gz", "c58f30108f718f92721af3b95e74349a")
    assert archive.url == "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    assert archive.size_bytes == c10.size_bytes == 170_498_071
    assert [f for f, _ in c10.checked_files] == [f"data_batch_{i}" for i in range(1, 6)] + [
        "test_batch",
        "batches.meta",
    ]
    assert [f for f, _ in sources.dataset_source("cifar100", cache).checked_files] == ["train", "test", "meta"]


def test_imagenet_lists_torchvisions_archives_and_says_which_size_it_lacks(cache):
    from torchvision.datasets.imagenet import ARCHIVE_META

    imagenet = sources.dataset_source("imagenet", cache)
    assert [(a.file, a.md5) for a in imagenet.archives] == list(ARCHIVE_META.values())
    assert imagenet.size_bytes == 147_897_477_120 + 6_744_924_160
    assert imagenet.unsized == ("ILSVRC2012_devkit_t12.tar.gz",)


def test_tiny_imagenet_has_no_published_checksum(cache):
    tiny = sources.dataset_source("tiny_imagenet", cache)
    assert [(a.file, a.md5) for a in tiny.archives] == [("tiny-imagenet-200.zip", "")]
    assert "no checksum" in tiny.checksum_note


def test_read_once_then_from_the_cache_without_torch(cache):
    first = sources.dataset_source("cifar100", cache)
    assert (cache / "sources" / "cifar100.json").is_file()
    code = (
        "import pathlib, sys; from repro.data.sources import dataset_source; "
        "s = dataset_source('cifar100', pathlib.Path(sys.argv[1])); "
        "print(s.archives[0].md5, [m for m in ('torch', 'torchvision') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(cache)], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == [first.archives[0].md5, "[]"]


def test_an_unknown_dataset_names_the_closest(cache):
    with pytest.raises(KeyError, match="did you mean 'cifar10'"):
        sources.dataset_source("cifar1O", cache)

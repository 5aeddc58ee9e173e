"""The one way a pickle from a data folder is read: an unpickler that resolves only the globals the format holds.

A pickle runs code while it loads: a file whose object reduces to os.system(...) calls it, before anything
could look at the result. CIFAR's batches (the only pickles a dataset folder holds here: torchvision's
format) name a handful of globals, all of them NumPy's way of rebuilding an array; `load_pickle` resolves
those and refuses any other (os.system, eval, a class of the file's own) with PickleRefused before it is
called. Counting a folder's images (repro.data.sizes) and reading its batches (repro.data.cifar) both load
through it, with or without --allow-unverified-data; tests/test_file_access.py fails on any other pickle load
in the package. Torch-free; NumPy is imported only when a batch names it.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

# The only globals CIFAR's pickles name: how NumPy rebuilds an array (under NumPy 1 and 2 module names, pickle
# protocol 2 and 5), and how protocol 2 stores bytes. Containers, strings and numbers need no global.
CIFAR_GLOBALS = frozenset(
    {
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy._core.numeric", "_frombuffer"),
        ("_codecs", "encode"),
    }
)


class PickleRefused(pickle.UnpicklingError):
    """A pickle that names a global outside the format: refused, and nothing it names was called."""


class RestrictedUnpickler(pickle.Unpickler):
    """pickle.Unpickler that resolves only `allowed` (module, name) globals."""

    def __init__(self, file: Any, allowed: frozenset[tuple[str, str]] = CIFAR_GLOBALS, **kwargs: Any) -> None:
        super().__init__(file, **kwargs)
        self.allowed = allowed

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self.allowed:
            raise PickleRefused(
                f"it names {module}.{name}, which a CIFAR batch never holds; refused without running it"
            )
        return super().find_class(module, name)


def load_pickle(path: str | Path, allowed: frozenset[tuple[str, str]] = CIFAR_GLOBALS) -> Any:
    """The object a pickle file holds, built from `allowed` globals only (latin1 strings, as CIFAR's Python 2
    pickles need). Raises PickleRefused, pickle's own errors for a damaged file, and OSError."""
    with open(path, "rb") as fh:
        return RestrictedUnpickler(fh, allowed, encoding="latin1").load()

"""The files the package ships beside its code (package data: manifests, the paper's values, profiles,
readings, templates, reference figures), found through importlib.resources, never through a checkout.

The package runs from files, a checkout or an installed wheel (not a zip archive), so what `files` gives is a
real path: the manifests folder is listed and each file read as a path. pyproject.toml's package-data names
every one of them; tests/test_wheel.py installs the wheel outside the checkout and runs the commands there.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def shipped(package: str, *parts: str) -> Path:
    """The file or folder `parts` inside `package` (e.g. shipped("repro", "manifests"))."""
    found = files(package).joinpath(*parts)
    if not isinstance(found, Path):  # a zip archive: the package is installed as files everywhere it runs
        raise RuntimeError(f"{package} is not installed as files ({found}); install it from a wheel or a checkout")
    return found


def import_folder() -> Path:
    """The folder `repro` is imported from (a checkout, or site-packages): a child Python with it first on its
    path (a Slurm task, a benchmark's child) imports this same package."""
    return shipped("repro").parent

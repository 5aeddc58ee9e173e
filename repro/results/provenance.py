"""Where a number came from: code version, package versions, device, time."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import platform
import subprocess
from functools import lru_cache
from pathlib import Path

from repro import __version__
from repro.core.devices import device_label, device_type
from repro.results.git_files import commit_from_files
from repro.results.timings import machine_load

PACKAGES = ("torch", "torchvision", "fvcore", "numpy", "scipy", "pandas", "jinja2", "typer", "rich")
NOT_A_CHECKOUT = "not a git checkout"  # the package runs from an installed wheel: no commit to name


def source_checkout() -> Path | None:
    """The git checkout the package is imported from (an editable install, a container's source tree), or None:
    an installed wheel, whose folder is site-packages."""
    root = Path(__file__).resolve().parents[2]  # repro/results/provenance.py -> the folder holding repro/
    return root if (root / ".git").exists() and (root / "pyproject.toml").is_file() else None


@lru_cache(maxsize=1)
def git_commit() -> str:
    """HEAD's hash, with '+dirty' when tracked files differ from it; where git cannot answer (a container
    image, whose build context holds .git's HEAD, refs and index but not its objects), the same read from
    those files (repro.results.git_files); else 'unknown'. Outside a checkout: 'not a git checkout'."""
    root = source_checkout()
    if root is None:
        return NOT_A_CHECKOUT
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        )
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return commit_from_files(root) or "unknown"


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version(), "repro": __version__}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def provenance(
    device: str = "cpu",
    threads: int | None = None,
    allow_unverified_data: bool = False,
    load_at_start: float | None = None,
) -> dict[str, object]:
    """threads: the intra-op threads the numbers were computed on (None: torch's current setting);
    allow_unverified_data: datasets whose files fail their published checksum were accepted; load_at_start: the
    load average when the work began (load_average())."""
    return {
        "git_commit": git_commit(),
        "packages": package_versions(),
        "device": device_label(device, threads),
        "device_type": device_type(device),
        "allow_unverified_data": allow_unverified_data,
        "platform": platform.platform(),
        "time": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        **machine_load(load_at_start),
    }

"""Where a number came from: code version, package versions, device, time."""

from __future__ import annotations

import datetime as dt
import os
import importlib.metadata
import platform
import subprocess
from functools import lru_cache

from repro import REPO_ROOT, __version__
from repro.devices import device_label, device_type
from repro.runtime import environment

PACKAGES = ("torch", "torchvision", "fvcore", "numpy", "scipy", "pandas", "jinja2", "typer", "rich")


@lru_cache(maxsize=1)
def git_commit() -> str:
    """HEAD's hash, with '+dirty' when tracked files differ from it; in an image built without
    .git, the commit it was built from ($REPRO_GIT_COMMIT); else 'unknown'."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT,
                               capture_output=True, text=True, check=True)
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return os.environ.get("REPRO_GIT_COMMIT") or "unknown"


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version(), "repro": __version__}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def provenance(device: str = "cpu", threads: int | None = None) -> dict[str, object]:
    """threads: the intra-op threads the numbers were computed on (None: torch's current setting)."""
    return {
        "git_commit": git_commit(),
        "packages": package_versions(),
        "device": device_label(device, threads),
        "device_type": device_type(device),
        # --allow-unverified-data: datasets whose files fail their published checksum were accepted.
        "allow_unverified_data": environment.value("REPRO_ALLOW_UNVERIFIED_DATA"),
        "platform": platform.platform(),
        "time": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }

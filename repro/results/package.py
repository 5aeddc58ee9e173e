"""`repro package`: one archive of a results profile folder, ready to deposit (Zenodo, an institution's archive).
Torch-free.

The archive (<results>/<profile>/package/repro-<profile>-<commit>.tar.gz by default) unpacks to one folder that
is an RO-Crate of its own (repro.results.crate), in the same profile:

    ro-crate-metadata.json     the crate: the folder's actions and files, with the run records inside
    <the profile folder>       tables, claims, figures, report, artifact appendix, actions.json, reproduce.sh
    runs/<hash>.json           every run record the folder's tables read
    source/                    the artifact's source at the commit: `git archive` of HEAD
    CITATION.cff, codemeta.json   how to cite the artifact, as committed at that commit

The source is HEAD's, so a tree whose tracked files differ from HEAD is refused (what the archive holds would not
be the code that is here); `allow_dirty` packs HEAD anyway and says so. The archive's sha256 is returned; the
command that calls this records it as an action of the folder, so the folder's own crate holds the archive with
that checksum. A folder's earlier archives (package/) are not packed again.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from repro.core import jsonfile
from repro.core.fsutil import FolderWriter, atomic_write_json
from repro.results.actions import ACTIONS_FILE, CRATE_FILE, listing, load_actions, sha256_file
from repro.results.crate import RUN_HASH, Layout, crate_metadata
from repro.results.measurements import RUNS_FOLDER

CITATION_FILE = "CITATION.cff"
CODEMETA_FILE = "codemeta.json"
PACKAGE_FOLDER = "package"  # inside the profile folder: the archives `repro package` wrote
SOURCE_FOLDER = "source"


class PackageError(ValueError):
    """The folder cannot be packed as it is: one line naming what and why."""


@dataclass(frozen=True)
class Package:
    path: Path
    sha256: str
    size: int
    commit: str
    files: int  # files in the archive
    records: int
    dirty: list[str]  # tracked files that differ from HEAD (packed anyway with allow_dirty)


def _git(source: Path, *args: str, text: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(source), *args], capture_output=True, text=text, check=True)


def source_root(start: Path | None = None) -> Path:
    """The git work tree that holds the `repro` package's source (PackageError when there is none)."""
    import repro

    start = start or Path(repro.__file__).resolve().parent
    try:
        return Path(_git(start, "rev-parse", "--show-toplevel").stdout.strip())
    except OSError as exc:
        raise PackageError(
            f"git cannot be run ({exc}): `repro package` archives the source with `git archive`"
        ) from None
    except subprocess.CalledProcessError as exc:
        # git's own words: "not a git repository", or a checkout another user owns ("dubious ownership", with the
        # `git config` line that allows it), which is a clone of the artifact all the same
        said = next((line.strip() for line in (exc.stderr or "").splitlines() if line.strip()), "no reason given")
        raise PackageError(
            f"git finds no work tree at {start} ({said}): `repro package` archives the source with `git archive`; "
            "run it from a clone of the artifact that git accepts"
        ) from None


def dirty_files(source: Path) -> list[str]:
    """Tracked files whose content differs from HEAD's."""
    out = _git(source, "status", "--porcelain", "--untracked-files=no").stdout
    return [line[3:] for line in out.splitlines() if line.strip()]


def default_archive(folder: Path, commit: str) -> Path:
    return Path(folder) / PACKAGE_FOLDER / f"repro-{Path(folder).name}-{commit[:12]}.tar.gz"


def records_read(folder: Path) -> set[str]:
    """The run hashes the folder's tables read (each results.json's details.runs)."""
    hashes: set[str] = set()
    for path in sorted(Path(folder).glob("*/results.json")):
        try:
            runs = (jsonfile.load(path, jsonfile.RESULT_MAX_BYTES).get("details") or {}).get("runs") or {}
        except (OSError, ValueError, AttributeError):
            raise PackageError(f"{path} cannot be read as a table's results; rerun `repro report` to rebuild it")
        named = {s.get("hash") for ss in runs.values() if isinstance(ss, list) for s in ss if isinstance(s, dict)}
        if bad := sorted(str(h) for h in named if not (isinstance(h, str) and RUN_HASH.fullmatch(h))):
            raise PackageError(f"{path} names a run record {bad[0][:40]!r} that is not a run's hash")
        hashes |= {h for h in named if isinstance(h, str)}  # every one, once `bad` is empty
    return hashes


def build_package(
    folder: Path, out: Path | None = None, source: Path | None = None, allow_dirty: bool = False
) -> Package:
    """Lay out the folder, its records, the source at HEAD and the citation files, write their crate, and pack
    them into one .tar.gz (written through the atomic writer)."""
    folder = Path(folder)
    source = source or source_root()
    dirty = dirty_files(source)
    if dirty and not allow_dirty:
        shown = ", ".join(dirty[:3]) + (f" and {len(dirty) - 3} more" if len(dirty) > 3 else "")
        raise PackageError(
            f"{len(dirty)} tracked file(s) in {source} differ from HEAD ({shown}): the archive would "
            "hold HEAD's source, not this code; commit them, or pass --allow-dirty"
        )
    commit = _git(source, "rev-parse", "HEAD").stdout.strip()
    hashes = records_read(folder)
    runs = folder.parent / RUNS_FOLDER
    missing = sorted(h for h in hashes if (runs / f"{h}.json").is_symlink() or not (runs / f"{h}.json").is_file())
    if missing:
        raise PackageError(
            f"{len(missing)} run record(s) the tables read are not files in {runs} (first: "
            f"{missing[0]}.json); rerun the table to write them"
        )
    out = out or default_archive(folder, commit)
    top = out.name.removesuffix(".tar.gz")
    try:  # the layout is staged beside the archive, on its disk
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = tempfile.TemporaryDirectory(prefix=".package-", dir=out.parent)
    except OSError as exc:  # a read-only folder, a file in the way: a traceback before
        raise PackageError(
            f"cannot write the archive in {out.parent}: {exc.strerror or exc}; choose another with --out"
        ) from None
    with staging as tmp:
        stage = Path(tmp) / top
        files = _stage(folder, stage, hashes, source, commit)
        layout = Layout(
            folder.name,
            stage,
            {p: stage / p for p in files},
            stage / RUNS_FOLDER,
            records_inside=True,
            folders={
                f"{SOURCE_FOLDER}/": {
                    "name": f"the repro-moe-rho source at commit {commit}",
                    "description": f"`git archive {commit}` of the artifact's repository",
                }
            },
        )
        atomic_write_json(stage / CRATE_FILE, crate_metadata(layout, load_actions(folder)))
        archive = Path(tmp) / "archive.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(stage, arcname=top)
        count = sum(1 for p in stage.rglob("*") if p.is_file())
        root = folder if out.absolute().is_relative_to(folder.absolute()) else out.parent  # never out of it
        FolderWriter(root).write_bytes(out, archive.read_bytes())
    return Package(out, sha256_file(out), out.stat().st_size, commit, count, len(hashes), dirty)


def _stage(folder: Path, stage: Path, hashes: set[str], source: Path, commit: str) -> list[str]:
    """Copy what the archive holds into `stage`; the crate paths of its files (the source is one folder)."""
    files = []
    for path in [*listing(folder), ACTIONS_FILE]:
        if path.split("/", 1)[0] == PACKAGE_FOLDER or not (folder / path).is_file():
            continue
        (stage / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(folder / path, stage / path)
        files.append(path)
    (stage / RUNS_FOLDER).mkdir(parents=True, exist_ok=True)
    for h in sorted(hashes):
        shutil.copyfile(folder.parent / RUNS_FOLDER / f"{h}.json", stage / RUNS_FOLDER / f"{h}.json")
    for name in (CITATION_FILE, CODEMETA_FILE):
        try:
            (stage / name).write_bytes(_git(source, "show", f"{commit}:{name}", text=False).stdout)
        except subprocess.CalledProcessError:
            raise PackageError(f"{name} is not in commit {commit[:12]} of {source}") from None
        files.append(name)
    archived = subprocess.run(
        ["git", "-C", str(source), "archive", "--format=tar", commit], capture_output=True, check=True
    ).stdout
    (stage / SOURCE_FOLDER).mkdir()
    import io

    with tarfile.open(fileobj=io.BytesIO(archived)) as tar:
        tar.extractall(stage / SOURCE_FOLDER, filter="data")
    return files

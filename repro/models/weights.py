"""Pretrained torchvision weights: where the files are, and their hashes.

Which backbones start from ImageNet weights, by the name of their torchvision weights enum
(IMAGENET1K_V1 of each), is a field of each backbone's registry entry (repro.models.catalog,
BackboneInfo.weights), read here torch-free. A file is looked up
in the folders or files of the `sources` argument (the command line passes
$REPRO_WEIGHTS's), then in torch.hub's cache ($TORCH_HOME/hub/checkpoints),
and is refused unless its sha256 starts with the hash prefix torchvision
publishes in the file name (torch.hub's check_hash rule).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from shlex import quote
from typing import Iterable

from repro.core.settings import DEFAULT_CACHE
from repro.models.catalog import BACKBONES, backbone_info
from repro.core.terminal import Step, as_lines

HASH_PREFIX = re.compile(r"-([a-f0-9]*)\.")  # torch.hub's HASH_REGEX: "resnet18-f37072fd.pth" -> f37072fd


def weights_for(backbone: str) -> str | None:
    """The torchvision weights enum a backbone's pretrained start uses, or None when it has none."""
    return backbone_info(backbone).weights


def pretrained_backbones() -> dict[str, str]:
    """Every backbone that starts from pretrained weights -> its torchvision weights enum."""
    return {e.name: e.info.weights for e in BACKBONES if e.info is not None and e.info.weights}


class WeightsMissing(RuntimeError):
    """Pretrained weights are needed but not found (or fail their hash), and cannot be downloaded here."""


@dataclass(frozen=True)
class WeightsStatus:
    backbone: str
    path: Path  # where the file was found, or where the cache expects it
    url: str
    found: bool
    problem: str = ""  # why a file that was found cannot be used (hash mismatch)

    @property
    def present(self) -> bool:
        return self.found and not self.problem

    @property
    def file_name(self) -> str:
        return self.url.rsplit("/", 1)[-1]

    @property
    def hash_prefix(self) -> str:
        """The start of the file's sha256 that torchvision publishes in its name (resnet18-f37072fd.pth)."""
        match = HASH_PREFIX.search(self.file_name)
        return match.group(1) if match else ""

    def fill_steps(self) -> list[Step]:
        """How to put the file where it is looked for: each step with its command (repro data prints them)."""
        return fill_steps([self])

    def message(self, backbones: Iterable[str] = ()) -> str:
        names = ", ".join(f"'{b}'" for b in (list(backbones) or [self.backbone]))
        if self.problem:
            return f"pretrained weights for {names} at {self.path}: {self.problem}"
        steps = as_lines(self.fill_steps())
        return (
            f"pretrained ImageNet weights for {names} ({self.file_name}) are not cached at {self.path} "
            f"nor in REPRO_WEIGHTS. To fill it,\n{steps}"
        )


def fill_steps(missing: list[WeightsStatus]) -> list[Step]:
    """How to put several weights files where they are looked for, in one set of steps: a download command per
    file, then one copy into the cache, one REPRO_WEIGHTS, one sha256sum for them all."""
    files = " ".join(w.file_name for w in missing)
    cache = quote(str(missing[0].path.parent))
    one = len(missing) == 1
    return [
        *(
            Step(
                "on a machine with internet, run:" if i == 0 else "",
                f"TORCH_HOME=/tmp/torch python -c \"import torch; torch.hub.load_state_dict_from_url('{w.url}')\"",
            )
            for i, w in enumerate(missing)
        ),
        Step(
            f"and copy {'it' if one else 'them'} from /tmp/torch/hub/checkpoints/ here, into the cache "
            "(in the container: the torch-cache volume):",
            f"mkdir -p {cache}",
        ),
        Step("", f"cp {files} {cache}/"),
        Step(
            "or set REPRO_WEIGHTS to the file or its folder (several: separated by ':'):",
            "export REPRO_WEIGHTS=/path/to/weights",
        ),
        Step(
            f"{'its sha256 must start with' if one else 'their sha256s must start with'} "
            f"{' and '.join(w.hash_prefix for w in missing)}:",
            f"sha256sum {files}",
        ),
    ]


def weights_url(backbone: str) -> str:
    import torchvision

    name = weights_for(backbone)
    if name is None:
        raise KeyError(
            f"backbone '{backbone}' has no pretrained weights; those that do: "
            f"{', '.join(sorted(pretrained_backbones()))}"
        )
    return getattr(torchvision.models, name).IMAGENET1K_V1.url


def published_url(backbone: str, cache: Path = DEFAULT_CACHE) -> str:
    """weights_url, read once per torchvision version and cached in the cache folder `cache` (repro.core.cache):
    no torch import after that."""
    from importlib.metadata import version

    from repro.core.cache import cache_dir, read_json, write_json

    path = cache_dir(cache, "sources") / "weights.json"
    cached = read_json(path)
    cached = cached if isinstance(cached, dict) and cached.get("torchvision") == version("torchvision") else {}
    stored = cached.get("urls")
    urls: dict[str, str] = stored if isinstance(stored, dict) else {}
    if not isinstance(urls.get(backbone), str):
        urls[backbone] = weights_url(backbone)
        write_json(path, {"torchvision": version("torchvision"), "urls": urls})
    return urls[backbone]


def _sources(sources: Iterable[str | Path] | None) -> list[Path]:
    return [Path(s).expanduser() for s in sources or ()]


def _candidates(file_name: str, sources: list[Path]) -> list[Path]:
    out = []
    for s in sources:
        if s.is_dir():
            out += [s / file_name, s / "hub" / "checkpoints" / file_name, s / "checkpoints" / file_name]
        elif s.name == file_name:
            out.append(s)
    return out


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def hash_problem(path: Path) -> str:
    """'' when the file's sha256 starts with the prefix in its name; otherwise what differs."""
    match = HASH_PREFIX.search(path.name)
    if match is None or not match.group(1):
        return "its name carries no hash prefix to check (expected a torchvision name such as resnet18-f37072fd.pth)"
    digest = sha256(path)
    if not digest.startswith(match.group(1)):
        return (
            f"sha256 {digest[:16]}... does not start with the published prefix {match.group(1)}: "
            "the file is damaged or is other weights; refusing it"
        )
    return ""


def weights_status(backbone: str, sources: Iterable[str | Path] | None = None) -> WeightsStatus:
    import torch

    url = weights_url(backbone)
    file_name = url.rsplit("/", 1)[-1]
    cached = Path(torch.hub.get_dir()) / "checkpoints" / file_name
    for path in [*_candidates(file_name, _sources(sources)), cached]:
        if path.is_file():
            return WeightsStatus(backbone, path, url, True, hash_problem(path))
    return WeightsStatus(backbone, cached, url, False)


def require_all_weights(backbones: Iterable[str], sources: Iterable[str | Path] | None = None) -> dict[str, Path]:
    """The weights file of every backbone that has pretrained weights; every missing or bad file in one error."""
    given = list(sources) if sources is not None else None
    statuses = [weights_status(b, given) for b in sorted({b for b in backbones if weights_for(b)})]
    bad: dict[Path, list[WeightsStatus]] = {}  # one line per file: backbones may share one (resnet18_moeconv)
    for status in statuses:
        if not status.present:
            bad.setdefault(status.path, []).append(status)
    if bad:
        lines = [group[0].message(s.backbone for s in group) for group in bad.values()]
        if len(lines) == 1:
            raise WeightsMissing(lines[0])
        listed = "\n".join(f"- {line}" for line in lines)
        raise WeightsMissing(f"{len(lines)} pretrained weights files cannot be used:\n{listed}")
    return {s.backbone: s.path for s in statuses}


def require_weights(backbone: str, sources: Iterable[str | Path] | None = None) -> Path:
    return require_all_weights([backbone], sources)[backbone]


def load_pretrained(backbone: str, sources: Iterable[str | Path] | None = None) -> dict:
    """The hash-checked ImageNet state dict of a backbone's torchvision network."""
    import torch

    return torch.load(require_weights(backbone, sources), map_location="cpu", weights_only=True)

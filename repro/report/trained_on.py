"""What a table's runs trained on, with the profile, seeds and epochs: the provenance of every per-table file.

`<table>.md`, `claims.md` and each `.tex` caption are the files people copy out of a results folder,
so each says it itself: synthetic data, the digit stand-in, the paper's dataset (checksums verified),
or unverified copies. The Markdown files name each file that failed with both md5s; a caption says how
many failed and names the file beside it that lists them (CHECKSUMS_FILE), so that it stays one line.
Read from the result as stored: the run summaries' own description of their data (RunSummary.data),
the data checks made before training (ManifestResult.data_checks), the profile as run. Torch-free.

What a profile's results are evidence of (label) is said in the words every output shares: figures carry it on
the image, per-table files in their provenance line, report.html on its first screen, so that a figure or table
copied out of the report still says whether it is a pipeline check or a result. The words come from the profile
as run (ManifestResult.profile_settings), never from its name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from repro.data.specs import get_dataset
from repro.plan.manifest import Manifest
from repro.spec.profiles import Profile
from repro.results.measurements import ManifestResult

_COMMIT = re.compile(r"[0-9a-f]{12}")  # a commit's hash, shortened to 12 characters where shown

DATA_WORDS = {
    "synthetic": "synthetic data",
    "digits": "real digit scans standing in for the datasets",
    "real": "the paper's datasets",
}
# Data with files that fail their published checksum, accepted with --allow-unverified-data.
UNVERIFIED_WORDS = "UNVERIFIED data (copies of the paper's datasets that fail their published checksums)"
EVIDENCE_WORDS = {
    "pipeline": "a pipeline check, not evidence",
    "functional": "a check that the methods learn real images, not evidence for the paper's claims",
    "reduced": "a reduced protocol",
    "paper": "the paper's protocol",
}


def decides_empirical(profile: Profile | None) -> bool:
    """Only the paper's datasets decide empirical claims (repro.claims.verdicts)."""
    return profile is not None and profile.evidence in ("reduced", "paper")


def _amount(profile: Profile) -> str:
    seeds = f"{profile.seeds} seed{'s' if profile.seeds != 1 else ''}" if profile.seeds else "the paper's seeds"
    # The epoch counts the profile states (its own and each dataset's): the span a reader needs, applied nowhere.
    stated = [profile.epochs, *(s.epochs for s in profile.datasets.values())]
    epochs = {e for e in stated if e is not None}
    if not epochs:
        return f"{seeds}, the paper's epochs"
    span = f"{min(epochs)}-{max(epochs)}" if len(epochs) > 1 else f"{next(iter(epochs))}"
    return f"{seeds} x {span} epochs"


def label(name: str, profile: Profile | None, unverified: bool = False) -> str:
    """'smoke: synthetic data, a pipeline check, not evidence'; a reduced protocol names its seeds and epochs.

    `unverified`: some dataset files failed their published checksum and were accepted
    (--allow-unverified-data), which the label then says."""
    if profile is None:
        return f"{name}: profile settings not recorded with the results"
    data = DATA_WORDS[profile.data]
    if unverified and profile.data == "real":
        data = UNVERIFIED_WORDS
    text = f"{name}: {data}, {EVIDENCE_WORDS[profile.evidence]}"
    if profile.evidence == "reduced":
        text += f" ({_amount(profile)})"
    return text


def commits_text(commits: set[str]) -> str:
    """'commit 1a2b3c4d5e6f' (12 characters, '+dirty' kept), or every commit when the results mix several."""
    short = sorted(
        {c[:12] + ("+dirty" if c.endswith("+dirty") else "") if _COMMIT.match(c) else c for c in commits if c}
    )  # else as written: "not a git checkout" (an installed wheel)
    if not short:
        return "commit unknown"
    return ("commit " if len(short) == 1 else "commits ") + ", ".join(short)


Kind = Literal["synthetic", "digits", "paper", "unverified", "unchecked"]
CHECKSUMS_SUFFIX = "_unverified_checksums.txt"  # <table id> + this, beside the table's files
KIND_WORDS = {
    "synthetic": "synthetic",
    "digits": "digit stand-in",
    "paper": "the paper's dataset",
    "unverified": "UNVERIFIED",
    "unchecked": "the paper's dataset, content check not recorded",
}


@dataclass(frozen=True)
class DataSource:
    """One dataset a table's runs trained on."""

    dataset: str  # the dataset's title, e.g. "CIFAR-10"
    kind: Kind
    described: tuple[str, ...]  # the run records' own words for their data
    checksum: str = ""  # the data check's: "md5 verified", "md5 mismatch accepted", ...
    unverified: tuple[str, ...] = ()  # "<file>: md5 <got> != <expected>", accepted with --allow-unverified-data

    def text(self, checksums_file: str = "") -> str:
        """`checksums_file`: count the failed checksums and name the file that lists them, instead of listing
        them here (a caption's one line)."""
        described = ": " + "; ".join(self.described) if self.described else ""
        if self.unverified and checksums_file:
            n = len(self.unverified)
            files = f"{n} files fail their" if n != 1 else "1 file fails its"
            return f"{self.dataset} (UNVERIFIED: {files} published md5, listed in {checksums_file}){described}"
        head = f"{self.dataset} ({KIND_WORDS[self.kind]}"
        head += f", {self.checksum})" if self.checksum and self.kind in ("paper", "unverified") else ")"
        if self.unverified:
            failed = "; ".join(self.unverified)
            head += f": files that fail their published checksum, accepted with --allow-unverified-data: {failed}"
        return head + described


@dataclass(frozen=True)
class TrainedOn:
    """A table's provenance: its profile and what that is evidence of, its data, seeds, epochs and commit."""

    profile: str
    evidence: str  # label
    sources: tuple[DataSource, ...]  # empty: the table trains nothing
    seeds: tuple[int, ...]
    epochs: tuple[tuple[str, int], ...]  # (dataset title, epochs), one per dataset trained
    runs: int
    commit: str
    measures: tuple[str, ...]
    manifest_id: str = ""

    @property
    def unverified(self) -> bool:
        return any(s.kind == "unverified" for s in self.sources)

    @property
    def checksums_file(self) -> str:
        """The file beside the table's files that lists every failed checksum ('' when none failed)."""
        return f"{self.manifest_id}{CHECKSUMS_SUFFIX}" if self.unverified else ""

    def checksums_text(self) -> str:
        """That file's text: each failed file with the md5 found and the one published."""
        lines = [
            f"# {self.manifest_id}: dataset files that fail their published md5 (torchvision's lists),",
            "# accepted with --allow-unverified-data. Each line: <file>: md5 <found> != <published>.",
        ]
        for s in self.sources:
            if s.unverified:
                lines += [s.dataset] + [f"  {u}" for u in s.unverified]
        return "\n".join(lines) + "\n"

    def data_text(self, short: bool = False) -> str:
        """`short`: failed checksums counted and referred to the checksums file (a caption's one line)."""
        if not self.sources:
            what = {"flops": "FLOP counts (analytic, no data)", "latency": "timings of random inputs"}
            return "no training runs: " + ", ".join(what.get(m, m) for m in self.measures if m in what)
        return "; ".join(s.text(self.checksums_file if short else "") for s in self.sources)

    def seeds_text(self) -> str:
        if not self.seeds:
            return "none"
        return ", ".join(str(s) for s in self.seeds) + f" ({self.runs} runs)"

    def epochs_text(self) -> str:
        values = {e for _, e in self.epochs}
        if len(values) <= 1:
            return str(next(iter(values), "none"))
        return ", ".join(f"{d} {e}" for d, e in self.epochs)

    def lines(self) -> list[tuple[str, str]]:
        """(what, value) pairs for the Markdown files."""
        return [
            ("Profile", f"`{self.profile}`: {self.evidence.split(': ', 1)[-1]}"),
            ("Trained on", self.data_text()),
            ("Seeds", self.seeds_text()),
            ("Epochs", self.epochs_text()),
            ("Code", self.commit),
        ]

    def sentence(self) -> str:
        """One sentence for a LaTeX caption."""
        data = self.data_text(short=True)
        parts = [f"Profile {self.evidence}", f"trained on {data}" if self.sources else data]
        if self.seeds:
            parts += [f"seeds {self.seeds_text()}", f"epochs {self.epochs_text()}"]
        return "; ".join(parts) + f"; {self.commit}."


def profile_as_run(manifest: Manifest, result: ManifestResult) -> Profile | None:
    """The profile as the table ran: stored with its result, else as the manifest holds it (already applied)."""
    return result.profile_settings or manifest.profiles.get(result.profile)


def trained_on(manifest: Manifest, result: ManifestResult) -> TrainedOn:
    settings = profile_as_run(manifest, result)
    data = settings.data if settings else "real"
    checks = {c.title: c for c in result.data_checks()}
    by_dataset: dict[str, list] = {}
    for row in manifest.rows:
        runs = result.measured.runs(row.id)
        if runs:
            by_dataset.setdefault(get_dataset(row.dataset).title, []).extend(runs)
    sources, epochs = [], []
    for title, runs in by_dataset.items():
        check = checks.get(title)
        if data in ("synthetic", "digits"):
            kind: Kind = data
        else:
            kind = "unchecked" if check is None else "unverified" if check.unverified else "paper"
        found = (check.checksum, check.unverified) if check else ("", ())  # the data check's, where one was made
        sources.append(DataSource(title, kind, tuple(sorted({r.data for r in runs if r.data})), *found))
        epochs.append((title, max(len(r.test_accuracy_by_epoch) for r in runs)))
    runs = [r for rs in by_dataset.values() for r in rs]
    unverified = any(s.kind == "unverified" for s in sources)
    commit = str(result.provenance.get("git_commit") or "")
    return TrainedOn(
        result.profile,
        label(result.profile, settings, unverified),
        tuple(sources),
        tuple(sorted({r.seed for r in runs})),
        tuple(epochs),
        len({r.hash for r in runs}),
        commits_text({commit}),
        tuple(sorted(manifest.measures())),
        manifest.id,
    )

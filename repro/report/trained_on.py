"""What a table's runs trained on, with the profile, seeds and epochs: the provenance of every per-table file.

`<table>.md`, `claims.md` and each `.tex` caption are the files people copy out of a results folder,
so each says it itself: synthetic data, the digit stand-in, the paper's dataset (checksums verified),
or unverified copies, naming the files that failed. Read from the result as stored: the run summaries'
own description of their data (RunSummary.data), the data checks made before training, the profile
as run. Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from repro.data.specs import get_dataset
from repro.plan.manifest import Manifest
from repro.spec.profiles import Profile
from repro.report.evidence import commits_text, label
from repro.results.measurements import ManifestResult

Kind = Literal["synthetic", "digits", "paper", "unverified", "unchecked"]
KIND_WORDS = {"synthetic": "synthetic", "digits": "digit stand-in", "paper": "the paper's dataset",
              "unverified": "UNVERIFIED", "unchecked": "the paper's dataset, content check not recorded"}


@dataclass(frozen=True)
class DataSource:
    """One dataset a table's runs trained on."""

    dataset: str  # the dataset's title, e.g. "CIFAR-10"
    kind: Kind
    described: tuple[str, ...]  # the run records' own words for their data
    checksum: str = ""  # the data check's: "md5 verified", "md5 mismatch accepted", ...
    unverified: tuple[str, ...] = ()  # "<file>: md5 <got> != <expected>", accepted with --allow-unverified-data

    def text(self) -> str:
        head = f"{self.dataset} ({KIND_WORDS[self.kind]}"
        head += f", {self.checksum})" if self.checksum and self.kind in ("paper", "unverified") else ")"
        if self.unverified:
            head += ": files that fail their published checksum, accepted with --allow-unverified-data: " + \
                "; ".join(self.unverified)
        return head + (": " + "; ".join(self.described) if self.described else "")


@dataclass(frozen=True)
class TrainedOn:
    """A table's provenance: its profile and what that is evidence of, its data, seeds, epochs and commit."""

    profile: str
    evidence: str  # repro.report.evidence.label
    sources: tuple[DataSource, ...]  # empty: the table trains nothing
    seeds: tuple[int, ...]
    epochs: tuple[tuple[str, int], ...]  # (dataset title, epochs), one per dataset trained
    runs: int
    commit: str
    measures: tuple[str, ...]

    @property
    def unverified(self) -> bool:
        return any(s.kind == "unverified" for s in self.sources)

    def data_text(self) -> str:
        if not self.sources:
            what = {"flops": "FLOP counts (analytic, no data)", "latency": "timings of random inputs"}
            return "no training runs: " + ", ".join(what.get(m, m) for m in self.measures if m in what)
        return "; ".join(s.text() for s in self.sources)

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
        return [("Profile", f"`{self.profile}`: {self.evidence.split(': ', 1)[-1]}"),
                ("Trained on", self.data_text()), ("Seeds", self.seeds_text()), ("Epochs", self.epochs_text()),
                ("Code", self.commit)]

    def sentence(self) -> str:
        """One sentence for a LaTeX caption."""
        parts = [f"Profile {self.evidence}", f"trained on {self.data_text()}" if self.sources else self.data_text()]
        if self.seeds:
            parts += [f"seeds {self.seeds_text()}", f"epochs {self.epochs_text()}"]
        return "; ".join(parts) + f"; {self.commit}."


def _settings(manifest: Manifest, result: ManifestResult) -> Profile | None:
    """The profile as the table ran: stored with its result, else as the manifest holds it (already applied)."""
    return result.profile_settings or manifest.profiles.get(result.profile)


def _checks(result: ManifestResult) -> dict[str, dict]:
    """The data checks stored with the result, by dataset title."""
    checks = (result.measured.details.get("data_checks") or {}).get("checks") or []
    return {c.get("title", c.get("dataset", "")): c for c in checks if isinstance(c, dict)}


def _kind(data: str, check: dict | None) -> Kind:
    if data in ("synthetic", "digits"):
        return data  # type: ignore[return-value]
    if check is None:
        return "unchecked"
    return "unverified" if check.get("unverified") else "paper"


def trained_on(manifest: Manifest, result: ManifestResult) -> TrainedOn:
    settings = _settings(manifest, result)
    data = settings.data if settings else "real"
    checks = _checks(result)
    by_dataset: dict[str, list] = {}
    for row in manifest.rows:
        runs = result.measured.runs(row.id)
        if runs:
            by_dataset.setdefault(get_dataset(row.dataset).title, []).extend(runs)
    sources, epochs = [], []
    for title, runs in by_dataset.items():
        check = checks.get(title)
        sources.append(DataSource(title, _kind(data, check), tuple(sorted({r.data for r in runs if r.data})),
                                  (check or {}).get("checksum", ""), tuple((check or {}).get("unverified") or ())))
        epochs.append((title, max(len(r.test_accuracy_by_epoch) for r in runs)))
    runs = [r for rs in by_dataset.values() for r in rs]
    unverified = any(s.kind == "unverified" for s in sources)
    commit = str(result.provenance.get("git_commit") or "")
    return TrainedOn(result.profile, label(result.profile, settings, unverified), tuple(sources),
                     tuple(sorted({r.seed for r in runs})), tuple(epochs), len({r.hash for r in runs}),
                     commits_text({commit}), tuple(sorted(manifest.measures())))

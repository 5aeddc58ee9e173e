"""The appendix's parts as typed data: check-list items, data set and weights entries, what it is built from, and
the Appendix the templates render. repro.report.appendix.build fills them; sections.py words the prose parts."""

from __future__ import annotations

from dataclasses import dataclass

from repro.core.terminal import Step
from repro.cost.estimate import CostModel
from repro.cost.wall_time import Rates
from repro.data.sources import Archive
from repro.plan.manifest import Manifest
from repro.plan.table_plan import Plans
from repro.claims.headline import ClaimCounts
from repro.report.appendix.claim_rows import BADGES, ClaimRow
from repro.report.appendix.container import Container, Package
from repro.spec.untested import UntestedFinding


@dataclass(frozen=True)
class Item:
    name: str
    value: str


@dataclass(frozen=True)
class DatasetEntry:
    title: str
    archives: tuple[Archive, ...]
    checked_files: int  # files whose md5 the loader checks at every read
    checksum_note: str
    cache: str  # the decoded copy repro caches, as text ('' for none)
    profiles: tuple[str, ...]  # the profiles that train on it


@dataclass(frozen=True)
class WeightsEntry:
    backbones: tuple[str, ...]
    file: str
    url: str
    sha256_prefix: str
    profiles: tuple[str, ...]


@dataclass(frozen=True)
class Appendix:
    profile: str
    full: str  # the paper's protocol, whose cost every row shows
    title: str
    abstract: list[str]
    checklist: list[Item]
    hardware: list[Item]
    software: list[Item]
    datasets: list[DatasetEntry]
    weights: list[WeightsEntry]
    installation: list[Step]
    workflow: list[Step]
    evaluation: list[str]
    claims: list[ClaimRow]
    customisation: list[Item]
    notes: list[str]
    with_results: bool
    # What made the results' data unverified (files failing their published checksums, accepted with
    # --allow-unverified-data), one line per dataset: said in the title and the abstract, and no Results badge.
    unverified: tuple[str, ...] = ()
    untested: tuple[UntestedFinding, ...] = ()  # the text's findings no claim tests (repro/spec/untested.toml)


@dataclass(frozen=True)
class Inputs:
    """What the appendix is built from besides the manifests: their plans, and the cost model as the command fitted
    it (repro.cost.fit.fit_folder), never fitted again here."""

    plans: Plans
    model: CostModel
    rates: Rates
    container: Container
    package: Package
    commit: str
    cost_notes: tuple[str, ...] = ()  # what the cost model was fitted to (repro.cost.fit.FolderFit.describe)


@dataclass(frozen=True)
class VerifyAll:
    """`repro verify-all` at one profile, as the cost model prices it."""

    wall: str  # "~7 min wall (reference)"
    device: str  # "0.10 CPU-h in 94 runs", or "no training"
    prepare_s: float  # its start-up and FLOP check, before any table


@dataclass(frozen=True)
class Facts:
    """What the sections are written from, computed once: per profile shown (the paper's protocol first)."""

    manifests: list[Manifest]
    profile: str
    shown: list[str]  # the paper's protocol, and the appendix's profile when that is another
    inputs: Inputs
    verify_all: dict[str, VerifyAll]
    disk: dict[str, str]  # per profile: the disk it needs, as text
    datasets: list[DatasetEntry]
    counts: ClaimCounts  # the one set of claim counts (repro.claims.headline), as the report and `repro plan` print it
    unverified: tuple[str, ...] = ()  # Appendix.unverified

    @property
    def profiles(self) -> dict:
        return self.manifests[0].profiles

    def per_profile(self, values: dict[str, str]) -> str:
        return "; ".join(f"at {p}: {values[p]}" for p in self.shown)

    def badge_words(self) -> str:
        """The badge the appendix's profile supports: none on unverified data, whatever its evidence."""
        if self.unverified:
            return f"no Results badge: its results trained on UNVERIFIED data ({'; '.join(self.unverified)})"
        evidence = self.profiles[self.profile].evidence
        return BADGES.get(evidence, evidence)

    def device_words(self, profile: str) -> str:
        prof = self.profiles[profile]
        thr = self.inputs.model.device(prof)
        where = (
            "the CPU"
            if prof.device == "cpu"
            else "a CUDA GPU"
            if prof.device == "cuda"
            else "a GPU when one is present"
        )
        return f"{where}; priced on {thr.device} ({thr.source})"

"""Two results folders side by side (`repro compare A B`): which rows' accuracy differs beyond seed noise, which
runs only one folder holds, and which verdicts changed. Torch-free; in the report layer for the statistics it
reuses (repro.claims.stats), which the results layer is below.

A row ((profile, table, row), repro.results.frames.row_seeds) counts the seeds whose run record is usable in that
folder. For a row in both: the mean accuracy in each, B - A, and Welch's t over the seeds with Holm's adjustment
over the rows compared; it differs beyond seed noise when the adjusted p is below ALPHA. Runs made under other
devices, thread counts or versions are compared all the same, and what differs is named beside the row. Verdicts
are decided again from each folder's measurements by the current manifests (repro.claims.decided_folder): a
status typed into a results.json is never compared. Each claim's own number is repro.report.compare_claims'.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from repro.report.compare_claims import ClaimDifference, claim_differences, usable_seeds
from repro.results.family import holm
from repro.results.frames import Folder, FolderError, read_folder, row_seeds, runs, verdicts
from repro.results.measurements import RUNS_FOLDER, profiles_present

ALPHA = 0.05
_THREADS_IN_LABEL = re.compile(r", \d+ intra-op thread\(s\)")


class CompareError(ValueError):
    """Bad input: one line naming the folder and what it lacks."""


@dataclass(frozen=True)
class RowDifference:
    """One row in both folders: its mean accuracy in each (fractions), the difference B - A, Welch's p over the
    seeds and Holm's over the rows compared (None where undefined: one seed a side, or nothing varies and
    nothing differs), and what differs in how its runs were made ("" when nothing does)."""

    profile: str
    table: str
    row: str
    seeds_a: int
    seeds_b: int
    mean_a: float
    mean_b: float
    difference: float
    p: float | None
    p_holm: float | None
    settings: str
    # The row's runs in B are other runs than A's (other run hashes: another thread count, deterministic mode or
    # training version) and their accuracies are not the same: the folders do not hold the same results.
    other_runs_differ: bool = False

    @property
    def beyond_noise(self) -> bool:
        return self.p_holm is not None and self.p_holm < ALPHA

    @property
    def name(self) -> str:
        return f"{self.table}/{self.row}"


@dataclass(frozen=True)
class VerdictChange:
    profile: str
    table: str
    claim: str
    status_a: str  # "absent": the folder holds no verdict of this claim
    status_b: str


@dataclass
class FolderComparison:
    a: Path
    b: Path
    profiles: list[str]
    rows: list[RowDifference] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)  # "<profile>/<table>/<row> seed <s>": runs only A holds
    only_b: list[str] = field(default_factory=list)
    verdicts: list[VerdictChange] = field(default_factory=list)
    unusable_a: dict[str, str] = field(default_factory=dict)  # record file -> why it was left out
    unusable_b: dict[str, str] = field(default_factory=dict)
    claims: list[ClaimDifference] = field(default_factory=list)  # each claim's number on each side (compare_claims)

    @property
    def beyond_noise(self) -> list[RowDifference]:
        return [r for r in self.rows if r.beyond_noise]

    @property
    def differs(self) -> bool:
        """Exit 1: a row differs beyond seed noise, a verdict changed, or a row's runs are other runs whose
        accuracies differ (same seeds, other threads: not the same bits, and not the same results)."""
        return bool(self.beyond_noise or self.verdicts or any(r.other_runs_differ for r in self.rows))

    def to_dict(self) -> dict[str, Any]:
        def number(x: float | None) -> float | None:
            return None if x is None or not math.isfinite(x) else x

        return {
            "a": str(self.a),
            "b": str(self.b),
            "profiles": self.profiles,
            "alpha": ALPHA,
            "differs": self.differs,
            "rows": [
                {
                    **{k: number(v) if isinstance(v, float) else v for k, v in asdict(r).items()},
                    "beyond_noise": r.beyond_noise,
                }
                for r in self.rows
            ],
            "only_a": self.only_a,
            "only_b": self.only_b,
            "verdicts": [asdict(v) for v in self.verdicts],
            "unusable_a": self.unusable_a,
            "unusable_b": self.unusable_b,
            "claims": [c.to_dict() for c in self.claims],
        }


def _read(path: Path, which: str, profile: str | None, manifests: Sequence) -> Folder:
    from repro.claims import decided_folder

    try:
        folder = read_folder(path, profile)
    except FolderError as exc:
        raise CompareError(f"{which}: {exc}") from None
    folder, _ = decided_folder(folder, manifests)
    if not folder.records.records:
        unusable = len(folder.records.unusable)
        raise CompareError(
            f"{which}: no usable run record in {path / RUNS_FOLDER}" + (f" ({unusable} unusable)" if unusable else "")
        )
    return folder


def _profiles(a: Path, b: Path, profile: str | None) -> list[str]:
    present = {p: set(profiles_present(p)) for p in (a, b)}
    if profile is not None:
        for path, names in present.items():
            if profile not in names:
                raise CompareError(
                    f"no results of profile '{profile}' in {path} (profiles with results: "
                    f"{', '.join(sorted(names)) or 'none'})"
                )
        return [profile]
    common = sorted(present[a] & present[b])
    if not common:
        raise CompareError(
            f"no profile has results in both {a} ({', '.join(sorted(present[a])) or 'none'}) "
            f"and {b} ({', '.join(sorted(present[b])) or 'none'})"
        )
    return common


def _seeds(folder: Folder, profiles: list[str]):
    """(profile, table, row, seed) rows whose record is usable in the folder, with the record's numbers."""
    seeds = row_seeds(folder)
    seeds = seeds[seeds.profile.isin(profiles)]
    records = runs(folder)[["run_hash", "accuracy", "device", "threads", "deterministic", "torch", "version", "commit"]]
    return seeds.drop(columns=["accuracy", "device", "threads", "deterministic"]).merge(records, on="run_hash")


def _setting_values(frame) -> dict[str, set[str]]:
    def device(label: Any) -> str:
        return _THREADS_IN_LABEL.sub("", str(label))

    return {
        "device": {device(d) for d in frame.device},
        "threads": {str(t) for t in frame.threads},
        "deterministic": {str(d) for d in frame.deterministic},
        "torch": {str(t) for t in frame.torch},
        "training version": {str(v) for v in frame.version},
        "code": {str(c)[:8] + ("+dirty" if str(c).endswith("+dirty") else "") for c in frame.commit},
    }


def settings_note(a, b) -> str:
    """What differs between the runs of a row in A and in B: 'threads 1 vs 2; torch 2.4 vs 2.5'."""
    sa, sb = _setting_values(a), _setting_values(b)
    return "; ".join(
        f"{what} {', '.join(sorted(sa[what]))} vs {', '.join(sorted(sb[what]))}" for what in sa if sa[what] != sb[what]
    )


def compare_folders(a: Path, b: Path, profile: str | None = None, manifests: Sequence = ()) -> FolderComparison:
    """Compare results folder B with A (CompareError, one line, on bad input), each folder's verdicts decided
    again by `manifests` (a table none of them is, has no verdict to compare)."""
    from repro.claims.stats import welch

    folder_a, folder_b = _read(Path(a), "A", profile, manifests), _read(Path(b), "B", profile, manifests)
    profiles = _profiles(Path(a), Path(b), profile)
    out = FolderComparison(Path(a), Path(b), profiles, unusable_a=_unusable(folder_a), unusable_b=_unusable(folder_b))
    seeds_a, seeds_b = _seeds(folder_a, profiles), _seeds(folder_b, profiles)
    key = ["profile", "table", "row"]
    groups_a, groups_b = dict(iter(seeds_a.groupby(key, sort=True))), dict(iter(seeds_b.groupby(key, sort=True)))
    common = sorted(set(groups_a) & set(groups_b))
    if not common:
        raise CompareError(
            f"no row of profile {', '.join(profiles)} has a usable run record in both {a} "
            f"({len(groups_a)} rows) and {b} ({len(groups_b)} rows)"
        )
    tests = {k: welch(groups_a[k].accuracy, groups_b[k].accuracy) for k in common}
    defined = [k for k in common if not math.isnan(tests[k].p)]
    adjusted = dict(zip(defined, holm([tests[k].p for k in defined])))
    for k in common:
        t = tests[k]
        ga, gb = groups_a[k], groups_b[k]
        other = set(ga.run_hash) != set(gb.run_hash) and (
            sorted(zip(ga.seed, ga.accuracy)) != sorted(zip(gb.seed, gb.accuracy))
        )
        numbers = (t.n_a, t.n_b, t.mean_a, t.mean_b, t.difference, None if math.isnan(t.p) else t.p, adjusted.get(k))
        out.rows.append(RowDifference(*k, *numbers, settings_note(ga, gb), other))
    runs_a, runs_b = _run_names(seeds_a), _run_names(seeds_b)
    out.only_a, out.only_b = sorted(runs_a - runs_b), sorted(runs_b - runs_a)
    out.verdicts = _verdict_changes(verdicts(folder_a), verdicts(folder_b), profiles)
    out.claims = claim_differences(
        folder_a.results, folder_b.results, usable_seeds(seeds_a), usable_seeds(seeds_b), profiles
    )
    return out


def _unusable(folder: Folder) -> dict[str, str]:
    return {str(path): why for path, why in folder.records.unusable.items()}


def _run_names(seeds) -> set[str]:
    return {f"{p}/{t}/{r} seed {s}" for p, t, r, s in zip(seeds.profile, seeds.table, seeds.row, seeds.seed)}


def _verdict_changes(a, b, profiles: list[str]) -> list[VerdictChange]:
    def statuses(frame) -> dict[tuple[str, str, str], str]:
        frame = frame[frame.profile.isin(profiles)]
        return {(p, t, c): s for p, t, c, s in zip(frame.profile, frame.table, frame.claim, frame.status)}

    sa, sb = statuses(a), statuses(b)
    return [
        VerdictChange(*k, sa.get(k, "absent"), sb.get(k, "absent"))
        for k in sorted(set(sa) | set(sb))
        if sa.get(k) != sb.get(k)
    ]

"""Two results folders side by side (`repro compare A B`): which rows' accuracy differs beyond seed noise, which
runs only one folder holds, which verdicts changed, and each claim's number on each side. Torch-free; in the
report layer for the statistics it reuses (repro.claims.stats), which the results layer is below.

A row ((profile, table, row), repro.results.frames.row_seeds) counts the seeds whose run record is usable in that
folder. For a row in both: the mean accuracy in each, B - A, and Welch's t over the seeds with Holm's adjustment
over the rows compared; it differs beyond seed noise when the adjusted p is below ALPHA. Runs made under other
devices, thread counts or versions are compared all the same, and what differs is named beside the row. Verdicts
are decided again from each folder's measurements by the current manifests (repro.claims.decided_folder): a
status typed into a results.json is never compared.

A claim's number is what its rule measured (the verdict's `measured`), per seed where it has seeds (a paired
gap's differences, a row's {seed: value}), else its rows' accuracies; a number without seeds (a FLOP count, rho)
has no spread (n None). sd: ddof 1, se = sd / sqrt(n); None below 2. markdown(): the comparison for a pull request.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from repro.results.family import holm
from repro.results.frames import Folder, FolderError, read_folder, row_seeds, runs, verdicts
from repro.results.measurements import RUNS_FOLDER, Verdict, profiles_present

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
    claims: list[ClaimDifference] = field(default_factory=list)  # each claim's number on each side

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
        with warnings.catch_warnings():  # a profile with no results here: _profiles refuses it in one line
            warnings.simplefilter("ignore", UserWarning)
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
    common: list[tuple[str, str, str]] = sorted(set(groups_a) & set(groups_b))  # (profile, table, row)
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
        row_profile, table, row = k
        out.rows.append(RowDifference(row_profile, table, row, *numbers, settings_note(ga, gb), other))
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


# --------------------------------------------------------------------------- claim by claim
@dataclass(frozen=True)
class Spread:
    n: int | None  # seeds; None: a number that has none (a count, an analytic value)
    mean: float
    sd: float | None
    se: float | None

    @classmethod
    def of(cls, values: Iterable[float]) -> Spread | None:
        xs = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
        if not xs:
            return None
        mean = sum(xs) / len(xs)
        if len(xs) < 2:
            return cls(len(xs), mean, None, None)
        sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))
        return cls(len(xs), mean, sd, sd / math.sqrt(len(xs)))


@dataclass(frozen=True)
class ClaimDifference:
    """One claim's number in A and in B (None: absent on that side), B - A of the means, and the verdicts."""

    profile: str
    table: str
    claim: str
    quantity: str  # the metric path the number is ("" when the claim stored no number)
    a: Spread | None
    b: Spread | None
    status_a: str  # "absent": the folder holds no verdict of this claim
    status_b: str

    @property
    def difference(self) -> float | None:
        return None if self.a is None or self.b is None else self.b.mean - self.a.mean

    @property
    def changed(self) -> bool:
        return self.status_a != self.status_b

    def to_dict(self) -> dict[str, Any]:
        fields = asdict(self)  # the Spreads as {n, mean, sd, se}
        status = {k: fields.pop(k) for k in ("status_a", "status_b")}
        return {**fields, "difference": self.difference, **status, "changed": self.changed}


Usable = dict[tuple[str, str], dict[int, float]]  # (table, row) -> seed -> accuracy, of usable records


def usable_seeds(seeds) -> Usable:
    """A folder's usable records by table and row (a frame of _seeds)."""
    out: Usable = {}
    for table, row, seed, accuracy in zip(seeds.table, seeds.row, seeds.seed, seeds.accuracy):
        out.setdefault((table, row), {})[int(seed)] = float(accuracy)
    return out


def _per_seed(value: Any) -> dict[int, float] | None:
    """{seed: number} of a measured value that has seeds: a gap's differences, or a per-seed mapping."""
    if isinstance(value, dict) and isinstance(value.get("differences"), dict):
        value = value["differences"]
    if isinstance(value, dict) and value and all(str(k).lstrip("-").isdigit() for k in value):
        return {int(k): v for k, v in value.items() if isinstance(v, (int, float))}
    return None


def quantities(table: str, v: Verdict, usable: Usable) -> dict[str, Spread | None]:
    """The claim's numbers (metric path -> spread over the usable seeds) in one folder."""
    rows = [r for r in v.rows if (table, r) in usable]
    seeds = set.intersection(*(set(usable[(table, r)]) for r in rows)) if rows else None
    out: dict[str, Spread | None] = {}
    for path, value in sorted(v.measured.items()):
        by_seed = _per_seed(value)
        if by_seed is not None:
            out[path] = Spread.of(x for s, x in by_seed.items() if seeds is None or s in seeds)
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[path] = Spread(None, float(value), None, None)
    if not out:  # no number stored: the claim's rows' accuracies, from the records
        out = {f"rows.{r}.accuracy": Spread.of(usable[(table, r)].values()) for r in rows}
    return out


def claim_differences(
    results_a: list, results_b: list, usable_a: Usable, usable_b: Usable, profiles: list[str]
) -> list[ClaimDifference]:
    """Every claim decided in A or B (of the profiles compared): one entry per number it has, sorted."""

    def decided(results: list) -> dict[tuple[str, str, str], tuple[str, Verdict]]:
        return {
            (r.profile, r.manifest_id, v.claim): (r.manifest_id, v)
            for r in results
            if r.profile in profiles
            for v in r.verdicts
        }

    da, db = decided(results_a), decided(results_b)
    out = []
    for key in sorted(set(da) | set(db)):
        profile, table, claim = key
        qa = quantities(table, da[key][1], usable_a) if key in da else {}
        qb = quantities(table, db[key][1], usable_b) if key in db else {}
        status_a = da[key][1].status if key in da else "absent"
        status_b = db[key][1].status if key in db else "absent"
        for path in sorted(set(qa) | set(qb)) or [""]:
            out.append(ClaimDifference(profile, table, claim, path, qa.get(path), qb.get(path), status_a, status_b))
    return out


# --------------------------------------------------------------------------- Markdown
def _cell(x: float | None) -> str:
    return "" if x is None else f"{x:.4g}"


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(result, alpha: float) -> str:
    """The comparison (FolderComparison, its rows judged at `alpha`) as Markdown: the
    per-claim table, then the rows that differ and the runs in one folder only."""
    lines = [
        f"## repro compare: `{_md(str(result.a))}` (A) and `{_md(str(result.b))}` (B)",
        "",
        f"Profile {', '.join(result.profiles)}. "
        + ("**Differs** (exit 1)." if result.differs else "**Same** (exit 0)."),
        "",
        "### Claims",
        "",
        "Each claim's number on each side: mean, sample s.d., standard error and seeds (n; empty for a number "
        "with no seeds), in the number's own unit (fractions for accuracies and gaps), and B - A.",
        "",
        "| Claim | Number | A mean | A sd | A se | A n | B mean | B sd | B se | B n | B - A | Verdict A | "
        "Verdict B | Changed |",
        "|" + "---|" * 14,
    ]
    several = len(result.profiles) > 1
    for c in result.claims:
        sides = [
            [_cell(s.mean), _cell(s.sd), _cell(s.se), "" if s.n is None else str(s.n)] if s else [""] * 4
            for s in (c.a, c.b)
        ]
        cells = [f"{c.profile}/" * several + f"{c.table}/{c.claim}", c.quantity, *sides[0], *sides[1]]
        cells += ["" if c.difference is None else f"{c.difference:+.4g}", c.status_a, c.status_b]
        lines.append("| " + " | ".join(_md(x) for x in cells + ["**yes**" if c.changed else "no"]) + " |")
    differ = [r for r in result.rows if r.difference != 0]
    lines += [
        "",
        "### Rows",
        "",
        f"{len(result.rows)} rows in both, {len(differ)} differ, {len(result.beyond_noise)} beyond seed noise "
        f"(Welch's t over seeds, Holm over the rows, alpha {alpha}).",
        "",
    ]
    if differ:
        lines += ["| Row | A % | B % | B - A pp | p Holm | Seeds A, B | Note |", "|---|---|---|---|---|---|---|"]
        for r in sorted(differ, key=lambda r: (not r.beyond_noise, -abs(r.difference), r.name)):
            note = "; ".join(x for x in ("beyond noise" if r.beyond_noise else "", r.settings) if x)
            lines.append(
                f"| {_md(f'{r.profile}/' * several + r.name)} | {100 * r.mean_a:.2f} | {100 * r.mean_b:.2f} "
                f"| {100 * r.difference:+.2f} | {'' if r.p_holm is None else f'{r.p_holm:.2g}'} | "
                f"{r.seeds_a}, {r.seeds_b} | {_md(note)} |"
            )
    for which, names in (("A", result.only_a), ("B", result.only_b)):
        if names:
            lines += ["", f"Runs only in {which}: {len(names)}: " + ", ".join(f"`{_md(x)}`" for x in names)]
    return "\n".join(lines) + "\n"

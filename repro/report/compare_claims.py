"""`repro compare A B`, claim by claim: the spread and count of each claim's number on each side, the difference,
and whether the verdict changed; and the comparison as Markdown, for a pull request. Torch-free.

A claim's number is what its rule measured (the verdict's `measured`), per seed where it has seeds (a paired
gap's differences, a row's {seed: value}); a claim that stored none is read on its rows' accuracies. Only the
seeds whose records are usable in that folder count, so a damaged record changes n, not the mean behind it. A
number without seeds (a FLOP count, rho) has no spread (n None). sd: ddof 1, se = sd / sqrt(n); None below 2.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Iterable

from repro.results.measurements import Verdict


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
    """A folder's usable records by table and row (a frame of repro.report.compare._seeds)."""
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
    """The comparison (repro.report.compare.FolderComparison, its rows judged at `alpha`) as Markdown: the
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
    for which, runs in (("A", result.only_a), ("B", result.only_b)):
        if runs:
            lines += ["", f"Runs only in {which}: {len(runs)}: " + ", ".join(f"`{_md(x)}`" for x in runs)]
    return "\n".join(lines) + "\n"

"""Tables as data: rows of formatted cells built from a manifest's results.

Each builder looks at what a manifest's rows measure (never at its name) and returns a table, or None when it
has nothing to show. Reported values sit in their own columns beside the reproduced ones; where the text gives no
number the cell is left empty. Accuracy over seeds and the paired gaps come from the table's rows-by-seed frame
(RowNumbers: repro.results.frames.result_row_seeds, its frames.row_stats, repro.claims.stats.paired_gap), so a
notebook that calls row_stats(row_seeds(folder)) gets the report's numbers by construction (tests/test_frames.py
holds them to it); the learning check reads the same per-seed accuracies. Torch-free; pandas comes with the frame.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator

from repro.claims.headline import STATUSES
from repro.claims.learned import MIN_LEARNED
from repro.plan.manifest import Comparison, Manifest, Row
from repro.spec.paper import paper_value
from repro.report.cells import Table, mmac, pct, pct_auto, reported
from repro.report.latency_tables import latency_table, op_scaling_table, slowdown_table
from repro.results.frames import result_row_seeds, row_stats
from repro.results.measurements import ManifestResult, RunSummary, row_metric

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class RowNumbers:
    """One table's rows by seed, and their statistics by row."""

    seeds: pd.DataFrame  # frames.ROW_SEED_COLUMNS
    stats: pd.DataFrame  # frames.ROW_STAT_COLUMNS, indexed by row

    def has(self, row: str) -> bool:
        return row in self.stats.index

    def accuracy(self, row: str) -> dict[int, float]:
        """Seed -> accuracy (a fraction), in seed order; empty for a row without runs."""
        rows = self.seeds[self.seeds.row == row]
        return {int(s): float(a) for s, a in zip(rows.seed, rows.accuracy)}

    def seeds_of(self, row: str) -> int:
        return int(self.stats.at[row, "seeds"]) if self.has(row) else 0

    def mean(self, row: str) -> float | None:
        return float(self.stats.at[row, "accuracy_mean"]) if self.has(row) else None

    def chance(self, row: str) -> float | None:
        value = self.stats.at[row, "chance"] if self.has(row) else None
        return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)

    def mean_sd(self, row: str) -> str:
        """Mean ± s.d. over seeds in percent, or the single value with n=1; empty without runs."""
        if not self.has(row):
            return ""
        mean, sd = 100 * float(self.stats.at[row, "accuracy_mean"]), self.stats.at[row, "accuracy_sd"]
        return f"{mean:.2f} (n=1)" if self.seeds_of(row) < 2 else f"{mean:.2f} ± {100 * float(sd):.2f}"

    def gap(self, row: str, baseline: str) -> dict[str, Any] | None:
        """The MoE - dense gap paired by seed (repro.claims.stats.GapStats.to_dict()); None without a common seed."""
        from repro.claims.stats import paired_gap

        a, b = self.accuracy(row), self.accuracy(baseline)
        return paired_gap(a, b).to_dict() if set(a) & set(b) else None


def row_numbers(result: ManifestResult) -> RowNumbers:
    seeds = result_row_seeds(result)
    return RowNumbers(seeds, row_stats(seeds).set_index("row"))


def flops_table(manifest: Manifest, result: ManifestResult) -> Table | None:
    flops = result.measured.details.get("flops", {})
    rows = [r for r in manifest.rows if r.id in flops]
    if not rows:
        return None

    def macs(key: str) -> Callable[[Row], str]:
        return lambda r: mmac(flops[r.id][key])

    def routed(key: str) -> Callable[[Row], str]:  # rho is shown only where the row routes
        return lambda r: pct_auto(flops[r.id][key]) if flops[r.id]["routed_macs"] else ""

    def sign(r: Row) -> str:
        pv = paper_value(manifest.paper_table, f"{r.id}.gap")
        return (pv.implied_sign or "").replace("<=0", "≤0") if pv else ""

    columns: dict[str, Callable[[Row], str]] = {
        "Setting": lambda r: r.label,
        "Backbone MMAC": macs("backbone_macs"),
        "Head MMAC": macs("head_macs"),
        "Routed MMAC": macs("routed_macs"),
        "Total MMAC": macs("total_macs"),
        "Head share": lambda r: pct_auto(flops[r.id]["head_share"]),
        "ρ (ours)": routed("rho"),
        "ρ, all ops (ours)": routed("rho_all_ops"),
        "ρ (paper)": lambda r: reported(manifest, f"{r.id}.rho"),
        "Gap sign (text)": sign,
    }
    notes = [
        "MMAC: millions of multiply-adds per image (one multiply-add = one FLOP, fvcore's convention); "
        "analytic = fvcore = torch/2 for every module.",
        "ρ = routed / total FLOPs. 'All ops' adds normalisation, activation and pooling.",
        "Gap sign (text): the sign of the setting's MoE - dense gap where the text states one (≤0: not "
        "positive), which a separation claim must read.",
    ]
    at_batch: dict[int, list[str]] = {}  # rows whose head shares its experts across the batch, by the batch counted
    for r in rows:
        if (batch := flops[r.id].get("per_image_batch")) is not None:
            at_batch.setdefault(batch, []).append(r.id)
    notes += [
        f"{', '.join(ids)}: per image in a training batch of {batch}, not of one (assumption batch-axis-flops)."
        for batch, ids in sorted(at_batch.items())
    ]
    table = Table("flops", "FLOPs per image and the routed fraction ρ", list(columns), notes=notes)
    for r in _by_role(rows, table):
        table.add([cell(r) for cell in columns.values()], r.id)
    return table


SENSITIVITY_HEADING = "Sensitivity to assumptions and readings (repro/spec/readings.toml)"


def _by_role(items: list, table: Table, sensitive: Callable[[Any], bool] = lambda r: r.role != "main") -> Iterator:
    """The main rows (or comparisons), then the sensitivity ones under a heading of `table` before the first."""
    yield from (x for x in items if not sensitive(x))
    for x in (x for x in items if sensitive(x)):
        table.heading(SENSITIVITY_HEADING)
        yield x


def flops_comparisons_table(manifest: Manifest, result: ManifestResult) -> Table | None:
    measured = result.measured
    comps = [c for c in manifest.comparisons if measured.comparison(c.id, "flops_ratio") is not None]
    if not comps:
        return None
    columns: dict[str, Callable[[Comparison], str]] = {
        "Comparison": lambda c: c.label,
        "FLOPs ratio (ours)": lambda c: pct(measured.comparison(c.id, "flops_ratio"), 1),
        "Reduction (ours)": lambda c: pct(measured.comparison(c.id, "flops_reduction"), 1),
        "Reported": lambda c: (
            reported(manifest, f"{c.id}.flops_reduction") or reported(manifest, f"{c.id}.flops_ratio")
        ),
    }
    table = Table("flops_comparisons", "FLOPs of each model against its baseline", list(columns))
    for c in comps:
        table.add([cell(c) for cell in columns.values()], c.id)
    return table


def _gap_cells(gap: dict | None) -> list[str]:
    if not gap:
        return ["", "", "", ""]
    sd = "" if gap["sd"] is None else f" ± {100 * gap['sd']:.2f}"
    p = "" if gap["p"] is None else f"{gap['p']:.2g}"
    d = "" if gap["d"] is None else f"{gap['d']:.2f}"
    return [f"{100 * gap['mean']:+.2f}{sd}", p, d, f"{gap['positive']}/{gap['n']}"]


def _paper_gap(manifest: Manifest, key: str) -> tuple[str, str]:
    pv = paper_value(manifest.paper_table, key)
    if pv is None:
        return "", ""
    size = paper_value(manifest.paper_table, f"{key}_size")  # a size only the explainer gives (Table 5)
    if pv.value is None and size is not None and size.value is not None:
        pv = dataclasses.replace(size, p=pv.p, p_relation=pv.p_relation)
    if pv.value is not None:
        gap = f"{pv.value:+.2f}" + (f" ± {pv.sd:.2f}" if pv.sd is not None else "")
    else:
        gap = f"sign {pv.sign}"
    p = "" if pv.p is None else ("<" if pv.p_relation == "<" else "") + f"{pv.p:g}"
    return gap + (" (explainer)" if pv.source == "explainer-and-summary" else ""), p


def run_links(result: ManifestResult, row_id: str, who: str = "") -> tuple[tuple[str, str], ...]:
    """(label, hash) of each run of a row, by seed: what a number drawn from them links to."""
    suffix = f" ({who})" if who else ""
    return tuple((f"seed {r.seed}{suffix}", r.hash) for r in sorted(result.measured.runs(row_id), key=lambda r: r.seed))


def accuracy_comparisons_table(manifest: Manifest, result: ManifestResult) -> Table | None:
    measured = result.measured
    comps = [c for c in manifest.comparisons if "accuracy" in manifest.row(c.row).measures]
    if not comps:
        return None
    gap_columns = ["Gap (pp)", "p", "d", "Seeds +"]  # _gap_cells
    columns = ["Configuration", "ρ", "Baseline acc. (%)", "Model acc. (%)", *gap_columns, "Gap, paper (pp)", "p, paper"]
    table = Table("gaps", f"{manifest.title}: MoE - dense gaps paired by seed", columns)
    sensitivity = {r.id for r in manifest.rows if r.role != "main"}
    numbers = row_numbers(result)
    for c in _by_role(comps, table, lambda c: c.row in sensitivity or c.baseline in sensitivity):
        rho = measured.comparison(c.id, "rho")
        base, model = run_links(result, c.baseline, "baseline"), run_links(result, c.row, "model")
        cells = [c.label, pct_auto(rho) if rho is not None else "", numbers.mean_sd(c.baseline), numbers.mean_sd(c.row)]
        cells += [*_gap_cells(numbers.gap(c.row, c.baseline)), *_paper_gap(manifest, f"{c.id}.gap")]
        table.add(cells, c.id, {2: base, 3: model, 4: model + base})
    table.notes = [
        f"Profile '{result.profile}'. Accuracy: mean ± s.d. over seeds; gap: model - baseline per seed, "
        "paired t-test (two-sided), d = mean / s.d. of the differences.",
        "Paper columns hold only what the text states; an empty cell means the text gives no number.",
    ]
    return table


def collapse_claims(manifest: Manifest) -> dict[str, list[str]]:
    """Row id -> ids of the claims whose `may_collapse` names it: rows the paper reports may end at chance."""
    out: dict[str, list[str]] = {}
    for claim in manifest.claims:
        for row in claim.params.get("may_collapse") or ():
            out.setdefault(row, []).append(claim.id)
    return out


def chance_note(mean: float | None, chance: float | None, collapse: list[str]) -> str:
    """What a row's mean accuracy over seeds says against chance, beside the numbers: collapse the paper reports
    is expected.

    "Near chance" is the learned guard's margin (repro.claims.learned): the mean closes less than
    MIN_LEARNED of the distance from chance to perfect accuracy.
    """
    claims = ", ".join(collapse)
    if mean is None or chance is None:
        return f"the paper reports this method collapses ({claims})" if collapse else ""
    near = mean < chance + MIN_LEARNED * (1 - chance)
    if collapse:
        return (
            f"at or near chance: the paper reports this method collapses ({claims})"
            if near
            else f"the paper reports this method collapses ({claims}); it learned here"
        )
    return "at or near chance: did not learn" if near else ""


def machine_note(runs: list[RunSummary]) -> str:
    """Said beside a row whose runs were made under different devices, thread counts or deterministic modes:
    their numbers differ by more than the seed (README, Reproducibility)."""

    def setting(run: RunSummary) -> str:
        text = run.device or "an unrecorded device"
        if run.threads is not None and "intra-op" not in text:
            text += f", {run.threads} intra-op thread(s)"
        return text + (", deterministic" if run.deterministic else "")

    settings = sorted({setting(run) for run in runs})
    if len(settings) < 2:
        return ""
    return f"runs made under {len(settings)} settings, not bit-comparable: {'; '.join(settings)}"


def accuracy_rows_table(manifest: Manifest, result: ManifestResult) -> Table | None:
    measured = result.measured
    rows = [r for r in manifest.rows if "accuracy" in r.measures]
    if not rows:
        return None
    collapse = collapse_claims(manifest)
    numbers = row_numbers(result)
    table = Table(
        key="accuracy",
        title="Accuracy of every configuration",
        columns=["Row", "Dataset", "Accuracy (%)", "Chance (%)", "Seeds", "Note", "Run records", "Accuracy, paper"],
    )
    for r in _by_role(rows, table):
        chance = numbers.chance(r.id)
        hashes = ", ".join(sorted({run.hash[:8] for run in measured.runs(r.id)}))
        notes = (chance_note(numbers.mean(r.id), chance, collapse.get(r.id, [])), machine_note(measured.runs(r.id)))
        accuracy = numbers.mean_sd(r.id) or measured.missing.get(row_metric(r.id, "accuracy"), "")
        chance_text = "" if chance is None else f"{100 * chance:.2f}"
        cells = [r.label, r.dataset, accuracy, chance_text, str(numbers.seeds_of(r.id))]
        cells += ["; ".join(n for n in notes if n), hashes, reported(manifest, f"{r.id}.accuracy")]
        table.add(cells, r.id, {2: run_links(result, r.id)})
    table.notes = [
        "Run records: the first 8 characters of each run's hash; the record is runs/<hash>.json.",
        "Chance: 1 / classes of the data the runs trained on (the record's metrics.chance). Note: 'at or "
        f"near chance' when the mean closes less than {MIN_LEARNED:.0%} of the distance from chance to "
        "100%; a row named by a claim's may_collapse is one the paper reports collapsing, so chance "
        "there is the expected outcome, not a failure of the artifact. It also says when a row's runs "
        "were made on different devices, thread counts or deterministic modes: their numbers then differ "
        "by more than the seed.",
    ]
    return table


# Every table a manifest's results can show, in report order; each returns None when it has nothing.
BUILDERS: tuple[Callable[[Manifest, ManifestResult], Table | None], ...] = (
    accuracy_comparisons_table,
    accuracy_rows_table,
    flops_table,
    flops_comparisons_table,
    latency_table,
    slowdown_table,
    op_scaling_table,
)


_BUILT: dict[tuple[int, int], tuple[Manifest, ManifestResult, list[Table]]] = {}


def build_tables(manifest: Manifest, result: ManifestResult) -> list[Table]:
    """Every table the result can show; built once per (frozen) manifest and result: report.md, report-detail.md
    and report.html show the same ones."""
    kept = _BUILT.get((id(manifest), id(result)))
    if kept is not None and kept[0] is manifest and kept[1] is result:
        return kept[2]
    tables = [t for t in (b(manifest, result) for b in BUILDERS) if t is not None]
    if len(_BUILT) >= 64:  # a report's tables; one command never needs more at once
        _BUILT.clear()
    _BUILT[(id(manifest), id(result))] = (manifest, result, tables)
    return tables


def verdict_counts(verdicts: list[Any]) -> dict[str, int]:
    """Status -> how many of the verdicts have it, every status present (repro.claims.headline.STATUSES)."""
    return {s: sum(v.status == s for v in verdicts) for s in STATUSES}


def reading_notes(result: Any) -> dict[str, str]:
    """Claim id -> what an alternative reading does to its verdict (repro.claims.under_readings.ClaimReadings.note):
    'reproduced under the alternative reading ...' for a claim the chosen readings do not reproduce and an
    alternative does, or the alternatives a trained or re-read claim changes verdict under; said on its row."""
    if result is None:
        return {}
    return {e.claim: note for e in result.readings if (note := e.note())}

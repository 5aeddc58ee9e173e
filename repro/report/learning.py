"""The functional profile's own check: does every method learn real images? Torch-free.

A profile of evidence 'functional' trains on real images that are not the paper's (repro.data.digits), so it
decides no empirical claim; it shows whether each method learns: every seed's test accuracy at least chance +
LEARN_MARGIN (chance: the record's metrics.chance). The dense and sparse-MoE rows (a backbone whose convolutions
are routed has a dense head and counts) must learn: `repro verify-all` exits 1 when one does not. Rows that
train an alternative reading (repro/spec/readings.toml) and the other methods are shown and set no exit code; a
row named by a claim's may_collapse is one the paper reports collapsing. Rows that share their runs (the same
run hashes, e.g. table4/r18_dense and table9/imagenet_dense) are one line.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TypeGuard

from repro.plan.manifest import Manifest
from repro.models.catalog import head_info
from repro.report.table_rows import collapse_claims, row_numbers
from repro.results.measurements import ManifestResult

LEARN_MARGIN = 0.30  # accuracy points above chance every seed must reach


@dataclass(frozen=True)
class LearningCheck:
    rows: tuple[str, ...]  # "<manifest>/<row>" of every row trained by these runs
    label: str
    dataset: str
    accuracies: tuple[float, ...]  # per seed, fractions
    chance: float
    gated: bool  # a dense or sparse-MoE main row: it sets the exit code
    collapse: tuple[str, ...] = ()  # claims whose may_collapse names a row
    reading: str = ""  # "<reading>/<alternative>" of a row that trains an alternative reading
    # Per seed, a backbone MoE's routers (Table 5): share of layers whose router left its initialisation, and the
    # largest summed relative shift (repro.measure.accuracy.routers_moved); empty for other rows
    routers_moved: tuple[float, ...] = ()
    router_shift: tuple[float, ...] = ()

    @property
    def learned(self) -> bool:
        return bool(self.accuracies) and min(self.accuracies) >= self.chance + LEARN_MARGIN

    @property
    def failed(self) -> bool:
        return self.gated and not self.learned and not self.collapse

    def status(self) -> str:
        if self.learned:
            return "learned"
        if self.collapse:
            return f"did not learn; the paper reports this method collapses ({', '.join(self.collapse)})"
        if self.reading:
            return f"did not learn under the alternative reading {self.reading}: below chance + 30 points"
        return "did not learn: below chance + 30 points" + ("" if self.gated else " (not a dense or sparse-MoE row)")

    def router_status(self) -> str:
        """Whether the backbone MoE's routers moved from their initialisation, over every seed; '' for other rows."""
        if not self.routers_moved:
            return ""
        shifts = ", ".join(f"{v:.2g}" for v in self.router_shift)
        if all(v == 0 for v in self.routers_moved):
            return "no: every layer's router is exactly at its initialisation, on every seed"
        if all(v == 1 for v in self.routers_moved):
            return f"yes: every layer's router, on every seed (largest relative shift per seed {shifts})"
        return (
            f"in part: {', '.join(f'{100 * v:.0f}%' for v in self.routers_moved)} of the layers per seed "
            f"(largest relative shift per seed {shifts})"
        )


def is_functional(result: ManifestResult | None) -> TypeGuard[ManifestResult]:
    return (
        result is not None and result.profile_settings is not None and result.profile_settings.evidence == "functional"
    )


def learning_checks(entries: list[tuple[Manifest, ManifestResult | None]]) -> list[LearningCheck]:
    """One check per set of runs that trained a row of a functional result, in manifest order."""
    merged: dict[tuple[str, ...], LearningCheck] = {}
    for manifest, result in entries:
        if not is_functional(result):
            continue
        collapse, numbers = collapse_claims(manifest), row_numbers(result)
        for row in manifest.rows:
            accuracy, chance = numbers.accuracy(row.id), numbers.chance(row.id)  # per seed, from the frame
            if not accuracy or chance is None:
                continue
            key = tuple(sorted(run.hash for run in result.measured.runs(row.id))) or (f"{manifest.id}/{row.id}",)
            moved, shift = (result.measured.row(row.id, m) or {} for m in ("routers_moved", "router_shift"))
            check = LearningCheck(
                rows=(f"{manifest.id}/{row.id}",),
                label=row.label,
                dataset=row.dataset,
                accuracies=tuple(accuracy[s] for s in sorted(accuracy)),
                chance=float(chance),
                gated=head_info(row.head.name).gated and row.role == "main",
                collapse=tuple(f"{manifest.id}/{c}" for c in collapse.get(row.id, [])),
                reading=row.reading,
                routers_moved=tuple(moved[s] for s in sorted(moved)),
                router_shift=tuple(shift[s] for s in sorted(shift)),
            )
            if (seen := merged.get(key)) is not None:  # the same runs behind another row: one line for both
                check = dataclasses.replace(
                    seen,
                    rows=seen.rows + check.rows,
                    gated=seen.gated or check.gated,
                    collapse=seen.collapse + check.collapse,
                    reading=seen.reading or check.reading,
                )
            merged[key] = check
    return list(merged.values())


def summary_line(checks: list[LearningCheck]) -> str:
    gated = [c for c in checks if c.gated]
    readings = [c for c in checks if not c.gated and c.reading]
    others = [c for c in checks if not c.gated and not c.reading]
    line = (
        f"Learning check (functional): {sum(c.learned for c in gated)} / {len(gated)} dense and sparse-MoE "
        f"configurations at chance + {LEARN_MARGIN * 100:.0f} points or more on every seed"
    )
    if readings:
        missed = [c.rows[0] for c in readings if not c.learned]
        line += f"; under alternative readings {len(readings) - len(missed)} / {len(readings)}"
        line += f" (did not learn: {', '.join(missed)})" if missed else ""
    if others:
        line += f"; other methods {sum(c.learned for c in others)} / {len(others)}"
    failed = [c for c in checks if c.failed]
    return line + (f"; FAILED: {', '.join(c.rows[0] for c in failed)}" if failed else "")


def render_learning(checks: list[LearningCheck], signs: list[str] | None = None) -> str:
    """The report section: every trained configuration, its per-seed accuracy against chance + 30 points, whether
    a backbone MoE's routers moved from their initialisation, and `signs`
    (repro.report.readings_section.trained_lines)."""
    head = (
        "| Configuration | Stand-in for | Rows | Accuracy per seed (%) | Chance (%) | Needed (%) | Result | "
        "Backbone MoE router moved from its initialisation |\n|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for c in checks:
        accs = ", ".join(f"{100 * a:.1f}" for a in c.accuracies)
        lines.append(
            f"| {c.label} | {c.dataset} | {', '.join(c.rows)} | {accs} | {100 * c.chance:.2f} | "
            f"{100 * (c.chance + LEARN_MARGIN):.2f} | {c.status()} | {c.router_status()} |"
        )
    note = (
        f"Every run trained on real handwritten digits standing in for the dataset (repro.data.digits); no paper "
        f"claim is decided on them. A configuration learned when every seed reaches chance + "
        f"{LEARN_MARGIN * 100:.0f} points. Dense and sparse-MoE configurations must (verify-all exits 1 "
        "otherwise); the other methods, and the rows that train an alternative reading (`<row>__<alternative>`, "
        "repro/spec/readings.toml), are shown beside them; rows sharing their runs are one line. For a backbone "
        "MoE (Table 5), whether each layer's router moved from where it started, from the relative shift of its "
        "weights recorded every epoch: under the renormalised gate a k = 1 router gets no gradient."
    )
    out = "\n".join(lines) + "\n\n" + note
    if signs:
        out += (
            "\n\nOn these stand-in runs (which decide no paper claim), the empirical claims decided again on the "
            "rows each alternative reading trained:\n\n" + "\n".join(f"- {line}" for line in signs)
        )
    return out

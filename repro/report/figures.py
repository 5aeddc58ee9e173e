"""The report's figures, drawn with matplotlib without a display: PNG for report.md, PDF for LaTeX.

Two figures gather every manifest that has results: the accuracy gap against the
routed fraction rho (Section 5.3, Table 1) and against the number of classes
(Fig. 2). The others are declared by a manifest ([[figures]]) and drawn from its
own runs: test accuracy per epoch (Fig. 3) and test-time expert usage by class
(Fig. 4). Each comes with a caption saying what is plotted, from which runs
(profile), and what the paper's text reports. A figure without data is not drawn:
it is returned with png = None and the reason, and any stale file of that id is
removed so the report never shows an old picture. A figure whose inputs (what it plots, its stamp, the
drawing code and matplotlib's version) are those its PNG was drawn from, as the PNG's metadata says, is
not drawn again: the same results give the same bytes, so a report rendered again over unchanged results
keeps its files (matplotlib is not even imported).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from repro.core import jsonfile
from repro.core.fsutil import FolderWriter
from repro.core.package_data import shipped
from repro.plan.manifest import Figure as FigureDecl
from repro.plan.manifest import Manifest
from repro.plan.table_plan import Plans, TablePlan
from repro.spec.profiles import Profile
from repro.spec.paper import PaperValue, paper_table, paper_value
from repro.results.measurements import ManifestResult
from repro.report import figures_gaps as gaps
from repro.report import figures_runs as runs
from repro.report.figure_stamp import Stamp, draw_stamp, metadata, stamp_for

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DPI = 150


@dataclass(frozen=True)
class FigureFile:
    id: str  # the file stem: out_dir/<id>.png and .pdf
    title: str
    png: Path | None  # None when the figure was not drawn
    pdf: Path | None
    caption: str  # "not drawn: <why>" when png is None
    paper_ref: str
    shows: frozenset[tuple[str, str]] = frozenset()  # the (manifest id, row id) pairs drawn: a claim links to it

    @property
    def drawn(self) -> bool:
        return self.png is not None


def render_figures(
    entries: list[tuple[Manifest, ManifestResult | None]], out_dir: Path, plans: Plans, root: Path | None = None
) -> list[FigureFile]:
    """Draw every figure the results allow into out_dir; list the others with the reason they were skipped.
    `plans`: the command's plans, whose settings the captions name; `root`: the results folder out_dir lies in,
    which the files never leave (repro.core.fsutil.FolderWriter; default out_dir)."""
    out_dir = Path(out_dir)
    root = Path(root or out_dir)
    points = gaps.gap_points(entries)
    files = [_gap_vs_rho(entries, points, out_dir, plans, root), _gap_vs_classes(entries, points, out_dir, plans, root)]
    used = {f.id for f in files}
    for manifest, result in entries:
        for decl in manifest.figures:
            fig_id = decl.id if decl.id not in used else f"{manifest.id}_{decl.id}"
            used.add(fig_id)
            files.append(_declared(manifest, result, decl, fig_id, out_dir, plans, root))
    return files


# --------------------------------------------------------------------------- files
def _canonical(value: Any) -> Any:
    """What a figure is drawn from as plain JSON, the same in every process (sets sorted, arrays as lists)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted((_canonical(v) for v in value), key=repr)
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value.tolist() if hasattr(value, "tolist") else value


@lru_cache(maxsize=1)
def _drawing_code() -> str:
    """The drawing code and matplotlib's version: what else decides a figure's bytes."""
    import importlib.metadata

    digest = hashlib.sha256(importlib.metadata.version("matplotlib").encode())
    for path in sorted((shipped("repro") / "report").glob("figure*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def inputs_key(fig_id: str, inputs: Any, stamp: Stamp) -> str:
    text = json.dumps(_canonical([fig_id, inputs, stamp, _drawing_code()]), sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def drawn_key(png: Path) -> str | None:
    """The inputs key a PNG this module wrote carries in a text chunk (figure_stamp.metadata), or None."""
    try:
        data = jsonfile.read_bytes(png, jsonfile.MAX_BYTES)  # bounded, a regular file only
    except (OSError, ValueError):
        return None
    at = 8 if data[:8] == b"\x89PNG\r\n\x1a\n" else len(data)
    while at + 8 <= len(data):
        size, kind = int.from_bytes(data[at : at + 4], "big"), data[at + 4 : at + 8]
        chunk = data[at + 8 : at + 8 + size]
        if kind == b"tEXt" and chunk.startswith(b"Comment\0repro inputs "):
            return chunk.rsplit(b" ", 1)[-1].decode("latin-1")
        if kind == b"IDAT":  # the text chunks come before the image data
            return None
        at += 12 + size  # length, type, data, CRC
    return None


def _save(
    draw: Callable[[], Figure],
    inputs: Any,
    fig_id: str,
    title: str,
    caption: str,
    paper_ref: str,
    out_dir: Path,
    root: Path,
    stamp: Stamp,
    shows: frozenset[tuple[str, str]] = frozenset(),
) -> FigureFile:
    """Both files, each carrying the stamp (repro.report.figure_stamp) on the image and in its metadata, written
    below `root` only; drawn by `draw` only where the PNG there was not drawn from the same `inputs` and stamp."""
    paths = {fmt: out_dir / f"{fig_id}.{fmt}" for fmt in ("png", "pdf")}
    key = inputs_key(fig_id, inputs, stamp)
    if drawn_key(paths["png"]) != key or not paths["pdf"].is_file():
        fig = draw()
        draw_stamp(fig, stamp)
        drawn = {}
        for fmt, path in paths.items():
            buf = io.BytesIO()
            fig.savefig(buf, format=fmt, dpi=DPI, metadata=metadata(stamp, fmt, key))
            drawn[path] = buf.getvalue()
        FolderWriter(root).replace_set(drawn)
    return FigureFile(fig_id, title, paths["png"], paths["pdf"], caption, paper_ref, shows)


def _skip(fig_id: str, title: str, why: str, paper_ref: str, out_dir: Path, root: Path) -> FigureFile:
    for fmt in ("png", "pdf"):
        FolderWriter(root).remove(out_dir / f"{fig_id}.{fmt}")
    return FigureFile(fig_id, title, None, None, f"not drawn: {why}", paper_ref)


# --------------------------------------------------------------------------- caption parts
def _profile_words(name: str, plan: TablePlan | None) -> str:
    """The profile's words for a caption: its seeds, each dataset's epochs and images as the plan applies them."""
    if plan is None:
        return f"profile '{name}'"
    profile = plan.profile

    def amount(p: Profile) -> str:
        epochs = f"{p.epochs} epochs" if p.epochs else "the paper's epochs"
        return epochs + (f", {p.train_samples} training images" if p.train_samples else "")

    data = {
        "synthetic": "synthetic data, a pipeline check rather than the paper's numbers",
        "digits": "real digit scans standing in for the datasets, not the paper's numbers",
    }
    per_dataset = "; ".join(f"{d}: {amount(plan.datasets[d])}" for d in profile.datasets)
    return (
        f"profile '{name}' ({profile.seeds} seed(s), {per_dataset or amount(profile)}, "
        f"{data.get(profile.data, 'real data')})"
    )


def runs_note(pairs: list[tuple[Manifest, ManifestResult]], plans: Plans) -> str:
    """Which manifests' runs a figure shows, grouped by the profile they ran at."""
    groups: dict[str, list[str]] = {}
    for manifest, result in pairs:
        words = _profile_words(result.profile, plans.by_key.get((manifest.id, result.profile)))
        groups.setdefault(words, []).append(manifest.id)
    return "Runs: " + "; ".join(f"{words}: {', '.join(ids)}" for words, ids in groups.items()) + "."


def _describe(pv: PaperValue, statement: str) -> tuple[bool, str]:
    where = f"Section {pv.section}" + (", explainer" if pv.source == "explainer-and-summary" else "")
    if pv.value is not None:
        return True, f"{statement} (paper: {pv.printed}, {where})"
    direction = f"direction {pv.sign}" if pv.sign else pv.printed
    return False, f"{statement} ({where}; {direction}, no number)"


def paper_note(manifest: Manifest, rows: tuple[str, ...], paper_ref: str) -> str:
    """What the paper's text says about a manifest figure's rows: values keyed by those rows, and the
    reported findings of claims that compare them."""
    said: list[tuple[bool, str]] = []
    seen: set[str] = set()
    for claim in manifest.claims:
        key = claim.params.get("paper")
        if not isinstance(key, str) or not {claim.params.get("row"), claim.params.get("baseline")} & set(rows):
            continue
        pv = paper_value(manifest.paper_table, key)
        if pv is not None and pv.key not in seen:
            seen.add(pv.key)
            said.append(_describe(pv, claim.statement))
    table = paper_table(manifest.paper_table)
    for pv in table.values if table else ():
        if pv.row in rows and pv.key not in seen:
            seen.add(pv.key)
            said.append(_describe(pv, pv.note or pv.key))
    ref = paper_ref or manifest.paper_ref
    if not said:
        return f"The paper's text gives no number for {ref}."
    lead = "Paper" if any(numeric for numeric, _ in said) else f"The paper's text gives no number for {ref}; it states"
    return f"{lead}: " + "; ".join(text for _, text in said) + "."


# --------------------------------------------------------------------------- cross-manifest figures
GAP_VS_RHO = ("gap_vs_rho", "Accuracy gap against the routed fraction ρ", "Section 5.3, Table 1")
GAP_VS_CLASSES = ("gap_vs_classes", "Accuracy gap against the number of classes", "Fig. 2")


def _no_gaps(entries: list[tuple[Manifest, ManifestResult | None]]) -> str:
    ran = [m.id for m, r in entries if r is not None]
    if not ran:
        return "no manifest has results yet"
    return f"no comparison of the manifests with results ({', '.join(ran)}) has a measured accuracy gap"


def _rows_drawn(entries, points: list[gaps.GapPoint]) -> frozenset[tuple[str, str]]:
    """Both rows of every comparison behind the points, in every manifest that shares the point."""
    by_id = {m.id: m for m, _ in entries}
    out = set()
    for p in points:
        for source in p.sources:
            manifest_id, comparison = source.split("/", 1)
            comp = next(c for c in by_id[manifest_id].comparisons if c.id == comparison)
            out.update({(manifest_id, comp.row), (manifest_id, comp.baseline)})
    return frozenset(out)


def _pairs_for(entries, points: list[gaps.GapPoint]) -> list[tuple[Manifest, ManifestResult]]:
    ids = set().union(*(p.manifests for p in points))
    return [(m, r) for m, r in entries if r is not None and m.id in ids]


def _gap_vs_rho(entries, points: list[gaps.GapPoint], out_dir: Path, plans: Plans, root: Path) -> FigureFile:
    fig_id, title, ref = GAP_VS_RHO
    shown, left_out = gaps.split_by_rho(points)
    if not shown:
        why = (
            _no_gaps(entries)
            if not points
            else (
                f"no compared treatment routes any compute: {left_out['zero']} comparison(s) have ρ = 0 and "
                f"{left_out['missing']} have no measured ρ (their rows do not measure flops)"
            )
        )
        return _skip(fig_id, title, why, ref, out_dir, root)
    threshold = gaps.rho_threshold_pct([m for m, _ in entries])
    pairs = _pairs_for(entries, shown)
    caption = gaps.caption_gap_vs_rho(shown, left_out, threshold, gaps.symlog(shown), runs_note(pairs, plans))
    return _save(
        lambda: gaps.draw_gap_vs_rho(shown, threshold, title)[0],
        (shown, threshold, title),
        fig_id,
        title,
        caption,
        ref,
        out_dir,
        root,
        stamp_for(pairs),
        _rows_drawn(entries, shown),
    )


def _gap_vs_classes(entries, points: list[gaps.GapPoint], out_dir: Path, plans: Plans, root: Path) -> FigureFile:
    fig_id, title, ref = GAP_VS_CLASSES
    shown = [p for p in points if p.series]
    if not shown:
        why = (
            _no_gaps(entries)
            if not points
            else f"none of the {len(points)} measured comparison(s) belongs to a series (Comparison.series)"
        )
        return _skip(fig_id, title, why, ref, out_dir, root)
    pairs = _pairs_for(entries, shown)
    caption = gaps.caption_gap_vs_classes(shown, gaps.symlog(shown), runs_note(pairs, plans))
    return _save(
        lambda: gaps.draw_gap_vs_classes(shown, title)[0],
        (shown, title),
        fig_id,
        title,
        caption,
        ref,
        out_dir,
        root,
        stamp_for(pairs),
        _rows_drawn(entries, shown),
    )


# --------------------------------------------------------------------------- manifest figures
def _declared(
    manifest: Manifest,
    result: ManifestResult | None,
    decl: FigureDecl,
    fig_id: str,
    out_dir: Path,
    plans: Plans,
    root: Path,
) -> FigureFile:
    ref = decl.paper_ref or manifest.paper_ref
    if result is None:
        return _skip(fig_id, decl.title, f"{manifest.id} has no results yet (not run)", ref, out_dir, root)
    where = f"{manifest.id} (profile '{result.profile}')"
    runs_text, paper = runs_note([(manifest, result)], plans), paper_note(manifest, decl.rows, ref)
    if decl.kind == "accuracy_by_epoch":
        curves = runs.epoch_curves(decl, manifest, result)
        if not curves:
            return _skip(
                fig_id,
                decl.title,
                f"no run of {', '.join(decl.rows)} in {where} recorded test accuracy per epoch",
                ref,
                out_dir,
                root,
            )
        missing = [r for r in decl.rows if r not in {c.row for c in curves}]
        drawn, draw = curves, lambda: runs.draw_accuracy_by_epoch(curves, decl.title)
        caption = runs.caption_accuracy_by_epoch(curves, manifest, missing, runs_text, paper)
    elif decl.kind == "usage_by_class":
        mats = runs.usage_matrices(decl, manifest, result)
        if not mats:
            return _skip(
                fig_id,
                decl.title,
                f"no run of {', '.join(decl.rows)} in {where} recorded test-time expert usage by class",
                ref,
                out_dir,
                root,
            )
        missing = [r for r in decl.rows if r not in {m.row for m in mats}]
        drawn, draw = mats, lambda: runs.draw_usage_by_class(mats, decl.title)
        caption = runs.caption_usage_by_class(mats, missing, runs_text, paper)
    else:
        return _skip(fig_id, decl.title, f"no drawing for figure kind '{decl.kind}'", ref, out_dir, root)
    return _save(
        draw,
        (decl.kind, drawn, decl.title),
        fig_id,
        decl.title,
        caption,
        ref,
        out_dir,
        root,
        stamp_for([(manifest, result)]),
        frozenset((manifest.id, r) for r in decl.rows),
    )


__all__ = ["FigureFile", "render_figures", "runs_note", "paper_note"]

"""The report's figures, drawn with matplotlib without a display: PNG for report.md, PDF for LaTeX.

Two figures gather every manifest that has results: the accuracy gap against the routed fraction rho (Section
5.3, Table 1) and against the number of classes (Fig. 2). The others are declared by a manifest ([[figures]]) and
drawn from its own runs: test accuracy per epoch (Fig. 3) and test-time expert usage by class (Fig. 4). Each comes
with a caption saying what is plotted, from which runs (profile), and what the paper's text reports. A figure
without data is not drawn: it is returned with png = None and the reason, and any stale file of that id is
removed so the report never shows an old picture. A figure whose inputs (what it plots, its stamp, the drawing
code and matplotlib's version) are those its PNG was drawn from, as the PNG's metadata says, is not drawn again:
the same results give the same bytes, and matplotlib is not even imported.

Every figure carries a stamp on the image itself, since it is copied out of the report without its caption: a
footer line ("smoke: synthetic data, a pipeline check, not evidence · commit 1a2b3c4d5e6f"), and, for a profile
that decides no empirical claim or results on unverified data (files that fail their published checksums,
accepted with --allow-unverified-data), the same again across the plot in large faint letters, which cropping the
footer does not remove. The stamp is also written into the PNG's and PDF's metadata (a test reads it back).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import textwrap
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol, TypeVar

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
from repro.report.trained_on import commits_text, decides_empirical, label, profile_as_run

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DPI = 150
FOOTER_SIZE = 8
MARK_ALPHA = 0.13  # faint enough to read the data through, dark enough to survive a screenshot


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
    out = Folder(Path(out_dir), Path(root or out_dir))
    files = _gap_figures(entries, out, plans)
    used = {f.id for f in files}
    for manifest, result in entries:
        for decl in manifest.figures:
            fig_id = decl.id if decl.id not in used else f"{manifest.id}_{decl.id}"
            used.add(fig_id)
            files.append(_declared(manifest, result, decl, fig_id, out, plans))
    return files


# --------------------------------------------------------------------------- the stamp
@dataclass(frozen=True)
class Stamp:
    text: str  # "smoke: synthetic data, a pipeline check, not evidence · commit 1a2b3c4d5e6f"
    not_evidence: bool  # the profile decides no empirical claim: the image says so across the plot too
    profile: str
    unverified: bool = False  # some results trained on unverified data: the image says that across the plot

    @property
    def warns(self) -> bool:
        """The footer in red and the mark across the plot."""
        return self.not_evidence or self.unverified

    @property
    def mark(self) -> str:
        return f"{self.profile}: {'unverified data' if self.unverified else 'not evidence'}"


def stamp_for(pairs: list[tuple[Manifest, ManifestResult]]) -> Stamp:
    """The stamp of a figure drawn from these results: their profile(s) as run and the commit(s) they came from."""
    labels: dict[str, None] = {}
    not_evidence, unverified, names = False, False, []
    for manifest, result in pairs:
        settings = profile_as_run(manifest, result)
        on_unverified = any(c.accepted_unverified for c in result.data_checks())
        labels[label(result.profile, settings, on_unverified)] = None
        not_evidence |= not decides_empirical(settings)
        unverified |= on_unverified
        names.append(result.profile)
    commits = {str(r.provenance.get("git_commit") or "") for _, r in pairs}
    text = "; ".join(labels) or "no results"
    profile = ", ".join(dict.fromkeys(names)) or "no profile"
    return Stamp(f"{text} · {commits_text(commits)}", not_evidence or not pairs, profile, unverified)


def draw_stamp(fig: Figure, stamp: Stamp) -> None:
    """The footer under everything else (constrained layout makes room for it) and, where the profile decides
    no empirical claim or the data is unverified, the mark across the figure."""
    width_chars = int(fig.get_figwidth() * 72 / (FOOTER_SIZE * 0.55))  # characters that fit at this font size
    colour = "#b00020" if stamp.warns else "0.25"
    fig.supxlabel(textwrap.fill(stamp.text, max(40, width_chars)), fontsize=FOOTER_SIZE, color=colour)
    if stamp.warns:
        size = min(48.0, 1.6 * fig.get_figwidth() * 72 / max(len(stamp.mark), 1))
        mark: dict[str, Any] = dict(fontsize=size, color=colour, alpha=MARK_ALPHA, rotation=20, weight="bold", zorder=0)
        fig.text(0.5, 0.5, stamp.mark, ha="center", va="center", in_layout=False, **mark)


def metadata(stamp: Stamp, fmt: str, key: str = "") -> dict[str, str | None]:
    """savefig metadata: the label, what the figure was drawn from (`key`: inputs_key), and no timestamps (the
    same results give the same bytes)."""
    if fmt == "pdf":
        return {"CreationDate": None, "Subject": stamp.text, "Keywords": f"repro inputs {key}"}
    return {"Software": None, "Description": stamp.text, "Comment": f"repro inputs {key}"}


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
    """The inputs key a PNG this module wrote carries in a text chunk (metadata), or None."""
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


@dataclass(frozen=True)
class Folder:
    """Where figures are written: out_dir, below `root` only (repro.core.fsutil.FolderWriter)."""

    out_dir: Path
    root: Path

    def paths(self, fig_id: str) -> dict[str, Path]:
        return {fmt: self.out_dir / f"{fig_id}.{fmt}" for fmt in ("png", "pdf")}

    def save(
        self,
        head: tuple[str, str, str],
        caption: str,
        draw: Callable[[], Figure],
        inputs: Any,
        pairs: list[tuple[Manifest, ManifestResult]],
        shows: frozenset[tuple[str, str]],
    ) -> FigureFile:
        """Both files of figure `head` (id, title, paper_ref), each carrying the stamp of `pairs` on the image and
        in its metadata; drawn by `draw` only where the PNG there was not drawn from the same `inputs` and stamp."""
        fig_id, title, paper_ref = head
        paths, stamp = self.paths(fig_id), stamp_for(pairs)
        key = inputs_key(fig_id, inputs, stamp)
        if drawn_key(paths["png"]) != key or not paths["pdf"].is_file():
            fig = draw()
            draw_stamp(fig, stamp)
            drawn = {}
            for fmt, path in paths.items():
                buf = io.BytesIO()
                fig.savefig(buf, format=fmt, dpi=DPI, metadata=metadata(stamp, fmt, key))
                drawn[path] = buf.getvalue()
            FolderWriter(self.root).replace_set(drawn)
        return FigureFile(fig_id, title, paths["png"], paths["pdf"], caption, paper_ref, shows)

    def skip(self, head: tuple[str, str, str], why: str) -> FigureFile:
        """Figure `head` not drawn, and any stale file of it removed."""
        for path in self.paths(head[0]).values():
            FolderWriter(self.root).remove(path)
        return FigureFile(head[0], head[1], None, None, f"not drawn: {why}", head[2])


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


def _gap_figures(entries, out: Folder, plans: Plans) -> list[FigureFile]:
    """Gap against rho (the points with rho > 0) and against the class count (the points in a series)."""
    points = gaps.gap_points(entries)
    by_rho, left_out = gaps.split_by_rho(points)
    threshold = gaps.rho_threshold_pct([m for m, _ in entries])
    in_series = [p for p in points if p.series]
    ran = [m.id for m, r in entries if r is not None]
    comparisons = {(m.id, c.id): c for m, _ in entries for c in m.comparisons}

    def figure(head, shown: list, why: str, caption, draw, inputs) -> FigureFile:
        """The points `shown` (none: skipped, for `why`); it shows both rows of every comparison behind a point,
        in every manifest that shares the point."""
        if not points:
            why = f"no comparison of the manifests with results ({', '.join(ran)}) has a measured accuracy gap"
            return out.skip(head, why if ran else "no manifest has results yet")
        if not shown:
            return out.skip(head, why)
        ids = set().union(*(p.manifests for p in shown))
        pairs = [(m, r) for m, r in entries if r is not None and m.id in ids]
        rows = set()
        for manifest_id, comparison in (source.split("/", 1) for p in shown for source in p.sources):
            comp = comparisons[manifest_id, comparison]
            rows |= {(manifest_id, comp.row), (manifest_id, comp.baseline)}
        return out.save(head, caption(runs_note(pairs, plans)), draw, inputs, pairs, frozenset(rows))

    rho_title, classes_title = GAP_VS_RHO[1], GAP_VS_CLASSES[1]
    return [
        figure(
            GAP_VS_RHO,
            by_rho,
            f"no compared treatment routes any compute: {left_out['zero']} comparison(s) have ρ = 0 and "
            f"{left_out['missing']} have no measured ρ (their rows do not measure flops)",
            lambda runs: gaps.caption_gap_vs_rho(by_rho, left_out, threshold, gaps.symlog(by_rho), runs),
            lambda: gaps.draw_gap_vs_rho(by_rho, threshold, rho_title)[0],
            (by_rho, threshold, rho_title),
        ),
        figure(
            GAP_VS_CLASSES,
            in_series,
            f"none of the {len(points)} measured comparison(s) belongs to a series (Comparison.series)",
            lambda runs: gaps.caption_gap_vs_classes(in_series, gaps.symlog(in_series), runs),
            lambda: gaps.draw_gap_vs_classes(in_series, classes_title)[0],
            (in_series, classes_title),
        ),
    ]


# --------------------------------------------------------------------------- manifest figures
class _RowItem(Protocol):
    """What a manifest figure draws of one row (runs.EpochCurve, runs.UsageMatrix)."""

    @property
    def row(self) -> str: ...


_Item = TypeVar("_Item", bound=_RowItem)


class _Caption(Protocol[_Item]):
    def __call__(self, items: list[_Item], /, *, missing: list[str], runs: str, paper: str) -> str: ...


def _declared(
    manifest: Manifest, result: ManifestResult | None, decl: FigureDecl, fig_id: str, out: Folder, plans: Plans
) -> FigureFile:
    head = (fig_id, decl.title, decl.paper_ref or manifest.paper_ref)
    if result is None:
        return out.skip(head, f"{manifest.id} has no results yet (not run)")

    def figure(
        items: list[_Item], what: str, draw: Callable[[list[_Item], str], Figure], caption: _Caption[_Item]
    ) -> FigureFile:
        """The figure of `items`, one per row that recorded `what`; skipped when no row did."""
        if not items:
            where = f"{manifest.id} (profile '{result.profile}')"
            return out.skip(head, f"no run of {', '.join(decl.rows)} in {where} recorded {what}")
        missing = [r for r in decl.rows if r not in {item.row for item in items}]
        pairs = [(manifest, result)]
        runs_words, paper = runs_note(pairs, plans), paper_note(manifest, decl.rows, head[2])
        text = caption(items, missing=missing, runs=runs_words, paper=paper)
        shows = frozenset((manifest.id, r) for r in decl.rows)
        return out.save(head, text, lambda: draw(items, decl.title), (decl.kind, items, decl.title), pairs, shows)

    if decl.kind == "accuracy_by_epoch":
        curves = runs.epoch_curves(decl, manifest, result)
        caption = partial(runs.caption_accuracy_by_epoch, manifest=manifest)
        return figure(curves, "test accuracy per epoch", runs.draw_accuracy_by_epoch, caption)
    if decl.kind == "usage_by_class":
        mats = runs.usage_matrices(decl, manifest, result)
        return figure(mats, "test-time expert usage by class", runs.draw_usage_by_class, runs.caption_usage_by_class)
    return out.skip(head, f"no drawing for figure kind '{decl.kind}'")

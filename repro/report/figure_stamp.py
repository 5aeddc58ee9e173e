"""The label every figure carries on the image itself: the profile, what it is evidence of, and the commit.

A figure is copied out of the report without its caption, so the image says it: a footer line on
every figure ("smoke: synthetic data, a pipeline check, not evidence · commit 1a2b3c4d5e6f"), and,
for a profile that decides no empirical claim or results on unverified data (files that fail their
published checksums, accepted with --allow-unverified-data), the same again across the plot in large
faint letters, which cropping the footer does not remove. The label is also written into the PNG's
and PDF's metadata (a test reads it back).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING

from repro.plan.manifest import Manifest
from repro.report.evidence import commits_text, decides_empirical, label
from repro.results.measurements import ManifestResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FOOTER_SIZE = 8
MARK_ALPHA = 0.13  # faint enough to read the data through, dark enough to survive a screenshot


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
        settings = result.profile_settings or manifest.profiles.get(result.profile)
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
    fig.supxlabel(
        textwrap.fill(stamp.text, max(40, width_chars)),
        fontsize=FOOTER_SIZE,
        color="#b00020" if stamp.warns else "0.25",
    )
    if stamp.warns:
        size = min(48.0, 1.6 * fig.get_figwidth() * 72 / max(len(stamp.mark), 1))
        fig.text(
            0.5,
            0.5,
            stamp.mark,
            fontsize=size,
            color="#b00020",
            alpha=MARK_ALPHA,
            rotation=20,
            ha="center",
            va="center",
            weight="bold",
            zorder=0,
            in_layout=False,
        )


def metadata(stamp: Stamp, fmt: str, key: str = "") -> dict[str, str | None]:
    """savefig metadata: the label, what the figure was drawn from (`key`: repro.report.figures.inputs_key), and
    no timestamps (the same results give the same bytes)."""
    if fmt == "pdf":
        return {"CreationDate": None, "Subject": stamp.text, "Keywords": f"repro inputs {key}"}
    return {"Software": None, "Description": stamp.text, "Comment": f"repro inputs {key}"}

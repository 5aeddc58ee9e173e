"""What a profile's results are evidence of, in the words every output shares.

Figures carry it on the image, per-table files in their provenance line, report.html on its first
screen: a figure or table copied out of the report still says whether it is a pipeline check or a
result. Words come from the profile as run (ManifestResult.profile_settings), never from its name.
"""

from __future__ import annotations

import re

from repro.spec.profiles import Profile

_COMMIT = re.compile(r"[0-9a-f]{12}")  # a commit's hash, shortened to 12 characters where shown

DATA_WORDS = {
    "synthetic": "synthetic data",
    "digits": "real digit scans standing in for the datasets",
    "real": "the paper's datasets",
}
# Data with files that fail their published checksum, accepted with --allow-unverified-data.
UNVERIFIED_WORDS = "UNVERIFIED data (copies of the paper's datasets that fail their published checksums)"
EVIDENCE_WORDS = {
    "pipeline": "a pipeline check, not evidence",
    "functional": "a check that the methods learn real images, not evidence for the paper's claims",
    "reduced": "a reduced protocol",
    "paper": "the paper's protocol",
}


def decides_empirical(profile: Profile | None) -> bool:
    """Only the paper's datasets decide empirical claims (repro.claims.verdicts)."""
    return profile is not None and profile.evidence in ("reduced", "paper")


def _amount(profile: Profile) -> str:
    seeds = f"{profile.seeds} seed{'s' if profile.seeds != 1 else ''}" if profile.seeds else "the paper's seeds"
    # The epoch counts the profile states (its own and each dataset's): the span a reader needs, applied nowhere.
    epochs = {s.epochs for s in profile.datasets.values()} | {profile.epochs}
    epochs.discard(None)
    if not epochs:
        return f"{seeds}, the paper's epochs"
    span = f"{min(epochs)}-{max(epochs)}" if len(epochs) > 1 else f"{next(iter(epochs))}"
    return f"{seeds} x {span} epochs"


def label(name: str, profile: Profile | None, unverified: bool = False) -> str:
    """'smoke: synthetic data, a pipeline check, not evidence'; a reduced protocol names its seeds and epochs.

    `unverified`: some dataset files failed their published checksum and were accepted
    (--allow-unverified-data), which the label then says."""
    if profile is None:
        return f"{name}: profile settings not recorded with the results"
    data = DATA_WORDS[profile.data]
    if unverified and profile.data == "real":
        data = UNVERIFIED_WORDS
    text = f"{name}: {data}, {EVIDENCE_WORDS[profile.evidence]}"
    if profile.evidence == "reduced":
        text += f" ({_amount(profile)})"
    return text


def commits_text(commits: set[str]) -> str:
    """'commit 1a2b3c4d5e6f' (12 characters, '+dirty' kept), or every commit when the results mix several."""
    short = sorted(
        {c[:12] + ("+dirty" if c.endswith("+dirty") else "") if _COMMIT.match(c) else c for c in commits if c}
    )  # else as written: "not a git checkout" (an installed wheel)
    if not short:
        return "commit unknown"
    return ("commit " if len(short) == 1 else "commits ") + ", ".join(short)

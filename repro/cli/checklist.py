"""The claims checklist as the terminal shows it: one line per claim, grouped by table, notes said once.

A note that several claims share (a profile that decides no empirical claim) is printed once, above
the table, with the number of claims it applies to; a claim's own note stays beside its evidence.
The evidence is a prose column: shown by `repro run` (its first BRIEF characters; -v: all of it), behind -v
for `repro verify-all`, which without -v lists only the claims that did not reproduce or whose verdict is unstable
under its seeds, and counts the others.
"""

from __future__ import annotations

from collections import Counter

from rich.text import Text

from repro.claims.headline import GROUPS, WORDS, group_of
from repro.core.terminal import Column, Grid

VERDICT_COLOURS = {"reproduced": "green", "not reproduced": "red", "inconclusive": "yellow", "not run": "dim"}
LISTED_QUIET = ("not reproduced", "inconclusive")  # what verify-all lists without -v: the claims to look at
BRIEF = 200  # characters of a claim's evidence `repro run` shows without -v


def brief(evidence: str) -> str:
    """The evidence up to BRIEF characters, cut after a clause (else a word), saying that -v has the rest."""
    if len(evidence) <= BRIEF:
        return evidence
    head = evidence[:BRIEF]
    cut = head.rfind("; ") if head.rfind("; ") > BRIEF // 2 else head.rfind(" ")
    return evidence[:cut].rstrip(";, ") + " (-v: the rest)"


def shared_notes(verdicts: list) -> list[tuple[str, str]]:
    """The notes more than one claim carries, most frequent first, with how many carry each by headline group
    ('53 (48 empirical, 3 derived from another claim, 2 from the explainer)'), as the headline counts them."""
    counts = Counter(v.note for v in verdicts if v.note)
    out = []
    for note, n in counts.most_common():
        if n > 1:
            groups = Counter(group_of(v) for v in verdicts if v.note == note)
            parts = ", ".join(f"{groups[g]} {WORDS[g]}" for g in GROUPS if groups[g])
            out.append((note, f"{n} claims" + (f" ({parts})" if len(groups) > 1 else "")))
    return out


def _listed_quiet(v) -> bool:
    """What verify-all lists without -v: a claim that did not reproduce, and any verdict its seeds' resamples do
    not give at least STABLE of the time (counted with the solid ones, an unstable one read as solid)."""
    return v.status in LISTED_QUIET or v.unstable


def _explained(v, said: set[str]) -> bool:
    """Not run for a reason many claims share (the profile decides no such claim): the note says it for all."""
    return v.status == "not run" and v.note in said


def verdicts_grid(
    groups: list[tuple[str, list]], evidence: bool, quiet: bool = False, short: bool = False
) -> tuple[list[Text], Grid]:
    """(the shared notes as lines, the checklist) for verdicts grouped by table id, each group a section
    headed by its id (one group: no heading). `quiet`: a claim not run for a shared reason is counted in
    that reason's line, and the others but those LISTED_QUIET in one line, instead of listed. `short`: each
    claim's evidence cut to BRIEF characters."""
    every = [v for _, vs in groups for v in vs]
    shared = shared_notes(every)
    said = {note for note, _ in shared}
    if quiet:
        lines = [Text.assemble((f"{n} not run: ", "bold"), note, " (-v lists them)") for note, n in shared]
        counted = Counter(v.status for v in every if not _listed_quiet(v) and not _explained(v, said))
        if counted:
            lines.append(
                Text.assemble(
                    ("Not listed: ", "bold"),
                    ", ".join(f"{counted[s]} {s}" for s in VERDICT_COLOURS if counted[s]),
                    " (-v lists them, each with its evidence)",
                )
            )
        groups = [(table_id, [v for v in vs if _listed_quiet(v)]) for table_id, vs in groups]
    else:
        lines = [Text.assemble((f"{n}: ", "bold"), note) for note, n in shared]
    columns = [Column("Claim"), Column("Verdict")] + ([Column("Evidence", prose=True, drop=1)] if evidence else [])
    grid = Grid(columns)
    for table_id, verdicts in groups:
        if len(groups) > 1 and verdicts:
            grid.section(table_id)
        for v in verdicts:
            verdict = Text(v.status, style=VERDICT_COLOURS.get(v.status, ""))
            if v.unverified_data:  # beside the verdict, on a line of its own to keep the column narrow
                verdict.append("\non unverified data", style="bold red")
            if v.stability is not None:  # a decided empirical verdict: how often its seeds' resamples give it
                verdict.append(
                    f"\nstability {v.stability:.2f}" + (": unstable" if v.unstable else ""),
                    style="bold yellow" if v.unstable else "dim",
                )
            cells = [v.claim, verdict]
            if evidence:
                note = "" if v.note in said else v.note
                text = v.evidence + (f" — {note}" if note else "")
                cells.append(brief(text) if short else text)
            grid.add(*cells)
    return lines, grid


def verdict_counts(verdicts: list) -> str:
    """'4 claims: 2 reproduced, 2 not run' (statuses in the checklist's order)."""
    counts = Counter(v.status for v in verdicts)
    parts = [f"{counts[s]} {s}" for s in VERDICT_COLOURS if counts[s]]
    n = len(verdicts)
    return f"{n} claim{'' if n == 1 else 's'}" + (f": {', '.join(parts)}" if parts else "")

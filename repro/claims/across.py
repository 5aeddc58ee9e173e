"""Claims across tables: a claim that reads another table's measurements, and a finding shown in a second table.

A finding may span tables (Fig. 2's gaps over CIFAR-10, CIFAR-100 and Tiny-ImageNet). Its claim names another
manifest's row or comparison as "<manifest>:<id>" (ids never hold ':'), and is decided on its own table's
evidence with that table's stored measurements added under the qualified ids (with_tables). Where that table
has not been run into the folder, what the claim needs from it is `not run`, naming the table.

A finding two tables share (the same comparison, trained once, in Tables 8 and 9) is one claim, in the manifest
that holds it; the other lists it under `shows = ["<manifest>:<claim>"]` and renders that verdict, marked as
decided there (shown_verdicts): the headline and Holm's family count it once.

    split(ref)               ("table2", "dw072") for "table2:dw072"; (None, ref) for a table's own id
    qualified_ids(claim)     per other manifest, the row and comparison ids a claim reads there
    tables_named(manifest)   the other manifests its claims read or its `shows` name
    with_tables(ev, others)  the evidence with the other tables' measurements under qualified ids
    check_across(manifests)  every qualified reference and `shows` entry names what exists; no finding twice; a
                             rule over the paper's stated signs reads every setting whose sign any table states
    shown_verdicts(m, by_id) the verdicts a manifest shows from the tables that decide them
"""

from __future__ import annotations

import dataclasses
from typing import Any, Collection, Iterable, Mapping

from repro.claims.core import Evidence
from repro.claims.references import COMPARISON_KEYS, PAPER_KEYS, PATH_KEYS, ROW_KEYS, param_refs
from repro.spec.paper import paper_value
from repro.results.measurements import ManifestResult, Verdict, parse_metric_path

SEP = ":"
# Parameters that change what a rule decides on a set of comparisons; may_collapse only relaxes the guard.
_NOT_THE_FINDING = ("may_collapse", "excluded")


Others = Mapping[str, "tuple[Any, ManifestResult | None]"]  # manifest id -> (manifest, its stored result or None)


def split(ref: str) -> tuple[str | None, str]:
    table, sep, ident = ref.partition(SEP)
    return (table, ident) if sep else (None, ref)


def qualify(table: str, ident: str) -> str:
    return f"{table}{SEP}{ident}"


def _refs(claim: Any) -> list[str]:
    """Every row or comparison id a claim names, metric paths' ids included."""
    out = []
    for key, value in claim.params.items():
        for ref in (r for r in param_refs(value) if isinstance(r, str)):
            if key in ROW_KEYS or key in COMPARISON_KEYS:
                out.append(ref)
            elif key in PATH_KEYS and ref.count(".") == 2:
                out.append(ref.split(".")[1])
    return out


def qualified_ids(claim: Any) -> dict[str, set[str]]:
    """Per other manifest, the row and comparison ids a claim reads there ("<manifest>:<id>")."""
    out: dict[str, set[str]] = {}
    for ref in _refs(claim):
        table, ident = split(ref)
        if table is not None:
            out.setdefault(table, set()).add(ident)
    return out


def tables_named(manifest: Any) -> list[str]:
    """The other manifests a manifest's claims read, and those its `shows` entries are decided in."""
    named = [split(r)[0] for c in manifest.claims for r in _refs(c)]
    named += [split(s)[0] for s in getattr(manifest, "shows", ())]
    return sorted({t for t in named if t and t != manifest.id})


def with_tables(ev: Evidence, manifest: Any, others: Others) -> Evidence:
    """The evidence with each named table's stored measurements under "<table>:<id>" (rows, comparisons, and
    the rows each of its comparisons pairs), or the reason they are missing (Evidence.missing_tables)."""
    for table in tables_named(manifest):
        other, result = others.get(table, (None, None))
        if result is None:
            ev.missing_tables[table] = (
                f"{table} has not been run into this folder at profile '{ev.profile}': "
                f"run `repro {table} --profile {ev.profile}`, then `repro report`"
            )
            continue
        for path, value in result.measured.metrics.items():
            ev.metrics[_qualified(path, table)] = value
        for path, why in result.measured.missing.items():
            ev.missing[_qualified(path, table)] = f"{table}: {why}"
        for c in other.comparisons:
            ev.comparison_rows[qualify(table, c.id)] = (qualify(table, c.row), qualify(table, c.baseline))
    return ev


def _qualified(path: str, table: str) -> str:
    kind, ident, metric = path.split(".")
    return f"{kind}.{qualify(table, ident)}.{metric}"


def check_across(manifests: Iterable[Any], elsewhere: Iterable[str] = ()) -> dict[str, list[str]]:
    """Problems per manifest id: a qualified reference or `shows` entry that names no manifest, row, comparison or
    claim; a `shows` entry of a claim the manifest decides itself; a finding decided by two claims. A manifest
    named in `elsewhere` (a shipped table outside a folder of the user's own) is not checked: a claim that reads
    it is `not run` there, naming it."""
    by_id = {m.id: m for m in manifests}
    absent = set(elsewhere) - set(by_id)
    problems: dict[str, list[str]] = {}

    def add(manifest_id: str, text: str) -> None:
        problems.setdefault(manifest_id, []).append(text)

    for m in by_id.values():
        for i, claim in enumerate(m.claims):
            for key, value in claim.params.items():
                for ref in (r for r in param_refs(value) if isinstance(r, str)):
                    ident = ref.split(".")[1] if key in PATH_KEYS and ref.count(".") == 2 else ref
                    table, local = split(ident)
                    if table is None or not (key in ROW_KEYS or key in COMPARISON_KEYS or key in PATH_KEYS):
                        continue
                    kind = (
                        "rows" if key in ROW_KEYS or (key in PATH_KEYS and ref.startswith("rows.")) else "comparisons"
                    )
                    if table in absent:
                        continue
                    if table not in by_id:
                        add(m.id, f"claims[{i}].{key}: '{ref}' names no manifest '{table}'")
                    elif local not in {x.id for x in getattr(by_id[table], kind)}:
                        add(m.id, f"claims[{i}].{key}: manifest '{table}' has no {kind[:-1]} '{local}'")
        own = {c.id for c in m.claims}
        for i, claim in enumerate(m.claims):
            for j, ref in enumerate(getattr(claim, "derived_from", ())):
                table, claim_id = split(ref)
                if table is None or table in absent:
                    continue
                if table not in by_id or claim_id not in {c.id for c in by_id[table].claims}:
                    add(m.id, f"claims[{i}].derived_from[{j}]: '{ref}' names no claim of a manifest")
        for j, shown in enumerate(getattr(m, "shows", ())):
            table, claim_id = split(shown)
            if table in absent:
                continue
            if table is None or table not in by_id:
                add(m.id, f"shows[{j}]: '{shown}' must be '<manifest>:<claim>' naming another manifest")
            elif claim_id not in {c.id for c in by_id[table].claims}:
                add(m.id, f"shows[{j}]: manifest '{table}' has no claim '{claim_id}'")
            elif claim_id in own:
                add(m.id, f"shows[{j}]: '{claim_id}' is also a claim of {m.id}: a finding is decided once")
    for m in by_id.values():
        for i, claim in enumerate(m.claims):
            if claim.params.get("stated_signs") == "paper":
                for text in check_paper_signs(m, claim, by_id, absent):
                    add(m.id, f"claims[{i}]: {text}")
    seen: dict[Any, str] = {}
    for m in by_id.values():
        for claim in m.claims:
            key = finding_key(m, claim, by_id)
            if key in seen:
                add(
                    m.id,
                    f"claim '{claim.id}' decides the same finding as {seen[key]} (same rule, same settings, "
                    f"same reported value): keep one and list it under `shows`",
                )
            else:
                seen[key] = f"{m.id}:{claim.id}"
    return problems


def paper_signs(by_id: Mapping[str, Any]) -> dict[str, str]:
    """Every setting whose gap sign the text states, in any table: "<manifest>:<comparison>" -> its sign, from
    "<comparison>.gap" in the manifest's paper table."""
    out = {}
    for m in by_id.values():
        for c in m.comparisons:
            pv = paper_value(m.paper_table, f"{c.id}.gap")
            if pv is not None and pv.implied_sign is not None:
                out[qualify(m.id, c.id)] = pv.implied_sign
    return out


def _side(sign: str) -> str:
    return "above" if sign == "+" else "below"


def check_paper_signs(manifest: Any, claim: Any, by_id: Mapping[str, Any], absent: Collection[str] = ()) -> list[str]:
    """A separation rule over the paper's stated signs: each listed row names the settings it counts (their MoE
    row's dataset and components agree with it), each on the side its stated sign puts it; every stated setting
    of every table is counted by a listed row or excluded with a reason; a row whose own table states its sign
    is listed, or counts only excluded settings."""
    signs, out = paper_signs(by_id), []
    settings, excluded = claim.params.get("settings") or {}, claim.params.get("excluded") or {}
    sides = {r: "below" for r in claim.params.get("below") or ()} | {
        r: "above" for r in claim.params.get("above") or ()
    }
    rows = {r.id: r for r in manifest.rows}
    counted = set()
    for row_id, named in settings.items():
        for setting in named:
            table, comp_id = split(setting)
            if table in absent:  # outside this folder: it counts nowhere here
                continue
            other = by_id.get(table) if table is not None else None
            comp = next((c for c in other.comparisons if c.id == comp_id), None) if other is not None else None
            if other is None or comp is None:
                out.append(f"settings.{row_id}: '{setting}' names no comparison of another manifest")
                continue
            if setting not in signs:
                out.append(f"settings.{row_id}: the text states no gap sign for '{setting}'")
                continue
            counted.add(setting)
            moe = next(r for r in other.rows if r.id == comp.row)
            if row_id in rows and not _same_model(rows[row_id], moe):
                out.append(
                    f"settings.{row_id}: '{setting}' compares {table}'s {moe.id}, a different model "
                    f"({moe.dataset}, {moe.backbone.name}, {moe.head.name} {moe.head.params})"
                )
            if row_id in sides and _side(signs[setting]) != sides[row_id]:
                out.append(
                    f"'{row_id}': {setting}'s stated gap sign {signs[setting]} puts it {_side(signs[setting])}, "
                    f"not {sides[row_id]}"
                )
            if row_id not in sides and setting not in excluded:
                out.append(f"settings.{row_id}: the row is not listed, so '{setting}' must be excluded with the reason")
    for row_id in sides:
        if row_id not in settings:
            out.append(f"'{row_id}' is listed {sides[row_id]} but names no setting it counts (settings.{row_id})")
    for setting, sign in sorted(signs.items()):
        if setting not in counted and setting not in excluded:
            out.append(
                f"{claim.rule} leaves out '{setting}', whose gap sign the text states ({sign}): list a row "
                "that counts it, or exclude it with the reason"
            )
    for setting in excluded:
        if setting not in signs and split(setting)[0] not in absent:
            out.append(f"excluded: '{setting}' is no setting whose gap sign the text states")
    for row_id, row in rows.items():
        own = paper_value(manifest.paper_table, f"{row_id}.gap")
        if own is None or own.implied_sign is None:
            continue
        unlisted_counts_only_excluded = row_id in settings and all(s in excluded for s in settings[row_id])
        if row_id not in sides and not unlisted_counts_only_excluded:
            out.append(
                f"'{row_id}': its gap sign is stated ({own.implied_sign}); list it, or name the settings it "
                "counts and exclude them"
            )
        for setting in settings.get(row_id, ()):
            if setting in signs and _side(signs[setting]) != _side(own.implied_sign):
                out.append(
                    f"'{row_id}': its own stated sign {own.implied_sign} disagrees with {setting}'s {signs[setting]}"
                )
    return out


def _same_model(row: Any, other: Any) -> bool:
    """The same dataset and components, the row's parameters a subset of the other's (a FLOP row leaves out
    what only training reads)."""

    def within(a: Any, b: Any) -> bool:
        return a.name == b.name and all(b.params.get(k) == v for k, v in a.params.items())

    return row.dataset == other.dataset and within(row.backbone, other.backbone) and within(row.head, other.head)


def finding_key(manifest: Any, claim: Any, by_id: Mapping[str, Any]) -> tuple:
    """What a claim decides, whichever table holds it: its rule, the settings it reads (each row as its dataset
    and components, each comparison as its two rows), the reported values, and its other parameters."""

    def row_of(table: Any, ident: str) -> Any:
        owner, local = split(ident)
        t = by_id.get(owner, table) if owner else table
        row = next((r for r in t.rows if r.id == local), None)
        return (row.dataset, repr(row.backbone), repr(row.head)) if row is not None else ident

    def setting(ident: str) -> Any:
        owner, local = split(ident)
        t = by_id.get(owner, manifest) if owner else manifest
        comp = next((c for c in t.comparisons if c.id == local), None)
        if comp is not None:
            return (row_of(t, comp.row), row_of(t, comp.baseline))
        return row_of(t, local)

    parts = []
    for key, value in sorted(claim.params.items()):
        if key in _NOT_THE_FINDING:
            continue
        if key in PAPER_KEYS and isinstance(value, str):
            pv = paper_value(manifest.paper_table, value)
            parts.append((key, (pv.printed, pv.value, pv.sign) if pv else value))
        elif key in ROW_KEYS or key in COMPARISON_KEYS:
            parts.append((key, repr([setting(r) if isinstance(r, str) else r for r in param_refs(value)])))
        elif key in PATH_KEYS:
            refs = [(parse_metric_path(p)[0], setting(p.split(".")[1]), p.split(".")[2]) for p in param_refs(value)]
            parts.append((key, repr(refs)))
        else:
            parts.append((key, repr(value)))
    return (claim.rule, claim.scope, tuple(parts))


def shown_verdicts(manifest: Any, decided: Mapping[str, tuple[Any, ManifestResult | None]]) -> list[Verdict]:
    """The verdicts `manifest.shows`, as the tables that hold the claims decided them, each marked `decided_in`;
    `not run`, naming the table, where that table has no result in the folder."""
    out = []
    for shown in getattr(manifest, "shows", ()):
        table, claim_id = split(shown)
        home, result = decided.get(table, (None, None)) if table is not None else (None, None)
        verdict = next((v for v in result.verdicts if v.claim == claim_id), None) if result is not None else None
        if verdict is not None:
            out.append(
                dataclasses.replace(
                    verdict,
                    decided_in=table or "",
                    failed=list(verdict.failed),
                    measured=dict(verdict.measured),
                    reported=dict(verdict.reported),
                )
            )
            continue
        claim = next((c for c in home.claims if c.id == claim_id), None) if home is not None else None
        out.append(
            Verdict(
                claim_id,
                claim.statement if claim else shown,
                claim.section if claim else "",
                claim.scope if claim else "empirical",
                "not run",
                f"decided in {table}, which has not been run into this folder at this profile",
                decided_in=table or "",
            )
        )
    return out

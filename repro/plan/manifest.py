"""Manifests: one TOML file per paper table, validated into dataclasses.

A manifest lists rows (model configurations), comparisons between rows, the
claims the table provides evidence for, the paper's seed count, and the
assumptions made where the paper is silent. The profiles it runs at are defined
once for every table (repro.spec.profiles) and attached when it is loaded, each as it
applies to this table. Code never branches on its id.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal, get_type_hints

from repro.claims import RULES, check_references
from repro.claims.rules import rule_config
from repro.claims.across import check_across
from repro.data.specs import DATASETS
from repro.models import BACKBONES, HEADS, Component
from repro.models.configs import ConfigError
from repro.spec.profiles import (
    MAX_BATCH,
    MAX_SEEDS,
    SHIPPED_PROFILES,
    Profile,
    RunDefaults,
    all_profiles,
    check_against,
)
from repro.spec.readings import (
    SHIPPED_NAME,
    Reading,
    ReadingsFile,
    Sensitivity,
    all_readings,
    applying,
    check_claims,
    check_rows,
    expand,
    load_own_readings,
)
from repro.core.package_data import shipped
from repro.core.registry import closest
from repro.core.schema import (
    Problems,
    SchemaError,
    bounded,
    check_id,
    check_params,
    check_text,
    convert,
    field_names,
    from_dict,
    read_toml,
)

Measure = Literal["flops", "accuracy", "latency"]
# Free text, set as one paragraph wherever it is shown: a line break is allowed there and nowhere else.
PROSE_KEYS = frozenset({"description", "text", "notes"})


SHIPPED_MANIFESTS = shipped("repro", "manifests")  # package data: one file per table of the paper


def manifests_dir(directory: str | Path | None = None) -> Path:
    """The manifests folder: `directory`, else the package's manifests/ (the command line passes $REPRO_MANIFESTS)."""
    return Path(directory) if directory else SHIPPED_MANIFESTS


@dataclass(frozen=True)
class Row:
    id: str
    label: str
    dataset: str
    backbone: Component
    head: Component
    measures: tuple[Measure, ...] = ("flops",)
    role: Literal["main", "sensitivity"] = "main"  # sensitivity rows probe an assumption
    notes: str = ""
    batch_size: int | None = None  # the row's training batch; None: the recipe's (a profile's wins over both)
    # Set on the rows a [[sensitivity]] table generates: "<reading>/<alternative>", and the row it varies.
    reading: str = ""
    base: str = ""


@dataclass(frozen=True)
class Comparison:
    """A treatment row against its baseline row (FLOPs reduction, accuracy gap, ...)."""

    id: str
    label: str
    row: str
    baseline: str
    series: str = ""  # groups comparisons across tables for figures, e.g. "depthwise w=2.0"


@dataclass(frozen=True)
class Figure:
    """A figure drawn from this manifest's runs."""

    id: str
    kind: Literal["accuracy_by_epoch", "usage_by_class"]
    title: str
    rows: tuple[str, ...]
    paper_ref: str = ""


@dataclass(frozen=True)
class Claim:
    id: str
    statement: str  # our paraphrase of the finding
    section: str  # where the paper states it
    rule: str  # a decision rule from repro.claims.RULES
    # extension: a question beyond the paper (no paper value), decided like an empirical claim
    scope: Literal["analytic", "empirical", "gpu", "extension"]
    params: dict[str, Any] = field(default_factory=dict)  # the rule's parameters, validated
    # What the paper rests on this finding, relative to the others (1): `repro plan` decides the
    # heaviest claims first within a budget.
    weight: float = bounded(1.0, ge=0.0, le=100.0)
    # An analytic claim says what it checks (repro.claims.headline): "printed", a number the paper prints that a
    # count matches; "property", a bound or property that follows from the paper's architecture; "self-test", of
    # this artifact's own code (shown, not counted as a reproduction). Another scope leaves it empty, or says
    # "prediction": a bound this artifact sets where the text only points (shown, not counted as the paper's).
    kind: Literal["", "printed", "property", "self-test", "prediction"] = ""
    # The claims that imply this one ("<claim>" of this table, "<manifest>:<claim>" of another): it is decided and
    # shown, but counted apart in the headline, so one finding is not counted twice.
    derived_from: tuple[str, ...] = ()


@dataclass(frozen=True)
class Assumption:
    id: str
    text: str


@dataclass(frozen=True)
class Manifest:
    id: str
    title: str
    paper_ref: str  # e.g. "Table 6, Section 5.3"
    description: str
    rows: tuple[Row, ...]
    profiles: dict[str, Profile] = field(default_factory=dict)  # attached by the loader (with_profiles)
    seeds: int | None = None  # the paper's seed count for this table: what a profile without `seeds` runs
    comparisons: tuple[Comparison, ...] = ()
    claims: tuple[Claim, ...] = ()
    assumptions: tuple[Assumption, ...] = ()
    figures: tuple[Figure, ...] = ()
    paper_table: str = ""  # the paper_tables/ file holding its reported values; default: id
    path: str = ""
    sensitivity: tuple[Sensitivity, ...] = ()  # rows generated from the readings' alternatives (repro.spec.readings)
    readings: tuple[Reading, ...] = ()  # the readings (repro/spec/readings.toml) that apply to this table's rows
    # The file of one's own (--readings, $REPRO_READINGS) whose readings were read with the shipped ones: None, the
    # shipped alone. Kept so that what reads this manifest reads the same readings (another table's claims, the report).
    own_readings: ReadingsFile | None = None
    # The profiles attached from a file of one's own (--profiles, $REPRO_PROFILES), each with that file: what a command
    # that repeats this table's work must be given again (repro trace's "Reproduce"). The shipped ones are not listed.
    profile_files: dict[str, str] = field(default_factory=dict)
    # Claims another manifest decides that this table shows too, "<manifest>:<claim>" (repro.claims.across):
    # a finding two tables share is decided once and counted once.
    shows: tuple[str, ...] = ()

    def reading_file(self, reading_id: str) -> str:
        """Where a reading this table was read with is declared: the file of one's own, or the shipped file."""
        own = self.own_readings
        return str(own.path) if own is not None and own.declares(reading_id) else SHIPPED_NAME

    def row(self, row_id: str) -> Row:
        return next(r for r in self.rows if r.id == row_id)

    def measures(self) -> set[str]:
        return {m for r in self.rows for m in r.measures}

    def trained_datasets(self) -> tuple[str, ...]:
        """The datasets this table's rows train on, in row order (their recipes: repro.spec.recipes)."""
        return tuple(dict.fromkeys(r.dataset for r in self.rows if "accuracy" in r.measures))

    def is_extension(self) -> bool:
        """A table that asks questions beyond the paper: every claim it makes has scope "extension" (the report
        and `repro readings` count its claims apart from the paper's)."""
        return bool(self.claims) and all(c.scope == "extension" for c in self.claims)

    def profile(self, name: str) -> Profile:
        """The profile `name` as it applies to this table; KeyError naming the closest ones."""
        if name not in self.profiles:
            raise KeyError(
                f"no profile '{name}'{closest(name, list(self.profiles))}; profiles: {', '.join(self.profiles)}"
            )
        return self.profiles[name]


_TOP_KEYS = [
    "id",
    "title",
    "paper_ref",
    "description",
    "paper_table",
    "seeds",
    "rows",
    "comparisons",
    "claims",
    "assumptions",
    "figures",
    "sensitivity",
    "shows",
]
_ROW_KEYS = [k for k in field_names(Row) if k not in ("reading", "base")]  # those two: generated rows only
_CLAIM_KEYS = [k for k in field_names(Claim) if k != "params"]


def _component(registry, data: Any, path: str, problems: Problems) -> Component:
    if not isinstance(data, dict) or "name" not in data:
        problems.add(path, f"expected a table with 'name' = one of {', '.join(registry.names())}")
        return Component("?")
    name = data["name"]
    if name not in registry:
        problems.add(
            f"{path}.name",
            f"unknown {registry.kind} '{name}'{closest(str(name), registry.names())}; "
            f"allowed: {', '.join(registry.names())}",
        )
        return Component(str(name))
    params = {k: v for k, v in data.items() if k != "name"}
    config = registry.get(name).config
    if config is None:
        return Component(name, check_params(None, params, path, problems))
    hints, allowed = get_type_hints(config), field_names(config)
    typed = {}
    for key, value in params.items():
        if key not in allowed:
            problems.add(f"{path}.{key}", f"unknown key{closest(key, allowed)}; allowed: {', '.join(allowed)}")
        elif (converted := convert(hints[key], value, f"{path}.{key}", problems)) is not None:
            typed[key] = converted
    try:  # the config's own range checks, each reported at its key path
        config(**typed)
    except ConfigError as exc:
        for key, value, allowed_values in exc.problems:
            problems.add(f"{path}.{key}", f"must be {allowed_values}, got {value!r}")
    except (TypeError, ValueError) as exc:
        problems.add(path, str(exc))
    return Component(name, typed)


def _row(data: Any, path: str, problems: Problems) -> Row | None:
    if not isinstance(data, dict):
        problems.add(path, "expected a table")
        return None
    for key in data:
        if key not in _ROW_KEYS:
            problems.add(f"{path}.{key}", f"unknown key{closest(key, _ROW_KEYS)}; allowed: {', '.join(_ROW_KEYS)}")
    for key in ("id", "label", "dataset", "backbone", "head"):
        if key not in data:
            problems.add(f"{path}.{key}", "missing required key")
    if "dataset" in data and data["dataset"] not in DATASETS:
        problems.add(
            f"{path}.dataset",
            f"unknown dataset {data['dataset']!r}{closest(str(data['dataset']), list(DATASETS))}; "
            f"allowed: {', '.join(DATASETS)}",
        )
    backbone = _component(BACKBONES, data.get("backbone"), f"{path}.backbone", problems)
    head = _component(HEADS, data.get("head"), f"{path}.head", problems)
    plain = {k: v for k, v in data.items() if k not in ("backbone", "head") and k in _ROW_KEYS}
    hints = get_type_hints(Row)
    kwargs = {key: convert(hints[key], value, f"{path}.{key}", problems) for key, value in plain.items()}
    try:
        return Row(backbone=backbone, head=head, **{k: v for k, v in kwargs.items() if v is not None})
    except TypeError:
        return None


def _claim(data: Any, path: str, problems: Problems) -> Claim | None:
    if not isinstance(data, dict):
        problems.add(path, "expected a table")
        return None
    base = {k: v for k, v in data.items() if k in _CLAIM_KEYS}
    claim = from_dict(Claim, base, path, problems)
    rule = data.get("rule")
    if not isinstance(rule, str) or rule not in RULES:
        if rule is not None:
            problems.add(
                f"{path}.rule",
                f"unknown rule {rule!r}{closest(str(rule), RULES.names())}; allowed: {', '.join(RULES.names())}",
            )
        return None
    cfg = rule_config(rule)
    allowed = _CLAIM_KEYS + field_names(cfg)
    params = {k: v for k, v in data.items() if k not in _CLAIM_KEYS}
    for key in params:
        if key not in allowed:
            problems.add(
                f"{path}.{key}", f"unknown key{closest(key, allowed)}; allowed for rule '{rule}': {', '.join(allowed)}"
            )
    typed = check_params(cfg, {k: v for k, v in params.items() if k in allowed}, path, problems)
    if claim is None:
        return None
    analytic_kinds = ("printed", "property", "self-test")
    if claim.scope == "analytic" and claim.kind not in analytic_kinds:
        problems.add(f"{path}.kind", "an analytic claim states its kind: 'printed', 'property' or 'self-test'")
    elif claim.scope != "analytic" and claim.kind in analytic_kinds:
        problems.add(
            f"{path}.kind",
            f"kind is for analytic claims ('{claim.kind}'); this one is {claim.scope}: its "
            "kind is empty, or 'prediction' for a bound this artifact sets",
        )
    return Claim(
        claim.id,
        claim.statement,
        claim.section,
        claim.rule,
        claim.scope,
        typed,
        claim.weight,
        claim.kind,
        claim.derived_from,
    )


def parse_manifest(data: dict[str, Any], file: str | Path, own_readings: ReadingsFile | None = None) -> Manifest:
    """Validate a manifest document under the shipped readings and those of `own_readings`; raise SchemaError
    listing every problem."""
    problems = Problems()
    check_text(data, "", problems, PROSE_KEYS)  # what the LaTeX and Markdown writers cannot print, before any run
    for key in data:
        if key == "profiles":
            problems.add(
                key,
                "a manifest holds no profiles: every table runs at the profiles defined once in "
                "repro/spec/profiles.toml; put a profile of your own in a file and pass --profiles FILE",
            )
        elif key not in _TOP_KEYS:
            problems.add(key, f"unknown key{closest(key, _TOP_KEYS)}; allowed: {', '.join(_TOP_KEYS)}")
    for key in ("id", "title", "paper_ref", "description", "rows"):
        if key not in data:
            problems.add(key, "missing required key")
    scalars = {
        k: convert(str, data[k], k, problems)
        for k in ("id", "title", "paper_ref", "description", "paper_table")
        if k in data
    }
    parsed_rows = [_row(r, f"rows[{i}]", problems) for i, r in enumerate(_list(data, "rows", problems))]
    comparisons = [
        from_dict(Comparison, c, f"comparisons[{i}]", problems)
        for i, c in enumerate(_list(data, "comparisons", problems))
    ]
    parsed_claims = [_claim(c, f"claims[{i}]", problems) for i, c in enumerate(_list(data, "claims", problems))]
    assumptions = [
        from_dict(Assumption, a, f"assumptions[{i}]", problems)
        for i, a in enumerate(_list(data, "assumptions", problems))
    ]
    figures = [from_dict(Figure, f, f"figures[{i}]", problems) for i, f in enumerate(_list(data, "figures", problems))]
    sensitivity = [
        from_dict(Sensitivity, s, f"sensitivity[{i}]", problems)
        for i, s in enumerate(_list(data, "sensitivity", problems))
    ]
    seeds = convert(int, data["seeds"], "seeds", problems) if "seeds" in data else None
    shows = convert(tuple[str, ...], data["shows"], "shows", problems) if "shows" in data else ()
    if seeds is not None and not 1 <= seeds <= MAX_SEEDS:
        problems.add("seeds", f"{seeds!r} is out of range; allowed: 1 <= value <= {MAX_SEEDS}")

    rows = [r for r in parsed_rows if r is not None]
    _check_ids(rows, "rows", problems)
    for i, r in enumerate(rows):
        if r.batch_size is not None and not 1 <= r.batch_size <= MAX_BATCH:
            problems.add(
                f"rows[{i}].batch_size", f"{r.batch_size!r} is out of range; allowed: 1 <= value <= {MAX_BATCH}"
            )
    readings = all_readings(own_readings)
    if not problems.items:  # the components are known: every main row carries each reading's chosen value
        check_rows(rows, readings, problems, own_readings)
    comparisons = [c for c in comparisons if c is not None]
    _check_ids(comparisons, "comparisons", problems)
    if not problems.items:  # the readings' alternatives as rows and comparisons of their own
        twins, twin_comparisons = expand(
            rows, comparisons, [s for s in sensitivity if s is not None], readings, problems
        )
        rows, comparisons = rows + twins, comparisons + twin_comparisons
    row_ids = {r.id for r in rows}
    for i, c in enumerate(comparisons):
        for attr in ("row", "baseline"):
            ref = getattr(c, attr)
            if ref not in row_ids:
                problems.add(
                    f"comparisons[{i}].{attr}",
                    f"no row '{ref}'{closest(ref, sorted(row_ids))}; rows: {', '.join(sorted(row_ids))}",
                )
        if c.row == c.baseline:
            problems.add(
                f"comparisons[{i}].baseline",
                f"'{c.baseline}' is the comparison's own row: a row compared with itself measures nothing",
            )
    claims = [c for c in parsed_claims if c is not None]
    _check_ids(claims, "claims", problems)
    if not problems.items and "id" in scalars:  # a reading of what a claim measures names it by "<manifest>/<claim>"
        check_claims(scalars["id"], claims, readings, problems, rule_config)
    figures = [f for f in figures if f is not None]
    _check_ids(figures, "figures", problems)
    _check_ids([a for a in assumptions if a is not None], "assumptions", problems)
    if "id" in scalars:
        check_id(scalars["id"], "id", problems)
    for i, f in enumerate(figures):
        for ref in f.rows:
            if ref not in row_ids:
                problems.add(f"figures[{i}].rows", f"no row '{ref}'{closest(ref, sorted(row_ids))}")
    if seeds is None and any("accuracy" in r.measures for r in rows):
        problems.add(
            "seeds",
            "missing required key: a table that trains states the paper's seed count (an integer), "
            "which a profile without its own `seeds` runs",
        )
    if "id" in scalars and Path(file).suffix == ".toml" and scalars["id"] != Path(file).stem:
        problems.add("id", f"must equal the file name '{Path(file).stem}' so that `repro {Path(file).stem}` finds it")
    scalars.setdefault("paper_table", scalars.get("id", ""))
    if problems.items:
        raise SchemaError(file, problems.items)
    manifest = Manifest(
        rows=tuple(rows),
        comparisons=tuple(comparisons),
        claims=tuple(claims),
        assumptions=tuple(a for a in assumptions if a is not None),
        figures=tuple(figures),
        seeds=seeds,
        path=str(file),
        sensitivity=tuple(s for s in sensitivity if s is not None),
        readings=applying(rows, readings, scalars.get("id", ""), claims),
        own_readings=own_readings,
        shows=tuple(shows or ()),
        **scalars,
    )
    check_references(manifest, problems)
    if problems.items:
        raise SchemaError(file, problems.items)
    return manifest


def with_profiles(
    manifest: Manifest,
    profiles: dict[str, Profile],
    defaults: RunDefaults = RunDefaults(),
    files: dict[str, Path] | None = None,
) -> Manifest:
    """The manifest with `profiles` attached, each as it applies to this table (Profile.for_manifest): the one
    place a profile is applied; everything downstream reads `manifest.profiles[name]`. `files` (all_profiles'):
    where each was declared, kept for those of a file of one's own (Manifest.profile_files)."""
    own = {name: p.for_manifest(manifest.id, manifest.seeds, defaults) for name, p in profiles.items()}
    theirs = {n: str(f) for n, f in (files or {}).items() if n in own and Path(f) != SHIPPED_PROFILES}
    return dataclasses.replace(manifest, profiles=own, profile_files=theirs)


def _list(data: dict, key: str, problems: Problems) -> list:
    value = data.get(key, [])
    if not isinstance(value, list):
        problems.add(key, f"expected an array of tables ([[{key}]])")
        return []
    return value


def _check_ids(items: list, kind: str, problems: Problems) -> None:
    seen: set[str] = set()
    for i, item in enumerate(items):
        check_id(item.id, f"{kind}[{i}].id", problems)
        if item.id in seen:
            problems.add(f"{kind}[{i}].id", f"duplicate id '{item.id}'")
        seen.add(item.id)


def own_readings(readings_file: str | Path | None) -> ReadingsFile | None:
    """A readings file of one's own, read and validated (SchemaError naming it); None: the shipped readings alone."""
    return load_own_readings(readings_file) if readings_file else None


def load_manifest(
    path: str | Path,
    profiles: dict[str, Profile] | None = None,
    defaults: RunDefaults = RunDefaults(),
    readings_file: str | Path | None = None,
) -> Manifest:
    """One manifest with the profiles attached: `profiles`, else the shipped and the user's (all_profiles)."""
    manifest = parse_manifest(read_toml(Path(path)), path, own_readings(readings_file))
    if profiles is not None:
        return with_profiles(manifest, profiles, defaults)
    shipped, files = all_profiles()
    return with_profiles(manifest, shipped, defaults, files)


PROFILES_FILE = "profiles.toml"  # in a manifests folder: a profiles file (--profiles), never read as a manifest


def manifest_paths(directory: str | Path | None = None, besides: Iterable[str | Path | None] = ()) -> list[Path]:
    """The folder's manifest files: every *.toml but profiles.toml and `besides`, the profiles and readings files
    of one's own a command was given (kept beside one's manifests, they are not tables)."""
    others = {Path(f).resolve() for f in besides if f}
    folder = manifests_dir(directory)
    found = sorted(p for p in folder.glob("*.toml") if p.name != PROFILES_FILE and p.resolve() not in others)
    if directory and not found:  # a folder of one's own: a typo there read as "no tables" and ran nothing
        what = "no such folder" if not folder.exists() else "a file, not a folder" if not folder.is_dir() else None
        raise SchemaError(
            folder,
            [
                f"{what or 'no manifest (<id>.toml) in it'}; --manifests (or $REPRO_MANIFESTS) names a folder "
                "of manifest files, one <id>.toml per table"
            ],
        )
    return found


def load_valid(
    directory: str | Path | None = None,
    profiles_file: str | Path | None = None,
    defaults: RunDefaults = RunDefaults(),
    readings_file: str | Path | None = None,
) -> tuple[list[Manifest], dict[str, SchemaError]]:
    """Every manifest of the folder that is valid, with the profiles attached (under `defaults`), and the
    others' errors by id. The profiles are checked against the valid manifests (repro.spec.profiles.check_against);
    a readings file of one's own is read first, and its SchemaError raised before any manifest is read."""
    own = own_readings(readings_file)
    profiles, files = all_profiles(profiles_file)
    manifests, invalid = [], {}
    for path in manifest_paths(directory, besides=(profiles_file, readings_file)):
        try:
            manifests.append(parse_manifest(read_toml(path), path, own))
        except SchemaError as exc:
            invalid[path.stem] = exc
    for manifest_id, problems in check_across(manifests, _shipped_elsewhere(directory)).items():
        bad = next(m for m in manifests if m.id == manifest_id)
        invalid[manifest_id] = SchemaError(bad.path, problems)
    manifests = [m for m in manifests if m.id not in invalid]
    paths = {p.stem for p in manifest_paths(directory, besides=(profiles_file, readings_file))}
    check_own_claims(own, manifests, paths | _shipped_elsewhere(directory))
    check_against(profiles, files, manifests)
    return [with_profiles(m, profiles, defaults, files) for m in manifests], invalid


def check_own_claims(own: ReadingsFile | None, manifests: list[Manifest], known: set[str]) -> None:
    """A reading of one's own of what claims measure names each as '<manifest>/<claim>': one no manifest has
    (`known`: every manifest id there is; the claims of `manifests` are checked) is refused, naming the file and
    key: a misspelt one matched no claim, and the reading was taken as one no table uses."""
    if own is None:
        return
    claims = {m.id: [c.id for c in m.claims] for m in manifests}
    problems = Problems()
    for i, reading in enumerate(own.readings):
        for j, name in enumerate(reading.applies.claims):
            table, _, claim = name.partition("/")
            where = f"readings[{i}].applies.claims[{j}]"
            if table not in known and table not in claims:
                problems.add(where, f"reading '{reading.id}': no manifest '{table}'{closest(table, sorted(known))}")
            elif table in claims and claim not in claims[table]:
                problems.add(
                    where,
                    f"reading '{reading.id}': no claim '{claim}' in {table}{closest(claim, claims[table])}",
                )
    if problems.items:
        raise SchemaError(own.path, problems.items)


def _shipped_elsewhere(directory: str | Path | None) -> set[str]:
    """The shipped tables, when the folder is one of the user's own: what one manifest names in another may be
    there (a folder of one's own may hold some of the shipped tables only)."""
    folder = manifests_dir(directory)
    if folder.resolve() == SHIPPED_MANIFESTS.resolve():
        return set()
    return {p.stem for p in manifest_paths(SHIPPED_MANIFESTS)}


def load_all(
    directory: str | Path | None = None,
    profiles_file: str | Path | None = None,
    defaults: RunDefaults = RunDefaults(),
    readings_file: str | Path | None = None,
) -> list[Manifest]:
    """Every manifest in the folder (see manifests_dir), each with the profiles attached; raise the first
    invalid manifest's SchemaError."""
    manifests, invalid = load_valid(directory, profiles_file, defaults, readings_file)
    for exc in invalid.values():
        raise exc
    return manifests


def _declared_id(path: Path) -> object:
    try:
        return read_toml(path).get("id")
    except SchemaError:
        return None


def find_manifest(
    manifest_id: str,
    directory: str | Path | None = None,
    profiles_file: str | Path | None = None,
    defaults: RunDefaults = RunDefaults(),
    readings_file: str | Path | None = None,
) -> Manifest:
    """One manifest, from its file alone, with the profiles attached. What it names in other tables is checked by
    their file names (a table that does not exist, a profile entry naming none); what needs their rows (a reference
    to another table's row, one claim per finding, a table's settings that would split a shared model's runs) is
    the folder's check, load_valid's. KeyError naming the closest manifests when there is no such file."""
    own = own_readings(readings_file)  # before the manifest: a bad file of one's own is named first
    paths = {p.stem: p for p in manifest_paths(directory, besides=(profiles_file, readings_file))}
    if manifest_id not in paths:
        declaring = [p.name for p in paths.values() if _declared_id(p) == manifest_id]
        if declaring:  # a copy renamed without its id: name the files, not the closest id
            raise KeyError(
                f"no manifest file {manifest_id}.toml in {manifests_dir(directory)}; "
                f"{', '.join(declaring)} {'say' if len(declaring) > 1 else 'says'} id = '{manifest_id}', "
                "but a manifest's id must equal its file name"
            )
        raise KeyError(
            f"no manifest '{manifest_id}'{closest(manifest_id, list(paths))}; "
            f"known in {manifests_dir(directory)}: {', '.join(paths)}"
        )
    manifest = parse_manifest(read_toml(paths[manifest_id]), paths[manifest_id], own)
    others = (set(paths) | set(_shipped_elsewhere(directory))) - {manifest_id}
    for problems in check_across([manifest], others).values():
        raise SchemaError(manifest.path, problems)
    check_own_claims(own, [manifest], others | {manifest_id})
    profiles, files = all_profiles(profiles_file)
    check_against(profiles, files, [manifest], known=paths)
    return with_profiles(manifest, profiles, defaults, files)

"""Manifests: one TOML file per paper table, validated into dataclasses.

A manifest lists rows (model configurations), comparisons between rows, the
claims the table provides evidence for, the profiles it can run at, and the
assumptions made where the paper is silent. Code never branches on its id.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_type_hints

from repro import REPO_ROOT
from repro.claims import RULES, check_references
from repro.data.specs import DATASETS
from repro.models import BACKBONES, HEADS, Component
from repro.models.configs import ConfigError
from repro.registry import closest
from repro.schema import (
    Problems, SchemaError, bounded, check_id, check_params, convert, field_names, from_dict, read_toml,
)

Measure = Literal["flops", "accuracy", "latency"]


def default_profile() -> str:
    return os.environ.get("REPRO_PROFILE", "smoke")


def manifests_dir(directory: str | Path | None = None) -> Path:
    """The manifests folder: `directory`, else $REPRO_MANIFESTS, else the package's manifests/."""
    return Path(directory or os.environ.get("REPRO_MANIFESTS") or REPO_ROOT / "manifests")


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


# Upper bounds that keep a typo from asking for the impossible (1e11 samples) while leaving the paper's
# protocol far inside: ImageNet-1K has 1.28M training images, the paper uses 10 seeds, 80 epochs, 256 px.
MAX_SAMPLES, MAX_SEEDS, MAX_EPOCHS, MAX_BATCH, MAX_IMAGE = 1 << 24, 1000, 10_000, 1 << 16, 1024


@dataclass(frozen=True)
class DatasetSettings:
    """A profile's values for the rows on one dataset, replacing the profile's own (Profile.datasets)."""
    epochs: int | None = bounded(None, ge=1, le=MAX_EPOCHS)
    train_samples: int | None = bounded(None, ge=1, le=MAX_SAMPLES)
    test_samples: int | None = bounded(None, ge=1, le=MAX_SAMPLES)
    batch_size: int | None = bounded(None, ge=1, le=MAX_BATCH)
    max_image_size: int | None = bounded(None, ge=8, le=MAX_IMAGE)


@dataclass(frozen=True)
class Profile:
    description: str
    # What the profile is evidence for. pipeline: synthetic data, checks the machinery; functional:
    # real images that are not the paper's; reduced: the paper's datasets with fewer seeds or epochs;
    # paper: the paper's protocol. Only the last two decide empirical claims (repro.claims).
    evidence: Literal["pipeline", "functional", "reduced", "paper"]
    device: Literal["auto", "cpu", "cuda"] = "auto"
    seeds: int = bounded(1, ge=1, le=MAX_SEEDS)
    epochs: int | None = bounded(None, ge=1, le=MAX_EPOCHS)  # None: the paper's epochs (Section 4.1)
    data: Literal["real", "synthetic", "digits"] = "real"  # digits: real scans standing in (repro.data.digits)
    train_samples: int | None = bounded(None, ge=1, le=MAX_SAMPLES)  # a subset, for profiles that must be quick
    test_samples: int | None = bounded(None, ge=1, le=MAX_SAMPLES)
    batch_size: int | None = bounded(None, ge=1, le=MAX_BATCH)
    max_image_size: int | None = bounded(None, ge=8, le=MAX_IMAGE)  # cap on the training resolution; FLOPs use the paper's
    pretrained: bool = True
    # Where the pretrained weights of the backbones the recipe fine-tunes (ImageNet's) come from:
    # torchvision's ImageNet weights, or weights repro pretrains on the digit stand-in's training split
    # (repro.digit_weights; data = "digits" only), which need no download.
    pretrained_on: Literal["imagenet", "digits"] = "imagenet"
    # A recipe override, for profiles that train from random initialisation where the paper's recipe
    # fine-tunes pretrained weights (Section 4.1); None: the recipe's (repro.recipes.RECIPES). Only
    # 'pipeline' and 'functional' profiles may set them: they are not the paper's protocol, and the
    # profile's description must say so. backbone_lr_scale = 0 freezes a pretrained backbone.
    optimizer: Literal["adam", "sgd"] | None = None
    lr: float | None = bounded(None, gt=0.0, le=1.0)
    backbone_lr_scale: float | None = bounded(None, ge=0.0, le=1.0)
    # Which training rows run: "<manifest>" or "<manifest>/<row>" entries; empty: every row
    # (`repro plan` writes profiles that train only what the chosen claims read).
    include: tuple[str, ...] = ()
    # Per dataset, values replacing the ones above for that dataset's rows (e.g. more epochs for
    # 1000 classes than for 10): [profiles.<name>.datasets.<dataset>].
    datasets: dict[str, DatasetSettings] = field(default_factory=dict)

    def includes(self, manifest_id: str, row_id: str) -> bool:
        return not self.include or manifest_id in self.include or f"{manifest_id}/{row_id}" in self.include

    def for_dataset(self, dataset: str) -> Profile:
        """This profile as it applies to the rows on `dataset`."""
        settings = self.datasets.get(dataset)
        if settings is None:
            return self
        values = {k: v for k, v in dataclasses.asdict(settings).items() if v is not None}
        return dataclasses.replace(self, **values, datasets={})

    def __post_init__(self) -> None:
        overrides = [k for k in ("optimizer", "lr", "backbone_lr_scale") if getattr(self, k) is not None]
        if overrides and self.evidence in ("reduced", "paper"):
            raise ValueError(f"{' and '.join(overrides)} {'override' if len(overrides) > 1 else 'overrides'} the "
                             f"paper's recipe, which evidence "
                             f"{self.evidence!r} must keep: remove them or use evidence 'pipeline' or 'functional'")
        if self.pretrained_on == "digits" and self.data != "digits":
            raise ValueError(f"pretrained_on = 'digits' pretrains on the digit stand-in, so it needs data = 'digits', "
                             f"not {self.data!r}")
        unknown = sorted(set(self.datasets) - set(DATASETS))
        if unknown:
            raise ValueError(f"datasets.{unknown[0]}: unknown dataset{closest(unknown[0], list(DATASETS))}; "
                             f"allowed: {', '.join(DATASETS)}")
        for name, own in [(None, DatasetSettings()), *self.datasets.items()]:
            n, batch = own.train_samples or self.train_samples, own.batch_size or self.batch_size
            if n and batch and n < batch:
                where = f"datasets.{name}: " if name else ""
                raise ValueError(f"{where}train_samples = {n} is smaller than batch_size = {batch}: no full "
                                 "training batch would remain (the last partial batch is dropped)")


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
    profiles: dict[str, Profile]
    comparisons: tuple[Comparison, ...] = ()
    claims: tuple[Claim, ...] = ()
    assumptions: tuple[Assumption, ...] = ()
    figures: tuple[Figure, ...] = ()
    paper_table: str = ""  # the paper_tables/ file holding its reported values; default: id
    path: str = ""

    def row(self, row_id: str) -> Row:
        return next(r for r in self.rows if r.id == row_id)

    def measures(self) -> set[str]:
        return {m for r in self.rows for m in r.measures}


REQUIRED_PROFILES = ("smoke", "full")
_TOP_KEYS = ["id", "title", "paper_ref", "description", "paper_table", "rows", "comparisons", "claims", "profiles",
             "assumptions", "figures"]
_ROW_KEYS = field_names(Row)
_CLAIM_KEYS = [k for k in field_names(Claim) if k != "params"]


def _component(registry, data: Any, path: str, problems: Problems) -> Component:
    if not isinstance(data, dict) or "name" not in data:
        problems.add(path, f"expected a table with 'name' = one of {', '.join(registry.names())}")
        return Component("?")
    name = data["name"]
    if name not in registry:
        problems.add(f"{path}.name", f"unknown {registry.kind} '{name}'{closest(str(name), registry.names())}; "
                     f"allowed: {', '.join(registry.names())}")
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
        problems.add(f"{path}.dataset", f"unknown dataset {data['dataset']!r}{closest(str(data['dataset']), list(DATASETS))}; "
                     f"allowed: {', '.join(DATASETS)}")
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
    if rule not in RULES:
        if rule is not None:
            problems.add(f"{path}.rule", f"unknown rule {rule!r}{closest(str(rule), RULES.names())}; "
                         f"allowed: {', '.join(RULES.names())}")
        return None
    cfg = RULES.get(rule).config
    allowed = _CLAIM_KEYS + field_names(cfg)
    params = {k: v for k, v in data.items() if k not in _CLAIM_KEYS}
    for key in params:
        if key not in allowed:
            problems.add(f"{path}.{key}", f"unknown key{closest(key, allowed)}; allowed for rule '{rule}': {', '.join(allowed)}")
    typed = check_params(cfg, {k: v for k, v in params.items() if k in allowed}, path, problems)
    if claim is None:
        return None
    return Claim(claim.id, claim.statement, claim.section, claim.rule, claim.scope, typed, claim.weight)


def parse_manifest(data: dict[str, Any], file: str | Path) -> Manifest:
    """Validate a manifest document; raise SchemaError listing every problem."""
    problems = Problems()
    for key in data:
        if key not in _TOP_KEYS:
            problems.add(key, f"unknown key{closest(key, _TOP_KEYS)}; allowed: {', '.join(_TOP_KEYS)}")
    for key in ("id", "title", "paper_ref", "description", "rows", "profiles"):
        if key not in data:
            problems.add(key, "missing required key")
    scalars = {k: convert(str, data[k], k, problems) for k in ("id", "title", "paper_ref", "description", "paper_table") if k in data}
    rows = [_row(r, f"rows[{i}]", problems) for i, r in enumerate(_list(data, "rows", problems))]
    comparisons = [from_dict(Comparison, c, f"comparisons[{i}]", problems) for i, c in enumerate(_list(data, "comparisons", problems))]
    claims = [_claim(c, f"claims[{i}]", problems) for i, c in enumerate(_list(data, "claims", problems))]
    assumptions = [from_dict(Assumption, a, f"assumptions[{i}]", problems) for i, a in enumerate(_list(data, "assumptions", problems))]
    figures = [from_dict(Figure, f, f"figures[{i}]", problems) for i, f in enumerate(_list(data, "figures", problems))]
    profiles = {}
    raw_profiles = data.get("profiles", {})
    if not isinstance(raw_profiles, dict):
        problems.add("profiles", "expected a table of profiles")
        raw_profiles = {}
    for name in REQUIRED_PROFILES:
        if "profiles" in data and name not in raw_profiles:
            problems.add(f"profiles.{name}", f"missing required profile (every manifest has {', '.join(REQUIRED_PROFILES)})")
    for name, prof in raw_profiles.items():
        profiles[name] = _profile(prof, f"profiles.{name}", problems)

    rows = [r for r in rows if r is not None]
    _check_ids(rows, "rows", problems)
    row_ids = {r.id for r in rows}
    comparisons = [c for c in comparisons if c is not None]
    _check_ids(comparisons, "comparisons", problems)
    for i, c in enumerate(comparisons):
        for attr in ("row", "baseline"):
            ref = getattr(c, attr)
            if ref not in row_ids:
                problems.add(f"comparisons[{i}].{attr}", f"no row '{ref}'{closest(ref, sorted(row_ids))}; rows: {', '.join(sorted(row_ids))}")
        if c.row == c.baseline:
            problems.add(f"comparisons[{i}].baseline", f"'{c.baseline}' is the comparison's own row: a row compared "
                         "with itself measures nothing")
    claims = [c for c in claims if c is not None]
    _check_ids(claims, "claims", problems)
    figures = [f for f in figures if f is not None]
    _check_ids(figures, "figures", problems)
    _check_ids([a for a in assumptions if a is not None], "assumptions", problems)
    if "id" in scalars:
        check_id(scalars["id"], "id", problems)
    for i, f in enumerate(figures):
        for ref in f.rows:
            if ref not in row_ids:
                problems.add(f"figures[{i}].rows", f"no row '{ref}'{closest(ref, sorted(row_ids))}")
    if "id" in scalars and Path(file).suffix == ".toml" and scalars["id"] != Path(file).stem:
        problems.add("id", f"must equal the file name '{Path(file).stem}' so that `repro {Path(file).stem}` finds it")
    scalars.setdefault("paper_table", scalars.get("id", ""))
    if problems.items:
        raise SchemaError(file, problems.items)
    manifest = Manifest(
        rows=tuple(rows), comparisons=tuple(comparisons), claims=tuple(claims),
        assumptions=tuple(a for a in assumptions if a is not None), profiles=profiles, figures=tuple(figures),
        path=str(file), **scalars,
    )
    check_references(manifest, problems)
    if problems.items:
        raise SchemaError(file, problems.items)
    return manifest




def _profile(data: Any, path: str, problems: Problems) -> Profile | None:
    """One profile, from a manifest or a user's profiles file: the same checks for both."""
    check_id(path.removeprefix("profiles."), path, problems)  # a profile names a results folder
    profile = from_dict(Profile, data, path, problems)
    if profile is not None and profile.evidence in ("reduced", "paper") and profile.data != "real":
        problems.add(f"{path}.data", f"evidence {profile.evidence!r} is the paper's datasets: expected 'real', "
                     f"got {profile.data!r} (use evidence 'pipeline' or 'functional')")
    return profile


def load_profiles(path: str | Path) -> dict[str, Profile]:
    """User profiles from a TOML file of [profiles.<name>] tables, validated like a manifest's;
    raise SchemaError naming the file and every problem."""
    path = Path(path)
    data = read_toml(path)
    problems = Problems()
    for key in data:
        if key != "profiles":
            problems.add(key, f"unknown key{closest(key, ['profiles'])}; "
                         "a profiles file holds only tables named profiles.<name>")
    raw = data.get("profiles")
    if not isinstance(raw, dict) or not raw:
        problems.add("profiles", "expected at least one table named profiles.<name>")
        raw = {}
    profiles = {name: _profile(prof, f"profiles.{name}", problems) for name, prof in raw.items()}
    if problems.items:
        raise SchemaError(path, problems.items)
    return profiles


def with_profiles(manifest: Manifest, profiles: dict[str, Profile]) -> Manifest:
    """The manifest with `profiles` added; a user profile replaces the manifest's of the same name."""
    return dataclasses.replace(manifest, profiles={**manifest.profiles, **profiles})


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


def load_manifest(path: str | Path, profiles: dict[str, Profile] | None = None) -> Manifest:
    manifest = parse_manifest(read_toml(Path(path)), path)
    return with_profiles(manifest, profiles) if profiles else manifest


PROFILES_FILE = "profiles.toml"  # in a manifests folder: user profiles (see load_profiles), not a manifest


def manifest_paths(directory: str | Path | None = None) -> list[Path]:
    return sorted(p for p in manifests_dir(directory).glob("*.toml") if p.name != PROFILES_FILE)


def profiles_path(path: str | Path | None = None) -> Path | None:
    """The user profiles file: `path`, else $REPRO_PROFILES, else none."""
    value = path or os.environ.get("REPRO_PROFILES")
    return Path(value) if value else None


def user_profiles(path: str | Path | None = None) -> dict[str, Profile]:
    """The profiles of profiles_path(path), validated; {} without a file."""
    file = profiles_path(path)
    return load_profiles(file) if file else {}


def load_all(directory: str | Path | None = None, profiles_file: str | Path | None = None) -> list[Manifest]:
    """Every manifest in the folder (see manifests_dir), each with the user profiles (see profiles_path) added."""
    extra = user_profiles(profiles_file)
    return [load_manifest(p, extra) for p in manifest_paths(directory)]


def find_manifest(manifest_id: str, directory: str | Path | None = None,
                  profiles_file: str | Path | None = None) -> Manifest:
    paths = {p.stem: p for p in manifest_paths(directory)}
    if manifest_id not in paths:
        raise KeyError(f"no manifest '{manifest_id}'{closest(manifest_id, list(paths))}; "
                       f"known in {manifests_dir(directory)}: {', '.join(paths)}")
    return load_manifest(paths[manifest_id], user_profiles(profiles_file))

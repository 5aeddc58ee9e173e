"""Profiles: what a run is evidence for, what it trains on and for how long. Defined once.

The shipped profiles live in one file, repro/spec/profiles.toml; a user's file (--profiles FILE,
$REPRO_PROFILES) is read the same way and adds profiles, replacing one of the same name. A manifest
holds no profile: every table is run at the same profiles (repro.plan.manifest attaches them), so the
settings of a run depend on the profile, the row's dataset and, for the rows of one table only,
that table's own settings ([profiles.<name>.tables.<manifest>]). Which rows a profile trains is
`include` / `exclude`, entries "<manifest>" or "<manifest>/<row>" with shell-style patterns.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal

from repro.core.package_data import shipped
from repro.data.specs import DATASETS, get_dataset
from repro.spec.recipes import RECIPES
from repro.core.registry import closest
from repro.core import environment
from repro.core.schema import Problems, SchemaError, bounded, check_id, check_text, from_dict, read_toml

SHIPPED_PROFILES = shipped("repro.spec", "profiles.toml")
REQUIRED_PROFILES = ("smoke", "full")  # the default profile, and the paper's protocol (`repro plan` starts from it)

# Upper bounds that keep a typo from asking for the impossible (1e11 samples) while leaving the paper's
# protocol far inside: ImageNet-1K has 1.28M training images, the paper uses 10 seeds, 80 epochs, 256 px.
MAX_SAMPLES, MAX_SEEDS, MAX_EPOCHS, MAX_BATCH, MAX_IMAGE = 1 << 24, 1000, 10_000, 1 << 16, 1024
MAX_THREADS = environment.MAX_THREADS
RECIPE_OVERRIDES = ("optimizer", "lr", "backbone_lr_scale")


@dataclass(frozen=True)
class RunDefaults:
    """What every run trains on where its profile does not say: intra-op threads (never the machine's core
    count) and PyTorch's deterministic mode. Both name a run (repro.plan.run_config.RunConfig). The command line
    fills them from its settings ($OMP_NUM_THREADS, $REPRO_DETERMINISTIC: repro.cli.common.run_defaults); a
    library caller passes its own or takes 1 and off."""

    threads: int = 1
    deterministic: bool = False


@dataclass(frozen=True)
class RowSettings:
    """A profile's values for some of its rows (one dataset's, or one table's), replacing the profile's own."""

    epochs: int | None = bounded(None, ge=1, le=MAX_EPOCHS)
    train_samples: int | None = bounded(None, ge=1, le=MAX_SAMPLES)
    test_samples: int | None = bounded(None, ge=1, le=MAX_SAMPLES)
    batch_size: int | None = bounded(None, ge=1, le=MAX_BATCH)
    max_image_size: int | None = bounded(None, ge=8, le=MAX_IMAGE)
    backbone_lr_scale: float | None = bounded(None, ge=0.0, le=1.0)

    def given(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


@dataclass(frozen=True)
class LatencyProfile:
    """How a profile times the latency table (repro.plan.latency_settings); None: the paper-scale value."""

    batch_size: int | None = bounded(None, ge=1, le=MAX_BATCH)
    max_image_size: int | None = bounded(None, ge=8, le=MAX_IMAGE)  # cap on whole-model resolution


@dataclass(frozen=True)
class Profile:
    description: str
    # What the profile is evidence for. pipeline: synthetic data, checks the machinery; functional:
    # real images that are not the paper's; reduced: the paper's datasets with fewer seeds or epochs;
    # paper: the paper's protocol. Only the last two decide empirical claims (repro.claims).
    evidence: Literal["pipeline", "functional", "reduced", "paper"]
    device: Literal["auto", "cpu", "cuda"] = "auto"
    seeds: int | None = bounded(None, ge=1, le=MAX_SEEDS)  # None: the paper's, as each manifest states it
    epochs: int | None = bounded(None, ge=1, le=MAX_EPOCHS)  # None: the paper's epochs (Section 4.1)
    data: Literal["real", "synthetic", "digits"] = "real"  # digits: real scans standing in (repro.data.digits)
    train_samples: int | None = bounded(None, ge=1, le=MAX_SAMPLES)  # a subset, for profiles that must be quick
    test_samples: int | None = bounded(None, ge=1, le=MAX_SAMPLES)
    batch_size: int | None = bounded(None, ge=1, le=MAX_BATCH)
    # cap on the training resolution; FLOPs use the paper's
    max_image_size: int | None = bounded(None, ge=8, le=MAX_IMAGE)
    pretrained: bool = True
    # Where the pretrained weights of the backbones the recipe fine-tunes (ImageNet's) come from:
    # torchvision's ImageNet weights, or weights repro pretrains on the digit stand-in's training split
    # (repro.train.digit_weights; data = "digits" only), which need no download.
    pretrained_on: Literal["imagenet", "digits"] = "imagenet"
    # A recipe override, for profiles that train from random initialisation where the paper's recipe
    # fine-tunes pretrained weights (Section 4.1); None: the recipe's (repro.spec.recipes.RECIPES). Only
    # 'pipeline' and 'functional' profiles may set them: they are not the paper's protocol, and the
    # profile's description must say so. backbone_lr_scale = 0 freezes a pretrained backbone.
    optimizer: Literal["adam", "sgd"] | None = None
    lr: float | None = bounded(None, gt=0.0, le=1.0)
    backbone_lr_scale: float | None = bounded(None, ge=0.0, le=1.0)
    # Which training rows run: "<manifest>" or "<manifest>/<row>" entries, shell-style patterns allowed.
    # include empty: every row (`repro plan` writes profiles that train only what the chosen claims
    # read); exclude: rows left out (the functional profile's, to fit a CPU budget).
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    # Per dataset, and per table, values replacing the ones above for those rows (a table's win):
    # [profiles.<name>.datasets.<dataset>], [profiles.<name>.tables.<manifest>].
    datasets: dict[str, RowSettings] = field(default_factory=dict)
    tables: dict[str, RowSettings] = field(default_factory=dict)
    latency: LatencyProfile = field(default_factory=LatencyProfile)
    # Intra-op CPU threads every run trains on, under every executor, and PyTorch's deterministic algorithms
    # (None: the command's RunDefaults: $OMP_NUM_THREADS else 1, $REPRO_DETERMINISTIC else off); both are part of a
    # run's identity (repro.plan.run_config.RunConfig), since they change its float rounding (repro.runtime.numerics).
    threads: int | None = bounded(None, ge=1, le=MAX_THREADS)
    deterministic: bool | None = None

    def run_threads(self) -> int:
        return self.threads or 1

    def run_deterministic(self) -> bool:
        return bool(self.deterministic)

    def includes(self, manifest_id: str, row_id: str) -> bool:
        return self.left_out_by(manifest_id, row_id) is None

    def left_out_by(self, manifest_id: str, row_id: str) -> str | None:
        """Which list leaves the row out, as a phrase ("its exclude list", or "its include list, which does not
        name it"), or None when the row trains; an exclude entry wins over an include entry."""
        if any(matches(e, manifest_id, row_id) for e in self.exclude):
            return "its exclude list"
        if self.include and not any(matches(e, manifest_id, row_id) for e in self.include):
            return "its include list, which does not name it"
        return None

    def for_dataset(self, dataset: str) -> Profile:
        """This profile as it applies to the rows on `dataset`."""
        settings = self.datasets.get(dataset)
        if settings is None:
            return self
        return dataclasses.replace(self, **settings.given(), datasets={})

    def for_manifest(self, manifest_id: str, paper_seeds: int | None, defaults: RunDefaults = RunDefaults()) -> Profile:
        """This profile as it applies to one manifest: its seeds (the paper's where the profile gives none), its
        own table settings folded in above every dataset's, and the threads and deterministic mode of `defaults`
        where it gives neither. Applied once, where a manifest is loaded (repro.plan.manifest.with_profiles)."""
        own = self.tables.get(manifest_id, RowSettings()).given()
        datasets = {d: dataclasses.replace(s, **own) for d, s in self.datasets.items()}
        return dataclasses.replace(
            self,
            **own,
            seeds=self.seeds or paper_seeds or 1,
            datasets=datasets,
            tables={},
            threads=self.threads or defaults.threads,
            deterministic=self.deterministic if self.deterministic is not None else defaults.deterministic,
        )

    def departures(self, paper_seeds: int | None, datasets: Iterable[str] = ()) -> list[str]:
        """Every way this profile, as it applies to one table (for_manifest), departs from the paper's
        protocol (Section 4.1): seeds, data, epochs, samples, image size, batch size, weights, recipe.
        `datasets`: those the table trains on (Manifest.trained_datasets), whose recipes (repro.spec.recipes)
        put the paper's numbers beside the profile's ("2 epochs instead of the paper's 50"); the settings of
        other datasets are then left out."""
        datasets = list(dict.fromkeys(datasets))
        out = []
        if self.seeds is not None and paper_seeds is not None and self.seeds != paper_seeds:
            out.append(f"{self.seeds} seed{'s' if self.seeds != 1 else ''} where the paper has {paper_seeds}")
        if self.data != "real":
            out.append(f"{self.data} data standing in for the paper's datasets")
        if not self.pretrained:
            out.append("random initialisation where the paper fine-tunes pretrained weights")
        elif self.pretrained_on != "imagenet":
            out.append(f"backbones pretrained on the {self.pretrained_on} stand-in, not ImageNet")
        out += _settings_departures(self, datasets)
        for dataset, settings in self.datasets.items():
            if datasets and dataset not in datasets:
                continue
            given = _settings_departures(settings, [dataset] if datasets else [])
            if given:
                out.append(f"on {dataset}: {', '.join(given)}")
        return out

    def __post_init__(self) -> None:
        scoped: list[tuple[str, Profile | RowSettings]] = [
            ("", self),
            *((f"datasets.{d}.", s) for d, s in self.datasets.items()),
            *((f"tables.{t}.", s) for t, s in self.tables.items()),
        ]
        overrides = [
            f"{where}{k}" for where, obj in scoped for k in RECIPE_OVERRIDES if getattr(obj, k, None) is not None
        ]
        if overrides and self.evidence in ("reduced", "paper"):
            raise ValueError(
                f"{' and '.join(overrides)} {'override' if len(overrides) > 1 else 'overrides'} the "
                f"paper's recipe, which evidence "
                f"{self.evidence!r} must keep: remove them or use evidence 'pipeline' or 'functional'"
            )
        if self.pretrained_on == "digits" and self.data != "digits":
            raise ValueError(
                f"pretrained_on = 'digits' pretrains on the digit stand-in, so it needs data = 'digits', "
                f"not {self.data!r}"
            )
        unknown = sorted(set(self.datasets) - set(DATASETS))
        if unknown:
            raise ValueError(
                f"datasets.{unknown[0]}: unknown dataset{closest(unknown[0], list(DATASETS))}; "
                f"allowed: {', '.join(DATASETS)}"
            )
        for where, own in scoped:
            n, batch = getattr(own, "train_samples") or self.train_samples, own.batch_size or self.batch_size
            if n and batch and n < batch:
                raise ValueError(
                    f"{where}train_samples = {n} is smaller than batch_size = {batch}: no full "
                    "training batch would remain (the last partial batch is dropped)"
                )


# (setting, its words, the paper's value for one dataset, the words before it): a departure names the
# paper's value when the datasets are known ("batch 40 instead of the recipe's 128").
_PAPER_VALUES = (
    ("epochs", "{} epoch{}", lambda d: RECIPES[d].epochs, "instead of the paper's"),
    ("train_samples", "{} training images", lambda d: get_dataset(d).train_size, "instead of the paper's"),
    ("test_samples", "{} test images", lambda d: get_dataset(d).test_size, "instead of the paper's"),
    ("batch_size", "batch {}", lambda d: RECIPES[d].batch_size, "instead of the recipe's"),
    ("max_image_size", "images at most {} px", lambda d: get_dataset(d).image_size, "where the paper has"),
)


def _paper_number(values: dict[str, int]) -> str:
    """'50', or '50 (cifar10), 80 (tiny_imagenet)' where the datasets differ."""
    if len(set(values.values())) == 1:
        return f"{next(iter(values.values())):,}"
    return ", ".join(f"{v:,} ({d})" for d, v in values.items())


def _settings_departures(obj: Profile | RowSettings, datasets: list[str]) -> list[str]:
    """The run settings a profile (or one dataset's settings) changes from the paper's recipe, with the paper's
    value for `datasets` (none: the words alone)."""
    out = []
    for name, words, paper, before in _PAPER_VALUES:
        value = getattr(obj, name)
        if value is None:
            continue
        text = words.format(value, "" if value == 1 else "s")
        if datasets:
            text += f" {before} {_paper_number({d: paper(d) for d in datasets})}"
        elif name in ("epochs", "batch_size"):
            text += f" {before}"
        out.append(text)
    recipe = [
        f"{name} {getattr(obj, name):g}" if isinstance(getattr(obj, name), float) else f"{name} {getattr(obj, name)}"
        for name in RECIPE_OVERRIDES
        if getattr(obj, name, None) is not None
    ]
    if recipe:
        out.append("recipe " + ", ".join(recipe) + " instead of the paper's")
    return out


def matches(entry: str, manifest_id: str, row_id: str) -> bool:
    """Does an include/exclude entry ("<manifest>" or "<manifest>/<row>", patterns allowed) name this row?"""
    table, _, row = entry.partition("/")
    return fnmatch.fnmatchcase(manifest_id, table) and (not row or fnmatch.fnmatchcase(row_id, row))


def _profile(data: Any, path: str, problems: Problems) -> Profile | None:
    check_id(path.removeprefix("profiles."), path, problems)  # a profile names a results folder
    profile = from_dict(Profile, data, path, problems)
    if profile is not None and profile.evidence in ("reduced", "paper") and profile.data != "real":
        problems.add(
            f"{path}.data",
            f"evidence {profile.evidence!r} is the paper's datasets: expected 'real', "
            f"got {profile.data!r} (use evidence 'pipeline' or 'functional')",
        )
    return profile


def load_profiles(path: str | Path, required: tuple[str, ...] = ()) -> dict[str, Profile]:
    """The profiles of a TOML file of [profiles.<name>] tables, validated (the shipped file and a user's
    alike); raise SchemaError naming the file and every problem."""
    return parse_profiles(read_toml(Path(path)), path, required)


def parse_profiles(data: dict[str, Any], path: str | Path, required: tuple[str, ...] = ()) -> dict[str, Profile]:
    """Validate a profiles document; raise SchemaError naming `path` and every problem."""
    problems = Problems()
    check_text(data, "", problems, frozenset({"description"}))  # the report prints a profile's text
    for key in data:
        if key != "profiles":
            problems.add(
                key, f"unknown key{closest(key, ['profiles'])}; a profiles file holds only tables named profiles.<name>"
            )
    raw = data.get("profiles")
    if not isinstance(raw, dict) or not raw:
        problems.add("profiles", "expected at least one table named profiles.<name>")
        raw = {}
    for name in required:
        if raw and name not in raw:
            problems.add(f"profiles.{name}", f"missing required profile (the shipped file has {', '.join(required)})")
    profiles = {name: _profile(prof, f"profiles.{name}", problems) for name, prof in raw.items()}
    if problems.items:
        raise SchemaError(path, problems.items)
    return {name: p for name, p in profiles.items() if p is not None}  # None only where a problem was added


def shipped_profiles() -> dict[str, Profile]:
    return load_profiles(SHIPPED_PROFILES, REQUIRED_PROFILES)


def all_profiles(path: str | Path | None = None) -> tuple[dict[str, Profile], dict[str, Path]]:
    """The shipped profiles with those of the user's file `path` (if any) added over them, and each one's file."""
    profiles = shipped_profiles()
    files = {name: SHIPPED_PROFILES for name in profiles}
    user = Path(path) if path else None
    if user is not None:
        own = load_profiles(user)
        profiles.update(own)
        files.update({name: user for name in own})
    return profiles, files


def _model(row) -> str:
    return json.dumps([row.dataset, row.backbone.key(), row.head.key()], sort_keys=True, default=str)


def check_against(
    profiles: dict[str, Profile], files: dict[str, Path], manifests: list, known: Iterable[str] | None = None
) -> None:
    """Every include/exclude entry and table name must match what the manifests hold, and a table's own
    settings may touch only rows no other table lists (else its runs would split); raise SchemaError.

    The shipped file is checked only against the manifests it names (a --manifests folder of your own
    holds other tables); a user's file against every manifest given. `known`: the ids of every table of the
    folder when only some were loaded (one table's command): an entry for a table not loaded is checked by its
    name alone."""
    by_id = {m.id: m for m in manifests}
    unloaded = sorted(set(known or ()) - set(by_id))
    models: dict[str, list[str]] = {}  # a model (_model) -> the rows that train it
    for m in manifests:
        for r in m.rows:
            if "accuracy" in r.measures:
                models.setdefault(_model(r), []).append(f"{m.id}/{r.id}")
    problems: dict[Path, Problems] = {}
    for name, profile in profiles.items():
        file = files[name]
        out = problems.setdefault(file, Problems())
        shipped = file == SHIPPED_PROFILES
        for key in ("include", "exclude"):
            for i, entry in enumerate(getattr(profile, key)):
                table = entry.partition("/")[0]
                if shipped and not any(fnmatch.fnmatchcase(t, table) for t in by_id):
                    continue
                if any(fnmatch.fnmatchcase(t, table) for t in unloaded):
                    continue  # a table not loaded here: the folder's check reads its rows
                if not any(matches(entry, m.id, r.id) for m in manifests for r in m.rows if "accuracy" in r.measures):
                    names = (
                        [m.id for m in manifests]
                        + unloaded
                        + [f"{m.id}/{r.id}" for m in manifests for r in m.rows if "accuracy" in r.measures]
                    )
                    out.add(f"profiles.{name}.{key}[{i}]", f"'{entry}' matches no training row{closest(entry, names)}")
        for table, settings in profile.tables.items():
            if table not in by_id:
                if not shipped and table not in unloaded:
                    out.add(
                        f"profiles.{name}.tables.{table}",
                        f"no manifest '{table}'{closest(table, list(by_id) + unloaded)}",
                    )
                continue
            for r in by_id[table].rows:
                if "accuracy" not in r.measures or not settings.given():
                    continue
                others = [x for x in models[_model(r)] if not x.startswith(f"{table}/")]
                if others:
                    out.add(
                        f"profiles.{name}.tables.{table}",
                        f"would train {table}/{r.id} otherwise than "
                        f"{others[0]}, the same model, so their runs would split: give the settings per dataset",
                    )
    for file, out in problems.items():
        if out.items:
            raise SchemaError(file, out.items)

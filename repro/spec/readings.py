"""Readings: each choice the paper's text leaves open, with the chosen value and the alternatives. Defined once.

repro/spec/readings.toml declares them. A reading applies to a manifest row by the row's backbone and
head names, its dataset, and component values it must have (`applies`); its chosen value and each
alternative are config overrides of the row's backbone or head, or its batch size. A reading of what a
claim measures (which metric "routing entropy" is) applies to claims instead (`applies.claims`,
"<manifest>/<claim>"), and its choices override the claim's rule parameters (`claim`). From them:

    Reading.applies_to(row)            does the text leave this open for this row?
    Reading.holds(row)                 does the row carry the chosen value? (main rows must: repro.plan.manifest)
    Reading.vary(row, alternative)     the row under the alternative: a sensitivity row "<row>__<alt id>"
    Reading.training_only(alternative) whether the alternative changes only how a model trains (no FLOP or
                                       operator count: the config's TRAINING_ONLY fields, or the batch size)

A file of one's own (--readings FILE, $REPRO_READINGS) is read the same way, validated as the shipped file is,
and adds readings to the shipped ones (load_own_readings; all_readings): one that takes a shipped reading's id,
or a choice id a shipped reading uses, is refused, since manifests, claims and run records name the shipped
readings by those ids and their meaning must not change under them.

Torch-free: components are validated against the configs of repro.models.configs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence, get_type_hints

from repro.core.package_data import shipped
from repro.data.specs import DATASETS
from repro.models import BACKBONES, HEADS, Component
from repro.models.configs import ConfigError
from repro.spec.profiles import MAX_BATCH
from repro.core.registry import Registry, closest
from repro.core.schema import Problems, SchemaError, bounded, check_id, check_text, convert, from_dict, read_toml

SHIPPED_READINGS = shipped("repro.spec", "readings.toml")
SHIPPED_NAME = "repro/spec/readings.toml"  # as messages name it, wherever the package is installed
PARTS = ("backbone", "head")  # the components an override may change


@dataclass(frozen=True)
class Choice:
    """The chosen value of a reading, or one alternative: overrides of a row's components."""

    id: str  # names generated rows: "<row>__<id>"
    label: str
    backbone: dict[str, Any] = field(default_factory=dict)
    head: dict[str, Any] = field(default_factory=dict)
    batch_size: int | None = bounded(None, ge=1, le=MAX_BATCH)  # the row's training batch (a recipe setting)
    claim: dict[str, Any] = field(default_factory=dict)  # rule parameters of the claims the reading names
    # "<manifest>/<claim>" -> rule parameters of that claim alone, where the claims a reading names take different
    # ones (the 0.25 ms and the 145x it divides: two metrics); over `claim`
    claims: dict[str, dict[str, Any]] = field(default_factory=dict)

    def overrides(self, part: str) -> dict[str, Any]:
        return getattr(self, part)

    def claim_overrides(self, name: str) -> dict[str, Any]:
        """The rule parameters this choice gives the claim "<manifest>/<claim>" (TOML arrays as tuples, as a
        manifest's claim parameters are)."""
        params = {**self.claim, **self.claims.get(name, {})}
        return {k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}


@dataclass(frozen=True)
class Applies:
    """Which rows a reading concerns; an empty list matches any."""

    backbones: tuple[str, ...] = ()
    heads: tuple[str, ...] = ()
    datasets: tuple[str, ...] = ()
    backbone_where: dict[str, Any] = field(default_factory=dict)  # values the row's component must have
    head_where: dict[str, Any] = field(default_factory=dict)
    backbone_unless: dict[str, Any] = field(default_factory=dict)  # values it must not have (an FC head: hidden [])
    head_unless: dict[str, Any] = field(default_factory=dict)
    claims: tuple[str, ...] = ()  # "<manifest>/<claim>": a reading of what these claims measure, not of a row

    def names(self, part: str) -> tuple[str, ...]:
        return getattr(self, f"{part}s")

    def where(self, part: str) -> dict[str, Any]:
        return getattr(self, f"{part}_where")

    def unless(self, part: str) -> dict[str, Any]:
        return getattr(self, f"{part}_unless")


def registry(part: str) -> Registry:
    return BACKBONES if part == "backbone" else HEADS


def effective(part: str, component: Component) -> dict[str, Any]:
    """Every parameter of a component as built: the row's, else the registry entry's defaults, else the config's."""
    entry = registry(part).get(component.name)
    if entry.config is None:
        return {}
    return dataclasses.asdict(entry.config(**{**entry.defaults, **component.params}))


def _same(a: Any, b: Any) -> bool:
    norm = lambda v: tuple(v) if isinstance(v, (list, tuple)) else v  # noqa: E731  (TOML arrays, config tuples)
    return norm(a) == norm(b)


@dataclass(frozen=True)
class Reading:
    id: str
    title: str  # what the text leaves open
    section: str  # where the text touches it
    text: str  # why the chosen value, and what the alternatives would change
    chosen: Choice
    applies: Applies = field(default_factory=Applies)
    alternatives: tuple[Choice, ...] = ()

    def applies_to(self, row: Any) -> bool:
        a = self.applies
        if a.claims:  # a reading of claims applies to no row
            return False
        if a.datasets and row.dataset not in a.datasets:
            return False
        for part in PARTS:
            component = getattr(row, part)
            if a.names(part) and component.name not in a.names(part):
                return False
            if a.where(part) or a.unless(part):
                values = effective(part, component)
                if not all(_same(values.get(k), v) for k, v in a.where(part).items()):
                    return False
                if any(_same(values.get(k), v) for k, v in a.unless(part).items()):
                    return False
        return True

    def differences(self, row: Any, choice: Choice | None = None) -> list[str]:
        """Where the row departs from a choice (the chosen value by default): 'key = row value (choice value)'."""
        choice = choice or self.chosen
        out = []
        for part in PARTS:
            values = effective(part, getattr(row, part))
            out += [
                f"{part}.{k} = {values.get(k)!r}, not {v!r}"
                for k, v in choice.overrides(part).items()
                if not _same(values.get(k), v)
            ]
        if choice.batch_size is not None and row.batch_size not in (None, choice.batch_size):
            out.append(f"batch_size = {row.batch_size}, not {choice.batch_size}")
        return out

    def holds(self, row: Any) -> bool:
        return not self.differences(row)

    def applies_to_claim(self, manifest_id: str, claim_id: str) -> bool:
        return f"{manifest_id}/{claim_id}" in self.applies.claims

    def claim_params(self, manifest_id: str, claim: Any, choice: Choice) -> dict[str, Any]:
        """The claim's rule parameters under a choice of this reading."""
        return {**claim.params, **choice.claim_overrides(f"{manifest_id}/{claim.id}")}

    def training_only(self, alternative: Choice) -> bool:
        """True when the alternative changes nothing an evaluation forward executes (so no FLOP or operator
        count): every override is a TRAINING_ONLY field of its component's config, or the batch size. A reading
        of what a claim measures is never training-only: it is decided on the measurements as they are."""
        if alternative.claim or alternative.claims:
            return False
        for part in PARTS:
            for key in alternative.overrides(part):
                names = self.applies.names(part) or registry(part).names()
                if any(key not in getattr(registry(part).get(n).config, "TRAINING_ONLY", ()) for n in names):
                    return False
        return True

    def vary(self, row: Any, alternative: Choice) -> Any:
        """The row under an alternative: its sensitivity twin "<row>__<alternative>" (repro.plan.manifest.Row)."""
        parts = {
            part: Component(getattr(row, part).name, {**getattr(row, part).params, **alternative.overrides(part)})
            for part in PARTS
        }
        return dataclasses.replace(
            row,
            id=f"{row.id}__{alternative.id}",
            label=f"{row.label} [{self.title}: {alternative.label}]",
            role="sensitivity",
            reading=f"{self.id}/{alternative.id}",
            base=row.id,
            batch_size=alternative.batch_size or row.batch_size,
            **parts,
        )

    def alternative(self, alternative_id: str) -> Choice:
        return next(a for a in self.alternatives if a.id == alternative_id)


def _check_choice(reading: Reading, choice: Choice, path: str, problems: Problems) -> None:
    """Every override must be a valid value of every component the reading applies to."""
    check_id(choice.id, f"{path}.id", problems)
    for part in PARTS:
        overrides = choice.overrides(part)
        if not overrides:
            continue
        names = reading.applies.names(part)
        if not names:
            problems.add(
                f"{path}.{part}", f"overrides the {part} of rows the reading does not name: give applies.{part}s"
            )
            continue
        for name in names:
            entry = registry(part).get(name)
            config = entry.config
            hints = _check_parameters(part, name, overrides, f"{path}.{part}", problems)
            try:
                if config is not None:  # every backbone and head registers one (repro.models.catalog)
                    config(**{**entry.defaults, **{k: v for k, v in overrides.items() if k in hints}})
            except (ConfigError, TypeError, ValueError) as exc:
                problems.add(f"{path}.{part}", f"{part} '{name}': {exc}")


def _check_match(reading: Reading, part: str, kind: str, path: str, problems: Problems) -> None:
    """applies.<part>_where / _unless: each key a parameter of every component the reading names, its value of that
    parameter's type (a misspelt key matched no row's value, and the reading applied to none, unsaid)."""
    values = getattr(reading.applies, f"{part}_{kind}")
    if not values:
        return
    if not reading.applies.names(part):
        problems.add(path, f"names a {part} value, but the reading names no {part}: give applies.{part}s")
        return
    for name in reading.applies.names(part):
        if name in registry(part):  # an unknown name is refused once, where the names are checked
            _check_parameters(part, name, values, path, problems)


def _check_parameters(part: str, name: str, values: dict[str, Any], path: str, problems: Problems) -> dict[str, Any]:
    """Each key of `values` a parameter of the config of `part` `name`, its value of that parameter's type; returns
    the config's type hints."""
    config = registry(part).get(name).config
    hints = get_type_hints(config) if config else {}
    for key, value in values.items():
        if key not in hints:
            problems.add(f"{path}.{key}", f"not a parameter of {part} '{name}'{closest(key, list(hints))}")
        else:
            convert(hints[key], value, f"{path}.{key}", problems)
    return hints


def _check(reading: Reading, i: int, problems: Problems) -> None:
    path = f"readings[{i}]"
    check_id(reading.id, f"{path}.id", problems)
    for part in PARTS:
        for j, name in enumerate(reading.applies.names(part)):
            if name not in registry(part):
                problems.add(
                    f"{path}.applies.{part}s[{j}]", f"unknown {part} '{name}'{closest(name, registry(part).names())}"
                )
    for part in PARTS:
        for kind in ("where", "unless"):
            _check_match(reading, part, kind, f"{path}.applies.{part}_{kind}", problems)
    for j, d in enumerate(reading.applies.datasets):
        if d not in DATASETS:
            problems.add(f"{path}.applies.datasets[{j}]", f"unknown dataset '{d}'{closest(d, list(DATASETS))}")
    for j, name in enumerate(reading.applies.claims):
        if name.count("/") != 1 or not all(name.split("/")):
            problems.add(f"{path}.applies.claims[{j}]", f"expected '<manifest>/<claim>', got {name!r}")
    for j, choice in enumerate((reading.chosen, *reading.alternatives)):
        where = f"{path}.chosen" if j == 0 else f"{path}.alternatives[{j - 1}]"
        if bool(choice.claim or choice.claims) != bool(reading.applies.claims):
            problems.add(
                f"{where}.claim",
                "a reading names claims (applies.claims) and overrides their parameters (claim), or does neither",
            )
        for name in choice.claims:
            if name not in reading.applies.claims:
                problems.add(
                    f"{where}.claims.{name}",
                    f"not a claim the reading names{closest(name, list(reading.applies.claims))}",
                )
        for name in reading.applies.claims if (choice.claim or choice.claims) else ():
            if not choice.claim_overrides(name):
                problems.add(f"{where}.claims", f"gives '{name}' no parameter: name it in claims, or give claim")
        if reading.applies.claims and (choice.backbone or choice.head or choice.batch_size is not None):
            problems.add(where, "a reading of claims overrides claim parameters only, not a row's components")
    if problems.items:
        return
    if not reading.alternatives:
        problems.add(f"{path}.alternatives", "a reading needs at least one alternative to the chosen value")
    _check_choice(reading, reading.chosen, f"{path}.chosen", problems)
    for j, alt in enumerate(reading.alternatives):
        _check_choice(reading, alt, f"{path}.alternatives[{j}]", problems)
    _check_distinct(reading, path, problems)


def _settings(choice: Choice) -> dict[str, Any]:
    """What a choice sets, flat ("head.slots_per_expert": 1), TOML arrays as tuples: two choices alike set the same."""
    flat: dict[str, Any] = {f"{part}.{k}": v for part in PARTS for k, v in choice.overrides(part).items()}
    flat.update({f"claim.{k}": v for k, v in choice.claim.items()})
    flat.update({f"claims.{n}.{k}": v for n, params in choice.claims.items() for k, v in params.items()})
    if choice.batch_size is not None:
        flat["batch_size"] = choice.batch_size
    return {k: tuple(v) if isinstance(v, list) else v for k, v in flat.items()}


def _check_distinct(reading: Reading, path: str, problems: Problems) -> None:
    """An alternative that sets nothing, or what the chosen value or an earlier alternative sets, is refused: its
    twin rows were the main rows under another name (the same run hashes), and a claim decided again under it was
    decided on the same numbers."""
    seen = [("the chosen value", reading.chosen)]
    for j, alt in enumerate(reading.alternatives):
        where, settings = f"{path}.alternatives[{j}]", _settings(alt)
        if not settings:
            problems.add(
                where,
                f"'{alt.id}' overrides nothing: give it the backbone, head, batch_size or claim parameters it changes",
            )
            continue
        for what, other in seen:
            if _settings(other) == settings:
                shown = ", ".join(f"{k} = {v!r}" for k, v in settings.items())
                problems.add(
                    where,
                    f"'{alt.id}' overrides what {what} '{other.id}' does ({shown}): an alternative changes something",
                )
                break
        seen.append(("the alternative", alt))


def _naming_readings(items: list[str], raw: list[Any]) -> list[str]:
    """Each problem under "readings[i]" with the id that reading declares after its key path, so that a file's
    error names the reading as well as the key: "readings[0].applies.heads[0]: reading 'x': unknown head ..."."""
    out = []
    for item in items:
        path, _, message = item.partition(": ")
        index = re.match(r"readings\[(\d+)\]", path)
        declared = raw[int(index.group(1))] if index and int(index.group(1)) < len(raw) else None
        name = declared.get("id") if isinstance(declared, dict) else None
        out.append(f"{path}: reading '{name}': {message}" if isinstance(name, str) and name else item)
    return out


def _raw_readings(data: dict[str, Any]) -> list[Any]:
    raw = data.get("readings", [])
    return raw if isinstance(raw, list) else []


def parse_readings(data: dict[str, Any], path: str | Path) -> tuple[Reading, ...]:
    """Validate a readings document; raise SchemaError naming `path` and every problem, each with its key path and
    the reading it concerns."""
    problems = Problems()
    check_text(data, "", problems, frozenset({"text"}))  # titles and labels name rows in the LaTeX tables
    for key in data:
        if key != "readings":
            problems.add(key, f"unknown key{closest(key, ['readings'])}; a readings file holds [[readings]] tables")
    if not isinstance(data.get("readings", []), list):
        problems.add("readings", "expected an array of tables ([[readings]])")
    raw = _raw_readings(data)
    readings = [from_dict(Reading, r, f"readings[{i}]", problems) for i, r in enumerate(raw)]
    if problems.items:
        raise SchemaError(path, _naming_readings(problems.items, raw))
    ids, alternative_ids = set(), set()
    for i, reading in enumerate(readings):
        _check(reading, i, problems)
        if reading.id in ids:
            problems.add(f"readings[{i}].id", f"duplicate id '{reading.id}'")
        ids.add(reading.id)
        for j, alt in enumerate((reading.chosen, *reading.alternatives)):
            if alt.id in alternative_ids:
                problems.add(f"readings[{i}]", f"choice id '{alt.id}' is used twice: ids name generated rows")
            alternative_ids.add(alt.id)
    if problems.items:
        raise SchemaError(path, _naming_readings(problems.items, raw))
    return tuple(readings)


def load_readings(path: str | Path) -> tuple[Reading, ...]:
    return parse_readings(read_toml(Path(path)), path)


@lru_cache(maxsize=1)
def shipped_readings() -> tuple[Reading, ...]:
    return load_readings(SHIPPED_READINGS)


def readings_by_id() -> dict[str, Reading]:
    return {r.id: r for r in shipped_readings()}


@dataclass(frozen=True)
class ReadingsFile:
    """A readings file of one's own (--readings FILE, $REPRO_READINGS), as read: its readings (validated as the
    shipped file's are, and none a shipped one) and the sha256 of its bytes, which the report and the results
    folder's RO-Crate name beside its path."""

    path: Path
    sha256: str
    readings: tuple[Reading, ...]

    def declares(self, reading_id: str) -> bool:
        return any(r.id == reading_id for r in self.readings)


def _shipped_clashes(raw: list[Any]) -> list[str]:
    """Where a file of one's own takes a shipped reading's id or a shipped choice id (of its raw tables, so that
    they are named with the file's other problems)."""
    problems = Problems()
    shipped = {r.id for r in shipped_readings()}
    choices = {c.id: r.id for r in shipped_readings() for c in (r.chosen, *r.alternatives)}
    for i, reading in enumerate(raw):
        if not isinstance(reading, dict):
            continue
        if reading.get("id") in shipped:
            problems.add(
                f"readings[{i}].id",
                f"'{reading['id']}' is a shipped reading ({SHIPPED_NAME}): a file of your own adds readings "
                "and replaces none; give yours another id",
            )
        alternatives = reading.get("alternatives")
        given = [("chosen", reading.get("chosen"))] + [
            (f"alternatives[{j}]", alt) for j, alt in enumerate(alternatives if isinstance(alternatives, list) else [])
        ]
        for key, choice in given:
            name = choice.get("id") if isinstance(choice, dict) else None
            if isinstance(name, str) and name in choices:
                problems.add(
                    f"readings[{i}].{key}.id",
                    f"choice id '{name}' is already used by the shipped reading '{choices[name]}': choice ids "
                    "name generated rows (<row>__<id>) and are unique over every reading; give it another",
                )
    return problems.items


def load_own_readings(path: str | Path) -> ReadingsFile:
    """A file of one's own, validated as the shipped file is, and refused where it reuses a shipped reading's id or
    a shipped choice id: a reading of one's own adds to the shipped ones and replaces none (a manifest, a claim and a
    results folder name the shipped readings by id, and what those ids mean must not move), and where it declares
    none. SchemaError names the file and every problem at once, each with its key path and reading."""
    path = Path(path)
    data = read_toml(path)
    raw = _raw_readings(data)
    clashes = _naming_readings(_shipped_clashes(raw), raw)
    try:
        readings = parse_readings(data, path)
    except SchemaError as exc:
        raise SchemaError(path, exc.problems + clashes) from None
    if clashes:
        raise SchemaError(path, clashes)
    if not readings:  # the wrong file, or one not yet written: said, not read as a file that adds nothing
        raise SchemaError(path, ["readings: the file declares no reading: a readings file holds [[readings]] tables"])
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:  # read a moment ago: gone or unreadable since
        raise SchemaError(path, [f"cannot be read: {exc.strerror or exc}"]) from None
    return ReadingsFile(path.resolve(), digest, readings)


def all_readings(own: ReadingsFile | None = None) -> tuple[Reading, ...]:
    """The shipped readings, then those of a file of one's own (if any)."""
    return shipped_readings() + (own.readings if own is not None else ())


# --------------------------------------------------------------------------- in a manifest
@dataclass(frozen=True)
class Sensitivity:
    """A manifest's [[sensitivity]] table: its `rows` under every alternative of the `readings` named that
    applies to them, as rows of their own ("<row>__<alternative>", role "sensitivity") that train like any
    other, and each comparison of those rows with its twin ("<comparison>__<alternative>")."""

    rows: tuple[str, ...]
    readings: tuple[str, ...]


def check_rows(rows: list, readings: tuple[Reading, ...], problems: Problems, own: ReadingsFile | None = None) -> None:
    """Every main row must carry the chosen value of each reading that applies to it (`own`: the file of one's own
    some of `readings` come from, which the message names as theirs)."""
    for i, row in enumerate(rows):
        if row.role != "main":
            continue
        for reading in readings:
            if reading.applies_to(row) and not reading.holds(row):
                problems.add(
                    f"rows[{i}]",
                    f"'{row.id}' departs from reading '{reading.id}' ({reading.chosen.label}): "
                    f"{'; '.join(reading.differences(row))}; "
                    f"state the chosen value ({own.path if own and own.declares(reading.id) else SHIPPED_NAME}), "
                    "or make the row role = 'sensitivity'",
                )


def check_claims(
    manifest_id: str,
    claims: list,
    readings: tuple[Reading, ...],
    problems: Problems,
    rule_config: Callable[[str], type],
) -> None:
    """Every claim a reading of claims names must carry its chosen parameters, and take each alternative's;
    `rule_config(rule)` is the rule's parameter type (the caller's: readings sit below the claims' rules)."""
    for i, claim in enumerate(claims):
        for reading in readings:
            if not reading.applies_to_claim(manifest_id, claim.id):
                continue
            chosen = reading.chosen.claim_overrides(f"{manifest_id}/{claim.id}")
            departs = [
                f"{k} = {claim.params.get(k)!r}, not {v!r}"
                for k, v in chosen.items()
                if not _same(claim.params.get(k), v)
            ]
            if departs:
                problems.add(
                    f"claims[{i}]",
                    f"'{claim.id}' departs from reading '{reading.id}' "
                    f"({reading.chosen.label}): {'; '.join(departs)}; state the chosen value",
                )
            for alt in reading.alternatives:
                try:
                    rule_config(claim.rule)(**reading.claim_params(manifest_id, claim, alt))
                except (TypeError, ValueError) as exc:
                    problems.add(
                        f"claims[{i}]",
                        f"reading '{reading.id}' alternative '{alt.id}' does not fit rule '{claim.rule}': {exc}",
                    )


def expand(
    rows: list, comparisons: list, sensitivity: list[Sensitivity], readings: tuple[Reading, ...], problems: Problems
) -> tuple[list, list]:
    """The rows and comparisons [[sensitivity]] tables generate (validated: each problem added)."""
    by_id = {r.id: r for r in rows}
    known = {r.id: r for r in readings}
    new_rows: dict[str, Any] = {}
    new_comparisons: dict[str, Any] = {}
    for i, s in enumerate(sensitivity):
        for j, row_id in enumerate(s.rows):
            if row_id not in by_id:
                problems.add(f"sensitivity[{i}].rows[{j}]", f"no row '{row_id}'{closest(row_id, sorted(by_id))}")
        for j, reading_id in enumerate(s.readings):
            reading = known.get(reading_id)
            if reading is None:
                problems.add(
                    f"sensitivity[{i}].readings[{j}]",
                    f"no reading '{reading_id}'{closest(reading_id, sorted(known))}; readings: {', '.join(known)} "
                    "(one of your own is read from --readings FILE or $REPRO_READINGS)",
                )
                continue
            varied = [by_id[r] for r in s.rows if r in by_id and reading.applies_to(by_id[r])]
            if not varied:
                problems.add(
                    f"sensitivity[{i}].readings[{j}]",
                    f"reading '{reading_id}' applies to none of the rows {', '.join(s.rows)}",
                )
            for alt in reading.alternatives:
                twins = {row.id: reading.vary(row, alt) for row in varied}
                for twin in twins.values():
                    check_id(twin.id, f"sensitivity[{i}]", problems)
                    if twin.id in by_id or twin.id in new_rows:
                        problems.add(f"sensitivity[{i}]", f"row '{twin.id}' would exist twice")
                    new_rows[twin.id] = twin
                for c in comparisons:
                    sides = [by_id[c.row], by_id[c.baseline]] if c.row in by_id and c.baseline in by_id else []
                    # a twin comparison varies every side the reading applies to, never one of two
                    if not any(r.id in twins for r in sides) or any(
                        reading.applies_to(r) and r.id not in twins for r in sides
                    ):
                        continue
                    twin = dataclasses.replace(
                        c,
                        id=f"{c.id}__{alt.id}",
                        label=f"{c.label} [{reading.title}: {alt.label}]",
                        series="",
                        row=twins[c.row].id if c.row in twins else c.row,
                        baseline=twins[c.baseline].id if c.baseline in twins else c.baseline,
                    )
                    check_id(twin.id, f"sensitivity[{i}]", problems)
                    new_comparisons[twin.id] = twin
    return list(new_rows.values()), list(new_comparisons.values())


def applying(
    rows: Sequence[Any], readings: tuple[Reading, ...], manifest_id: str = "", claims: Sequence[Any] = ()
) -> tuple[Reading, ...]:
    """The readings that apply to at least one of the rows, or of the claims: those a table depends on."""
    return tuple(
        r
        for r in readings
        if any(r.applies_to(row) for row in rows) or any(r.applies_to_claim(manifest_id, c.id) for c in claims)
    )

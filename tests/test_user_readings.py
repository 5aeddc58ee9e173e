"""Readings of one's own: --readings FILE (or $REPRO_READINGS) adds the readings of a file in readings.toml's
format to the shipped ones, validated as the shipped file is and refused before any work; a shipped id is refused,
not replaced; the results say which file (path and sha256) a reading came from; and a run's hash does not depend
on which file declared its reading."""

import hashlib
import json
import tomllib

import pytest
from typer.testing import CliRunner

from execution.minitable import PROFILES
from repro.cli import app
from repro.core.schema import SchemaError
from repro.plan.manifest import find_manifest, load_all
from repro.plan.run_config import planned_runs
from repro.spec import readings as readings_module
from repro.spec.readings import shipped_readings

runner = CliRunner()

# The example of docs/readings.md ("Adding a reading"): Soft MoE's slots per expert, which the text does not give.
SLOTS = """
[[readings]]
id = "soft-moe-slots"
title = "Slots per expert of the Soft MoE baseline"
section = "4.1"
text = "The text does not give Soft MoE's slots per expert. Chosen: one."
applies = { heads = ["soft_moe"] }
chosen = { id = "one_slot", label = "one slot per expert", head = { slots_per_expert = 1 } }

[[readings.alternatives]]
id = "two_slots"
label = "two slots per expert"
head = { slots_per_expert = 2 }
"""

# A table of one's own whose [[sensitivity]] trains that reading (a dense row, a Soft MoE row, and its twin).
SLOTS_TABLE = """
id = "slots"
title = "Soft MoE's slots"
paper_ref = "test"
description = "A Soft MoE row and its dense baseline, the Soft MoE row also under two slots per expert."
seeds = 2

[[rows]]
id = "dense"
label = "dense"
dataset = "cifar10"
measures = ["accuracy"]
backbone = { name = "cifar_standard" }
head = { name = "dense" }

[[rows]]
id = "soft"
label = "soft"
dataset = "cifar10"
measures = ["accuracy"]
backbone = { name = "cifar_standard" }
head = { name = "soft_moe", expert_hidden = 32 }

[[comparisons]]
id = "gap"
label = "soft vs dense"
row = "soft"
baseline = "dense"

[[claims]]
id = "c"
statement = "the Soft MoE row beats the dense row"
section = "test"
scope = "empirical"
rule = "row_above"
row = "soft"
baseline = "dense"

[[sensitivity]]
rows = ["soft", "dense"]
readings = ["soft-moe-slots"]
"""


def _folder(tmp_path):
    """A folder of one's own (manifests/slots.toml), a profiles file and the readings file; their paths."""
    (tmp_path / "manifests").mkdir()
    (tmp_path / "manifests" / "slots.toml").write_text(SLOTS_TABLE)
    profiles = tmp_path / "profiles.toml"
    profiles.write_text(PROFILES.format(epochs=1, train_samples=64))
    readings = tmp_path / "my-readings.toml"
    readings.write_text(SLOTS)
    return tmp_path / "manifests", profiles, readings


def _env(manifests, profiles, **extra):
    return {"REPRO_MANIFESTS": str(manifests), "REPRO_PROFILES": str(profiles), "COLUMNS": "200", **extra}


def test_a_readings_file_of_ones_own_is_read_and_added_to_the_shipped_ones(tmp_path):
    manifests, profiles, path = _folder(tmp_path)
    own = readings_module.load_own_readings(path)
    assert [r.id for r in own.readings] == ["soft-moe-slots"]
    assert own.path == path.resolve() and own.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    (table,) = load_all(manifests, profiles, readings_file=path)
    twin = table.row("soft__two_slots")  # the alternative as a row of its own, its comparison beside it
    assert twin.head.params["slots_per_expert"] == 2 and twin.reading == "soft-moe-slots/two_slots"
    assert twin.base == "soft" and "dense__two_slots" not in {r.id for r in table.rows}  # applies to Soft MoE only
    assert "gap__two_slots" in {c.id for c in table.comparisons}
    assert [r.id for r in table.readings][-1] == "soft-moe-slots" and table.own_readings == own
    assert table.reading_file("soft-moe-slots") == str(path.resolve())
    assert table.reading_file("capacity-rule") == "repro/spec/readings.toml"
    with pytest.raises(SchemaError) as info:  # without the file, the table names what it lacks and where it goes
        load_all(manifests, profiles)
    assert any(
        "sensitivity[0].readings[0]: no reading 'soft-moe-slots'" in p and "--readings FILE or $REPRO_READINGS" in p
        for p in info.value.problems
    ), info.value.problems


@pytest.mark.parametrize("route", ["option", "environment"])
def test_repro_readings_reads_the_file_from_the_option_or_the_environment(tmp_path, route):
    manifests, profiles, path = _folder(tmp_path)
    args, env = ["readings", "slots", "-v"], _env(manifests, profiles)
    if route == "option":
        args += ["--readings", str(path)]
    else:
        env["REPRO_READINGS"] = str(path)
    out = runner.invoke(app, args, env=env)
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert "soft-moe-slots one slot per expert two_slots: two slots per expert" in text
    assert f"Readings the text leaves open (repro/spec/readings.toml and {path.resolve()})" in text
    assert (
        f"Readings of your own (1: soft-moe-slots) were read from {path.resolve()} (sha256 "
        f"{hashlib.sha256(path.read_bytes()).hexdigest()}), added to the shipped ones; these tables use "
        "soft-moe-slots." in text
    )


def test_readings_and_profiles_files_kept_among_ones_manifests_are_not_read_as_tables(tmp_path):
    """One folder for all of one's own (as a container mounts it): the readings and profiles files in it were read as
    two broken tables, 'my-readings' and 'mine', and every command that reads the whole folder stopped on them."""
    manifests, profiles, path = _folder(tmp_path)
    path, profiles = path.rename(manifests / path.name), profiles.rename(manifests / "mine.toml")
    (table,) = load_all(manifests, profiles, readings_file=path)
    assert table.id == "slots"
    out = runner.invoke(app, ["list", "--readings", str(path)], env=_env(manifests, profiles))
    assert out.exit_code == 0, out.output
    assert "my-readings" not in out.output and "mine" not in out.output.replace("mine.toml", "")
    estimates = runner.invoke(app, ["bench", "estimates", "--readings", str(path), "-o", str(tmp_path / "none")])
    assert "No such option" not in estimates.output  # bench estimates takes --readings as the others do


BAD = SLOTS.replace("head = { slots_per_expert = 1 }", "head = { slot_per_expert = 1 }")


@pytest.mark.parametrize("route", ["option", "environment"])
def test_a_bad_readings_file_is_refused_before_any_work_naming_file_reading_and_key(tmp_path, route):
    manifests, profiles, path = _folder(tmp_path)
    path.write_text(BAD)
    results = tmp_path / "results"
    args, env = ["run", "slots", "--results-dir", str(results)], _env(manifests, profiles)
    if route == "option":
        args += ["--readings", str(path)]
    else:
        env["REPRO_READINGS"] = str(path)
    out = runner.invoke(app, args, env=env)
    assert out.exit_code == 2, out.output
    text = " ".join(out.output.split())
    assert (
        f"error: {path}: 1 problem(s): - readings[0].chosen.head.slot_per_expert: reading 'soft-moe-slots': "
        "not a parameter of head 'soft_moe' (did you mean 'slots_per_expert'?)" in text
    )
    assert not results.exists()  # nothing ran, nothing was written


def test_a_shipped_reading_id_or_choice_id_is_refused_not_replaced(tmp_path):
    """A file of one's own adds readings; what a shipped id means (to a manifest, a claim, a results folder) stays."""
    path = tmp_path / "mine.toml"
    shipped = next(r for r in shipped_readings() if r.id == "dense-dropout")
    path.write_text(
        SLOTS.replace('id = "soft-moe-slots"', f'id = "{shipped.id}"').replace(
            'id = "two_slots"', f'id = "{shipped.alternatives[0].id}"'
        )
        + SLOTS.replace('id = "soft-moe-slots"', 'id = "slots-again"')
    )
    with pytest.raises(SchemaError) as info:
        readings_module.load_own_readings(path)
    problems = info.value.problems
    assert str(path) in str(info.value)
    assert (
        "readings[0].id: reading 'dense-dropout': 'dense-dropout' is a shipped reading (repro/spec/readings.toml): "
        "a file of your own adds readings and replaces none; give yours another id"
    ) in problems
    assert any(
        p.startswith("readings[0].alternatives[0].id: reading 'dense-dropout': ")
        and f"choice id '{shipped.alternatives[0].id}' is already used by the shipped reading 'dense-dropout'" in p
        for p in problems
    ), problems
    assert any(  # within the file, as in the shipped one: every problem at once
        p.startswith("readings[1]: reading 'slots-again': choice id 'one_slot' is used twice") for p in problems
    ), problems
    assert next(r for r in shipped_readings() if r.id == "dense-dropout") == shipped  # unchanged


@pytest.mark.parametrize(
    "alternative, expected",
    [
        # copied from chosen and not yet edited: its twin rows were the main rows under another name (the same run
        # hashes), and every claim "decided again" under it was decided on the same numbers
        (
            "head = { slots_per_expert = 1 }",
            "readings[0].alternatives[0]: reading 'soft-moe-slots': 'two_slots' overrides what the chosen value "
            "'one_slot' does (head.slots_per_expert = 1): an alternative changes something",
        ),
        (
            "",
            "readings[0].alternatives[0]: reading 'soft-moe-slots': 'two_slots' overrides nothing: give it the "
            "backbone, head, batch_size or claim parameters it changes",
        ),
    ],
)
def test_an_alternative_that_changes_nothing_is_refused_naming_file_and_key(tmp_path, alternative, expected):
    path = tmp_path / "mine.toml"
    path.write_text(SLOTS.replace("head = { slots_per_expert = 2 }", alternative))
    with pytest.raises(SchemaError) as info:
        readings_module.load_own_readings(path)
    assert str(path) in str(info.value)
    assert expected in info.value.problems, info.value.problems


@pytest.mark.parametrize("text", ["", "# soft-moe-slots, to write\n", "readings = []\n"])
def test_a_readings_file_that_declares_no_reading_is_refused(tmp_path, text):
    # an empty file (the wrong one given, or one not yet saved) was taken, and `repro readings` said "Readings of
    # your own (0: ) were read from ...", as though that were the file meant
    path = tmp_path / "mine.toml"
    path.write_text(text)
    with pytest.raises(SchemaError) as info:
        readings_module.load_own_readings(path)
    assert str(path) in str(info.value)
    assert info.value.problems == ["readings: the file declares no reading: a readings file holds [[readings]] tables"]


@pytest.mark.parametrize(
    "applies, expected",
    [
        # a misspelt key matched no row's value, so the reading applied to no row, and `repro readings` said only
        # that no table used it
        (
            "head_where = { slot_per_expert = 1 }",
            "readings[0].applies.head_where.slot_per_expert: reading 'soft-moe-slots': not a parameter of head "
            "'soft_moe' (did you mean 'slots_per_expert'?)",
        ),
        (
            'head_unless = { slots_per_expert = "x" }',
            "readings[0].applies.head_unless.slots_per_expert: reading 'soft-moe-slots': expected an integer, got 'x'",
        ),
        (
            "backbone_where = { width = 2.0 }",
            "readings[0].applies.backbone_where: reading 'soft-moe-slots': names a backbone value, but the reading "
            "names no backbone: give applies.backbones",
        ),
    ],
)
def test_a_where_or_unless_key_no_component_has_is_refused_naming_file_and_key(tmp_path, applies, expected):
    path = tmp_path / "mine.toml"
    path.write_text(
        SLOTS.replace('applies = { heads = ["soft_moe"] }', f'applies = {{ heads = ["soft_moe"], {applies} }}')
    )
    with pytest.raises(SchemaError) as info:
        readings_module.load_own_readings(path)
    assert str(path) in str(info.value)
    assert expected in info.value.problems, info.value.problems


def test_two_alternatives_alike_are_refused():
    text = SLOTS + SLOTS[SLOTS.index("[[readings.alternatives]]") :].replace("two_slots", "second_two")
    with pytest.raises(SchemaError) as info:
        readings_module.parse_readings(tomllib.loads(text), "mine.toml")
    assert (
        "readings[0].alternatives[1]: reading 'soft-moe-slots': 'second_two' overrides what the alternative "
        "'two_slots' does (head.slots_per_expert = 2): an alternative changes something"
    ) in info.value.problems, info.value.problems


def test_a_reading_keeps_its_runs_hashes_whether_shipped_or_in_a_file_of_ones_own(tmp_path, monkeypatch):
    manifests, profiles, path = _folder(tmp_path)
    own = readings_module.load_own_readings(path)

    def hashes(tables):
        return {run.label: run.cfg.hash for m in tables for p in m.profiles.values() for run in planned_runs(m, p)}

    from_file = hashes(load_all(manifests, profiles, readings_file=path))
    declared = readings_module.shipped_readings() + own.readings
    monkeypatch.setattr(readings_module, "shipped_readings", lambda: declared)  # the same declaration, shipped
    assert hashes(load_all(manifests, profiles)) == from_file
    assert any(label.startswith("slots/soft__two_slots") for label in from_file)


def test_the_results_say_which_file_a_reading_came_from(tmp_path):
    """The run's RO-Crate (actions.json) and report, the table's claims and the exported runs name the file."""
    manifests, profiles, path = _folder(tmp_path)
    results, digest = tmp_path / "results", hashlib.sha256(path.read_bytes()).hexdigest()
    env = _env(manifests, profiles, OMP_NUM_THREADS="1")
    args = ["--results-dir", str(results), "--readings", str(path)]
    out = runner.invoke(app, ["run", "slots", "--jobs", "1", *args], env=env)
    assert out.exit_code == 0, out.output
    out = runner.invoke(app, ["report", *args], env=env)
    assert out.exit_code == 0, out.output
    actions = json.loads((results / "smoke" / "actions.json").read_text())["actions"]
    assert [a["command"] for a in actions] == ["run slots", "report"]
    assert all(a["reads"][str(path.resolve())] == digest for a in actions)
    detail = (results / "smoke" / "report-detail.md").read_text()
    assert f"Readings of your own (1: soft-moe-slots) were read from `{path.resolve()}` (sha256 `{digest}`)" in detail
    assert "| `soft-moe-slots` (your file) | Slots per expert of the Soft MoE baseline (Section 4.1) |" in detail
    assert "| `capacity-rule` (your file)" not in detail
    claims = (results / "smoke" / "slots" / "claims.md").read_text()
    assert f"- **soft-moe-slots** (a reading, {path.resolve()}): Slots per expert" in claims
    out = runner.invoke(app, ["export", *args, "--out", str(tmp_path / "export")], env=env)
    assert out.exit_code == 0, out.output
    runs = (tmp_path / "export" / "runs.csv").read_text().splitlines()
    assert sum(",soft__two_slots," in line and ",soft-moe-slots/two_slots," in line for line in runs) == 2


def test_a_report_read_without_the_manifests_that_trained_its_twins_says_which_rows_it_leaves_out(tmp_path):
    # docs/readings.md's `repro report` line without --manifests read the shipped manifests: the twin rows the folder
    # held were left out of the report, unsaid
    manifests, profiles, path = _folder(tmp_path)
    results = tmp_path / "results"
    env = _env(manifests, profiles, OMP_NUM_THREADS="1")
    args = ["--results-dir", str(results), "--readings", str(path)]
    assert runner.invoke(app, ["run", "slots", "--jobs", "1", *args], env=env).exit_code == 0
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "slots.toml").write_text(SLOTS_TABLE[: SLOTS_TABLE.index("[[sensitivity]]")])
    out = runner.invoke(app, ["report", *args], env={**env, "REPRO_MANIFESTS": str(plain)})
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert (
        "Left out: slots: soft__two_slots: rows this folder holds that the manifests read here "
        "do not have; read the manifests that trained them (--manifests DIR)" in text
    ), text
    out = runner.invoke(app, ["report", *args], env=env)
    assert "Left out:" not in out.output  # read with the manifests that trained them


BAND = """
[[readings]]
id = "my-band"
title = "How small a negligible rho is, again"
section = "5.3"
text = "x"
applies = {{ claims = ["{claim}"] }}
chosen = {{ id = "one_pct", label = "below 1 %", claim = {{ high = [0.01, 0.60] }} }}

[[readings.alternatives]]
id = "five_pct"
label = "below 5 %"
claim = {{ high = [0.05, 0.60] }}
"""


@pytest.mark.parametrize(
    "claim, expected",
    [
        # a misspelt claim matched none, and `repro readings` said only that no table used the reading
        (
            "table6/depthwise_raises_rh",
            "readings[0].applies.claims[0]: reading 'my-band': no claim 'depthwise_raises_rh' in table6 (did you "
            "mean 'depthwise_raises_rho'?)",
        ),
        ("tabel6/depthwise_raises_rho", "readings[0].applies.claims[0]: reading 'my-band': no manifest 'tabel6'"),
    ],
)
def test_a_reading_of_a_claim_no_manifest_has_is_refused_naming_file_and_key(tmp_path, claim, expected):
    path = tmp_path / "mine.toml"
    path.write_text(BAND.format(claim=claim))
    for load in (lambda: load_all(readings_file=path), lambda: find_manifest("table6", readings_file=path)):
        with pytest.raises(SchemaError) as info:
            load()
        assert str(path) in str(info.value)
        assert any(p.startswith(expected) for p in info.value.problems), info.value.problems
    path.write_text(BAND.format(claim="table6/depthwise_raises_rho"))
    assert load_all(readings_file=path)  # the claim as it is named is taken

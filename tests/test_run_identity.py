"""Run identity: every planned run of every manifest under every shipped profile keeps the hash it had when
tests/golden/run_hashes.json was written. A change not meant to change what a run computes (a move, a
rename, a new option) must leave this file alone; one that is meant to (a new TRAINING_VERSION, a recipe)
writes it again with `python tests/test_run_identity.py --write` and says so in its commit.

A run's hash names only what its RunConfig holds: the recipe, the profile's settings and the component fields
its manifest row sets. The value a backbone or head takes for a field the row leaves unset (its registry
entry's default, else its config's) is not in it, so tests/golden/component_defaults.json holds those
defaults: changing one that a planned run reads, under the same TRAINING_VERSION, fails here
(docs/architecture.md, "Run identity")."""

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).resolve().parent / "golden" / "run_hashes.json"
DEFAULTS = GOLDEN.with_name("component_defaults.json")
WRITE = "python tests/test_run_identity.py --write"


def planned_hashes() -> dict[str, dict[str, str]]:
    """{profile: {"<manifest>/<row> seed <s>": hash}} for every shipped manifest and profile, one thread,
    not deterministic (the defaults with no environment)."""
    from repro.plan.manifest import load_all
    from repro.plan.run_config import planned_runs

    out: dict[str, dict[str, str]] = {}
    for manifest in load_all():
        for name, profile in manifest.profiles.items():
            for run in planned_runs(manifest, profile):
                out.setdefault(name, {})[run.label] = run.cfg.hash
    return {name: dict(sorted(runs.items())) for name, runs in sorted(out.items())}


def hash_changes(golden: dict[str, dict[str, str]], now: dict[str, dict[str, str]]) -> list[str]:
    """What moved between the golden hashes and the planned ones, each with what to do about it."""
    if set(now) != set(golden):
        return [f"profiles {sorted(now)} != golden {sorted(golden)}: a shipped profile was added or removed; {WRITE}"]
    out = []
    for name in golden:
        changed = sorted(k for k in golden[name].keys() & now[name].keys() if golden[name][k] != now[name][k])
        if changed:
            out.append(
                f"{name}: {len(changed)} runs changed hash, e.g. {changed[:3]}. A change not meant to alter what a "
                "run computes must move none (docs/architecture.md, 'Run identity'); one meant to (a recipe value, "
                f"TRAINING_VERSION) writes the golden files again, `{WRITE}`, and says so in its commit"
            )
        added, removed = sorted(now[name].keys() - golden[name].keys()), sorted(golden[name].keys() - now[name].keys())
        if added or removed:
            out.append(
                f"{name}: runs added {added[:3]} ({len(added)}), removed {removed[:3]} ({len(removed)}): manifest "
                f"rows, seeds or a profile's tables changed; where that is meant, `{WRITE}` (no existing run's hash "
                "moves)"
            )
    return out


def _field_defaults(config: type | None) -> dict[str, Any]:
    if config is None:
        return {}
    out = {}
    for f in dataclasses.fields(config):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def component_defaults() -> dict[str, Any]:
    """{"version": TRAINING_VERSION, "backbone": {name: {field: value}}, "head": {...}}: what each registered
    component takes for a field its row does not set (its registry entry's defaults over its config's)."""
    from repro.models import BACKBONES, HEADS
    from repro.plan.run_config import TRAINING_VERSION

    out: dict[str, Any] = {"version": TRAINING_VERSION}
    for registry in (BACKBONES, HEADS):
        out[registry.kind] = {e.name: {**_field_defaults(e.config), **e.defaults} for e in registry}
    return json.loads(json.dumps(out))  # tuples as lists, as the file holds them


def defaults_read() -> dict[tuple[str, str, str], int]:
    """(kind, component, field) -> how many planned runs (every shipped manifest and profile) take that field's
    default, their row leaving it unset."""
    from repro.models import BACKBONES, HEADS
    from repro.plan.manifest import load_all
    from repro.plan.run_config import planned_runs

    fields = {
        kind: {e.name: set(_field_defaults(e.config)) | set(e.defaults) for e in reg}
        for kind, reg in (("backbone", BACKBONES), ("head", HEADS))
    }
    read: dict[tuple[str, str, str], int] = {}
    for manifest in load_all():
        for profile in manifest.profiles.values():
            for run in planned_runs(manifest, profile):
                for kind, part in (("backbone", run.cfg.backbone), ("head", run.cfg.head)):
                    for name in fields[kind][part["name"]] - set(part["params"]):
                        key = (kind, part["name"], name)
                        read[key] = read.get(key, 0) + 1
    return read


def default_changes(golden: dict[str, Any], now: dict[str, Any], read: dict[tuple[str, str, str], int]) -> list[str]:
    """Defaults that planned runs read and that changed under the same TRAINING_VERSION, each with what to do."""
    if now["version"] != golden["version"]:
        return []  # every hash moved with it: test_every_planned_run_keeps_its_hash says so
    missing = "(absent)"
    moved = []
    for kind in ("backbone", "head"):
        for name in sorted(golden[kind].keys() & now[kind].keys()):
            before, after = golden[kind][name], now[kind][name]
            for field in sorted(before.keys() | after.keys()):
                runs = read.get((kind, name, field), 0)
                if before.get(field, missing) != after.get(field, missing) and runs:
                    moved.append(
                        f"  {kind} {name}: {field} = {before.get(field, missing)} -> "
                        f"{after.get(field, missing)} ({runs} planned runs leave it unset)"
                    )
    if not moved:
        return []
    return [
        "defaults that planned runs read changed, and no run hash names them:",
        *moved,
        "Each such run now computes something else under its old hash, and a record stored under it would be "
        "reused. If that is meant, raise TRAINING_VERSION (repro/plan/run_config.py), so every run gets a new hash; "
        "if the runs compute the same (a new field whose default keeps the old behaviour), say so in the commit. "
        f"Either way, write the golden files again: `{WRITE}`.",
    ]


def _defaults(monkeypatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("REPRO_DETERMINISTIC", raising=False)
    monkeypatch.delenv("REPRO_PROFILES", raising=False)


def test_every_planned_run_keeps_its_hash(monkeypatch):
    _defaults(monkeypatch)
    problems = hash_changes(json.loads(GOLDEN.read_text()), planned_hashes())
    assert not problems, "\n".join(problems)


def test_no_default_a_planned_run_reads_changed_under_its_hash(monkeypatch):
    _defaults(monkeypatch)
    problems = default_changes(json.loads(DEFAULTS.read_text()), component_defaults(), defaults_read())
    assert not problems, "\n".join(problems)


def test_a_moved_hash_and_an_added_run_are_each_told_what_to_do():
    golden = {"smoke": {"t/a seed 0": "1" * 16, "t/b seed 0": "2" * 16}}
    now = {"smoke": {"t/a seed 0": "3" * 16, "t/b seed 0": "2" * 16, "t/c seed 0": "4" * 16}}
    changed, added = hash_changes(golden, now)
    assert changed.startswith("smoke: 1 runs changed hash, e.g. ['t/a seed 0']") and WRITE in changed
    assert "'Run identity'" in changed
    assert added.startswith("smoke: runs added ['t/c seed 0'] (1), removed [] (0)") and WRITE in added
    assert hash_changes(golden, golden) == []


def test_a_changed_default_is_found_only_where_a_planned_run_reads_it():
    # SparseMoEConfig.key_dim 64 -> 32 changed every sparse head's router while every hash and this file's
    # other test stayed as they were
    golden = {"version": 4, "backbone": {}, "head": {"sparse_moe": {"key_dim": 64, "top_k": 1}, "mine": {"x": 1}}}
    now = {"version": 4, "backbone": {}, "head": {"sparse_moe": {"key_dim": 32, "top_k": 1}, "mine": {"x": 2}}}
    read = {("head", "sparse_moe", "key_dim"): 7}  # no planned run builds "mine"
    problems = default_changes(golden, now, read)
    assert problems[1] == "  head sparse_moe: key_dim = 64 -> 32 (7 planned runs leave it unset)" and len(problems) == 3
    assert "TRAINING_VERSION (repro/plan/run_config.py)" in problems[2] and WRITE in problems[2]
    assert default_changes(golden, {**now, "version": 5}, read) == []  # every hash moved with the version
    assert default_changes(golden, golden, read) == []


def test_the_golden_files_cover_every_shipped_profile_many_runs_and_every_component():
    golden = json.loads(GOLDEN.read_text())
    assert {"smoke", "functional", "full"} <= set(golden)
    assert len(golden["full"]) > 400 and all(len(h) == 16 for runs in golden.values() for h in runs.values())
    defaults = json.loads(DEFAULTS.read_text())
    assert defaults["head"]["sparse_moe"]["key_dim"] == 64 and defaults["backbone"]["cifar_depthwise"]["depthwise"]
    # default_changes compares the components both hold: one registered since the file was written is in none.
    now = component_defaults()
    for kind in ("backbone", "head"):
        assert set(defaults[kind]) == set(now[kind]), f"{kind}s registered or removed since {DEFAULTS.name}; {WRITE}"


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    import os

    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ.pop("REPRO_DETERMINISTIC", None)
    os.environ.pop("REPRO_PROFILES", None)
    GOLDEN.write_text(json.dumps(planned_hashes(), indent=1) + "\n")
    DEFAULTS.write_text(json.dumps(component_defaults(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN} and {DEFAULTS}")

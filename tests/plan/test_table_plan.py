"""A table's plan (repro.plan.table_plan): built once from the manifest and the profile, frozen, and read by the
stages below, which never plan. The walk of one setting, `epochs`, from the command line to the epoch loop."""

import ast
import dataclasses
import inspect
import tomllib

import pytest
from typer.testing import CliRunner

from checkout import MANIFESTS, REPO_ROOT
from repro.plan import run_config
from repro.plan.manifest import find_manifest
from repro.plan.table_plan import PlannedClaim, Plans, TablePlan, build_plan, plan_all

LAYERS = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]["layers"]
FLOOR = {name.strip(): i for i, layer in enumerate(LAYERS) for name in layer.split("|")}
READERS = ("measure", "execution", "train")  # the stages below the pipeline: they read plans


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def _packages_on_stack() -> list[str]:
    """The repro packages on the call stack, outermost first, a package's consecutive frames as one."""
    names = [_package(f.frame.f_globals.get("__name__", "")) for f in reversed(inspect.stack())]
    walk: list[str] = []
    for name in names:
        if name.startswith("repro.") and (not walk or walk[-1] != name):
            walk.append(name)
    return walk


class EpochLoop(Exception):
    """Raised where the epoch loop would start: the walk ends there, nothing trains."""


PROFILES = """[profiles.walk]
description = "the walk of epochs"
evidence = "pipeline"
seeds = 1
epochs = 3
data = "synthetic"
train_samples = 64
test_samples = 32
batch_size = 32
max_image_size = 16
pretrained = false

[profiles.walk.datasets.cifar10]
epochs = 2
"""


def test_a_walk_of_epochs_from_the_command_line_to_the_epoch_loop_goes_down_the_floors(tmp_path, monkeypatch):
    from repro.cli import app
    from repro.train import loop

    applied, reached = [], []
    dataset_profile = run_config.dataset_profile

    def recorded(profile, dataset):  # the one place a dataset's settings are applied
        applied.append(_packages_on_stack())
        return dataset_profile(profile, dataset)

    def epoch_loop(cfg, *args, **kwargs):
        reached.append((cfg.epochs, _packages_on_stack(), len(applied)))
        raise EpochLoop

    monkeypatch.setattr(run_config, "dataset_profile", recorded)
    monkeypatch.setattr(loop, "_train", epoch_loop)
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    shipped = MANIFESTS / "temperature_ablation.toml"
    (manifests / "temperature_ablation.toml").write_text(shipped.read_text())
    (tmp_path / "walk.toml").write_text(PROFILES)
    CliRunner().invoke(
        app,
        [
            "temperature_ablation",
            "--profile",
            "walk",
            "--profiles",
            str(tmp_path / "walk.toml"),
            "--manifests",
            str(manifests),
            "--results-dir",
            str(tmp_path / "results"),
            "-j",
            "1",
            "--device",
            "cpu",
        ],
    )
    assert reached, "no run reached the epoch loop"
    epochs, walk, planned_before = reached[0]
    assert epochs == 2  # the dataset's setting, applied in the plan, is the one the loop runs
    # Down the floors, one package after another, none entered twice.
    assert walk[:2] == ["repro.cli", "repro.pipeline"] and walk[-1] == "repro.train", walk
    assert [FLOOR[p] for p in walk] == sorted(FLOOR[p] for p in walk) and len(set(walk)) == len(walk), walk
    assert {"repro.measure", "repro.execution"} <= set(walk) and "repro.plan" not in walk and "repro.spec" not in walk
    # Planned first, once: every application happened before the first run, none below the command line.
    assert applied and planned_before == len(applied)
    for stack in applied:
        assert stack[0] == "repro.cli" and stack[-1] == "repro.plan", stack
        assert not set(stack) & {"repro.pipeline", *(f"repro.{p}" for p in READERS)}, stack


def _plan_functions() -> set[str]:
    """The functions of repro/plan: what plans (a reader may import plan's types and constants, never these)."""
    out = set()
    for path in (REPO_ROOT / "repro" / "plan").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        out |= {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    return out


def test_the_stages_below_the_pipeline_read_plans_and_never_make_one():
    planning = _plan_functions()
    assert {"build_plan", "plan_all", "resolve", "planned_runs", "dataset_profile"} <= planning
    for package in READERS:
        for path in sorted((REPO_ROOT / "repro" / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("repro.plan"):
                    called = {a.name for a in node.names} & planning
                    assert not called, f"{path.relative_to(REPO_ROOT)} imports {sorted(called)} from {node.module}"


def test_a_datasets_settings_are_applied_in_the_plan_and_nowhere_else():
    """Profile.for_dataset is called in repro/plan only (TensorLoader.for_dataset is another function)."""
    callers = []
    for path in sorted((REPO_ROOT / "repro").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "for_dataset":
                receiver = ast.unparse(node.func.value)
                if not receiver.endswith("TensorLoader"):
                    callers.append(path.relative_to(REPO_ROOT).as_posix())
    assert callers == ["repro/plan/run_config.py"]


def test_the_plan_holds_every_run_count_and_claim_with_the_datasets_settings_applied():
    table9 = find_manifest("table9")
    plan = build_plan(table9, "functional")
    profile = table9.profiles["functional"]
    assert plan.runs == tuple(run_config.planned_runs(table9, profile))
    for p in plan.runs:
        assert p.cfg.epochs == (profile.datasets[p.cfg.dataset].epochs or profile.epochs)
    assert (
        plan.left_out
        == {
            r.id: why
            for r in table9.rows
            if "accuracy" in r.measures and (why := profile.left_out_by("table9", r.id)) is not None
        }
        != {}
    )
    assert not {p.row for p in plan.runs} & set(plan.left_out)
    assert [r.id for r in plan.flop_rows] == [r.id for r in table9.rows if "flops" in r.measures]
    assert [c.claim.id for c in plan.claims] == [c.id for c in table9.claims]
    assert all(set(c.trained) <= set(c.rows) for c in plan.claims) and any(c.trained for c in plan.claims)
    assert plan.datasets["cifar100"].epochs == profile.datasets["cifar100"].epochs  # a dataset the table names too
    with pytest.raises(KeyError, match="no profile 'ful'"):
        build_plan(table9, "ful")


def test_a_plan_cut_to_a_claims_rows_keeps_the_runs_as_planned():
    table5 = find_manifest("table5")
    plan = build_plan(table5, "full")
    claim = next(c for c in plan.claims if c.trained)
    cut = plan.only(claim.rows, (claim.claim.id,))
    assert {p.row for p in cut.runs} == set(claim.trained)
    assert all(p in plan.runs for p in cut.runs) and [c.id for c in cut.manifest.claims] == [claim.claim.id]
    assert {r.id for r in cut.manifest.rows} == set(claim.rows) and cut.profile == plan.profile


def test_a_plan_and_its_parts_are_frozen():
    plans = plan_all([find_manifest("table1")])
    plan = plans.of("table1", "smoke")
    assert isinstance(plan, TablePlan) and plans.at("smoke") == [plan] and isinstance(plans, Plans)
    assert isinstance(plan.claims[0], PlannedClaim) and plan.runs
    for value, name in (
        (plan, "runs"),
        (plan, "profile"),
        (plans, "by_key"),
        (plan.claims[0], "rows"),
        (plan.runs[0], "cfg"),
        (plan.runs[0].cfg, "epochs"),
    ):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, None)

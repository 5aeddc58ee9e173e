"""A profile is applied to a manifest once, where the manifest is loaded (repro.plan.manifest.with_profiles);
everything downstream reads `manifest.profiles[name]`, or the table's plan built from it, and applies nothing
again."""

import dataclasses
from pathlib import Path

import pytest

from repro.measure.measurer import Context, Measurement
from repro.plan.manifest import find_manifest, load_all
from repro.plan.run_config import planned_runs
from repro.plan.table_plan import plan_all
from repro.spec.profiles import Profile, RunDefaults


def test_a_profile_is_applied_once_where_a_manifest_is_loaded(monkeypatch):
    from repro.cost.estimate import CostModel
    from repro.execution.status import table_status
    from repro.runtime.locks import LockSettings

    calls = []
    original = Profile.for_manifest

    def counted(self, manifest_id, *args, **kwargs):
        calls.append(manifest_id)
        return original(self, manifest_id, *args, **kwargs)

    monkeypatch.setattr(Profile, "for_manifest", counted)
    manifests = load_all()
    assert len(calls) == sum(len(m.profiles) for m in manifests)
    loaded = len(calls)
    model = CostModel(kind="cpu", cached_only=True)
    plans = plan_all(manifests)
    for m in manifests:
        for name, profile in m.profiles.items():
            planned_runs(m, profile)
        table_status(plans.of(m.id, "smoke"), Path("/nonexistent-results"), LockSettings())
    model.cost([p for name in ("smoke", "functional") for p in plans.at(name)])
    assert len(calls) == loaded, f"applied again downstream, to {sorted(set(calls[loaded:]))}"


def test_the_commands_defaults_reach_every_planned_run():
    table1 = find_manifest("table1", defaults=RunDefaults(threads=3, deterministic=True))
    cfgs = [p.cfg for p in planned_runs(table1, table1.profiles["smoke"])]
    assert cfgs and all((c.threads, c.deterministic) == (3, True) for c in cfgs)
    assert all(
        (p.cfg.threads, p.cfg.deterministic) == (1, False)
        for p in planned_runs(find_manifest("table1"), find_manifest("table1").profiles["smoke"])
    )


def test_a_measurers_context_is_frozen_and_what_it_measured_comes_back():
    ctx = Context("smoke", Path("/tmp"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.jobs = 4  # type: ignore[misc]
    assert {f.name for f in dataclasses.fields(Measurement)} == {"measured", "runs", "submitted"}

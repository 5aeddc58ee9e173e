"""repro.cost.reference: the shipped CPU reference is the fit of the runs it lists, lists every run the shipped
CPU profiles plan at the counts that price them today, prices a cold verify-all near what it took, and a
damaged file falls back to the per-core guess with a warning naming the file and the key."""

import dataclasses
import datetime as dt
import json

import pytest

from repro.cost import calibration as cal
from repro.cost import reference, reference_build
from repro.cost.command import Rates, command_time
from repro.cost.estimate import CostModel
from repro.manifest import load_all
from repro.recipes import planned_runs

REGENERATE = ("the CPU reference is out of date: run the shipped CPU profiles cold on a 2-core machine and "
              "`python tools/write_cpu_reference.py` their folders (its docstring), then commit "
              "repro/cost/cpu_reference.json")


@pytest.fixture
def cold(tmp_path, monkeypatch):
    """No CPU benchmark cached, runs on one thread: what a first `repro list` sees."""
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    cal.throughput.cache_clear()
    yield
    cal.throughput.cache_clear()


def _cpu_runs():
    """config hash -> config of every run a shipped profile pinned to the CPU plans."""
    return {p.cfg.hash: p.cfg for m in load_all() for prof in m.profiles.values() if prof.device == "cpu"
            for p in planned_runs(m, prof)}


def test_the_shipped_run_model_is_the_fit_of_the_shipped_runs():
    doc = json.loads(reference.REFERENCE_FILE.read_text())
    assert reference_build.fit(doc["runs"]) == pytest.approx(doc["run_model"], rel=1e-9)
    ref = reference.load()
    assert ref is not None and len(ref.runs) == len(doc["runs"]) and set(ref.rates) == set(reference.RATE_NAMES)
    assert ref.source.startswith("reference, not measured here") and ref.machine in ref.source


def test_it_lists_every_run_the_cpu_profiles_plan_at_today_s_counts(cold):
    ref = reference.load()
    planned, listed = _cpu_runs(), {r.hash: r for r in ref.runs}
    missing = sorted(planned.keys() - listed.keys())
    assert not missing, f"{len(missing)} planned runs not in it; {REGENERATE}"
    model = CostModel(cached_only=True)
    for h, cfg in planned.items():
        work = model.run_work(cfg)
        assert (work.macs, work.steps) == (pytest.approx(listed[h].macs, rel=1e-9), listed[h].steps), \
            f"{listed[h].label}: {REGENERATE}"


def test_a_cold_estimate_prices_listed_runs_at_their_own_and_verify_all_near_what_it_took(cold):
    ref = reference.load()
    model = CostModel(measure_cpu=False)
    device = model.of_kind("cpu")
    assert device.source == ref.source and device.basis == "reference"
    planned, listed = _cpu_runs(), {r.hash: r for r in ref.runs}
    some = next(iter(planned))
    t = model.run_time(planned[some], "", device)
    assert (t.compute_s, t.overhead_s) == (listed[some].cpu_s, 0.0)
    other = dataclasses.replace(planned[some], epochs=planned[some].epochs + 1)  # a run it does not list
    t = model.run_time(other, "", device)
    work = model.run_work(other)
    assert t.compute_s == pytest.approx(work.macs / ref.macs_per_s)
    assert t.overhead_s == pytest.approx(work.steps * ref.step_overhead_s + ref.run_overhead_s)
    doc = json.loads(reference.REFERENCE_FILE.read_text())
    manifests = load_all()
    for profile, measured in doc["verify_all_wall_s"].items():
        estimate = command_time([m for m in manifests if profile in m.profiles], profile, model, Rates()).seconds
        assert 0.8 < estimate / measured < 1.25, (profile, estimate, measured)


def test_a_damaged_reference_names_the_key_and_falls_back_to_the_guess(tmp_path, capsys, monkeypatch, cold):
    doc = json.loads(reference.REFERENCE_FILE.read_text())
    del doc["runs"][3]["cpu_s"]
    bad = tmp_path / "cpu_reference.json"
    bad.write_text(json.dumps(doc))
    assert reference.load(bad) is None
    err = capsys.readouterr().err
    assert str(bad) in err and "runs[3].cpu_s" in err and "expected a number" in err
    assert reference.load(tmp_path / "absent.json") is None
    monkeypatch.setattr(reference, "load", lambda path=reference.REFERENCE_FILE: None)
    guess = cal.cpu_throughput(measure=False, reference=True)
    assert guess.source.startswith("reference, not measured: 4 GMAC/s per core") and not guess.run_seconds


def test_build_recovers_the_constants_its_records_were_made_with(tmp_path, cold):
    """Run records priced by known constants in, those constants and every run's seconds back."""
    a, b, o = 1 / 5e10, 0.02, 0.4
    model = CostModel(cached_only=True)
    manifests = load_all()
    table1 = next(m for m in manifests if m.id == "table1")
    runs = (tmp_path / "results" / "runs")
    runs.mkdir(parents=True)
    when = dt.datetime(2026, 12, 4, 3, 0, tzinfo=dt.timezone.utc)
    planned = [p for name in ("smoke", "functional") for p in planned_runs(table1, table1.profiles[name])]
    for p in planned:  # steps differ between the profiles: the per-step and the per-run cost part
        w = model.run_work(p.cfg)
        cpu = a * w.macs + b * w.steps + o
        record = {"config": p.cfg.to_dict(), "config_hash": p.cfg.hash, "label": f"table1/{p.row} seed {p.seed}",
                  "train_seconds": cpu, "wall_seconds": cpu / 0.98, "cpu_seconds": cpu,
                  "provenance": {"time": when.isoformat(), "device_type": "cpu",
                                 "device": "cpu: x86_64, 1 intra-op thread(s)"}}
        (runs / f"{p.cfg.hash}.json").write_text(json.dumps(record))
    doc = reference_build.build([tmp_path / "results"], manifests, "0" * 40, "a test CPU x2 (Linux)")
    built = reference.parse(json.loads(reference_build.dumps(doc)))
    assert built.macs_per_s == pytest.approx(1 / a, rel=1e-2)  # the seconds are kept to the millisecond
    assert built.step_overhead_s == pytest.approx(b, rel=1e-2) and built.run_overhead_s == pytest.approx(o, rel=1e-2)
    assert built.cpu_share == pytest.approx(0.98, rel=1e-2) and built.measured == "2026-12-04"
    assert len(built.runs) == len(planned) and built.rates == {}
    assert "median 1.00" in doc["fit"] and "a test CPU x2" in built.source


def test_too_few_records_are_refused_naming_the_folder(tmp_path):
    with pytest.raises(ValueError, match=str(tmp_path)):
        reference_build.build([tmp_path], load_all(), "0" * 40, "x")

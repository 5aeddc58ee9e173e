"""repro.cost.cpu_reference: the shipped CPU reference is the fit of the runs it lists, lists the runs the shipped
CPU profiles plan at the counts that price them today, prices a cold verify-all near what it took, and a
damaged file falls back to the per-core guess with a warning naming the file and the key."""

import dataclasses
import datetime as dt
import json

import pytest

from checkout import tool
from repro.cost import calibration as cal
from repro.cost import cpu_reference as reference
from repro.cost.wall_time import Rates, command_time
from repro.cost.estimate import CostModel
from repro.plan.manifest import load_all
from repro.plan.run_config import planned_runs
from repro.plan.table_plan import build_plans

WRITER = tool("write_cpu_reference")  # tools/write_cpu_reference.py: the shipped file's writer

REGENERATE = (
    "the CPU reference is out of date: run the shipped CPU profiles cold on a 2-core machine and "
    "`python tools/write_cpu_reference.py` their folders (its docstring), then commit "
    "repro/cost/cpu_reference.json"
)


@pytest.fixture
def cold(tmp_path, monkeypatch):
    """No speed factor kept (an empty cache folder), runs on one thread: what a first `repro list` sees."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    return tmp_path / "cache"


def _cpu_runs():
    """config hash -> config of every run a shipped profile pinned to the CPU plans."""
    return {
        p.cfg.hash: p.cfg
        for m in load_all()
        for prof in m.profiles.values()
        if prof.device == "cpu"
        for p in planned_runs(m, prof)
    }


def test_the_shipped_run_model_is_the_fit_of_the_shipped_runs():
    doc = json.loads(reference.REFERENCE_FILE.read_text())
    assert WRITER.reference_run_model(doc["runs"]) == pytest.approx(doc["run_model"], rel=1e-9)
    ref = reference.load()
    assert ref is not None and len(ref.runs) == len(doc["runs"]) and set(ref.rates) == set(reference.RATE_NAMES)
    assert ref.source.startswith("reference, not measured here") and ref.machine in ref.source


def test_it_lists_the_runs_the_cpu_profiles_plan_at_today_s_counts(cold):
    """A row added to a manifest is priced by the run model until the file is written again; a profile or a model
    that changes what the listed runs cost makes it out of date."""
    ref = reference.load()
    planned, listed = _cpu_runs(), {r.hash: r for r in ref.runs}
    missing = sorted(cfg.hash for cfg in planned.values() if cfg.hash not in listed)
    assert len(missing) <= 0.1 * len(planned), f"{len(missing)} of {len(planned)} planned runs not in it; {REGENERATE}"
    model = CostModel(cached_only=True, cache=cold)
    for h, cfg in planned.items():
        if h not in listed:
            continue
        work = model.run_work(cfg)
        assert (work.macs, work.steps) == (pytest.approx(listed[h].macs, rel=1e-9), listed[h].steps), (
            f"{listed[h].label}: {REGENERATE}"
        )


def test_a_cold_estimate_prices_listed_runs_at_their_own_and_verify_all_near_what_it_took(cold):
    ref = reference.load()
    model = CostModel(cache=cold)
    device = model.of_kind("cpu")
    assert device.source.startswith(ref.source) and device.basis == "reference" and device.origin == "CPU reference"
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
        estimate = command_time(build_plans(manifests, profile), model, Rates()).seconds
        assert 0.85 < estimate / measured < 1.15, (profile, estimate, measured)


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
    guess = cal.cpu_throughput()
    assert guess.source.startswith("reference, not measured: 4 GMAC/s per core") and not guess.run_seconds


A, B, O = 1 / 5e10, 0.02, 0.4  # noqa: E741 (s/MAC, s/step, s/run: what the records below are made with)
WHEN = dt.datetime(2026, 12, 4, 3, 0, tzinfo=dt.timezone.utc)


def _records(folder, manifest, profiles, cache) -> list:
    """Run records of `manifest`'s runs at `profiles`, each CPU second priced by A, B and O."""
    model = CostModel(cached_only=True, cache=cache)
    runs = folder / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    planned = [p for name in profiles for p in planned_runs(manifest, manifest.profiles[name])]
    for p in planned:
        w = model.run_work(p.cfg)
        cpu = A * w.macs + B * w.steps + O
        record = {
            "config": p.cfg.to_dict(),
            "config_hash": p.cfg.hash,
            "label": f"{manifest.id}/{p.row} seed {p.seed}",
            "train_seconds": cpu,
            "wall_seconds": cpu / 0.98,
            "cpu_seconds": cpu,
            "provenance": {
                "time": WHEN.isoformat(),
                "device_type": "cpu",
                "device": "cpu: x86_64, 1 intra-op thread(s)",
            },
        }
        (runs / f"{p.cfg.hash}.json").write_text(json.dumps(record))
    return planned


def test_build_recovers_the_constants_its_records_were_made_with(tmp_path, cold):
    """Run records priced by known constants in, those constants and every run's seconds back."""
    manifests = load_all()
    table1 = next(m for m in manifests if m.id == "table1")
    # steps differ between the profiles: the per-step and the per-run cost part
    planned = _records(tmp_path / "results", table1, ("smoke", "functional"), cold)
    doc = WRITER.build_cpu_reference([tmp_path / "results"], manifests, "0" * 40, "a test CPU x2 (Linux)", cold)
    built = reference.parse(json.loads(WRITER.dumps(doc)))
    assert built.macs_per_s == pytest.approx(1 / A, rel=1e-2)  # the seconds are kept to the millisecond
    assert built.step_overhead_s == pytest.approx(B, rel=1e-2) and built.run_overhead_s == pytest.approx(O, rel=1e-2)
    assert built.cpu_share == pytest.approx(0.98, rel=1e-2) and built.measured == "2026-12-04"
    assert len(built.runs) == len(planned) and built.rates == {}
    assert "median 1.00" in doc["fit"] and "a test CPU x2" in built.source


def test_build_prices_the_measured_commands_cold_whatever_this_machine_has_cached(tmp_path, cold):
    """The stand-in pretraining a cold verify-all measured is priced as such, even where its weights are cached."""
    from repro.train import digit_weights

    manifests = load_all()
    table4 = next(m for m in manifests if m.id == "table4")
    planned = _records(tmp_path / "results", table4, ("functional",), cold)
    own = sum(A * CostModel(cached_only=True, cache=cold).run_work(p.cfg).macs for p in planned)
    phases = [
        {"phase": "start-up and imports", "table": "", "wall_s": 3.0, "cpu_s": 2.5},
        {"phase": "stand-in pretraining", "table": "table4", "wall_s": 20.0, "cpu_s": 40.0},
        {"phase": "training", "table": "table4", "wall_s": own, "cpu_s": 2 * own},
    ]
    (tmp_path / "results" / "functional").mkdir()
    (tmp_path / "results" / "functional" / "timings.json").write_text(
        json.dumps(
            {
                "commands": {
                    "run table4": {
                        "phases": phases,
                        "wall_s": sum(p["wall_s"] for p in phases),
                        "started": WHEN.isoformat(),
                    }
                }
            }
        )
    )
    cold_doc = WRITER.build_cpu_reference([tmp_path / "results"], manifests, "0" * 40, "x", cold)
    cfg = planned[0].cfg
    weights = digit_weights.weights_path(cfg.backbone["name"], cfg.dataset, cfg.image_size, cache=cold)
    weights.parent.mkdir(parents=True)
    weights.write_bytes(b"cached here")  # this machine has the weights, the measured command had not
    again = WRITER.build_cpu_reference([tmp_path / "results"], manifests, "0" * 40, "x", cold)
    assert again["rates"] == cold_doc["rates"]


def test_too_few_records_are_refused_naming_the_folder(tmp_path):
    with pytest.raises(ValueError, match=str(tmp_path)):
        WRITER.build_cpu_reference([tmp_path], load_all(), "0" * 40, "x")

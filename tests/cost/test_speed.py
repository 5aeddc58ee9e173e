"""repro.cost.calibration.Speed: the CPU reference scaled by this machine's speed factor; a measurement taken on a
busy machine is not kept, so `repro list` after it still prices the shipped profiles near what they took on a quiet one.

The load and the repetitions' CPU seconds are injected: the tests decide what the benchmark saw, not the machine.
"""

import datetime as dt
import json
import re

import pytest
from typer.testing import CliRunner

from repro.bench import speed as bench
from repro.cli import app
from repro.cost import calibration as speed
from repro.cost import cpu_reference
from repro.cost.estimate import CostModel
from repro.cost.wall_time import Rates, command_time
from repro.plan.manifest import load_all
from repro.plan.table_plan import build_plans

GOAL = 0.30  # `repro list` on a folder with no records, against what verify-all took on a quiet machine


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "cores", lambda: 2)
    return tmp_path / "cache"


def _runs(there=(0.1, 0.4, 1.2)):
    return [(f"cfg{i}", s, f"run {i}") for i, s in enumerate(there)]


def _measure(ratio, load, spread=0.0):
    """A measurement whose repetitions took `ratio` x the reference's CPU seconds, the second `spread` more."""
    runs = _runs()
    there = {cfg: s for cfg, s, _ in runs}
    calls: list[str] = []

    def train(cfg):
        calls.append(cfg)
        rep = calls[1:].count(cfg) - 1  # the first call is the untimed warm-up
        return there[cfg] * ratio * (1 + spread if rep == 1 else 1)

    return bench.measure_speed(runs, 2, train, lambda: (load, load, load))


def _list_totals(tmp_path, cache) -> dict[str, tuple[float, str]]:
    """profile -> (verify-all's wall seconds, its From words) as `repro list` prints them with no records, its
    cache folder `cache`."""
    out = CliRunner().invoke(
        app, ["list", "--results-dir", str(tmp_path / "no-results")], env={"COLUMNS": "100", "REPRO_CACHE": str(cache)}
    )
    assert out.exit_code == 0, out.output
    totals = out.output.split("Totals over every manifest")[1]
    rows = {}
    for line in totals.splitlines():
        m = re.match(r"(smoke|functional)\s.*~(\d+(?:\.\d+)?) (s|min|h)\s+(.+?)\s*$", line)
        if m:
            rows[m[1]] = (float(m[2]) * {"s": 1, "min": 60, "h": 3600}[m[3]], m[4])
    return rows


def test_a_busy_calibration_is_not_kept_and_list_stays_near_the_quiet_times(cache, tmp_path):
    """Done when of issue 39: after a calibration under load, `repro list` with no results folder gives smoke and
    functional within 30% of what verify-all took on a quiet machine of the reference's kind."""
    busy, rows = _measure(ratio=4.0, load=5.0)  # the cores shared with other work: everything 4x slower
    assert busy.factor == pytest.approx(4.0) and not busy.quiet
    assert "load average 5.0 above 2 cores" in busy.why_not_kept()
    assert not speed.keep(busy, cache) and not (cache / speed.FILE_NAME).exists()
    assert speed.kept_speed(cache=cache) is None
    cache.mkdir()
    (cache / "throughput.json").write_text('{"cpu:2": 8.2e9}')  # the single rate earlier versions kept under load
    measured = json.loads(cpu_reference.REFERENCE_FILE.read_text())["verify_all_wall_s"]  # measured quiet
    totals = _list_totals(tmp_path, cache)
    for profile in ("smoke", "functional"):
        wall, origin = totals[profile]
        assert abs(wall / measured[profile] - 1) <= GOAL, (
            f"{profile}: repro list estimates {wall:.0f} s, the CPU reference measured {measured[profile]:.0f} s "
            "(repro/cost/cpu_reference.json); after a change to the shipped tables or profiles, measure it again "
            "(tools/write_cpu_reference.py)"
        )
        assert origin == "CPU reference"


def test_repetitions_too_far_apart_are_not_kept_either(cache):
    erratic, _ = _measure(ratio=1.0, load=0.5, spread=0.5)
    assert erratic.spread == pytest.approx(0.5) and "repetitions 50% apart" in erratic.why_not_kept()
    assert not speed.keep(erratic, cache) and speed.kept_speed(cache=cache) is None


def test_a_quiet_calibration_is_kept_and_scales_every_reference_figure(cache, tmp_path):
    quiet, rows = _measure(ratio=1.5, load=0.5)
    assert quiet.quiet and quiet.factor == pytest.approx(1.5) and [r.ratio for r in rows] == pytest.approx([1.5] * 3)
    assert speed.keep(quiet, cache) and speed.kept_speed(cache=cache) == quiet
    manifests = load_all()
    unscaled = CostModel(cache=cache)
    unscaled.speed = None  # as if no factor were kept: the reference unscaled
    scaled = CostModel(cache=cache)
    assert scaled.of_kind("cpu").origin == "CPU reference x1.50"
    for profile in ("smoke", "functional"):
        mine = [m for m in manifests if profile in m.profiles]
        a, b = (command_time(build_plans(mine, profile), model, Rates()) for model in (unscaled, scaled))
        assert b.seconds / a.seconds == pytest.approx(1.5, rel=0.02)  # latency's per-call dispatch is not scaled
        assert b.origin() == "CPU reference x1.50" and a.origin() == "CPU reference"
    assert _list_totals(tmp_path, cache)["smoke"][1] == "CPU reference x1.50"


def test_a_kept_measurement_expires_and_a_damaged_one_is_named(cache, capsys):
    quiet, _ = _measure(ratio=0.8, load=0.1)
    speed.keep(quiet, cache)
    then = dt.datetime.fromisoformat(quiet.measured)
    assert speed.kept_speed(then + dt.timedelta(days=speed.MAX_AGE_DAYS - 1), cache) == quiet
    assert speed.kept_speed(then + dt.timedelta(days=speed.MAX_AGE_DAYS + 1), cache) is None
    doc = json.loads((cache / speed.FILE_NAME).read_text())
    doc[quiet.machine]["factor"] = "fast"
    (cache / speed.FILE_NAME).write_text(json.dumps(doc))
    assert speed.kept_speed(cache=cache) is None
    err = capsys.readouterr().err
    assert str(cache / speed.FILE_NAME) in err and quiet.machine in err


def test_bench_speed_says_what_it_measured_and_why_it_kept_nothing(cache, monkeypatch):
    monkeypatch.setattr(bench, "bench_runs", lambda count: _runs()[:count])
    busy = _measure(ratio=2.0, load=3.0)
    monkeypatch.setattr(bench, "measure_speed", lambda runs, reps: busy)
    out = CliRunner().invoke(app, ["bench", "speed", "--runs", "3"], env={"COLUMNS": "80", "REPRO_CACHE": str(cache)})
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert "speed factor 2.00" in text and "not kept: load average 3.0 above 2 cores" in text
    assert "the CPU reference unscaled" in text and max(len(line) for line in out.output.splitlines()) <= 80


def test_the_benchmark_trains_reference_runs_again(cache, one_thread):
    """The real benchmark, one run: reference runs that need no dataset, each at most MAX_RUN_S there."""
    picks = bench.bench_runs(3)
    assert len(picks) == 3 and [s for _, s, _ in picks] == sorted(s for _, s, _ in picks)
    assert all(cfg.data != "real" and not cfg.digit_weights and s <= bench.MAX_RUN_S for cfg, s, _ in picks)
    measured, rows = bench.measure_speed(picks[:1], reps=1)
    assert measured.runs == 1 and rows[0].seconds[0] > 0 and measured.factor == pytest.approx(rows[0].ratio)

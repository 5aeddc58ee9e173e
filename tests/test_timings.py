"""Phase timings (repro.results.timings): exclusive nesting by hand-set clocks, the file each command writes, the CPU of
live child processes, and the phase table the report and `repro bench smoke` print."""

import json
import multiprocessing
import os
import shlex
import subprocess
import sys
import time

import pytest

from checkout import REPO_ROOT
from repro.results import timings
from repro.results.timings import Clocks, Recorder, phase_rows


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_a_phase_inside_another_pauses_it_so_every_second_counts_once(monkeypatch):
    wall, cpu = _Clock(), _Clock()
    monkeypatch.setattr(timings.time, "perf_counter", wall)
    clocks = Clocks(cpu)
    clocks.start("outer")
    wall.now, cpu.now = 3.0, 2.0
    with clocks.part("inner"):
        wall.now, cpu.now = 7.0, 5.0
    wall.now, cpu.now = 10.0, 6.0
    clocks.stop()
    assert clocks.totals == {
        "outer": {"wall_s": 6.0, "cpu_s": 3.0, "count": 1},
        "inner": {"wall_s": 4.0, "cpu_s": 3.0, "count": 1},
    }


def test_phases_without_a_recorder_do_nothing_and_names_are_checked(tmp_path):
    with timings.phase("training", "t"):
        pass
    with pytest.raises(KeyError, match="unknown phase 'trainig'"):
        with timings.phase("trainig"):
            pass
    with pytest.raises(KeyError, match="unknown run part"):
        timings.Stopwatch().start("epoch")


def test_each_command_keeps_its_latest_entry_in_the_profiles_timings_json(tmp_path):
    with timings.recording("verify-all", tmp_path, "smoke"):
        with timings.phase("FLOP check"):
            pass
        with timings.phase("training", "table1"):
            timings.add_runs(
                "table1",
                [
                    {
                        "label": "table1/r seed 0",
                        "config_hash": "ab",
                        "wall_seconds": 2.0,
                        "timings": {"epochs": {"wall_s": 1.5, "cpu_s": 1.2}, "run": {"wall_s": 2.0, "cpu_s": 1.9}},
                    }
                ],
            )
    with timings.recording("report", tmp_path, "smoke"):
        with timings.phase("report"):
            pass
    doc = json.loads((tmp_path / "smoke" / "timings.json").read_text())
    assert doc["schema"] == 1 and sorted(doc["commands"]) == ["report", "verify-all"]
    entry = doc["commands"]["verify-all"]
    names = [(p["phase"], p["table"]) for p in entry["phases"]]
    assert ("FLOP check", "") in names and ("training", "table1") in names
    assert entry["runs"] == [
        {
            "table": "table1",
            "label": "table1/r seed 0",
            "hash": "ab",
            "wall_s": 2.0,
            "cpu_s": 1.9,
            "parts": {"epochs": {"wall_s": 1.5, "cpu_s": 1.2}},
        }
    ]
    assert entry["wall_s"] >= sum(p["wall_s"] for p in entry["phases"]) - 1e-6
    assert entry["machine"]["cores"] >= 1 and timings.report_entry(doc) == entry
    (tmp_path / "smoke" / "timings.json").write_text('{"schema": 0, "commands": {}}')
    assert timings.load(tmp_path / "smoke" / "timings.json") is None


def test_the_phase_table_sums_tables_and_lists_the_runs_parts_under_training():
    entry = {
        "command": "verify-all",
        "wall_s": 100.0,
        "cpu_s": 150.0,
        "phases": [
            {"phase": "start-up and imports", "table": "", "wall_s": 5.0, "cpu_s": 4.0, "count": 2},
            {
                "phase": "data checks",
                "table": "a",
                "wall_s": 0.001,
                "cpu_s": 0.0,
                "count": 1,
            },  # nothing to check: hidden
            {"phase": "training", "table": "a", "wall_s": 30.0, "cpu_s": 90.0, "count": 1},
            {"phase": "training", "table": "b", "wall_s": 10.0, "cpu_s": 30.0, "count": 1},
            {"phase": "report", "table": "", "wall_s": 2.0, "cpu_s": 2.0, "count": 1},
        ],
        "runs": [
            {"table": "a", "parts": {"epochs": {"wall_s": 9.0, "cpu_s": 60.0}}},
            {
                "table": "b",
                "parts": {"epochs": {"wall_s": 9.0, "cpu_s": 20.0}, "checkpoints": {"wall_s": 1.0, "cpu_s": 0.5}},
            },
        ],
    }
    rows = {r.phase: r for r in phase_rows(entry)}
    assert list(rows) == ["start-up and imports", "training", "  epochs", "  checkpoints", "report", "other", "total"]
    assert (rows["training"].wall_s, rows["training"].cpu_s, rows["training"].items, rows["training"].most) == (
        40.0,
        120.0,
        "2 runs, 2 tables",
        "a (75%)",
    )
    assert (rows["  epochs"].wall_s, rows["  epochs"].cpu_s, rows["  epochs"].most) == (None, 80.0, "a (75%)")
    assert (rows["other"].wall_s, rows["other"].cpu_s) == (pytest.approx(52.999), 24.0)
    assert (rows["total"].wall_s, rows["total"].cpu_s) == (100.0, 150.0)


def _spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="live children are read from /proc")
def test_the_cpu_of_a_live_worker_process_is_counted():
    ctx = multiprocessing.get_context("fork")
    before = timings.tree_cpu()
    child = ctx.Process(target=_spin, args=(1.0,))
    child.start()
    time.sleep(0.2)
    deadline = time.time() + 30
    while timings.tree_cpu() - before < 0.5 and child.is_alive() and time.time() < deadline:
        time.sleep(0.05)
    alive = child.is_alive()
    child.join()
    assert alive, "the worker finished before its CPU was read"
    assert timings.tree_cpu() - before >= 0.9  # reaped now: in this process's children's times


def test_a_recorder_counts_the_interpreters_start_as_start_up():
    rec = Recorder("x", "smoke")
    start = rec.totals.get((timings.STARTUP, ""))
    assert start is not None and start["wall_s"] > 0 and start["cpu_s"] > 0


def test_start_up_is_the_interpreters_not_that_of_the_shell_it_ran_last_in():
    """bash runs the last command of `bash -c "A && B"` in its own process, which started before A: the README's
    `pip install ... && repro verify-all` must not count the install as start-up."""
    code = (
        "from repro.results import timings; "
        "print(timings.Recorder('x', 'smoke').totals[(timings.STARTUP, '')]['wall_s'])"
    )
    sleep = 4
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run(
        ["bash", "-c", f"sleep {sleep} && {shlex.quote(sys.executable)} -c {shlex.quote(code)}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) < sleep - 1  # the interpreter's start and one import, not the shell's sleep


def test_a_command_and_a_run_keep_the_load_they_were_measured_under(monkeypatch):
    """The 1-minute load average at the start and the end, and the cores: what the cost model needs to leave a
    measurement taken under load out of its fit (repro.cost.measured); provenance, never part of a run's hash."""
    from repro.cost.measured import load_of
    from repro.results.provenance import provenance

    loads = iter([(3.5, 0, 0), (4.25, 0, 0)])
    monkeypatch.setattr(os, "getloadavg", lambda: next(loads))
    entry = Recorder("verify-all", "smoke").to_dict()
    assert entry["load_average"] == [3.5, 4.25] and entry["cores"] == timings.machine()["cores"]
    assert load_of(entry) == (4.25, 4.25 > entry["cores"])  # busy where it exceeds the cores
    assert load_of({"load_average": [0.5, 3.0], "cores": 2}) == (3.0, True)
    assert load_of({"load_average": [0.5, 2.0], "cores": 2}) == (2.0, False)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 0, 0))
    made = provenance("cpu", 1, load_at_start=2.0)
    assert made["load_average"] == [2.0, 0.5] and load_of(made) == (2.0, 2.0 > made["cores"])
    monkeypatch.setattr(os, "getloadavg", lambda: (_ for _ in ()).throw(OSError("no load average here")))
    assert "load_average" not in provenance("cpu", 1) and load_of({}) == (None, False)


def test_the_report_s_time_table_is_written_again_whole_when_its_command_ends(tmp_path):
    """report-detail.md's and report.html's "Where the time went" once `repro report` has ended: the entry
    timings.json holds then, its total the command's whole wall time (the report's rendering inside it), not what
    had elapsed when the section was first rendered."""
    import json as json_

    from fake_records import write_result  # tests/fake_records.py
    from typer.testing import CliRunner

    from repro.cli import app
    from repro.report.render import DETAIL

    results = tmp_path / "results"
    write_result(results, "table6", {})
    path = results / "smoke" / "table6" / "results.json"
    path.write_text(
        json_.dumps(
            {
                **json_.loads(path.read_text()),
                "provenance": {"git_commit": "0123456789ab", "time": "t", "device": "cpu", "packages": {}},
            }
        )
    )
    out = CliRunner().invoke(app, ["report", "--results-dir", str(results), "--profile", "smoke"])
    assert out.exit_code == 0, out.output
    entry = json_.loads((results / "smoke" / "timings.json").read_text())["commands"]["report"]
    # "other" is what no phase covers; each figure is rounded to the millisecond, so the sum may pass it by as much
    covered = sum(p["wall_s"] for p in entry["phases"])
    assert entry["wall_s"] >= covered - 0.0005 * (len(entry["phases"]) + 1)
    total = f"| **total** | report | {entry['wall_s']:.1f} | {entry['cpu_s']:.1f} |"
    assert total in (results / "smoke" / DETAIL).read_text()
    html = (results / "smoke" / "report.html").read_text()
    section = html.split("<h2>Where the time went</h2>", 1)[1].split("</section>", 1)[0]
    assert f"<td>{entry['wall_s']:.1f}</td>" in section and "written again as the command ends" in section

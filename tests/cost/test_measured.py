"""repro.cost.measured: run records, timings.json, and table times from the files' own times."""

import datetime as dt
import json

from repro.cost.measured import MAX_GAP_S, read_folder
from .runs import synthetic_config

T0 = dt.datetime(2026, 12, 1, 12, 0, 0, tzinfo=dt.timezone.utc)


def _iso(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).isoformat(timespec="seconds")


def _record(cfg, label, end, wall, cpu=None, **extra):
    return {
        "config": cfg.to_dict(),
        "config_hash": cfg.hash,
        "label": label,
        "train_seconds": 0.8 * wall,
        "wall_seconds": wall,
        **({"cpu_seconds": cpu} if cpu is not None else {}),
        "provenance": {"time": _iso(end), "device_type": "cpu", "device": "cpu: x86_64, 1 intra-op thread(s)"},
        **extra,
    }


def _result(folder, profile, manifest, end, runs):
    out = folder / profile / manifest
    out.mkdir(parents=True)
    (out / "results.json").write_text(
        json.dumps(
            {
                "manifest": manifest,
                "provenance": {"time": _iso(end)},
                "details": {"runs": {"row": [{"hash": cfg.hash} for cfg in runs]}},
            }
        )
    )


def test_records_give_seconds_threads_and_cpu_time(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    a, b, c, d = (synthetic_config(e, 128, 128, seed) for e, seed in ((1, 0), (1, 1), (2, 0), (3, 0)))
    (runs / f"{a.hash}.json").write_text(json.dumps(_record(a, "t1/row seed 0", 10, 5.0, cpu=4.0)))
    (runs / f"{b.hash}.json").write_text(
        json.dumps(
            _record(
                b,
                "t1/row seed 1",
                10,
                5.0,  # repro.results.timings' form
                timings={"run": {"cpu_s": 3.0}},
            )
        )
    )
    (runs / f"{c.hash}.json").write_text(json.dumps(_record(c, "t1/row seed 0", 10, 5.0, resumed_from_epoch=1)))
    (runs / f"{d.hash}.json").write_text("{truncated")
    (runs / f"{d.hash}.failed.json").write_text("{}")
    times = read_folder(tmp_path)
    assert set(times.runs) == {a.hash, b.hash}  # a resumed run covers part of its epochs; a damaged one nothing
    assert times.runs[a.hash].cpu_s == 4.0 and times.runs[b.hash].cpu_s == 3.0
    assert times.runs[a.hash].threads == 1 and times.runs[a.hash].manifest == "t1"
    assert times.runs[a.hash].ended == T0.timestamp() + 10


def test_tables_one_after_another_end_where_the_next_starts(tmp_path):
    (tmp_path / "runs").mkdir()
    one, two, late = synthetic_config(1, 128, 128), synthetic_config(2, 128, 128), synthetic_config(3, 128, 128)
    for cfg, label, end, wall in (
        (one, "t1/r seed 0", 30, 20),
        (two, "t2/r seed 0", 70, 30),
        (late, "t4/r seed 0", 400 + MAX_GAP_S, 10),
    ):
        (tmp_path / "runs" / f"{cfg.hash}.json").write_text(json.dumps(_record(cfg, label, end, wall)))
    _result(tmp_path, "smoke", "t1", 35, [one])  # the first: its start is not known
    _result(tmp_path, "smoke", "t2", 80, [two])  # from t1's end (35) to its own (80)
    _result(tmp_path, "smoke", "t3", 92, [])  # no runs: 12 s after t2
    _result(tmp_path, "smoke", "t4", 401 + MAX_GAP_S, [late])  # its run started long after t3: another command
    tables = read_folder(tmp_path).tables["smoke"]
    assert {k: v.wall_s for k, v in tables.items()} == {"t2": 45.0, "t3": 12.0}
    assert tables["t2"].source == "file times"


def test_timings_json_gives_each_command_and_table_its_phases(tmp_path):
    (tmp_path / "smoke").mkdir()
    phases = [
        {"phase": "start-up and imports", "table": "", "wall_s": 5.0, "cpu_s": 5.0, "count": 1},
        {"phase": "FLOP counting", "table": "t1", "wall_s": 2.0, "cpu_s": 2.0, "count": 1},
        {"phase": "training", "table": "t1", "wall_s": 20.0, "cpu_s": 38.0, "count": 1},
        {"phase": "tables", "table": "t1", "wall_s": 0.5, "cpu_s": 0.5, "count": 1},
    ]
    (tmp_path / "smoke" / "timings.json").write_text(
        json.dumps(
            {
                "schema": 1,
                "commands": {
                    "run t1": {
                        "command": "run t1",
                        "profile": "smoke",
                        "started": "x",
                        "wall_s": 30.0,
                        "cpu_s": 48.0,
                        "phases": phases,
                        "runs": [],
                    }
                },
            }
        )
    )
    times = read_folder(tmp_path)
    cmd = times.commands["smoke"]["run t1"]
    assert cmd.wall_s == 30.0 and cmd.tables == ("t1",) and cmd.phases["training"] == 20.0
    t1 = times.tables["smoke"]["t1"]
    assert t1.wall_s == 22.5 and t1.phases["FLOP counting"] == 2.0 and t1.source == "timings.json (run t1)"
    (tmp_path / "smoke" / "timings.json").write_text('{"schema": 1, "commands": {"x": {"phases": 3}}}')
    assert read_folder(tmp_path).commands == {}  # a shape not understood: nothing read, nothing raised


def test_an_interrupted_command_is_marked_so_and_measures_nothing(tmp_path):
    """Ctrl-C six seconds into `verify-all` left its start-up and part of a FLOP check in timings.json as the
    command's latest entry: `repro list` then fitted the report's phase at 0 s and the rest at 0.1 s from it, and
    priced a cold smoke `verify-all` at ~61 s instead of ~88 s, still saying "CPU reference"."""
    import pytest

    from repro.results import timings

    with pytest.raises(KeyboardInterrupt):
        with timings.recording("verify-all", tmp_path, "smoke"):
            with timings.phase("FLOP check"):
                raise KeyboardInterrupt
    entry = json.loads((tmp_path / "smoke" / "timings.json").read_text())["commands"]["verify-all"]
    assert entry["interrupted"] is True and [p["phase"] for p in entry["phases"]][-1] == "FLOP check"
    assert read_folder(tmp_path).commands == {}
    with timings.recording("verify-all", tmp_path, "smoke"):  # the same command run to its end measures again
        with timings.phase("FLOP check"):
            pass
    entry = json.loads((tmp_path / "smoke" / "timings.json").read_text())["commands"]["verify-all"]
    assert "interrupted" not in entry and set(read_folder(tmp_path).commands["smoke"]) == {"verify-all"}

"""`repro bench fixed-costs`: each run's fixed costs and first epoch against its later ones, by hand."""

import json

import pytest
from typer.testing import CliRunner

from repro.bench.fixed_costs import NoTimings, fixed_costs
from repro.cli import app


def _folder(tmp_path, epochs=((9.0, 3.0, 3.4, 2.6), (1.0,))):
    runs = []
    for i, seconds in enumerate(epochs):
        h = f"{i:016x}"
        (tmp_path / "runs").mkdir(exist_ok=True)
        (tmp_path / "runs" / f"{h}.json").write_text(json.dumps({"history": [{"seconds": s} for s in seconds]}))
        runs.append(
            {
                "hash": h,
                "label": f"table2/r{i} seed 0",
                "wall_s": 20.0 + i,
                "cpu_s": 1.0,
                "parts": {
                    "data preparation": {"wall_s": 5.0, "cpu_s": 5.0},
                    "model building": {"wall_s": 4.0 + i, "cpu_s": 1.0},
                },
            }
        )
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "timings.json").write_text(
        json.dumps({"schema": 1, "commands": {"run table2": {"runs": runs, "phases": []}}})
    )
    return tmp_path


def test_first_epoch_against_the_median_of_the_later_ones_and_fixed_costs(tmp_path):
    rows = fixed_costs(_folder(tmp_path), "p", "run table2")
    first, single = rows
    assert (first.data_s, first.build_s, first.fixed_s, first.first_epoch_s) == (5.0, 4.0, 9.0, 9.0)
    assert first.steady_epoch_s == 3.0 and first.first_over_steady == 3.0 and first.run_s == 20.0
    assert single.steady_epoch_s is None and single.first_over_steady is None
    assert first.to_dict()["fixed_s"] == 9.0


def test_a_folder_without_the_commands_timings_or_records_is_named(tmp_path):
    with pytest.raises(
        NoTimings, match=r"timings.json: no timings of `repro run table3` \(commands there: run table2\)"
    ):
        fixed_costs(_folder(tmp_path), "p", "run table3")
    (tmp_path / "runs" / f"{0:016x}.json").unlink()
    with pytest.raises(NoTimings, match="0000000000000000.json: no readable record"):
        fixed_costs(tmp_path, "p", "run table2")


def test_the_command_prints_every_run_and_writes_the_rows(tmp_path):
    out = tmp_path / "fixed.json"
    result = CliRunner().invoke(
        app, ["bench", "fixed-costs", "-o", str(_folder(tmp_path)), "-p", "p", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "table2/r0 seed 0" in result.output and "3.0x" in result.output
    assert "fixed costs 19.0 s of 41.0 s of runs (46%)" in result.output
    assert [r["first_over_steady"] for r in json.loads(out.read_text())["runs"]] == [3.0, None]

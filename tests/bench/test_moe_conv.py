"""`repro bench moe-conv` at a tiny size: every path and the chosen one against the dense convolution, numbers
consistent, output at 80 columns, and a path that computes another function fails the command. A count below 1
(here and in `repro bench small-maps`) is a usage error naming its flag.

No speed is asserted: these machines are shared and noisy.
"""

import statistics
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from repro.bench.moe_conv import Shape, bench_moe_conv
from repro.cli import app
from repro.models.moe_conv_paths import PATHS

TINY = Shape(batch=4, channels=8, size=6, experts=4, top_k=2)
OPTIONS = [
    "--batch",
    "4",
    "--channels",
    "8",
    "--size",
    "6",
    "--experts",
    "4",
    "--rounds",
    "1",
    "--steps",
    "1",
    "--threads",
    "1",
]


def test_every_path_and_the_chosen_one_against_the_dense_convolution():
    r = bench_moe_conv(TINY, threads=1, rounds=2, steps=1)
    names = [row.path for row in r.rows]
    assert names == ["dense", *PATHS, "chosen"] and r.chosen in PATHS
    dense = r.rows[0]
    for row in r.rows:
        assert len(row.ms) == 2 and row.ratio == statistics.median(a / d for a, d in zip(row.ms, dense.ms))
        assert row.diff <= r.tolerance
    macs = {row.path: row.macs for row in r.rows}
    assert macs["dense"] == 4 * 8 * 36 * 8 * 9 and macs["per-expert"] == macs["sorted"] == 2 * macs["dense"]
    assert macs["mixed"] == macs["dense"] + 4 * 2 * 8 * 8 * 9  # plus mixing K banks a sample
    assert macs["chosen"] == macs[r.chosen] and r.layout == "channels-last" and r.disagreeing == []


def test_the_command_fits_80_columns_and_names_the_chosen_path_last():
    result = CliRunner().invoke(app, ["bench", "moe-conv", *OPTIONS], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    start = next(i for i, line in enumerate(lines) if line.startswith("─")) + 1
    table = lines[start : start + len(PATHS) + 2]
    assert [line.split()[0] for line in table] == ["dense", *PATHS, "chosen:"]
    assert "goal <= 2.5x" in result.output


def test_a_path_that_computes_another_function_fails_the_command(monkeypatch):
    exact = PATHS["sorted"].run
    monkeypatch.setitem(PATHS, "sorted", replace(PATHS["sorted"], run=lambda *a: exact(*a) * 1.01))
    result = CliRunner().invoke(app, ["bench", "moe-conv", *OPTIONS], env={"COLUMNS": "80"})
    assert result.exit_code == 1
    assert "disagree" in result.output and "sorted" in result.output.split("disagree")[-1]


@pytest.mark.parametrize(
    ("command", "flag"), [("moe-conv", "--top-k"), ("moe-conv", "--steps"), ("small-maps", "--rounds")]
)
def test_a_count_below_one_is_a_usage_error_naming_its_flag(command, flag):
    result = CliRunner().invoke(app, ["bench", command, flag, "0"], env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert f"Invalid value for {flag}: 0: expected 1 or more" in result.output

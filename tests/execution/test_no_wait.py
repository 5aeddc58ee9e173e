"""`--no-wait` submits and returns: one line per Slurm array job, no table written from missing results, and
its own exit code (3), not the failure code. Slurm itself is replaced by a stand-in for `submit` here; the
real one-node Slurm test is tests/execution/test_slurm.py."""

import pytest
from typer.testing import CliRunner

import repro.execution.slurm as slurm
from repro.cli import app
from repro.cli.common import ExitCode
from repro.cli.run import submitted_lines

from .minitable import write_manifest

runner = CliRunner()


def test_one_line_per_array_job_with_its_tasks():
    submitted = {"h1": "77_0", "h2": "77_1", "h3": "77_2", "h4": "77_5", "h5": "80_0"}
    assert submitted_lines("mini", "full", submitted) == [
        "mini: 4 runs submitted as Slurm job 77, tasks 0-2,5; follow them with `repro status mini --profile full`; "
        "rerun this command once they have ended to write the table",
        "mini: 1 run submitted as Slurm job 80, tasks 0; follow them with `repro status mini --profile full`; "
        "rerun this command once they have ended to write the table",
    ]


@pytest.mark.slow
def test_no_wait_is_not_a_failure_and_writes_no_table(tmp_path, monkeypatch):
    env = write_manifest(tmp_path, epochs=1, train_samples=32)
    calls = []

    def submit(todo, results_dir, data_dir, options, settings=None):
        calls.append(len(todo))
        return {r.cfg.hash: f"77_{i}" for i, r in enumerate(todo)}

    monkeypatch.setattr(slurm, "submit", submit)
    results = tmp_path / "results"
    result = runner.invoke(
        app,
        ["run", "mini", "--results-dir", str(results), "--executor", "slurm", "--no-wait"],
        env={**env, "COLUMNS": "80"},
    )
    assert result.exit_code == ExitCode.SUBMITTED == 3, result.output
    assert calls == [4]
    said = " ".join(result.output.split())  # the line wraps at words at 80 columns
    assert said.count("submitted as Slurm job") == 1, result.output  # one line for the one array job
    assert (
        "mini: 4 runs submitted as Slurm job 77, tasks 0-3; follow them with `repro status mini --profile "
        "smoke`; rerun this command once they have ended to write the table"
    ) in said, result.output
    assert "problem" not in result.output and "failed" not in result.output, result.output
    assert not (results / "smoke" / "mini").exists()  # no table, claims or results.json from missing results

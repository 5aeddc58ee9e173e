"""Executor options: Slurm times, --slurm-param, the submitit parameters they become, and the Typer option set."""

import pytest
import submitit
from typer.testing import CliRunner

from repro.execution.options import ExecutorOptions, SlurmOptions, options_from_cli, parse_params, parse_slurm_time
from repro.execution.slurm import record_job, submitit_parameters


@pytest.mark.parametrize(
    "text,minutes",
    [("90", 90), ("30:01", 31), ("4:00:00", 240), ("1-00", 1440), ("1-02:30", 1590), ("2-00:00:30", 2881), ("0:30", 1)],
)
def test_slurm_time_formats_become_minutes(text, minutes):
    assert parse_slurm_time(text) == minutes


def test_a_bad_time_or_param_is_named():
    with pytest.raises(ValueError, match="'4h' is not a Slurm time"):
        parse_slurm_time("4h")
    with pytest.raises(ValueError, match="'qos' is not key=value"):
        parse_params(["qos"])
    with pytest.raises(ValueError, match="executor 'ray' is not one of local, slurm"):
        ExecutorOptions("ray")


def test_options_map_to_submitit_parameters_and_unknown_ones_to_sbatch():
    s = SlurmOptions(
        partition="gpu",
        gpus_per_task=1,
        cpus_per_task=8,
        time_min=240,
        max_parallel=16,
        account="lab",
        params=parse_params(
            [
                "qos=high",
                "mem=32G",
                "signal-delay-s=120",
                "reservation=paper",
                "python=apptainer exec --nv repro.sif python",
            ]
        ),
    )
    params = submitit_parameters(s, submitit.SlurmExecutor._valid_parameters())
    assert {
        k: params[k]
        for k in (
            "partition",
            "gpus_per_task",
            "cpus_per_task",
            "time",
            "array_parallelism",
            "account",
            "qos",
            "mem",
            "signal_delay_s",
        )
    } == {
        "partition": "gpu",
        "gpus_per_task": 1,
        "cpus_per_task": 8,
        "time": 240,
        "array_parallelism": 16,
        "account": "lab",
        "qos": "high",
        "mem": "32G",
        "signal_delay_s": 120,
    }
    assert params["additional_parameters"] == {"reservation": "paper"}
    # submitit writes every key into the job script (its script writer raises on an unknown one); no srun needed,
    # as SlurmExecutor itself would, so this holds on a machine without Slurm
    from submitit.slurm.slurm import _make_sbatch_string

    script = _make_sbatch_string(command="python -c 1", folder="/tmp/unused", **params).splitlines()
    assert {
        "#SBATCH --partition=gpu",
        "#SBATCH --gpus-per-task=1",
        "#SBATCH --cpus-per-task=8",
        "#SBATCH --time=240",
        "#SBATCH --account=lab",
        "#SBATCH --qos=high",
        "#SBATCH --mem=32G",
        "#SBATCH --signal=USR2@120",
        "#SBATCH --reservation=paper",
    } <= set(script)


def test_the_job_of_a_record_is_its_array_task():
    assert (
        record_job(
            {"provenance": {"executor": {"slurm_array_job_id": "12", "slurm_array_task_id": "3", "slurm_job_id": "15"}}}
        )
        == "12_3"
    )
    assert record_job({"provenance": {"executor": {"slurm_job_id": "15"}}}) == "15"
    assert record_job({"provenance": {"executor": {"name": "local"}}}) is None


def _invoked(monkeypatch, args: list[str]) -> tuple[object, dict]:
    """The real `repro` app with the table runner replaced: what one command line hands it."""
    from repro.cli import app, run as tables

    seen = {}

    def run_tables(ids, options, report):
        seen.update(ids=ids, options=options, report=report)
        return 0

    monkeypatch.setattr(tables, "run_tables", run_tables)
    return CliRunner().invoke(app, args), seen


def test_one_option_set_serves_run_every_table_alias_and_verify_all(monkeypatch, tmp_path):
    result, seen = _invoked(
        monkeypatch,
        [
            "run",
            "t1",
            "t2",
            "--jobs",
            "3",
            "--results-dir",
            str(tmp_path),
            "--executor",
            "slurm",
            "--slurm-partition",
            "gpu",
            "--slurm-time",
            "1-00",
            "--slurm-param",
            "qos=high",
            "--slurm-param",
            "mem=8G",
            "--no-wait",
            "--runs-per-gpu",
            "4",
            "--allow-unverified-data",
            "--workers",
            "2",
            "--deterministic",
            "--profile",
            "full",
        ],
    )
    assert result.exit_code == 0, result.output
    options = seen["options"]
    assert seen["ids"] == ["t1", "t2"] and not seen["report"] and options.jobs == 3
    assert (options.profile, options.results_dir) == ("full", tmp_path)
    assert options.executor == ExecutorOptions(
        "slurm",
        runs_per_gpu=4,
        no_wait=True,
        slurm=SlurmOptions(partition="gpu", time_min=1440, params={"qos": "high", "mem": "8G"}),
    )
    assert (options.data.allow_unverified, options.data.workers, options.defaults.deterministic) == (True, 2, True)

    result, seen = _invoked(monkeypatch, ["table6", "--jobs", "2"])  # `repro <id>` is `repro run <id>`
    assert result.exit_code == 0 and seen["ids"] == ["table6"] and seen["options"].jobs == 2 and not seen["report"]
    assert seen["options"].executor == options_from_cli() and not seen["options"].data.allow_unverified

    result, seen = _invoked(monkeypatch, ["verify-all", "--strict"])
    assert result.exit_code == 0 and seen["report"] and seen["ids"] in (None, []) and seen["options"].strict

    bad = CliRunner().invoke(__import__("repro.cli", fromlist=["app"]).app, ["run", "t1", "--slurm-time", "soon"])
    assert bad.exit_code == 2 and "'soon' is not a Slurm time" in bad.output
    none = CliRunner().invoke(__import__("repro.cli", fromlist=["app"]).app, ["run"])
    assert none.exit_code == 2 and "name at least one manifest" in none.output


@pytest.mark.parametrize("command", [["table6"], ["status"]])
@pytest.mark.parametrize("seconds", ["3", "59.5"])
def test_a_stale_lock_after_shorter_than_two_heartbeats_is_refused(tmp_path, command, seconds):
    """Issue 41, item 13: a second process with --stale-lock-after 3 took over a live process's locks (heartbeats
    come every 30 s) and two runs trained twice; any value >= 1 was accepted without a word."""
    from repro.cli import app

    out = CliRunner().invoke(
        app, [*command, "--stale-lock-after", seconds, "--results-dir", str(tmp_path / "r")], env={"COLUMNS": "300"}
    )
    assert out.exit_code == 2, out.output
    assert (
        f"--stale-lock-after {seconds} is below 60 s, twice the 30 s between a live run's heartbeats: its lock "
        "would be taken over while it trains"
    ) in " ".join(out.output.replace("│", " ").split()), out.output
    assert not (tmp_path / "r").exists()
    at_least = CliRunner().invoke(app, ["status", "--stale-lock-after", "60", "--results-dir", str(tmp_path)])
    assert at_least.exit_code == 0, at_least.output

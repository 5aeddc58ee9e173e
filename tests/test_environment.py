"""Every environment variable the tool reads is listed once (repro.core.environment) and checked before any work."""

import re

import pytest
from typer.testing import CliRunner

from checkout import REPO_ROOT
from repro.cli import app
from repro.core import environment
from repro.core.environment import VARIABLES, BadEnvironment, problems, value

runner = CliRunner()


@pytest.mark.parametrize("bad", ["-5", "abc", "nan"])
def test_a_bad_checkpoint_interval_is_refused_before_any_run(tmp_path, bad):
    """Issue 41, item 7: REPRO_CHECKPOINT_SECONDS=-5 (abc, nan) let every run fail and write a .failed.json into
    the shared runs/, with exit 1 instead of 2."""
    from execution.minitable import write_manifest  # tests/execution/minitable.py

    env = write_manifest(tmp_path, epochs=1, train_samples=32)
    results = tmp_path / "results"
    out = runner.invoke(
        app,
        [
            "run",
            "mini",
            "--results-dir",
            str(results),
            "--jobs",
            "1",
            "--manifests",
            env["REPRO_MANIFESTS"],
            "--profiles",
            env["REPRO_PROFILES"],
        ],
        env={"REPRO_CHECKPOINT_SECONDS": bad, "COLUMNS": "200"},
    )
    assert out.exit_code == 2, out.output
    assert (
        f"error: REPRO_CHECKPOINT_SECONDS='{bad}': expected a number of seconds, 0 or more (training seconds "
        "between checkpoints" in out.output
    )
    assert not results.exists()  # nothing ran: no folder, no .failed.json


def test_every_bad_variable_is_named_at_once_in_one_form():
    found = problems(
        {
            "REPRO_CHECKPOINT_SECONDS": "two",
            "OMP_NUM_THREADS": "0",
            "REPRO_DISPATCH": "fused",
            "REPRO_COMPILE": "maybe",
            "REPRO_DDP_CONTROL_TIMEOUT_S": "0",
            "WORLD_SIZE": "x",
            "COLUMNS": "0",
            "REPRO_RESULTS": "",
        }
    )
    assert [p.split("=")[0] for p in found] == [
        "OMP_NUM_THREADS",
        "REPRO_CHECKPOINT_SECONDS",
        "REPRO_COMPILE",
        "REPRO_DISPATCH",
        "WORLD_SIZE",
        "REPRO_DDP_CONTROL_TIMEOUT_S",
    ]
    assert found[1] == (
        "REPRO_CHECKPOINT_SECONDS='two': expected a number of seconds, 0 or more (training seconds "
        "between checkpoints (0: after every epoch))"
    )
    assert all(re.fullmatch(r"[A-Z_]+='[^']*': expected .+ \(.+\)", p) for p in found)


def test_values_parse_to_their_types_and_defaults():
    env = {
        "REPRO_CHECKPOINT_SECONDS": " 2.5 ",
        "OMP_NUM_THREADS": "4,2",
        "REPRO_DETERMINISTIC": "On",
        "REPRO_CHANNELS_LAST": "auto",
        "REPRO_SMALL_MAPS": "0",
        "REPRO_DISPATCH": "Loop",
        "COLUMNS": "0",
    }
    assert value("REPRO_CHECKPOINT_SECONDS", env) == 2.5 and value("OMP_NUM_THREADS", env) == 4
    assert value("REPRO_DETERMINISTIC", env) is True and value("REPRO_CHANNELS_LAST", env) is None
    assert value("REPRO_SMALL_MAPS", env) is False and value("REPRO_DISPATCH", env) == "loop"
    assert value("COLUMNS", env) is None and value("WORLD_SIZE", env) == 1
    assert value("REPRO_CHECKPOINT_SECONDS", {}) == 60.0 and value("REPRO_CHECKPOINT_SECONDS", {"x": "1"}) == 60.0
    with pytest.raises(BadEnvironment, match=r"^REPRO_DETERMINISTIC='maybe': expected 1 or 0"):
        value("REPRO_DETERMINISTIC", {"REPRO_DETERMINISTIC": "maybe"})


def test_every_variable_the_code_names_is_listed():
    """A variable read somewhere but not listed would escape the check at start."""
    named = set()
    for path in (REPO_ROOT / "repro").rglob("*.py"):
        named |= set(re.findall(r"[\"'](REPRO_[A-Z0-9_]+)[\"']", path.read_text()))
    named -= {"REPRO_GPUS"}  # read by docker compose from the host's environment, not by repro (docs/container.md)
    assert named - set(VARIABLES) == set(), "add these to repro.core.environment.VARIABLES"
    assert environment.__doc__ and all(v.meaning and v.expected for v in VARIABLES.values())


# Read by others, not by repro: docker compose (the container's), the device tools, and CI's switches and tools.
NOT_OURS = {
    "REPRO_GPUS",
    "REPRO_REQUIRE_LATEX",
    "REPRO_REQUIRE_CHROMIUM",
    "REPRO_REQUIRE_SLURM",
    "REPRO_ARTIFACTS",
    "REPRO_COMPOSE_GO",
    "REPRO_VALIDATORS_PYTHON",
    "REPRO_REQUIRE_VALIDATORS",
}


def test_every_variable_the_docs_name_is_one_the_code_reads():
    """docs/ once named REPRO_WORKERS, which no code reads (--workers reaches a run as an option)."""
    named = {}
    for path in [*(REPO_ROOT / "docs").glob("*.md"), REPO_ROOT / "README.md"]:
        for name in re.findall(r"\b(REPRO_[A-Z0-9_]*[A-Z0-9])\b", path.read_text()):
            named.setdefault(name, path.name)
    unknown = {n: f for n, f in named.items() if n not in VARIABLES and n not in NOT_OURS}
    assert not unknown, f"named in docs but read by nothing: {unknown}"

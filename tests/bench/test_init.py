"""repro/bench/__init__.py: the `repro bench` commands are wired, and importing them leaves torch out."""

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from checkout import REPO_ROOT
from repro.cli import app


def test_bench_commands_are_wired():
    result = CliRunner().invoke(app, ["bench", "--help"])
    assert result.exit_code == 0
    for command in ("latency", "data", "train", "capacity"):
        assert command in result.output


@pytest.mark.slow  # spawns a Python process
def test_importing_the_bench_commands_does_not_import_torch():
    code = "import sys, repro.bench; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr


def test_a_device_this_machine_lacks_is_a_usage_error_naming_it():
    result = CliRunner().invoke(app, ["bench", "capacity", "--device", "tpu"])
    assert result.exit_code == 2 and "tpu" in result.output

"""A tiny training table (two rows, two seeds, synthetic data, one claim) for the tests that run `repro` as a
process."""

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

MANIFEST = """
id = "mini"
title = "two rows, two seeds"
paper_ref = "test"
description = "A tiny training table for the executor tests."
seeds = 2

[[rows]]
id = "dense"
label = "dense"
dataset = "cifar10"
measures = ["accuracy"]
backbone = { name = "cifar_standard" }
head = { name = "dense" }

[[rows]]
id = "moe"
label = "moe"
dataset = "cifar10"
measures = ["accuracy"]
backbone = { name = "cifar_standard" }
head = { name = "sparse_moe", expert_hidden = 32 }

[[comparisons]]
id = "gap"
label = "moe vs dense"
row = "moe"
baseline = "dense"

[[claims]]
id = "c"
statement = "the MoE row beats the dense row"
section = "test"
scope = "empirical"
rule = "row_above"
row = "moe"
baseline = "dense"
"""

# The tests' own smoke profile (a profiles file, as a user would give one), replacing the shipped one.
PROFILES = """
[profiles.smoke]
description = "tiny"
evidence = "pipeline"
device = "cpu"
seeds = 2
epochs = {epochs}
data = "synthetic"
train_samples = {train_samples}
test_samples = 64
batch_size = 32
max_image_size = 16
pretrained = false

[profiles.full]
description = "unused"
evidence = "paper"
"""

COUNTS = re.compile(r"runs: (\d+) trained here, (\d+) reused, (\d+) trained by another process")


def write_manifest(folder: Path, epochs: int = 3, train_samples: int = 192) -> dict:
    """Write manifests/mini.toml and its profiles file under `folder`; return the environment that makes
    `repro` find them."""
    (folder / "manifests").mkdir(parents=True, exist_ok=True)
    (folder / "manifests" / "mini.toml").write_text(MANIFEST)
    (folder / "profiles.toml").write_text(PROFILES.format(epochs=epochs, train_samples=train_samples))
    return {
        **os.environ,
        "REPRO_MANIFESTS": str(folder / "manifests"),
        "REPRO_PROFILES": str(folder / "profiles.toml"),
        "OMP_NUM_THREADS": "1",
        "COLUMNS": "200",
    }


def _terminal_signals() -> None:
    # A shell starts background jobs with SIGINT and SIGQUIT ignored, `nohup` ignores SIGHUP, and children inherit
    # that (repro then leaves them ignored, as it should): the command under test gets a terminal's default
    # dispositions of Ctrl-C, Ctrl-\ and a closed terminal, whatever started the suite.
    for signum in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def repro(results: Path, env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "repro", "mini", "--results-dir", str(results), "--jobs", "1", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=_terminal_signals,
    )


def counts(output: str) -> tuple[int, int, int]:
    """(trained here, reused, trained by another process) from a table run's last lines."""
    found = COUNTS.findall(output)
    assert len(found) == 1, f"expected one 'runs: ...' line, got {found} in:\n{output}"
    return tuple(int(x) for x in found[0])

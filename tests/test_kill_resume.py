"""SIGKILL a table part-way; running it again finishes only what is missing and ends with the same table."""

import pytest
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

pytestmark = pytest.mark.slow  # every test here trains runs

MANIFEST = '''
id = "mini"
title = "two rows, two seeds"
paper_ref = "test"
description = "A tiny training table for the kill-and-resume test."

[profiles.smoke]
description = "tiny"
evidence = "pipeline"
device = "cpu"
seeds = 2
epochs = 3
data = "synthetic"
train_samples = 192
test_samples = 64
batch_size = 32
max_image_size = 16
pretrained = false

[profiles.full]
description = "unused"
evidence = "paper"

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
'''


def _run(results: Path, env: dict, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "repro", "mini", "--results-dir", str(results), "--jobs", "1"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, **kw)


def _table(results: Path) -> dict:
    record = json.loads((results / "smoke" / "mini" / "results.json").read_text())
    return {"metrics": record["metrics"], "verdicts": [(v["claim"], v["status"], v["evidence"]) for v in record["verdicts"]]}


def test_sigkill_then_resume_equals_an_uninterrupted_run(tmp_path):
    (tmp_path / "manifests").mkdir()
    (tmp_path / "manifests" / "mini.toml").write_text(MANIFEST)
    env = {**os.environ, "REPRO_MANIFESTS": str(tmp_path / "manifests"), "OMP_NUM_THREADS": "1"}

    whole = tmp_path / "whole"
    assert _run(whole, env).wait(timeout=600) == 0

    killed = tmp_path / "killed"
    proc = _run(killed, env)
    runs = killed / "runs"
    deadline = time.time() + 600
    while not (runs.exists() and any(runs.glob("*.json")) and any(runs.glob("*.ckpt"))):
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.time() < deadline
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # no clean-up handlers run
    proc.wait()
    finished = {p.name: p.stat().st_mtime_ns for p in runs.glob("*.json")}
    assert 1 <= len(finished) < 4 and not (killed / "smoke" / "mini" / "results.json").exists()

    again = _run(killed, env)
    assert again.wait(timeout=600) == 0, again.stderr.read().decode()
    assert {p.name: p.stat().st_mtime_ns for p in runs.glob("*.json") if p.name in finished} == finished
    assert len(list(runs.glob("*.json"))) == 4 and not list(runs.glob("*.ckpt"))
    assert _table(killed) == _table(whole)

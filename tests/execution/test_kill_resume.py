"""SIGKILL a table part-way; running it again finishes only what is missing and ends with the same table."""

import json
import os
import signal
import time
from pathlib import Path

import pytest

from .minitable import repro, write_manifest

pytestmark = pytest.mark.slow  # every test here trains runs


def _table(results: Path) -> dict:
    record = json.loads((results / "smoke" / "mini" / "results.json").read_text())
    return {
        "metrics": record["metrics"],
        "verdicts": [(v["claim"], v["status"], v["evidence"]) for v in record["verdicts"]],
    }


def test_sigkill_then_resume_equals_an_uninterrupted_run(tmp_path):
    env = write_manifest(tmp_path)

    whole = tmp_path / "whole"
    done = repro(whole, env)
    out, _ = done.communicate(timeout=600)
    assert done.returncode == 0, out

    killed = tmp_path / "killed"
    proc = repro(killed, env)
    runs = killed / "runs"
    deadline = time.time() + 600
    while not (runs.exists() and any(runs.glob("*.json")) and any(runs.glob("*.ckpt"))):
        assert proc.poll() is None, proc.stdout.read()
        assert time.time() < deadline
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # no clean-up handlers run
    proc.wait()
    finished = {p.name: p.stat().st_mtime_ns for p in runs.glob("*.json")}
    assert 1 <= len(finished) < 4 and not (killed / "smoke" / "mini" / "results.json").exists()

    again = repro(killed, env)
    out, _ = again.communicate(timeout=600)
    assert again.returncode == 0, out
    assert {p.name: p.stat().st_mtime_ns for p in runs.glob("*.json") if p.name in finished} == finished
    assert len(list(runs.glob("*.json"))) == 4 and not list(runs.glob("*.ckpt"))
    assert _table(killed) == _table(whole)

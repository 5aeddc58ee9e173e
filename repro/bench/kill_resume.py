"""Save -> SIGKILL -> resume on the device, as `repro bench gpu` checks it.

A child process trains a tiny run through the real executor (repro.execution.records.run_one:
checkpoint after every epoch, record at the end, under the command's engine switches); once the first
epoch's checkpoint is written it reports and waits, and the parent kills its process group with
SIGKILL, so no clean-up runs. A second child resumes the run to completion and then
trains the same config uninterrupted in another folder. The check passes when the
record reads back whole (repro.execution.files.load_record), says it resumed from epoch 1, holds
every epoch once and in order, keeps the killed process's first epoch as that process
checkpointed it, and leaves no checkpoint behind. On a CPU the resumed history must
also equal the uninterrupted one exactly (repro.train.loop's promise); on CUDA the
difference is reported, not judged (dropout draws from the CUDA generator).

Result: {"device", "epochs", "resumed_from_epoch", "killed_after_epoch", "history_epochs",
"matches_uninterrupted", "max_abs_diff" {train_loss, test_accuracy}, "exact_required"}.

    python -m repro.bench.kill_resume CONFIG.json RESULTS_DIR DEVICE [--hold] [--reference DIR]

CONFIG.json: {"run": the run config (RunConfig.to_dict), "engine": the command's EngineSwitches as a dict}.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from repro.bench.gpu_calibration import CheckFailed, expect
from repro.core.package_data import import_folder
from repro.core.settings import EngineSwitches, Settings

HOLD_S = 600  # the held child waits this long for its SIGKILL
COMPARED = ("train_loss", "test_accuracy")


def tiny_config() -> Any:
    """Two epochs (killed after the first) of the CIFAR standard CNN with a sparse MoE head, 16 px synthetic images."""
    from repro.plan.manifest import Row
    from repro.spec.profiles import Profile
    from repro.models import Component
    from repro.plan.run_config import resolve

    row = Row(
        id="kill_resume",
        label="kill_resume",
        dataset="cifar10",
        backbone=Component("cifar_standard"),
        head=Component("sparse_moe", {"expert_hidden": 32, "top_k": 1}),
        measures=("accuracy",),
    )
    profile = Profile(
        description="bench gpu",
        evidence="pipeline",
        epochs=2,
        data="synthetic",
        train_samples=128,
        test_samples=32,
        batch_size=32,
        max_image_size=16,
        pretrained=False,
    )
    return resolve(row, profile, seed=0)


def config_text(cfg: Any, engine: EngineSwitches) -> str:
    """The child's CONFIG.json: the run, and the engine switches it trains under."""
    return json.dumps({"run": cfg.to_dict(), "engine": asdict(engine)})


def _child(config: Path, results: Path, device: str, hold: bool, reference: Path | None) -> None:
    from repro.plan.run_config import RunConfig
    from repro.execution.protocol import RunRequest
    from repro.execution.records import run_one

    given = json.loads(config.read_text())
    cfg = RunConfig.from_dict(given["run"])
    # a checkpoint after every epoch: the kill comes after the first
    settings = Settings(checkpoint_seconds=0.0, engine=EngineSwitches(**given["engine"]))

    class Events:  # run_one reports each epoch after its checkpoint is on disk
        def put(self, event: tuple) -> None:
            print(json.dumps({"epoch": event[2], "epochs": event[3]}), flush=True)
            if hold:
                time.sleep(HOLD_S)  # the parent's SIGKILL lands here

    run_one(RunRequest(cfg, "bench gpu kill/resume"), results, device, None, Events(), settings=settings)
    if reference is not None:
        run_one(RunRequest(cfg, "bench gpu uninterrupted"), reference, device, None, settings=settings)
    print(json.dumps({"done": True}), flush=True)


def _spawn(args: list[str], log: Path) -> subprocess.Popen:
    """The child in its own session (killed as a group); stderr to a file, so a chatty child never blocks."""
    env = dict(os.environ)  # the child's: it imports this same package, and OpenMP reads its threads there
    env["PYTHONPATH"] = os.pathsep.join([str(import_folder()), *filter(None, [env.get("PYTHONPATH")])])
    if args[2].startswith("cpu"):
        env.setdefault("OMP_NUM_THREADS", "1")  # a tiny CPU run only waits on a second thread
    with open(log, "w") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "repro.bench.kill_resume", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
        )


def _first_line(proc: subprocess.Popen, timeout_s: float) -> str:
    """The child's first stdout line, '' if it ends or stays silent for timeout_s."""
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(proc.stdout.readline() if proc.stdout else ""), daemon=True)
    reader.start()
    reader.join(timeout_s)
    return lines[0] if lines else ""


def _tail(log: Path, proc: subprocess.Popen) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()] if log.exists() else []
    return " | ".join(lines[-3:]) or f"exit status {proc.returncode}"


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # no clean-up handlers run
    except ProcessLookupError:
        pass
    proc.wait()


def run_kill_resume(device: str, timeout_s: float = 300.0, engine: EngineSwitches = EngineSwitches()) -> dict[str, Any]:
    """The check's result; CheckFailed or RuntimeError saying what went wrong. Each child has timeout_s and trains
    under `engine`, the command's engine switches."""
    import torch

    from repro.execution.runs import checkpoint_path, load_record

    cfg = tiny_config()
    with tempfile.TemporaryDirectory(prefix="repro-kill-resume-") as tmp:
        base = Path(tmp)
        config, results, reference = base / "config.json", base / "killed", base / "uninterrupted"
        config.write_text(config_text(cfg, engine))
        held = _spawn([str(config), str(results), device, "--hold"], base / "held.log")
        try:
            line = _first_line(held, timeout_s)  # returns once epoch 1 is checkpointed
        finally:
            _kill(held)
        if not line:
            raise RuntimeError(
                f"the first child reported no epoch within {timeout_s:.0f} s: {_tail(base / 'held.log', held)}"
            )
        ckpt = checkpoint_path(results, cfg)
        expect(json.loads(line)["epoch"] == 1, f"first report was {line!r}, expected epoch 1")
        expect(ckpt.exists(), f"no checkpoint at {ckpt} after epoch 1")
        expect(load_record(results, cfg) is None, "a record exists although the run was killed after epoch 1")
        killed_first = torch.load(ckpt, map_location="cpu", weights_only=True)["history"][0]

        resumed = _spawn([str(config), str(results), device, "--reference", str(reference)], base / "resumed.log")
        try:
            resumed.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"the resuming child did not finish within {timeout_s:.0f} s") from None
        finally:  # also when the caller's deadline interrupts the wait: no child outlives the check
            if resumed.poll() is None:
                _kill(resumed)
        if resumed.returncode != 0:
            raise RuntimeError(f"the resuming child failed: {_tail(base / 'resumed.log', resumed)}")
        record, whole = load_record(results, cfg), load_record(reference, cfg)
        if record is None or whole is None:
            raise CheckFailed("a finished run left no readable record")
        history = record["history"]
        expect(
            record["resumed_from_epoch"] == 1,
            f"record says resumed_from_epoch={record['resumed_from_epoch']}, expected 1",
        )
        expect(
            [h["epoch"] for h in history] == list(range(1, cfg.epochs + 1)),
            f"history epochs {[h['epoch'] for h in history]}, expected 1..{cfg.epochs}",
        )
        expect(history[0] == json.loads(json.dumps(killed_first)), "epoch 1 differs from what the killed run saved")
        expect(not ckpt.exists(), f"checkpoint {ckpt} left behind after the record was written")
        expect(all(math.isfinite(h["train_loss"]) for h in history), "a non-finite training loss in the record")
        diff = {k: max(abs(a[k] - b[k]) for a, b in zip(history, whole["history"])) for k in COMPARED}
        exact = device.startswith("cpu")
        same = all(v == 0 for v in diff.values())
        if exact:
            expect(same, f"resumed run differs from the uninterrupted one on a CPU: {diff}")
        return {
            "device": device,
            "epochs": cfg.epochs,
            "resumed_from_epoch": record["resumed_from_epoch"],
            "killed_after_epoch": 1,
            "history_epochs": len(history),
            "matches_uninterrupted": same,
            "max_abs_diff": diff,
            "exact_required": exact,
        }


def main(argv: list[str]) -> None:
    hold = "--hold" in argv
    reference = Path(argv[argv.index("--reference") + 1]) if "--reference" in argv else None
    positional = [a for i, a in enumerate(argv) if not a.startswith("--") and (i == 0 or argv[i - 1] != "--reference")]
    if len(positional) != 3:
        raise SystemExit(__doc__)
    config, results, device = positional
    _child(Path(config), Path(results), device, hold, reference)


if __name__ == "__main__":
    main(sys.argv[1:])

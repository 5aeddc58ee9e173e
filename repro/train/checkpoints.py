"""A run's training checkpoint: model, optimiser, scheduler, random generators, history, after an epoch.

Written atomically by rank 0 after an epoch once the command's `checkpoint_seconds` of training have passed
since the previous one (repro.core.settings: default 60 s, $REPRO_CHECKPOINT_SECONDS; 0: after every epoch),
never after the last epoch (the run record follows it), so an interrupted run resumes where it stopped and,
on a CPU, ends with the same record as an uninterrupted one. The interval bounds what a kill loses; a
checkpoint after every epoch made runs whose epochs take a second (the smoke profile's) write their model and
optimiser state again and again: 20 GB for one smoke run of every table. Where the file lives, and what makes
one unusable before training starts (another run's, an epoch beyond the run), is the records' business
(repro.execution.records, repro.execution.record_checks); what fails here is a checkpoint that loads but does
not fit the model or optimiser (CheckpointUnusable).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import torch

from repro.core.fsutil import FolderWriter


class CheckpointUnusable(RuntimeError):
    """The checkpoint loaded but does not fit this run's model, optimiser or schedule."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"checkpoint {path}: {reason}")
        self.path, self.reason = path, reason


def rng_state(device: torch.device) -> dict[str, Any]:
    """The generators' states as bytes, so that no map_location can move them off the CPU."""
    out: dict[str, Any] = {"cpu": bytes(torch.get_rng_state().numpy().tobytes())}
    if device.type == "cuda":
        out["cuda"] = [bytes(s.cpu().numpy().tobytes()) for s in torch.cuda.get_rng_state_all()]
    return out


def _byte_tensor(state: bytes | torch.Tensor) -> torch.Tensor:
    if isinstance(state, torch.Tensor):  # a checkpoint written before states were stored as bytes
        return state.detach().to("cpu", torch.uint8)
    return torch.frombuffer(bytearray(state), dtype=torch.uint8)


def restore_rng(state: dict[str, Any] | torch.Tensor, device: torch.device) -> None:
    """Set the CPU (and, on CUDA, every GPU's) generator from a checkpoint's `rng` entry."""
    if not isinstance(state, dict):
        state = {"cpu": state}
    torch.set_rng_state(_byte_tensor(state["cpu"]))
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state_all([_byte_tensor(s) for s in state["cuda"]])


def save_checkpoint(
    path: Path, run_hash: str, model, opt, sched, history, epoch: int, elapsed: float, device: torch.device
) -> None:
    buf = io.BytesIO()
    torch.save(
        {
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict() if sched is not None else {},
            "rng": rng_state(device),
            "history": history,
            "epoch": epoch,
            "elapsed": elapsed,
            "config_hash": run_hash,
        },
        buf,
    )
    FolderWriter(path.parent).write_bytes(path, buf.getvalue())  # never through a link in runs/


def load_checkpoint(path: Path, model, opt, sched, device: torch.device) -> tuple[list[dict[str, Any]], int, float]:
    """Load `path` into the model, optimiser, scheduler and generators; return (history, epoch, elapsed seconds).
    Raises CheckpointUnusable when the state does not fit them."""
    state = torch.load(path, map_location=device, weights_only=True)
    try:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        if sched is not None:
            sched.load_state_dict(state["scheduler"])
        restore_rng(state["rng"], device)
    except (RuntimeError, KeyError, ValueError, TypeError, IndexError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CheckpointUnusable(path, f"it does not fit the run's model: {first}") from exc
    return state["history"], state["epoch"], state["elapsed"]

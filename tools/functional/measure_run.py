"""One functional run with overrides, one thread, its CPU-s:
python tools/functional/measure_run.py table3/std_dense train_samples=16384 epochs=3.

The per-family numbers in the functional profiles' descriptions were measured with it (issue 11)."""

import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

from repro.plan.manifest import load_all
from repro.plan.run_config import resolve
from repro.train.loop import train_run

torch.set_num_threads(1)
spec, *over = sys.argv[1:]
mid, rid = spec.split("/")
m = next(m for m in load_all() if m.id == mid)
cfg = resolve(m.row(rid), m.profiles["functional"], 0)
kw = {}
for o in over:
    k, v = o.split("=")
    kw[k] = json.loads(v) if v[0] in "0123456789[{-" or v in ("true", "false") else v
cfg = dataclasses.replace(cfg, **kw)
t0 = time.process_time()
w0 = time.time()


def on_epoch(e, n, entry):
    loss = entry.get("loss", entry.get("train_loss", float("nan")))
    print(
        f"  ep{e}/{n} acc={entry['test_accuracy']:.3f} loss={loss:.3f} cpu={time.process_time() - t0:.0f}", flush=True
    )


with tempfile.TemporaryDirectory() as d:
    out = train_run(cfg, torch.device("cpu"), None, Path(d) / "ck.pt", on_epoch)
mt = out["metrics"]
print(
    f"RESULT {spec} {' '.join(over)} seed={cfg.seed} acc={mt['accuracy']:.3f} chance={mt['chance']:.4f} "
    f"cpu={time.process_time() - t0:.0f}s wall={time.time() - w0:.0f}s",
    flush=True,
)

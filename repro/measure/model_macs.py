"""The multiply-adds of every model the shipped manifests build, as data, for the cost estimates. Torch-free.

`repro list` and `repro plan` price a run from its model's backbone and head multiply-adds per sample at
the paper's resolution (repro.cost.estimate). Counting them builds and traces each model, which with
torch's import took far longer than either command should (docs/performance.md).
`model_macs.json` beside this file holds those counts; a model it lacks (a row of your own
manifest) is counted from its shapes and cached, as before (repro.measure.flop_check.estimate_macs).

tests/measure/test_model_macs.py fails when a shipped model has no entry, or an entry no longer equals
the count from the model's shapes; `python tools/write_model_macs.py` writes the file again. The table is
for estimates only: every FLOP a table or claim shows is counted afresh (repro.models.flops).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from repro.core.package_data import shipped
from repro.core.fsutil import atomic_write_text
from repro.plan.table_plan import Plans
from repro.models import Component

MACS_FILE = shipped("repro.measure", "model_macs.json")
MACS_SCHEMA = 1


def model_key(dataset: str, backbone: Component, head: Component) -> str:
    """A model's identity, independent of row ids and of the manifest it sits in."""
    return json.dumps({"dataset": dataset, "backbone": backbone.key(), "head": head.key()}, sort_keys=True)


def needed_keys(plans: Plans) -> set[str]:
    """Every model the cost estimates of these plans ask for: each row's, and the stand-in pretraining's
    (a digit-pretrained backbone's base with the dense head, repro.train.digit_weights)."""
    from repro.train.digit_weights import base_backbone

    keys = {model_key(r.dataset, r.backbone, r.head) for m in plans.manifests for r in m.rows}
    for plan in plans:
        for p in plan.runs:
            if p.cfg.pretrained and p.cfg.pretrained_on == "digits":
                keys.add(model_key(p.cfg.dataset, Component(base_backbone(p.cfg.backbone["name"])), Component("dense")))
    return keys


@lru_cache(maxsize=1)
def _table() -> dict[str, dict[str, int]]:
    try:
        doc = json.loads(MACS_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # estimates then count the models, as for a manifest of one's own
    return doc.get("models", {}) if isinstance(doc, dict) and doc.get("schema") == MACS_SCHEMA else {}


def shipped_macs(key: str) -> dict[str, int] | None:
    """{"backbone_macs", "head_macs"} of a shipped model, or None."""
    entry = _table().get(key)
    return dict(entry) if isinstance(entry, dict) else None


def write_table(counts: dict[str, dict[str, Any]], path: Path = MACS_FILE) -> Path:
    doc = {
        "schema": MACS_SCHEMA,
        "note": "written by tools/write_model_macs.py; checked by tests/measure/test_model_macs.py",
        "models": {k: counts[k] for k in sorted(counts)},
    }
    atomic_write_text(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    _table.cache_clear()
    return path

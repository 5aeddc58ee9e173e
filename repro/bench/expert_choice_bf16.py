"""The Expert Choice head in bf16, as `repro bench gpu` checks it (schema: repro.bench.gpu_calibration).

Each distinct Expert Choice head of the manifests' accuracy rows runs forward and backward at the
paper's batch under bf16 autocast, on bf16 features (what an autocast backbone hands its head:
the conv stack's output stays bf16). Its evaluation output is compared with an fp32 forward of
the same weights; top-C selection may flip a few near-tied samples, so the check asks that most
samples agree within 5%, and that the loss and every parameter's gradient are finite.
"""

from __future__ import annotations

import json
import math
from typing import Any

import torch
import torch.nn.functional as F

from repro.bench.gpu_calibration import expect
from repro.data.specs import get_dataset
from repro.plan.manifest import Manifest, Row
from repro.models.catalog import head_info
from repro.plan.run_config import RECIPES

AGREEMENT = 0.9  # share of samples whose bf16 output is within 5% of fp32 (top-C ties may flip a few)


def expert_choice_rows(manifests: list[Manifest]) -> list[tuple[str, Row]]:
    """(manifest id, row) for each distinct head its registry entry marks for the bf16 check (Expert Choice)
    (dataset, backbone's D, parameters) of the accuracy rows."""
    seen: dict[str, tuple[str, Row]] = {}
    for m in manifests:
        for r in m.rows:
            if "accuracy" in r.measures and head_info(r.head.name).bf16_check:
                seen.setdefault(json.dumps([r.dataset, r.backbone.key(), r.head.key()], sort_keys=True), (m.id, r))
    return list(seen.values())


def expert_choice_check(row: Row, device: torch.device) -> dict[str, Any]:
    """Forward + backward of the head under bf16 autocast at the paper's batch; its eval output against fp32."""
    from repro.measure.latency import paper_features
    from repro.models import HEADS
    from repro.spec.recipes import at_last_epoch

    spec = get_dataset(row.dataset)
    batch = RECIPES[row.dataset].batch_size
    d = paper_features(row.dataset, json.dumps(row.backbone.key(), sort_keys=True))
    torch.manual_seed(0)
    head = at_last_epoch(HEADS.get(row.head.name).builder(d, spec.num_classes, **row.head.params), row.dataset)
    head.to(device)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, d, generator=g).to(device)  # (B, D)
    y = torch.randint(0, spec.num_classes, (batch,), generator=g).to(device)
    low = x.to(torch.bfloat16)  # what an autocast backbone hands the head
    head.eval()
    with torch.no_grad():
        ref = head(x)  # (B, O), fp32
        with torch.autocast(device.type, dtype=torch.bfloat16):
            out = head(low)
    rel = (out.float() - ref).abs().amax(-1) / ref.abs().amax(-1).clamp_min(1e-6)  # (B,)
    agreement = (rel < 0.05).float().mean().item()
    head.train()
    with torch.autocast(device.type, dtype=torch.bfloat16):
        loss = F.cross_entropy(head(low.requires_grad_()).float(), y) + head.aux_loss().float()
    loss.backward()
    head.after_backward()
    grads = [p.grad for p in head.parameters() if p.requires_grad]
    expect(all(gr is not None for gr in grads), "a trainable parameter got no gradient")
    norm = torch.sqrt(sum((gr.float() ** 2).sum() for gr in grads)).item()
    expect(math.isfinite(loss.item()) and math.isfinite(norm), f"loss {loss.item()}, gradient norm {norm}")
    expect(agreement >= AGREEMENT, f"only {agreement:.0%} of samples within 5% of fp32 (expected >= {AGREEMENT:.0%})")
    return {
        "dataset": row.dataset,
        "head": row.head.key(),
        "batch": batch,
        "features": d,
        "output_dtype": str(out.dtype).replace("torch.", ""),
        "agreement_with_fp32": agreement,
        "max_rel_diff": rel.max().item(),
        "loss": loss.item(),
        "grad_norm": norm,
    }

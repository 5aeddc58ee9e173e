"""The Expert Choice bf16 check: one per distinct head; it passes a working head and fails one whose bf16 output is
off."""

import pytest
import torch

from repro.bench.gpu_calibration import CheckFailed
from repro.bench.expert_choice_bf16 import AGREEMENT, expert_choice_check, expert_choice_rows
from inline_manifests import inline_manifest
from repro.models.expert_choice import ExpertChoiceHead

CPU = torch.device("cpu")
STD = {"name": "cifar_standard"}
DENSE = {"name": "dense", "hidden": [1024, 256]}


def _manifest(ident, rows):
    return inline_manifest(
        {
            "id": ident,
            "title": ident,
            "paper_ref": "test",
            "description": "test",
            "profiles": {
                "smoke": {"description": "s", "evidence": "pipeline"},
                "full": {"description": "f", "evidence": "paper"},
            },
            "rows": [
                {"id": i, "label": i, "dataset": d, "measures": ["accuracy"], "backbone": b, "head": h}
                for i, d, b, h in rows
            ],
        },
        ident,
    )


def test_expert_choice_rows_are_distinct_heads():
    ec = {"name": "expert_choice", "expert_hidden": 304}
    a = _manifest("a", [("e1", "cifar10", STD, ec), ("d", "cifar10", STD, DENSE)])
    b = _manifest("b", [("e2", "cifar10", STD, ec), ("e3", "cifar100", STD, ec)])
    assert [(m, r.id) for m, r in expert_choice_rows([a, b])] == [("a", "e1"), ("b", "e3")]


def _dtype_safe_forward(self, h):
    """The Expert Choice forward with the combine done in the source's dtype, as the bf16 fix does."""
    from repro.models.capacity import capacity

    b, e = int(h.shape[0]), self.cfg.num_experts
    cap = min(capacity(self.cfg.capacity_factor, b, 1, e), b)
    s = torch.softmax(self.gate(h), dim=-1)  # (B, E)
    g, idx = s.t().topk(cap, dim=-1)  # (E, C)
    y = self.experts(h[idx])  # (E, C, O)
    src = (g.unsqueeze(-1) * y).flatten(0, 1)
    out = torch.zeros(b, y.shape[-1], dtype=src.dtype, device=h.device).index_add(0, idx.flatten(), src)
    mask = torch.zeros_like(s).scatter(0, idx.t(), 1.0)
    self._record_routing(s, mask, dropped=mask.sum(-1) == 0, capacity=cap)
    return out


def test_the_expert_choice_check_passes_a_working_head_and_fails_one_whose_bf16_output_is_off(monkeypatch):
    m = _manifest("a", [("ec", "cifar10", STD, {"name": "expert_choice", "expert_hidden": 32})])
    monkeypatch.setattr(ExpertChoiceHead, "forward", _dtype_safe_forward)
    r = expert_choice_check(m.rows[0], CPU)
    assert (r["batch"], r["features"]) == (128, 3072)  # the CIFAR recipe's batch, the standard CNN's D
    assert r["agreement_with_fp32"] >= AGREEMENT and r["grad_norm"] > 0

    def off_in_bf16(self, h):
        out = _dtype_safe_forward(self, h)
        return out * 2 if h.dtype == torch.bfloat16 else out

    monkeypatch.setattr(ExpertChoiceHead, "forward", off_in_bf16)
    with pytest.raises(CheckFailed, match=r"only \d+% of samples within 5% of fp32"):
        expert_choice_check(m.rows[0], CPU)

"""Why the sparse MoE head collapses on digits, per reading of Section 3.3.

Part 1 (mechanisms, one batch, at init): for each reading, whether the k warm-up
changes the training dispatch mask (k = 8 vs k = 1), the renormalised combine weights
differ from 1, the task loss (cross-entropy alone) reaches the router, and hard
capacity moves any sample, on a router made skewed (features + offset) so capacity binds.
Part 2 (training): standard backbone, 4 epochs (schedules compressed onto the paper's 50,
so epoch 0 trains at k = 8), 2 seeds, h = 128 / 512 / 2048; dense F-1024-h-10 as reference.
Reported: test accuracy, last-epoch training expert usage, forced and moved samples, and
the test-time top-1 usage.

    python tools/investigate/digits_sparse.py [--quick] [--epochs N] [--readings a,b]
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

from common import build, loaders, train

MOE = dict(top_k=1, tau_min=0.13, k_warmup_epochs=5, k_warmup_start=8)
READINGS = {
    "one/top-k-cand": dict(experts_per_sample="one", capacity_candidates=0),  # the old default
    "one/all-cand": dict(experts_per_sample="one", capacity_candidates=8),
    "top_k/top-k-cand": dict(experts_per_sample="top_k", capacity_candidates=0),
    "top_k/all-cand": dict(experts_per_sample="top_k", capacity_candidates=8),
}


def mechanisms(name: str, reading: dict) -> dict:
    """Effects of the warm-up, the combine weights and capacity on one training batch."""
    model = build("cifar_standard", "sparse_moe", 0, {"init": "torch"}, {**MOE, **reading, "expert_hidden": 128})
    model.train()
    x, y = next(iter(loaders(0).train))
    with torch.no_grad():
        feats = model.backbone(x)
    feats = feats + 0.5 * feats.mean(0, keepdim=True) / feats.mean().abs()  # shared offset: skewed router
    head = model.head
    out = {}
    masks = {}
    for k_epoch, label in [(0, "k8"), (49, "k1")]:
        head.on_epoch_start(k_epoch, 50)
        head.zero_grad()
        logits = head(feats)
        F.cross_entropy(logits, y).backward()  # task loss only
        rec = head._routing
        mask, p = rec["mask"], rec["probs"]
        mp = mask * p
        c = mp / mp.sum(-1, keepdim=True)
        masks[label] = mask
        out[f"{label}_router_grad"] = head.router.w_r.weight.grad.norm().item()
        out[f"{label}_C_not_1"] = ((c - mask).abs() > 1e-6).any(1).float().mean().item()
        out[f"{label}_moved"] = int(rec["extra"]["rerouted"].item())
        out[f"{label}_forced"] = int(rec["forced"].sum().item())
        out[f"{label}_max_load"] = int(mask.sum(0).max().item())
        out[f"{label}_capacity"] = rec["extra"]["capacity"]
        out[f"{label}_experts_per_sample"] = mask.sum(1).mean().item()
    out["warmup_changes_mask"] = bool((masks["k8"] != masks["k1"]).any())
    return out


def run(head: str, h: int, seed: int, epochs: int, reading: dict | None, backbone: dict) -> dict:
    params = {"hidden": (1024, h)} if head == "dense" else {**MOE, **(reading or {}), "expert_hidden": h}
    model = build(backbone["name"], head, seed, {"init": backbone["init"]}, params)
    moved = []
    if head != "dense":

        def hook(mod, i, o):
            if mod.training:
                moved.append(int(mod._routing["extra"]["rerouted"].item()))

        model.head.register_forward_hook(hook)
    r = train(model, seed, epochs)
    last = r["history"][-1]
    if head != "dense":
        per_epoch = len(moved) // epochs
        r["moved_last"] = sum(moved[-per_epoch:])
        r["usage_last"] = last["expert_usage"]
        r["forced_last"] = last["forced"]
        r["test_usage"] = [sum(col) for col in zip(*r["usage_by_class"])]
        r["k0_usage"] = r["history"][0]["expert_usage"]
    return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="mechanism check only")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--readings", default=",".join(READINGS))
    ap.add_argument("--hs", default="128,512,2048")
    ap.add_argument("--dense", action="store_true", help="also the dense references")
    ap.add_argument("--init", default="torch", choices=["torch", "he"], help="backbone init (torch = before the fix)")
    ap.add_argument("--backbone", default="cifar_standard")
    args = ap.parse_args()
    names = args.readings.split(",")
    hs = [int(v) for v in args.hs.split(",")]

    print("## Mechanisms on one skewed training batch (h = 128, task loss only)\n")
    print(
        "| reading | warm-up changes M | C != 1 at k=8 / k=1 (share of samples) | router |grad| from CE at k=8 / k=1 "
        "| moved by capacity k=8 / k=1 | forced k=8 / k=1 | max load / capacity at k=1 |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in names:
        m = mechanisms(name, READINGS[name])
        print(
            f"| {name} | {m['warmup_changes_mask']} | {m['k8_C_not_1']:.2f} / {m['k1_C_not_1']:.2f} | "
            f"{m['k8_router_grad']:.3g} / {m['k1_router_grad']:.3g} | {m['k8_moved']} / {m['k1_moved']} | "
            f"{m['k8_forced']} / {m['k1_forced']} | {m['k1_max_load']} / {m['k1_capacity']} |",
            flush=True,
        )
    if args.quick:
        return

    print(f"\n## Training: {args.backbone} (init {args.init}), digits, {args.epochs} epochs, Adam 1e-3, batch 128\n")
    print(
        "| head | h | seed 0 | seed 1 | mean | last-epoch train usage (seed 0; seed 1) | forced | moved "
        "| test top-1 usage (seed 0; seed 1) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    todo = ([("dense", None)] if args.dense else []) + [(n, READINGS[n]) for n in names]
    for name, reading in todo:
        for h in hs:
            bb = {"name": args.backbone, "init": args.init}
            rs = [run("dense" if reading is None else "sparse_moe", h, s, args.epochs, reading, bb) for s in (0, 1)]
            accs = [r["accuracy"] for r in rs]
            row = f"| {name} | {h} | {accs[0]:.3f} | {accs[1]:.3f} | {sum(accs) / 2:.3f} |"
            if reading is None:
                row += " - | - | - | - |"
            else:
                row += (
                    f" {rs[0]['usage_last']}; {rs[1]['usage_last']}"
                    f" | {rs[0]['forced_last']}, {rs[1]['forced_last']}"
                    f" | {rs[0]['moved_last']}, {rs[1]['moved_last']}"
                    f" | {rs[0]['test_usage']}; {rs[1]['test_usage']} |"
                )
            print(row, flush=True)


if __name__ == "__main__":
    main()

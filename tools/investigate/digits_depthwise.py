"""Why the depthwise CIFAR backbone (no BatchNorm) does not learn digits, and which init fixes it.

Part 1 (init scale): per-layer std of activations and gradient norms of the separable
stack at initialisation, for several initialisations, plus the share of the flattened
features' variance that comes from the input (vs. a constant bias pattern).
Part 2 (training): dense head F-1024-128-10 on the depthwise backbone, 15 epochs, 2 seeds,
Adam, per initialisation and learning rate; the BatchNorm backbone as reference.

    python tools/investigate/digits_depthwise.py [--quick]
"""

from __future__ import annotations

import argparse

import torch.nn.functional as F
from torch import nn

from common import build, loaders, train


def make(backbone: str, how: str, seed: int, params=None):
    """The dense F-1024-128-10 model, built with PyTorch's default init, then re-initialised by `how`."""
    model = build(backbone, "dense", seed, {**(params or {}), "init": "torch"}, {"hidden": (1024, 128)})
    reinit(model, how)
    return model


def reinit(model: nn.Module, how: str) -> None:
    """Re-initialise every backbone conv. 'default' leaves PyTorch's kaiming_uniform(a=sqrt(5));
    'he_separable' is what ConvBackboneConfig(init="he") does."""
    if how == "default":
        return
    for m in model.backbone.modules():
        if not isinstance(m, nn.Conv2d):
            continue
        depthwise = m.groups > 1
        if how == "he_fan_in":  # every conv as if ReLU followed it
            nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
        elif how == "he_fan_out":
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif how == "he_separable":  # gain 1 where no ReLU follows (depthwise 3x3), sqrt(2) where one does
            nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="linear" if depthwise else "relu")
        elif how == "default_zero_bias":
            pass
        else:
            raise ValueError(how)
        if m.bias is not None:
            nn.init.zeros_(m.bias)


def scale_report(backbone: str, how: str, seed: int = 0, params=None) -> dict:
    """Activation std after every conv / ReLU, grad norms per conv, and the input-driven feature share."""
    model = make(backbone, how, seed, params)
    model.train()
    x, y = next(iter(loaders(seed).train))
    acts = []
    hooks = []
    for name, m in model.backbone.named_modules():
        if isinstance(m, (nn.Conv2d, nn.ReLU)):
            hooks.append(m.register_forward_hook(lambda mod, i, o, name=name: acts.append((name, o.detach().clone()))))
    feats = model.backbone(x)
    for h in hooks:
        h.remove()
    loss = F.cross_entropy(model.head(feats), y)
    loss.backward()
    grads = [(n, p.grad.norm().item()) for n, p in model.backbone.named_parameters() if n.endswith("weight")]
    # feature variance across samples (input-driven) vs. the mean feature's energy (constant part)
    across = feats.var(0).mean().item()
    const = feats.mean(0).pow(2).mean().item()
    return {
        "acts": [(n, o.std().item()) for n, o in acts],
        "grads": grads,
        "feat_std": feats.std().item(),
        "input_share": across / (across + const),
        "head_grad": model.head.mlp[0].weight.grad.norm().item(),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="init scale only, no training")
    ap.add_argument("--epochs", type=int, default=15)
    args = ap.parse_args()

    inits = ["default", "default_zero_bias", "he_fan_in", "he_fan_out", "he_separable"]
    print("## Init scale (batch of 128 digits, input std 1)\n")
    for bb in ["cifar_depthwise", "cifar_standard"]:
        for how in inits if bb == "cifar_depthwise" else ["default", "he_separable"]:
            r = scale_report(bb, how)
            relu = [f"{s:.3g}" for n, s in r["acts"]]
            print(
                f"{bb:16s} {how:18s} feat std {r['feat_std']:.3g}  input-driven share {r['input_share']:.2e}  "
                f"|grad| first conv {r['grads'][0][1]:.3g} last conv {r['grads'][-1][1]:.3g}  "
                f"head {r['head_grad']:.3g}"
            )
            print("    std after each conv and ReLU, in order:", " ".join(relu))
    if args.quick:
        return

    print("\n## Training: dense head F-1024-128-10, digits, Adam, batch 128\n")
    runs = [
        ("cifar_depthwise", "default", 1e-3, None),
        ("cifar_depthwise", "default", 3e-4, None),
        ("cifar_depthwise", "default", 3e-3, None),
        ("cifar_depthwise", "default_zero_bias", 1e-3, None),
        ("cifar_depthwise", "he_fan_out", 1e-3, None),
        ("cifar_depthwise", "he_separable", 1e-3, None),
        ("cifar_depthwise", "default", 1e-3, {"batch_norm": True}),
    ]
    print("| backbone | init | lr | seed 0 | seed 1 | final train loss |")
    print("|---|---|---|---|---|---|")
    for bb, how, lr, params in runs:
        accs, losses = [], []
        for seed in (0, 1):
            model = make(bb, how, seed, params)
            r = train(model, seed, args.epochs, lr=lr)
            accs.append(r["accuracy"])
            losses.append(r["history"][-1]["train_loss"])
        tag = bb + (" +BN" if params else "")
        print(
            f"| {tag} | {how} | {lr:g} | {accs[0]:.3f} | {accs[1]:.3f} | {' / '.join(f'{x:.2f}' for x in losses)} |",
            flush=True,
        )


if __name__ == "__main__":
    main()

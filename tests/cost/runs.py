"""Run configurations the cost tests price and fit: a small synthetic CIFAR-10 run with a dense head."""

from repro.plan.run_config import RunConfig


def synthetic_config(epochs: int, samples: int, hidden: int, seed: int = 0) -> RunConfig:
    return RunConfig(
        dataset="cifar10",
        backbone={"name": "cifar_standard", "params": {}},
        head={"name": "dense", "params": {"hidden": [hidden]}},
        seed=seed,
        epochs=epochs,
        batch_size=32,
        optimizer="adam",
        lr=1e-3,
        momentum=0.0,
        schedule="constant",
        backbone_lr_scale=1.0,
        bf16=False,
        data="synthetic",
        train_samples=samples,
        test_samples=64,
        image_size=16,
        pretrained=False,
        metric="final",
    )

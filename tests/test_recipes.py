"""The paper's recipe per dataset (Section 4.1), and how a profile shortens it."""

import pytest
import torch

from repro.manifest import Profile, Row
from repro.models import Component, build_model
from repro.recipes import resolve
from repro.train import _summary, make_optimizer, schedule_position

FULL = Profile(description="full", evidence="paper", seeds=5)


def _row(dataset, backbone, head="dense"):
    return Row(id="r", label="r", dataset=dataset, backbone=Component(backbone), head=Component(head),
               measures=("accuracy",))


@pytest.mark.parametrize("dataset,backbone,epochs,opt,lr,metric", [
    ("cifar10", "cifar_standard", 50, "adam", 1e-3, "final"),
    ("cifar100", "cifar_depthwise", 50, "adam", 1e-3, "final"),
    ("tiny_imagenet", "tiny_standard", 80, "adam", 1e-3, "peak"),
    ("imagenet", "resnet18", 30, "sgd", 1e-2, "peak"),
])
def test_recipe_per_dataset(dataset, backbone, epochs, opt, lr, metric):
    cfg = resolve(_row(dataset, backbone), FULL, seed=3)
    assert (cfg.epochs, cfg.optimizer, cfg.lr, cfg.metric, cfg.seed) == (epochs, opt, lr, metric, 3)
    assert cfg.data == "real" and cfg.image_size == {"imagenet": 224, "tiny_imagenet": 64}.get(dataset, 32)


def test_imagenet_fine_tunes_the_pretrained_backbone_at_a_tenth_with_cosine_sgd():
    cfg = resolve(_row("imagenet", "resnet18"), FULL, seed=0)
    assert cfg.pretrained and cfg.backbone_lr_scale == 0.1 and cfg.bf16 and cfg.batch_size == 256
    model = build_model("imagenet", Component("resnet18"), Component("dense"))
    opt, sched = make_optimizer(cfg, model)
    assert isinstance(opt, torch.optim.SGD) and opt.defaults["momentum"] == 0.9
    assert [g["lr"] for g in opt.param_groups] == [1e-2, 1e-3]  # head, backbone
    assert isinstance(sched, torch.optim.lr_scheduler.CosineAnnealingLR) and sched.T_max == 30


def test_adam_without_schedule_on_cifar():
    cfg = resolve(_row("cifar10", "cifar_standard"), FULL, seed=0)
    opt, sched = make_optimizer(cfg, build_model("cifar10", Component("cifar_standard"), Component("dense")))
    assert isinstance(opt, torch.optim.Adam) and sched is None and not cfg.pretrained


def test_smoke_profile_shortens_but_keeps_identity():
    smoke = Profile(description="s", evidence="pipeline", epochs=4, data="synthetic", train_samples=256, max_image_size=32)
    cfg = resolve(_row("imagenet", "resnet18"), smoke, seed=0)
    assert cfg.image_size == 32 and cfg.epochs == 4 and cfg.data == "synthetic"
    assert cfg.hash != resolve(_row("imagenet", "resnet18"), FULL, seed=0).hash
    assert cfg.hash == resolve(_row("imagenet", "resnet18"), smoke, seed=0).hash


def test_schedules_are_compressed_onto_a_shorter_run():
    cfg = resolve(_row("cifar10", "cifar_standard"), Profile(description="s", evidence="reduced", epochs=5), seed=0)
    assert [schedule_position(e, cfg) for e in range(5)] == [(0, 50), (12, 50), (24, 50), (36, 50), (49, 50)]
    full = resolve(_row("cifar10", "cifar_standard"), FULL, seed=0)
    assert [schedule_position(e, full)[0] for e in range(50)] == list(range(50))


@pytest.mark.parametrize("protocol,expected", [("final", 0.5), ("peak", 0.7)])
def test_metric_protocol(protocol, expected):
    cfg = resolve(_row("cifar10" if protocol == "final" else "tiny_imagenet",
                       "cifar_standard" if protocol == "final" else "tiny_standard"), FULL, seed=0)
    history = [{"test_accuracy": a} for a in (0.4, 0.7, 0.5)]
    out = _summary(cfg, history, "", [], 1.0, chance=0.1)
    assert out["metrics"]["accuracy"] == expected and out["metrics"]["peak_epoch"] == 2
    assert out["metrics"]["chance"] == 0.1


def test_a_functional_profile_may_override_the_optimizer_and_lr_and_nothing_else_moves():
    scratch = Profile(description="f", evidence="functional", data="digits", pretrained=False, optimizer="adam", lr=3e-3)
    cfg = resolve(_row("imagenet", "resnet18"), scratch, seed=0)
    plain = resolve(_row("imagenet", "resnet18"), Profile(description="f", evidence="functional", data="digits",
                                                          pretrained=False), seed=0)
    assert (cfg.optimizer, cfg.lr, plain.optimizer, plain.lr) == ("adam", 3e-3, "sgd", 1e-2)
    assert {k for k, v in cfg.to_dict().items() if plain.to_dict()[k] != v} == {"optimizer", "lr"}
    opt, _ = make_optimizer(cfg, build_model("imagenet", Component("resnet18"), Component("dense")))
    assert isinstance(opt, torch.optim.Adam) and [g["lr"] for g in opt.param_groups] == [3e-3, 3e-3]


@pytest.mark.parametrize("evidence", ["paper", "reduced"])
def test_the_papers_protocol_refuses_a_recipe_override(evidence):
    with pytest.raises(ValueError, match="overrides the paper's recipe"):
        Profile(description="p", evidence=evidence, lr=1e-3)

"""The training loop's CUDA-only paths, run by their nearest CPU equivalents (issue 11.1)."""

import dataclasses
import math

import pytest
import torch

from repro.core.settings import Settings
from repro.plan.manifest import Row
from repro.models import BACKBONES, Component
from repro.models.moe_conv_paths import PATHS
from repro.plan.run_config import resolve
from repro.train.engine import Engine, autocast_dtype, build_engine_model, compile_backbone
from repro.train.loop import train_run
from fake_records import PROFILE  # tests/fake_records.py: 2 epochs of 64 synthetic images at 16 px


def _row(head="dense", backbone="cifar_standard", dataset="cifar10", **params):
    return Row(
        id="r",
        label="r",
        dataset=dataset,
        backbone=Component(backbone),
        head=Component(head, params),
        measures=("accuracy",),
    )


def test_a_bf16_recipe_trains_under_cpu_autocast_when_asked(tmp_path):
    """REPRO_BF16_CPU=1: the recipe's bf16 autocast runs on the CPU and the record says so."""
    base = dataclasses.replace(resolve(_row("expert_choice", expert_hidden=16), PROFILE, seed=0), epochs=1, bf16=True)
    plain = train_run(
        base, torch.device("cpu"), None, tmp_path / "plain.ckpt", settings=Settings.read({"REPRO_BF16_CPU": "0"})
    )
    bf16 = train_run(
        base, torch.device("cpu"), None, tmp_path / "bf16.ckpt", settings=Settings.read({"REPRO_BF16_CPU": "1"})
    )
    assert plain["engine"]["autocast"] is None and not plain["engine"]["bf16_cpu"]
    assert bf16["engine"]["autocast"] == "bfloat16" and bf16["engine"]["bf16_cpu"]
    loss = [r["history"][0]["train_loss"] for r in (plain, bf16)]
    assert all(map(math.isfinite, loss)) and loss[0] != loss[1]  # bf16 rounding shows in the loss
    assert abs(loss[0] - loss[1]) < 0.1


def test_autocast_follows_recipe_device_and_switch():
    cfg = resolve(_row(), PROFILE, seed=0)
    on = dataclasses.replace(cfg, bf16=True)
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert autocast_dtype(on, cuda) is torch.bfloat16 and autocast_dtype(cfg, cuda) is None
    assert autocast_dtype(on, cpu, Engine()) is None
    assert autocast_dtype(on, cpu, Engine(bf16_cpu=True)) is torch.bfloat16
    assert autocast_dtype(cfg, cpu, Engine(bf16_cpu=True)) is None


@pytest.mark.slow
def test_inductor_compiles_a_small_backbone_on_the_cpu():
    cfg = resolve(_row(), PROFILE, seed=0)
    torch.manual_seed(0)
    model = build_engine_model(cfg, Engine()).eval()
    x = torch.randn(4, 3, 16, 16)
    expected = model(x)
    torch._dynamo.reset()
    assert compile_backbone(model, cfg, Engine(compile=True), torch.device("cpu"), backend="inductor") == ""
    assert model.backbone._compiled_call_impl is not None
    torch.testing.assert_close(model(x), expected, rtol=1e-4, atol=1e-5)
    torch._dynamo.reset()


TORCHVISION = ("resnet18", "mobilenet_v2", "resnet18_moeconv")


@pytest.mark.parametrize(
    "backbone", [pytest.param(b, marks=pytest.mark.slow) if b in TORCHVISION else b for b in BACKBONES.names()]
)
def test_channels_last_leaves_every_backbone_function_unchanged(backbone):
    size = 32 if backbone.startswith(("resnet", "mobilenet")) else 16
    dataset = "imagenet" if size == 32 else ("tiny_imagenet" if backbone.startswith("tiny") else "cifar10")
    cfg = dataclasses.replace(resolve(_row(backbone=backbone, dataset=dataset), PROFILE, seed=0), image_size=size)
    torch.manual_seed(0)
    plain = build_engine_model(cfg, Engine()).eval()
    fast = build_engine_model(cfg, Engine(channels_last=True)).eval()
    fast.load_state_dict(plain.state_dict())
    x = torch.randn(2, 3, size, size)
    with torch.no_grad():
        torch.testing.assert_close(
            fast(x.contiguous(memory_format=torch.channels_last)), plain(x), rtol=1e-4, atol=1e-5
        )


@pytest.mark.slow
def test_backbone_moe_routing_of_every_layer_reaches_the_record(tmp_path):
    """Table 5's per-layer utilisation: expert usage over the last epoch and routing entropy, per MoEConv2d."""
    row = _row(backbone="resnet18_moeconv", dataset="imagenet", hidden=[])
    cfg = dataclasses.replace(resolve(row, PROFILE, seed=0), epochs=1, train_samples=16, test_samples=8, batch_size=8)
    record = train_run(cfg, torch.device("cpu"), None, tmp_path / "c.ckpt")
    layers = record["routing"]["layers"]
    expected = [f"backbone.net.layer{i}.{b}.conv{c}" for i in (3, 4) for b in (0, 1) for c in (1, 2)]
    assert sorted(layers) == expected
    for stats in layers.values():
        assert len(stats["expert_usage"]) == 8
        assert sum(stats["expert_usage"]) == 2 * 16  # every training sample through k = 2 experts
        assert 0 <= stats["entropy"] <= math.log(8) + 1e-6
        assert 0 <= stats["usage_entropy"] <= math.log(8) + 1e-6
    assert "expert_usage" not in record["routing"]  # the dense head routes nothing
    assert record["history"][-1]["routing_layers"] == layers
    paths = record["engine"]["moe_conv_paths"]  # which exact path each layer ran (measured time chose it)
    assert sorted(paths) == expected and record["engine"]["moe_conv"] == "measured"
    assert all(shapes and set(shapes.values()) <= set(PATHS) for shapes in paths.values())


def test_schedules_come_from_the_generic_hook():
    cfg = resolve(_row("sparse_moe", expert_hidden=8, k_warmup_epochs=2), PROFILE, seed=0)
    model = build_engine_model(cfg, Engine())
    model.head.on_epoch_start(0, 4)
    assert model.head.schedule_state() == {"tau": 1.0, "k": 8}
    assert build_engine_model(resolve(_row(), PROFILE, seed=0), Engine()).head.schedule_state() == {}


class _Batches:
    """A fixed list of (x, y) batches with the loader interface train_epoch uses."""

    def __init__(self, batches):
        self.batches = batches

    def __iter__(self):
        return iter(self.batches)

    def __len__(self):
        return len(self.batches)

    def set_epoch(self, epoch):
        pass


@pytest.mark.parametrize("gate, moves", [("renormalised", False), ("switch", True)])
def test_an_epoch_records_how_far_each_backbone_moe_router_moved(gate, moves):
    """Table 5's k = 1 router: exactly where it started under the renormalised gate, moved under Switch's."""
    from torch import nn

    from repro.models.classifier import Classifier
    from repro.models.heads import build_dense
    from repro.models.moe_conv import MoEConv2d
    from repro.train.loop import make_optimizer, train_epoch
    from repro.train.run_data import RunData

    torch.manual_seed(0)
    moe = MoEConv2d(3, 4, 3, num_experts=4, top_k=1, padding=1, bias=False, gate=gate)
    body = nn.Sequential(moe, nn.AdaptiveAvgPool2d(1), nn.Flatten())
    model = Classifier(body, build_dense(4, 3, hidden=[]))
    router = model.backbone[0].router
    flat = lambda: torch.cat([router.weight.detach().flatten(), router.bias.detach()])  # noqa: E731
    before = flat()
    cfg = dataclasses.replace(resolve(_row(), PROFILE, seed=0), lr=0.01)
    opt, _ = make_optimizer(cfg, model)
    data = RunData(_Batches([(torch.randn(8, 3, 6, 6), torch.randint(0, 3, (8,))) for _ in range(3)]), [], "fixed")
    entry = train_epoch(model, data, opt, cfg, torch.device("cpu"), 0)
    shift = entry["routing_layers"]["backbone.0"]["router_shift"]
    moved = (flat() - before).norm() / before.norm()
    assert shift == pytest.approx(moved.item()) and (shift > 1e-4 if moves else shift == 0.0)


def test_the_engine_steps_a_per_step_temperature_before_each_training_step():
    """The reading tau-step: each step of the epoch trains at its own tau; a per-epoch head keeps one."""
    from torch import nn

    from repro.models.classifier import Classifier
    from repro.models.sparse_moe import build_sparse_moe
    from repro.train.loop import make_optimizer, train_epoch
    from repro.train.run_data import RunData

    seen = {}
    for step in ("step", "epoch"):
        torch.manual_seed(0)
        model = Classifier(nn.Flatten(), build_sparse_moe(12, 3, expert_hidden=4, tau_min=0.2, tau_step=step))
        taus = []
        model.head.register_forward_pre_hook(lambda mod, args: taus.append(mod.tau))
        cfg = resolve(_row(), PROFILE, seed=0)
        opt, _ = make_optimizer(cfg, model)
        data = RunData(_Batches([(torch.randn(8, 3, 2, 2), torch.randint(0, 3, (8,))) for _ in range(3)]), [], "f")
        model.head.on_epoch_start(1, 2)  # the last of two epochs: tau_min per epoch
        train_epoch(model, data, opt, cfg, torch.device("cpu"), 1)
        seen[step] = taus
    assert seen["step"] == pytest.approx([1 - 0.8 * (3 + s) / 5 for s in range(3)])  # steps 3, 4, 5 of 0..5
    assert seen["epoch"] == pytest.approx([0.2] * 3)

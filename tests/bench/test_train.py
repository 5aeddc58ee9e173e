"""The training benchmark: both paths take the same steps; the training engine's choices are safe.

No speed is asserted: these machines are shared and noisy.
"""

import pytest
import torch

from repro.bench.train import bench_config, bench_train
from repro.core.settings import Settings
from repro.train.engine import Engine, build_engine_model, compile_backbone, resolve_engine

CPU = torch.device("cpu")


@pytest.mark.slow  # trains two models
def test_bench_train_same_steps_both_paths_and_a_consistent_ratio():
    r = bench_train(n_images=64, batch_size=32, rounds=1, workers=0)
    assert r["steps_per_round"] == 2 and set(r["rounds"]) == {"usual", "fast"}
    assert r["speedup"] == r["images_per_s"]["fast"] / r["images_per_s"]["usual"]
    assert r["engine"]["channels_last"] and not r["engine"]["compile"]


def test_engine_defaults_per_device_and_overrides(monkeypatch):
    cfg = bench_config("cifar10", 64, 32, 0, None)
    auto = Settings.read({}).engine
    assert resolve_engine(cfg, CPU, auto) == Engine(
        channels_last=True, compile=False, dispatch=None, small_maps=True, moe_conv="measured"
    )
    assert resolve_engine(cfg, torch.device("cuda"), auto) == Engine(
        channels_last=True, compile=True, dispatch="batched", moe_conv="measured"
    )
    switches = Settings.read(
        {
            "REPRO_DISPATCH": "batched",
            "REPRO_CHANNELS_LAST": "0",
            "REPRO_SMALL_MAPS": "0",
            "REPRO_MOE_CONV": "fewest-macs",
        }
    ).engine
    assert resolve_engine(cfg, CPU, switches) == Engine(channels_last=False, compile=False, dispatch="batched")
    explicit = bench_config("cifar10", 64, 32, 0, None)
    explicit = explicit.__class__(
        **{**explicit.to_dict(), "head": {"name": "sparse_moe", "params": {"dispatch": "loop"}}}
    )
    assert resolve_engine(explicit, CPU, switches).dispatch is None  # a row's own choice is kept
    with pytest.raises(ValueError, match="REPRO_DISPATCH"):
        Settings.read({"REPRO_DISPATCH": "fused"})
    monkeypatch.setenv("REPRO_DISPATCH", "batched")  # the library reads no environment: only the switches given
    assert resolve_engine(cfg, CPU) == resolve_engine(cfg, CPU, auto)


def test_channels_last_and_batched_dispatch_leave_the_model_function_unchanged():
    cfg = bench_config("cifar10", 64, 32, 0, None)
    torch.manual_seed(0)
    plain = build_engine_model(cfg, Engine()).eval()
    fast = build_engine_model(cfg, Engine(channels_last=True, dispatch="batched")).eval()
    fast.load_state_dict(plain.state_dict())
    conv = next(m for m in fast.modules() if isinstance(m, torch.nn.Conv2d))
    assert conv.weight.is_contiguous(memory_format=torch.channels_last)
    x = torch.randn(8, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(
            fast(x.contiguous(memory_format=torch.channels_last)), plain(x), rtol=1e-4, atol=1e-5
        )


@pytest.mark.slow  # two dynamo compilations
def test_compile_falls_back_to_eager_when_the_compiler_fails():
    cfg = bench_config("cifar10", 64, 8, 0, None)
    torch.manual_seed(0)
    model = build_engine_model(cfg, Engine()).eval()  # no dropout: outputs comparable
    x = torch.randn(2, 3, 32, 32)
    expected = model(x)

    def broken(gm, example_inputs):
        raise RuntimeError("no compiler here")

    torch._dynamo.reset()
    error = compile_backbone(model, cfg, Engine(compile=True), CPU, backend=broken)
    assert "no compiler here" in error
    assert model.backbone._compiled_call_impl is None  # still the eager module
    torch.testing.assert_close(model(x), expected)
    assert compile_backbone(model, cfg, Engine(compile=True), CPU, backend="eager") == ""
    assert model.backbone._compiled_call_impl is not None
    torch.testing.assert_close(model(x), expected)
    assert list(model.state_dict()) == list(build_engine_model(cfg, Engine()).state_dict())  # checkpoints still load

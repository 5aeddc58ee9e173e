"""Which exact path MoEConv2d runs (repro.models.moe_conv_choice): the fewest multiply-adds by default and
wherever a model is counted or deterministic mode is on; else the fastest by measured time, measured once
per key, kept in a file, and never part of a run's identity."""

import json
from dataclasses import replace

import pytest
import torch
from torch import nn

from repro.bench.train import bench_config
from repro.core.settings import Settings
from repro.models import moe_conv_choice as choice
from repro.models.classifier import Classifier
from repro.models.flops import count_flops
from repro.models.moe_conv import MoEConv2d, use_paths
from repro.models.zero_banks import built_for_counting
from repro.train.engine import Engine, build_engine_model, resolve_engine

CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def fresh_choices():
    choice.forget()
    yield
    choice.forget()


@pytest.fixture
def timed(monkeypatch):
    """measure() replaced by fixed times (per path name) that record each call."""
    calls = []
    times = {"mixed": 3.0, "gate-mm": 1.0, "unfolded": 2.0, "per-expert": 4.0, "sorted": 5.0}

    def measure(m, x, g, top_i, backward, names, rounds=choice.ROUNDS):
        calls.append((tuple(x.shape), backward, names))
        return {n: times[n] for n in names}

    monkeypatch.setattr(choice, "measure", measure)
    return calls, times


def layer(**kw) -> MoEConv2d:
    torch.manual_seed(0)
    return MoEConv2d(6, 5, 3, num_experts=4, top_k=2, padding=1, bias=False, **kw)


def test_the_default_is_the_fewest_multiply_adds_and_nothing_is_timed(timed):
    m = layer()
    m(torch.randn(4, 6, 8, 8))
    m(torch.randn(4, 6, 1, 1))
    assert m.paths_ran == {(4, 6, 8, 8): "mixed", (4, 6, 1, 1): "per-expert"}
    assert timed[0] == []


def test_measured_runs_the_fastest_once_per_key(timed):
    calls, times = timed
    m = layer()
    use_paths(m, "measured")
    x = torch.randn(4, 6, 8, 8, requires_grad=True)
    m(x).sum().backward()
    m(x).sum().backward()
    assert m.paths_ran[(4, 6, 8, 8)] == "gate-mm" and len(calls) == 1
    assert calls[0][1] is True  # timed with a backward
    with torch.no_grad():
        m(torch.randn(4, 6, 8, 8))  # without a backward: another key
        m(torch.randn(3, 6, 8, 8))  # another batch: another key
    assert [c[:2] for c in calls[1:]] == [((4, 6, 8, 8), False), ((3, 6, 8, 8), False)]
    times["gate-mm"] = 9.0
    with torch.no_grad():
        m(torch.randn(3, 6, 8, 8))
    assert len(calls) == 3 and m.paths_ran[(3, 6, 8, 8)] == "gate-mm"  # kept, not timed again


def test_the_fewest_multiply_add_path_stays_unless_another_is_clearly_faster(timed):
    calls, times = timed
    times.update({"mixed": 1.0, "gate-mm": 0.97, "unfolded": 0.99})  # within noise of the fewest-MAC path
    m = layer()
    use_paths(m, "measured")
    m(torch.randn(4, 6, 8, 8))
    assert m.paths_ran[(4, 6, 8, 8)] == "mixed"
    times["gate-mm"] = 0.9
    m(torch.randn(5, 6, 8, 8))
    assert m.paths_ran[(5, 6, 8, 8)] == "gate-mm"


def test_counting_deterministic_mode_and_a_single_sample_forward_take_the_fewest_macs(timed):
    m = layer()
    use_paths(m, "measured")
    x = torch.randn(4, 6, 8, 8)
    with built_for_counting():
        m(x)
    assert m.paths_ran[(4, 6, 8, 8)] == "mixed"
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        m(x)
    finally:
        torch.use_deterministic_algorithms(before)
    assert m.paths_ran[(4, 6, 8, 8)] == "mixed"
    with torch.no_grad():
        m(torch.randn(1, 6, 8, 8))
    assert m.paths_ran[(1, 6, 8, 8)] == "mixed" and timed[0] == []


def test_a_count_is_the_same_whatever_path_training_runs():
    torch.manual_seed(0)
    bank = MoEConv2d(3, 4, 3, num_experts=4, top_k=2, padding=1, bias=False)
    model = Classifier(nn.Sequential(bank, nn.AdaptiveAvgPool2d(1), nn.Flatten()), nn.Linear(4, 10))
    reports = []
    for rule in ("fewest-macs", "measured", "unfolded", "per-expert"):
        use_paths(model, rule)
        model.train()(torch.randn(8, 3, 8, 8)).sum().backward()  # training ran this path
        reports.append(count_flops(model, (3, 8, 8)))
        assert bank.paths_ran[(1, 3, 8, 8)] == "mixed"  # the counted sample's path
    assert all(r.problems == [] for r in reports)
    assert len({(r.total, r.routed) for r in reports}) == 1
    assert [mc.path for mc in reports[0].modules if mc.kind == "MoEConv2d"] == ["mixed"]  # what `repro flops` says


def test_a_measured_choice_is_kept_in_the_file_and_read_back_by_another_process(timed, tmp_path):
    calls, times = timed
    path = tmp_path / "choices.json"
    m = layer()
    use_paths(m, "measured", path)
    x = torch.randn(4, 6, 8, 8)
    m(x)
    saved = json.loads(path.read_text())
    ((key, entry),) = saved.items()
    assert entry == {"path": "gate-mm", "ms": {n: 1000 * t for n, t in times.items()}}
    assert "x(4, 6, 8, 8)" in key and "threads" in key and key.endswith("train")  # the banks take gradients
    choice.forget()  # as a new process: the file, not this process's memory
    times["gate-mm"] = 9.0
    m(x)
    assert len(calls) == 1 and m.paths_ran[(4, 6, 8, 8)] == "gate-mm"
    path.write_text(json.dumps({key: {"path": "no-such-path"}}))  # damaged or from another version: timed again
    choice.forget()
    m(x)
    assert len(calls) == 2 and m.paths_ran[(4, 6, 8, 8)] == "unfolded"


def test_measuring_leaves_gradients_and_random_streams_alone():
    m = layer()
    use_paths(m, "measured")
    x = torch.randn(4, 6, 8, 8, requires_grad=True)
    state = torch.get_rng_state()
    _, g, top_i = m.route(x)
    times = choice.measure(m, x, g, top_i, True, choice.candidates(), rounds=2)
    assert set(times) == set(choice.candidates()) and all(t > 0 for t in times.values())
    assert torch.equal(torch.get_rng_state(), state)
    assert all(p.grad is None for p in m.parameters()) and x.grad is None


def test_under_compilation_only_paths_of_static_shapes_are_candidates(timed):
    calls, times = timed
    times["per-expert"] = 0.5  # the fastest, but its shapes follow the routing
    m = layer()
    use_paths(m, "measured")
    x = torch.randn(4, 6, 8, 8)
    torch._dynamo.reset()
    compiled = torch.compile(m, backend="eager")
    torch.testing.assert_close(compiled(x), layer()(x), rtol=1e-5, atol=1e-5)
    assert calls[-1][2] == ("mixed", "gate-mm", "unfolded") and m.paths_ran[(4, 6, 8, 8)] == "gate-mm"
    assert choice.candidates() == ("mixed", "gate-mm", "unfolded", "per-expert", "sorted")


def test_paths_whose_working_memory_outgrows_the_call_are_not_timed(timed):
    """On a 1x1 map of 64 channels the per-sample kernels (B, 64*64*9) are 36x the routed copies of the fewest-MAC
    path: the kernel-mixing paths are not timed (a functional Table 5 run held 14 GB timing them); on an 8x8 map,
    where mixing is the fewest-MAC path, every path is."""
    calls, _ = timed
    torch.manual_seed(0)
    m = MoEConv2d(64, 64, 3, num_experts=8, top_k=2, padding=1, bias=False)
    use_paths(m, "measured")
    m(torch.randn(16, 64, 1, 1))
    assert calls[-1][2] == ("per-expert", "sorted") and m.paths_ran[(16, 64, 1, 1)] == "per-expert"
    m(torch.randn(16, 64, 8, 8))
    assert calls[-1][2] == choice.candidates()
    assert choice.within_memory(m, torch.randn(16, 64, 1, 1), "per-expert", choice.candidates(compiling=True)) == (
        "gate-mm",
    )  # compiled: the static path of least memory, where none is within the bound


def test_the_engine_measures_by_default_and_the_settings_can_say_otherwise(tmp_path):
    cfg = bench_config("cifar10", 64, 32, 0, None)
    assert Engine().moe_conv == "fewest-macs"
    assert resolve_engine(cfg, CPU, Settings.read({}).engine).moe_conv == "measured"
    assert resolve_engine(cfg, CPU, Settings.read({"REPRO_MOE_CONV": "fewest-macs"}).engine).moe_conv == "fewest-macs"
    with pytest.raises(ValueError, match="REPRO_MOE_CONV"):
        Settings.read({"REPRO_MOE_CONV": "fastest"})
    moe = replace(cfg, backbone={"name": "resnet18_moeconv", "params": {}}, dataset="imagenet", image_size=16)
    with torch.device("meta"):
        model = build_engine_model(moe, Engine(moe_conv="measured"), Settings(cache=tmp_path))
    layers = [m for m in model.modules() if isinstance(m, MoEConv2d)]
    file = tmp_path / "moe-conv" / "choices.json"
    assert len(layers) == 8 and {(m.path_rule, m.path_file) for m in layers} == {("measured", file)}
    with pytest.raises(ValueError, match="unknown MoEConv2d path rule 'fastest'"):
        use_paths(model, "fastest")

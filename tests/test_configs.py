"""Component configs refuse out-of-range values; the manifest layer reports each at its key path, all at once."""

import math

import pytest

from checkout import MANIFESTS
from repro.plan.manifest import _component, load_manifest
from repro.models import BACKBONES, HEADS
from repro.models.configs import MAX_WIDTH, ConfigError, ConvBackboneConfig, DenseHeadConfig, SparseMoEConfig
from repro.core.schema import Problems, SchemaError

NAN, INF = float("nan"), float("inf")

# (registry, component table, the bad key, a fragment of what is allowed)
BAD = [
    (HEADS, {"name": "dense", "dropout": 1.5}, "dropout", "in [0, 1)"),
    (HEADS, {"name": "dense", "dropout": -0.1}, "dropout", "in [0, 1)"),
    (HEADS, {"name": "dense", "hidden": [0]}, "hidden", f"integers in 1..{MAX_WIDTH}"),
    (HEADS, {"name": "dense", "hidden": [1024, -256]}, "hidden", "integers in 1.."),
    (HEADS, {"name": "dense", "hidden": [1e11]}, "hidden[0]", "expected an integer"),
    (HEADS, {"name": "sparse_moe", "expert_hidden": 0}, "expert_hidden", f"an integer in 1..{MAX_WIDTH}"),
    (HEADS, {"name": "sparse_moe", "expert_hidden": -1}, "expert_hidden", "an integer in 1.."),
    (HEADS, {"name": "sparse_moe", "expert_hidden": 1e11}, "expert_hidden", "expected an integer"),
    (HEADS, {"name": "sparse_moe", "expert_hidden": 10**11}, "expert_hidden", f"1..{MAX_WIDTH}"),
    (HEADS, {"name": "sparse_moe", "top_k": 9}, "top_k", "1..8 (at most num_experts)"),
    (HEADS, {"name": "sparse_moe", "top_k": 0}, "top_k", "1..8"),
    (HEADS, {"name": "sparse_moe", "num_experts": 0}, "num_experts", "1..256"),
    (HEADS, {"name": "sparse_moe", "num_experts": 4, "top_k": 5}, "top_k", "1..4"),
    (HEADS, {"name": "sparse_moe", "tau_min": 0.0}, "tau_min", "in (0, tau_max = 1.0]"),
    (HEADS, {"name": "sparse_moe", "tau_min": 2.0}, "tau_min", "in (0, tau_max = 1.0]"),
    (HEADS, {"name": "sparse_moe", "tau_max": NAN}, "tau_max", "a finite number"),
    (HEADS, {"name": "sparse_moe", "tau_max": INF}, "tau_max", "a finite number"),
    (HEADS, {"name": "sparse_moe", "tau_sharpness": -7.0}, "tau_sharpness", "positive"),
    (HEADS, {"name": "sparse_moe", "capacity_factor": 0.0}, "capacity_factor", "positive"),
    (HEADS, {"name": "sparse_moe", "capacity_factor": -1.25}, "capacity_factor", "positive"),
    (HEADS, {"name": "sparse_moe", "capacity_factor": INF}, "capacity_factor", "a finite number"),
    (HEADS, {"name": "sparse_moe", "key_dim": 0}, "key_dim", "an integer in 1.."),
    (HEADS, {"name": "sparse_moe", "key_similarity_weight": NAN}, "key_similarity_weight", "finite"),
    (HEADS, {"name": "sparse_moe", "utility_decay": 1.0}, "utility_decay", "in [0, 1)"),
    (HEADS, {"name": "sparse_moe", "load_balance_weight": -0.01}, "load_balance_weight", "non-negative"),
    (HEADS, {"name": "sparse_moe", "entropy_weight": NAN}, "entropy_weight", "a finite number"),
    (HEADS, {"name": "sparse_moe", "k_warmup_epochs": -1}, "k_warmup_epochs", "an integer in 0.."),
    (
        HEADS,
        {"name": "sparse_moe", "k_warmup_epochs": 5, "k_warmup_start": 20},
        "k_warmup_start",
        "between top_k and num_experts",
    ),
    (HEADS, {"name": "sparse_moe", "capacity_candidates": 9}, "capacity_candidates", "0, or between top_k"),
    (HEADS, {"name": "sparse_moe", "dropout": 1.0}, "dropout", "in [0, 1)"),
    (HEADS, {"name": "expert_choice", "capacity_factor": 0.0}, "capacity_factor", "positive"),
    (HEADS, {"name": "expert_choice", "expert_hidden": -304}, "expert_hidden", "an integer in 1.."),
    (HEADS, {"name": "soft_moe", "slots_per_expert": 0}, "slots_per_expert", "an integer in 1..1024"),
    (HEADS, {"name": "soft_moe", "num_experts": 1000}, "num_experts", "1..256"),
    (HEADS, {"name": "per_sample_soft_moe", "dropout": 1.0}, "dropout", "in [0, 1)"),
    (HEADS, {"name": "teacher_guided", "teacher_epochs": 0}, "teacher_epochs", "an integer in 1.."),
    (HEADS, {"name": "teacher_guided", "teacher_hidden": []}, "teacher_hidden", "at least 1 integers"),
    (HEADS, {"name": "teacher_guided", "top_k": 9}, "top_k", "1..8"),
    (HEADS, {"name": "relu_routed", "target_active_fraction": 0.0}, "target_active_fraction", "in (0, 1]"),
    (HEADS, {"name": "relu_routed", "sparsity_growth": 0.5}, "sparsity_growth", "at least 1"),
    (HEADS, {"name": "relu_routed", "expert_activation": "gelu"}, "expert_activation", "one of 'relu'"),
    (HEADS, {"name": "cluster_routed", "warmup_epochs": 0}, "warmup_epochs", "an integer in 1.."),
    (HEADS, {"name": "cluster_routed", "shared_rank": -1}, "shared_rank", "an integer in 0.."),
    (HEADS, {"name": "cluster_routed", "kmeans_samples": 0}, "kmeans_samples", "an integer in 1.."),
    (BACKBONES, {"name": "cifar_standard", "width": 0.0}, "width", "positive and at most 64"),
    (BACKBONES, {"name": "cifar_depthwise", "width": INF}, "width", "a finite number"),
    (BACKBONES, {"name": "cifar_depthwise", "width": 100.0}, "width", "at most 64"),
    (BACKBONES, {"name": "cifar_standard", "channels": []}, "channels", "at least 1 integers"),
    (BACKBONES, {"name": "cifar_standard", "channels": [0, 48]}, "channels", "integers in 1..4096"),
    (BACKBONES, {"name": "tiny_standard", "channels": [4096], "width": 2.0}, "width", "at most 4096 / max(channels)"),
    (BACKBONES, {"name": "cifar_standard", "convs_per_block": 0}, "convs_per_block", "an integer in 1..16"),
    (BACKBONES, {"name": "resnet18_moeconv", "top_k": 9}, "top_k", "at most num_experts"),
    (BACKBONES, {"name": "resnet18_moeconv", "num_experts": 0}, "num_experts", "1..256"),
    (BACKBONES, {"name": "resnet18_moeconv", "init_noise": -0.1}, "init_noise", "non-negative"),
    (BACKBONES, {"name": "resnet18_moeconv", "layers": ["layer5"]}, "layers", "layer1, layer2, layer3, layer4"),
    (BACKBONES, {"name": "resnet18_moeconv", "layers": []}, "layers", "at least 1 of"),
    (BACKBONES, {"name": "resnet18_moeconv", "frozen": ["fc2"]}, "frozen", "names from conv1"),
    (BACKBONES, {"name": "resnet18", "frozen": [""]}, "frozen", "top-level child names"),
]


@pytest.mark.parametrize(
    "registry,table,key,allowed", BAD, ids=[f"{t['name']}.{k}={t.get(k.split('[')[0])}" for _, t, k, _ in BAD]
)
def test_a_bad_component_value_is_reported_at_its_key_path(registry, table, key, allowed):
    problems = Problems()
    _component(registry, table, "rows[3].part", problems)
    mine = [p for p in problems.items if p.startswith(f"rows[3].part.{key}: ")]
    assert len(mine) == 1, problems.items
    assert allowed in mine[0]
    bad = table[key.split("[")[0]]
    shown = repr(tuple(bad) if isinstance(bad, list) else bad)
    assert "expected" in mine[0] or shown in mine[0] or (isinstance(bad, float) and math.isnan(bad))


def test_every_problem_of_one_component_comes_at_once():
    problems = Problems()
    _component(
        HEADS,
        {
            "name": "sparse_moe",
            "expert_hidden": 0,
            "dropout": 1.5,
            "capacity_factor": -1.0,
            "top_k": 9,
            "tau_typo": 1.0,
        },
        "rows[0].head",
        problems,
    )
    keys = sorted(p.split(":")[0] for p in problems.items)
    assert keys == [f"rows[0].head.{k}" for k in ("capacity_factor", "dropout", "expert_hidden", "tau_typo", "top_k")]


def test_good_values_pass_and_come_back_typed():
    problems = Problems()
    comp = _component(HEADS, {"name": "dense", "hidden": [512, 128], "dropout": 0.0}, "rows[0].head", problems)
    assert not problems.items and comp.params == {"hidden": (512, 128), "dropout": 0.0}


def test_direct_construction_raises_one_config_error_naming_each_field():
    with pytest.raises(ConfigError) as info:
        SparseMoEConfig(expert_hidden=1e11, dropout=1.5)
    assert [p[0] for p in info.value.problems] == ["expert_hidden", "dropout"]
    assert "expert_hidden must be an integer in 1..16384, got 100000000000.0" in str(info.value)
    with pytest.raises(ValueError, match=r"hidden must be a list of integers in 1..16384, got \(-1,\)"):
        DenseHeadConfig(hidden=(-1,))
    with pytest.raises(ValueError, match="width must be positive"):
        ConvBackboneConfig(width=-1.0)


def test_a_manifest_with_bad_component_values_names_file_and_every_key_path(tmp_path):
    table6 = MANIFESTS / "table6.toml"
    text = table6.read_text()
    old = "width = 0.72 }"
    assert old in text
    path = tmp_path / "table6.toml"
    path.write_text(text.replace(old, "width = 0.0, convs_per_block = 0 }", 1))
    with pytest.raises(SchemaError) as info:
        load_manifest(path)
    assert str(path) in str(info.value)
    assert {p.split(":")[0] for p in info.value.problems} >= {
        "rows[1].backbone.width",
        "rows[1].backbone.convs_per_block",
    }

"""Every backbone and head config as a torch-free dataclass, with its range checks.

A manifest is validated against these before anything is built, so reading
manifests needs no torch. Each check names the field, the value and what is
allowed; all of a config's problems come at once in one ConfigError.

Size limits, so a manifest cannot ask for more than one accelerator holds:
    MAX_WIDTH     hidden widths h (and d_k). 8 experts at h = 2**14 hold 8 x 2**28
                  h x h weights, 8 GiB in float32 and 32 GiB with gradients and
                  Adam's two moments; the paper's widest expert is h = 2048.
    MAX_EXPERTS   E. The paper uses 8; 256 banks of h = 2048 are already 4 GiB.
    MAX_CHANNELS  a conv block's channels after the width factor: a 3x3 conv at
                  4096 channels has 151M weights, 20x the paper's largest net.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Literal

MAX_WIDTH = 2**14
MAX_EXPERTS = 256
MAX_CHANNELS = 2**12
MAX_EPOCHS = 10_000
RESNET_LAYERS = ("layer1", "layer2", "layer3", "layer4")
RESNET_CHILDREN = ("conv1", "bn1", "relu", "maxpool", *RESNET_LAYERS, "avgpool", "fc")


class ConfigError(ValueError):
    """A config's out-of-range fields; ``problems`` holds (field, value, allowed) for each."""

    def __init__(self, cls: str, problems: list[tuple[str, Any, str]]) -> None:
        self.cls = cls
        self.problems = problems
        super().__init__("; ".join(self.describe(*p) for p in problems))

    @staticmethod
    def describe(name: str, value: Any, allowed: str) -> str:
        return f"{name} must be {allowed}, got {value!r}"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_real(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


class Checks:
    """Collects a config's problems; ``done()`` raises them together."""

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg
        self.problems: list[tuple[str, Any, str]] = []

    def fail(self, name: str, allowed: str, value: Any = None) -> None:
        self.problems.append((name, getattr(self.cfg, name) if value is None else value, allowed))

    def count(self, name: str, lo: int, hi: int, why: str = "") -> bool:
        v = getattr(self.cfg, name)
        ok = _is_int(v) and lo <= v <= hi
        if not ok:
            self.fail(name, f"an integer in {lo}..{hi}{why}")
        return ok

    def counts(self, name: str, lo: int, hi: int, min_len: int = 0) -> None:
        v = getattr(self.cfg, name)
        if not isinstance(v, (tuple, list)) or len(v) < min_len or not all(_is_int(x) and lo <= x <= hi for x in v):
            need = f"at least {min_len} " if min_len else ""
            self.fail(name, f"a list of {need}integers in {lo}..{hi}")

    def number(self, name: str, ok: Callable[[float], bool], allowed: str) -> bool:
        v = getattr(self.cfg, name)
        good = _is_real(v) and ok(v)
        if not good:
            self.fail(name, f"{allowed} (a finite number)")
        return good

    def probability(self, name: str) -> None:
        self.number(name, lambda v: 0 <= v < 1, "in [0, 1)")

    def one_of(self, name: str, options: tuple) -> None:
        if getattr(self.cfg, name) not in options:
            self.fail(name, "one of " + ", ".join(repr(o) for o in options))

    def names(self, name: str, options: tuple, min_len: int = 0) -> None:
        v = getattr(self.cfg, name)
        if not isinstance(v, (tuple, list)) or len(v) < min_len or any(x not in options for x in v):
            need = f"at least {min_len} of " if min_len else "names from "
            self.fail(name, f"a list of {need}{', '.join(options)}")

    def done(self) -> None:
        if self.problems:
            raise ConfigError(type(self.cfg).__name__, self.problems)


# ---------------------------------------------------------------------------
# Heads (repro.models.heads and the MoE head files).


@dataclass(frozen=True)
class DenseHeadConfig:
    # The paper's dense head is feature_dim -> 1024 -> h -> classes in the rho-sweep
    # (Table 1), which replaced a fixed h = 256 used elsewhere.
    hidden: tuple[int, ...] = (1024, 256)
    # Dropout 0.3 after each hidden layer: Section 3.1 states it for the experts only (reading "dense-dropout").
    dropout: float = 0.3

    TRAINING_ONLY: ClassVar[frozenset[str]] = frozenset({"dropout"})  # see SparseMoEConfig.TRAINING_ONLY

    def __post_init__(self) -> None:
        c = Checks(self)
        c.counts("hidden", 1, MAX_WIDTH)
        c.probability("dropout")
        c.done()


def _expert_checks(c: Checks) -> bool:
    """The fields every MoE head shares; whether num_experts itself is valid."""
    ok = c.count("num_experts", 1, MAX_EXPERTS)
    c.count("expert_hidden", 1, MAX_WIDTH)
    c.probability("dropout")
    if hasattr(c.cfg, "dropout_at"):
        c.one_of("dropout_at", DROPOUT_AT)
    return ok


# The expert bank's defaults, one for every MoE head (Section 3.1: each head's experts are the same MLPs).
NUM_EXPERTS = 8  # E, shared with every MoE variant (Section 4.1)
EXPERT_HIDDEN = 304  # h: 304 CIFAR, 1024 Tiny-ImageNet, 512 ImageNet (Section 3.1)
EXPERT_DROPOUT = 0.3  # Section 3.1
# Where an expert's dropout sits (reading "expert-dropout", repro.models.experts): after each of its two hidden
# layers, or after the last only, before the output layer.
DROPOUT_AT = ("each_hidden", "last_hidden")
DropoutAt = Literal["each_hidden", "last_hidden"]
# A TRAINING_ONLY set (see SparseMoEConfig) for the paper's other MoE heads: dropout is the identity in evaluation.
_EXPERT_TRAINING_ONLY: frozenset[str] = frozenset({"dropout_at"})


@dataclass(frozen=True)
class SparseMoEConfig:
    num_experts: int = NUM_EXPERTS
    expert_hidden: int = EXPERT_HIDDEN
    top_k: int = 1  # k after any warm-up; the paper's head uses k = 1 (Section 4.1)
    key_dim: int = 64  # d_k (Section 3.2)
    key_similarity_weight: float = 0.5  # w_k (Section 3.2)
    dropout: float = EXPERT_DROPOUT
    dropout_at: DropoutAt = "each_hidden"
    tau_max: float = 1.0  # "Temperature anneals from tau = 1.0" (Section 4.1)
    tau_min: float = 0.13  # 0.13 CIFAR, 0.3 Tiny-ImageNet / ImageNet (Section 4.1)
    tau_schedule: Literal["linear", "sigmoid"] = "linear"  # sigmoid only for CIFAR w = 2.0 (Section 4.1)
    tau_sharpness: float = 7.0  # kappa of the sigmoid schedule (Section 3.2)
    # The sigmoid's equation is not in the text (repro.models.schedules): "exact" ends at tau_max and
    # tau_min as "anneals from tau_max to tau_min" says; "centred" stops 2.9% of the range short.
    tau_sigmoid_form: Literal["exact", "centred"] = "exact"
    k_warmup_epochs: int = 0  # 5 on CIFAR, none elsewhere (Section 4.1)
    k_warmup_start: int = 8  # k at epoch 0 of the warm-up: "k = 8 -> 1" (Section 4.1)
    # How k falls (reading "k-warmup-form", repro.models.schedules): "linear" 8, 7, 5, 4, 2, or "hold" k = 8 throughout
    k_warmup_form: Literal["linear", "hold"] = "linear"
    # Whether tau steps once per epoch or at every training step (reading "tau-step", repro.models.schedules)
    tau_step: Literal["epoch", "step"] = "epoch"
    # Section 3.1's FLOPs_routed for a head-only MoE, "the classifier head": with its router (True), or the experts
    # alone (reading "router-in-rho"). Changes no computation, only what rho counts (repro.models.flops).
    rho_counts_router: bool = True
    # c, lambda_lb, lambda_ent: GA-optimised values are in the supplement we lack.
    # c = 1.25 is Switch Transformer's training capacity factor; Section 3.3 implies c > 1.
    capacity_factor: float = 1.25
    # Candidates a sample may take under capacity: "all" E experts best first, 0 = the current k, or n.
    capacity_candidates: int | Literal["all"] = "all"
    experts_per_sample: Literal["one", "top_k"] = "top_k"  # in training; see repro.models.sparse_moe
    load_balance_weight: float = 0.01  # lambda_lb: Switch Transformer's alpha = 1e-2
    # f_i of L_lb (Eq. 4): the share of all dispatches ("dispatches") or of the B samples ("samples");
    # the two differ by the factor k during the k warm-up (repro.models.aux_losses).
    load_balance_fraction: Literal["dispatches", "samples"] = "dispatches"
    entropy_weight: float = 0.01  # lambda_ent: same order as lambda_lb (no published value)
    utility_weight: float = 0.0  # lambda_u: off, as the paper finds it inert (Section 3.3)
    utility_decay: float = 0.9  # EMA decay of u_i (not given in the paper)
    dispatch: Literal["loop", "batched"] = "loop"

    # Fields that change how the head trains but nothing an evaluation forward executes: neither the
    # FLOP count nor the operator count depends on them (tests/test_configs.py counts both).
    TRAINING_ONLY: ClassVar[frozenset[str]] = frozenset(
        {
            "tau_max",
            "tau_min",
            "tau_schedule",
            "tau_sharpness",
            "tau_sigmoid_form",
            "k_warmup_epochs",
            "k_warmup_start",
            "capacity_factor",
            "capacity_candidates",
            "experts_per_sample",
            "load_balance_weight",
            "load_balance_fraction",
            "entropy_weight",
            "utility_decay",
            "k_warmup_form",
            "tau_step",
            "dropout_at",
        }
    )

    def __post_init__(self) -> None:
        c = Checks(self)
        e = self.num_experts if _expert_checks(c) else MAX_EXPERTS
        if c.count("top_k", 1, e, " (at most num_experts)"):
            if self.k_warmup_epochs:
                c.count("k_warmup_start", self.top_k, e, " (between top_k and num_experts)")
            if self.capacity_candidates != "all" and self.capacity_candidates != 0:
                c.count("capacity_candidates", self.top_k, e, " ('all', 0, or between top_k and num_experts)")
        c.count("k_warmup_epochs", 0, MAX_EPOCHS)
        c.count("key_dim", 1, MAX_WIDTH)
        c.number("key_similarity_weight", lambda v: v >= 0, "non-negative")
        if c.number("tau_max", lambda v: v > 0, "positive"):
            c.number("tau_min", lambda v: 0 < v <= self.tau_max, f"in (0, tau_max = {self.tau_max}]")
        c.one_of("tau_schedule", ("linear", "sigmoid"))
        c.one_of("tau_sigmoid_form", ("exact", "centred"))
        c.one_of("k_warmup_form", ("linear", "hold"))
        c.one_of("tau_step", ("epoch", "step"))
        c.one_of("rho_counts_router", (True, False))
        c.number("tau_sharpness", lambda v: v > 0, "positive")
        c.number("capacity_factor", lambda v: v > 0, "positive")
        c.one_of("experts_per_sample", ("one", "top_k"))
        c.one_of("load_balance_fraction", ("dispatches", "samples"))
        for name in ("load_balance_weight", "entropy_weight", "utility_weight"):
            c.number(name, lambda v: v >= 0, "non-negative")
        c.probability("utility_decay")
        c.one_of("dispatch", ("loop", "batched"))
        c.done()


@dataclass(frozen=True)
class ExpertChoiceConfig:
    num_experts: int = NUM_EXPERTS
    expert_hidden: int = EXPERT_HIDDEN
    dropout: float = EXPERT_DROPOUT
    dropout_at: DropoutAt = "each_hidden"
    # c: not given in the paper. 1.0 makes the average experts per sample 1, the
    # sparse head's k = 1; Zhou et al. also report c = 2 (their "EC-CF2").
    capacity_factor: float = 1.0

    TRAINING_ONLY: ClassVar[frozenset[str]] = _EXPERT_TRAINING_ONLY

    def __post_init__(self) -> None:
        c = Checks(self)
        _expert_checks(c)
        c.number("capacity_factor", lambda v: v > 0, "positive")
        c.done()


@dataclass(frozen=True)
class SoftMoEConfig:
    num_experts: int = NUM_EXPERTS
    slots_per_expert: int = 1  # not given in the paper; one slot per expert, Puigcerver et al.'s smallest setting
    expert_hidden: int = EXPERT_HIDDEN
    dropout: float = EXPERT_DROPOUT
    dropout_at: DropoutAt = "each_hidden"

    TRAINING_ONLY: ClassVar[frozenset[str]] = _EXPERT_TRAINING_ONLY

    def __post_init__(self) -> None:
        c = Checks(self)
        _expert_checks(c)
        c.count("slots_per_expert", 1, 1024)  # E*S slots, each a weighted mean of the batch
        c.done()


@dataclass(frozen=True)
class PerSampleSoftMoEConfig:
    num_experts: int = NUM_EXPERTS
    expert_hidden: int = EXPERT_HIDDEN
    dropout: float = EXPERT_DROPOUT
    dropout_at: DropoutAt = "each_hidden"

    TRAINING_ONLY: ClassVar[frozenset[str]] = _EXPERT_TRAINING_ONLY

    def __post_init__(self) -> None:
        c = Checks(self)
        _expert_checks(c)
        c.done()


# Heads beyond the paper (issue 17): routers from related work over the same experts.


def _kmeans_checks(c: Checks) -> None:
    c.count("kmeans_samples", 1, 1 << 20)
    c.count("kmeans_iters", 1, 1000)
    c.count("kmeans_seed", 0, 2**31 - 1)


@dataclass(frozen=True)
class TeacherGuidedConfig(SparseMoEConfig):
    """The sparse head (every SparseMoEConfig field) plus TGR-style teacher guidance (repro.models.teacher_guided)."""

    # The dense twin's head F -> hidden -> classes: set to the dense row's `hidden` so the teacher
    # starts from the very weights the dense run of the same seed starts from.
    teacher_hidden: tuple[int, ...] = (1024, 304)
    teacher_dropout: float = 0.3  # the dense head's dropout (Section 3.1)
    teacher_epochs: int = 10  # epochs (paper timeline) that replay the dense twin before the student trains
    teacher_weight: float = 1.0  # lambda_t on the router's cross-entropy to the teacher's assignment
    kmeans_samples: int = 4096  # rows of the last teacher epoch kept to fit the teacher router
    kmeans_iters: int = 25
    kmeans_seed: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        c = Checks(self)
        c.counts("teacher_hidden", 1, MAX_WIDTH, min_len=1)
        c.probability("teacher_dropout")
        c.count("teacher_epochs", 1, MAX_EPOCHS)
        c.number("teacher_weight", lambda v: v >= 0, "non-negative")
        _kmeans_checks(c)
        c.done()


@dataclass(frozen=True)
class ReluRoutedConfig:
    num_experts: int = NUM_EXPERTS
    expert_hidden: int = EXPERT_HIDDEN
    dropout: float = EXPERT_DROPOUT
    target_active_fraction: float = 0.2  # DECO's 20% of routed experts active
    # Adaptive L1 weight (ReMoE's controller): lambda <- lambda * growth^sign(active - target) per step.
    sparsity_weight_init: float = 1e-8
    sparsity_growth: float = 1.2
    expert_activation: Literal["relu", "norm_silu"] = "relu"  # norm_silu: DECO's NormSiLU in the experts
    active_mean_decay: float = 0.99  # EMA of the measured active experts per sample (the rho FLOPs use)

    def __post_init__(self) -> None:
        c = Checks(self)
        _expert_checks(c)
        c.number("target_active_fraction", lambda v: 0 < v <= 1, "in (0, 1]")
        c.number("sparsity_weight_init", lambda v: v >= 0, "non-negative")
        c.number("sparsity_growth", lambda v: v >= 1, "at least 1")
        c.one_of("expert_activation", ("relu", "norm_silu"))
        c.probability("active_mean_decay")
        c.done()


@dataclass(frozen=True)
class ClusterRoutedConfig:
    num_experts: int = NUM_EXPERTS
    expert_hidden: int = EXPERT_HIDDEN
    dropout: float = EXPERT_DROPOUT
    warmup_epochs: int = 5  # epochs (paper timeline) of features collected before k-means
    label_weight: float = 1.0  # weight of the router's cross-entropy to the cluster labels
    shared_rank: int = 0  # > 0: every expert layer is a shared rank-r basis plus a per-cluster residual
    kmeans_samples: int = 4096
    kmeans_iters: int = 25
    kmeans_seed: int = 0

    def __post_init__(self) -> None:
        c = Checks(self)
        _expert_checks(c)
        c.count("warmup_epochs", 1, MAX_EPOCHS)
        c.number("label_weight", lambda v: v >= 0, "non-negative")
        c.count("shared_rank", 0, MAX_WIDTH)
        _kmeans_checks(c)
        c.done()


# ---------------------------------------------------------------------------
# Backbones (repro.models.backbones, repro.models.moe_conv).


@dataclass(frozen=True)
class ConvBackboneConfig:
    channels: tuple[int, ...] = (24, 48)  # output channels of each block at w = 1
    convs_per_block: int = 2  # 3x3 convolutions per block before the 2x2 max pool
    depthwise: bool = False  # depthwise 3x3 + pointwise 1x1 in place of each 3x3 conv
    width: float = 1.0  # width factor w, scales every block's channels
    batch_norm: bool = False
    features: Literal["flatten", "gap"] = "flatten"  # how the last block's map becomes F
    # "he": He et al. fan-in normal weights, zero biases (repro.models.backbones._he_init); "torch":
    # PyTorch's default kaiming_uniform(a=sqrt(5)), under which the depthwise stack without BatchNorm
    # does not learn (tools/investigate/FINDINGS.md).
    init: Literal["he", "torch"] = "he"

    TRAINING_ONLY: ClassVar[frozenset[str]] = frozenset({"init"})  # see SparseMoEConfig.TRAINING_ONLY

    def __post_init__(self) -> None:
        c = Checks(self)
        c.counts("channels", 1, MAX_CHANNELS, min_len=1)
        c.one_of("init", ("he", "torch"))
        c.count("convs_per_block", 1, 16)
        if c.number("width", lambda v: 0 < v <= 64, "positive and at most 64") and not c.problems:
            if max(self.widths()) > MAX_CHANNELS:
                c.fail("width", f"at most {MAX_CHANNELS} / max(channels) = {MAX_CHANNELS / max(self.channels):g}")
        c.one_of("features", ("flatten", "gap"))
        c.done()

    def widths(self) -> list[int]:
        return [max(1, round(c * self.width)) for c in self.channels]


@dataclass(frozen=True)
class TorchvisionConfig:
    # Top-level children kept frozen at their pretrained weights during training,
    # e.g. ("conv1", "bn1", "layer1", "layer2") for Table 5's matched dense baseline.
    frozen: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        c = Checks(self)
        if not isinstance(self.frozen, (tuple, list)) or not all(isinstance(n, str) and n for n in self.frozen):
            c.fail("frozen", "a list of the network's top-level child names")
        c.done()


@dataclass(frozen=True)
class MoEConvBackboneConfig:
    num_experts: int = 8
    top_k: int = 2  # k = 2 in the paper's backbone MoE; k = 1 in its ablation (Table 5)
    init_noise: float = 0.1  # "10% noise perturbation": noise s.d. = 0.1 x the pretrained weights' s.d.
    layers: tuple[str, ...] = ("layer3", "layer4")
    # Which 3x3 convolutions of those layers are routed: "all" eight (two per BasicBlock, "all eight MoE
    # layers", Section 4.6), or the six of "stride1" (each layer's first convolution, stride 2, stays a
    # plain convolution). Section 4.6's "~38%" is the latter's share, the former's is 45%.
    routed: Literal["all", "stride1"] = "all"
    # Section 4.6: conv1, layer1 and layer2 stay frozen at their pretrained weights (the trainer
    # turns off their gradients and keeps their BatchNorm statistics).
    frozen: tuple[str, ...] = ("conv1", "bn1", "layer1", "layer2")
    # The text gives MoEConv2d no gate equation (reading "moe-conv-gate", repro.models.moe_conv): "renormalised",
    # the softmax of the k selected logits (at k = 1 exactly 1, so the router gets no gradient), or "switch", each
    # selected expert's probability under the softmax over all E (Switch Transformer's gate).
    gate: Literal["renormalised", "switch"] = "renormalised"
    # Table 5's routing regularisers (reading "moe-conv-regularisers"): none unless set. The head's are a capacity
    # factor c in training, lambda_lb, lambda_ent and tau annealed linearly from 1.0 to tau_min (Section 4.1).
    capacity_factor: float = 0.0  # 0: no capacity limit
    load_balance_weight: float = 0.0
    entropy_weight: float = 0.0
    tau_min: float = 1.0  # 1.0: no temperature
    # Whether a sample's k banks are mixed into one kernel where that is cheaper (repro.models.moe_conv): the count at
    # k = 2 is then one convolution a sample; False runs (and counts) the k banks' convolutions, the reading
    # "moe-conv-k-count" (both give the same outputs, so it changes counts, not training).
    mix_kernels: bool = True

    # See SparseMoEConfig.TRAINING_ONLY. The gate changes the values a gate takes, not what executes (its softmax
    # and top-k are no multiply-adds, and both forms run one of each): tests/test_readings.py counts both forms.
    TRAINING_ONLY: ClassVar[frozenset[str]] = frozenset(
        {"init_noise", "frozen", "gate", "capacity_factor", "load_balance_weight", "entropy_weight", "tau_min"}
    )

    def __post_init__(self) -> None:
        c = Checks(self)
        e = self.num_experts if c.count("num_experts", 1, MAX_EXPERTS) else MAX_EXPERTS
        c.count("top_k", 1, e, " (at most num_experts)")
        c.number("init_noise", lambda v: v >= 0, "non-negative")
        c.one_of("gate", ("renormalised", "switch"))
        c.number("capacity_factor", lambda v: v >= 0, "non-negative (0: no capacity limit)")
        for name in ("load_balance_weight", "entropy_weight"):
            c.number(name, lambda v: v >= 0, "non-negative")
        c.number("tau_min", lambda v: 0 < v <= 1, "in (0, 1], the temperature's end from 1.0")
        c.names("layers", RESNET_LAYERS, min_len=1)
        c.one_of("routed", ("all", "stride1"))
        c.names("frozen", RESNET_CHILDREN)
        c.done()


__all__ = [
    "ConfigError",
    "ConvBackboneConfig",
    "DenseHeadConfig",
    "ExpertChoiceConfig",
    "MoEConvBackboneConfig",
    "PerSampleSoftMoEConfig",
    "SoftMoEConfig",
    "SparseMoEConfig",
    "TorchvisionConfig",
    "TeacherGuidedConfig",
    "ReluRoutedConfig",
    "ClusterRoutedConfig",
]

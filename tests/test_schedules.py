"""Golden values of the temperature schedules and the k warm-up (Sections 3.2, 4.1)."""

import math

import pytest

from repro.models.schedules import linear_tau, progress, sigmoid_tau, temperature, warmup_k
from repro.models.sparse_moe import SparseMoEConfig, SparseMoEHead

TAU_MAX, TAU_MIN = 1.0, 0.13


def test_progress_maps_epochs_to_t_over_T():
    assert [progress(e, 5) for e in range(5)] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert progress(0, 1) == 0.0
    with pytest.raises(ValueError):
        progress(5, 5)


@pytest.mark.parametrize("frac, tau", [(0.0, 1.0), (0.5, 0.565), (1.0, 0.13)])
def test_linear_schedule_golden(frac, tau):
    # tau_max - (tau_max - tau_min) t / T with tau_max = 1, tau_min = 0.13
    assert linear_tau(frac, TAU_MAX, TAU_MIN) == pytest.approx(tau, abs=1e-12)


@pytest.mark.parametrize(
    "frac, tau",
    [
        (0.0, 0.9744983592),  # 0.13 + 0.87 / (1 + e^-3.5) = 0.13 + 0.87 * 0.9706877692
        (0.5, 0.565),  # the midpoint: sigmoid(0) = 1/2
        (1.0, 0.1555016408),  # 0.13 + 0.87 / (1 + e^3.5) = 0.13 + 0.87 * 0.0293122308
    ],
)
def test_centred_sigmoid_schedule_golden(frac, tau):
    assert sigmoid_tau(frac, TAU_MAX, TAU_MIN, kappa=7.0, form="centred") == pytest.approx(tau, abs=1e-9)


# The exact form rescales the centred share s by (s - s(1)) / (s(0) - s(1)), s(0) - s(1) = 0.9413755384.
@pytest.mark.parametrize(
    "frac, tau",
    [
        (0.0, 1.0),
        (0.5, 0.565),
        (0.25, 0.8902676),  # 0.13 + 0.87 (0.8519528 - 0.0293122) / 0.9413755
        (1.0, 0.13),
    ],
)
def test_exact_sigmoid_schedule_golden(frac, tau):
    assert sigmoid_tau(frac, TAU_MAX, TAU_MIN, kappa=7.0) == pytest.approx(tau, abs=1e-7)


def test_only_the_exact_sigmoid_ends_where_linear_annealing_ends():
    # Section 3.2 anneals "from tau_max to tau_min": the centred form stops at 0.078 for tau_min = 0.05
    # (the temperature ablation), where the linear schedule it is compared with reaches 0.05.
    assert sigmoid_tau(1.0, 1.0, 0.05, form="centred") == pytest.approx(0.0778466, abs=1e-6)
    assert sigmoid_tau(1.0, 1.0, 0.05) == pytest.approx(linear_tau(1.0, 1.0, 0.05), abs=1e-12)
    assert sigmoid_tau(0.0, 1.0, 0.05) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("form, scale", [("centred", 1.0), ("exact", 1 / 0.9413755384)])
def test_sigmoid_is_monotone_and_sharper_than_linear_in_the_middle(form, scale):
    taus = [sigmoid_tau(i / 100, TAU_MAX, TAU_MIN, form=form) for i in range(101)]
    assert all(a > b for a, b in zip(taus, taus[1:]))
    slope_mid = (sigmoid_tau(0.51, TAU_MAX, TAU_MIN, form=form) - sigmoid_tau(0.49, TAU_MAX, TAU_MIN, form=form)) / 0.02
    assert slope_mid == pytest.approx(-0.87 * 7.0 / 4 * scale, rel=1e-3)  # -(range) kappa / 4, rescaled


def test_temperature_dispatches_on_schedule_name():
    assert temperature(0.5, 1.0, 0.3, "linear") == pytest.approx(0.65)
    assert temperature(0.5, 1.0, 0.3, "sigmoid") == pytest.approx(0.65)
    with pytest.raises(ValueError):
        sigmoid_tau(0.5, 1.0, 0.3, form="cubic")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        temperature(0.5, 1.0, 0.3, "cosine")  # type: ignore[arg-type]


def test_k_warmup_cifar_8_to_1_over_5_epochs():
    # k_start - (k_start - k_end) e / W, rounded half up: 8, 6.6, 5.2, 3.8, 2.4 -> 8, 7, 5, 4, 2; then 1
    assert [warmup_k(e, 1, 8, 5) for e in range(8)] == [8, 7, 5, 4, 2, 1, 1, 1]
    assert [warmup_k(e, 1, 8, 0) for e in range(3)] == [1, 1, 1]
    assert [warmup_k(e, 2, 4, 2) for e in range(3)] == [4, 3, 2]


def test_head_on_epoch_start_follows_the_schedules():
    cfg = SparseMoEConfig(
        expert_hidden=8, tau_schedule="sigmoid", k_warmup_epochs=5, k_warmup_start=8, tau_sigmoid_form="centred"
    )
    head = SparseMoEHead(4, 3, cfg)
    seen = []
    for epoch in range(50):
        head.on_epoch_start(epoch, 50)
        seen.append((head.tau, head.current_k))
    assert seen[0][0] == pytest.approx(0.9744983592, abs=1e-9)
    assert seen[-1][0] == pytest.approx(0.1555016408, abs=1e-9)
    assert [k for _, k in seen[:6]] == [8, 7, 5, 4, 2, 1]
    assert seen[24][0] > 0.565 > seen[25][0]  # the midpoint t = T/2 = 24.5 lies between epochs 24 and 25
    assert math.isclose(SparseMoEHead(4, 3, SparseMoEConfig(expert_hidden=8)).tau, 1.0)


def test_the_default_sigmoid_head_ends_at_tau_min():
    head = SparseMoEHead(4, 3, SparseMoEConfig(expert_hidden=8, tau_schedule="sigmoid"))
    head.on_epoch_start(49, 50)
    assert head.tau == pytest.approx(0.13, abs=1e-12)
    head.on_epoch_start(0, 50)
    assert head.tau == pytest.approx(1.0, abs=1e-12)


def test_the_temperature_ablation_compares_its_schedules_at_the_same_end_temperature():
    from repro.plan.manifest import find_manifest

    rows = find_manifest("temperature_ablation").rows
    ends = {}
    for row in rows:
        head = SparseMoEHead(4, 3, SparseMoEConfig(**row.head.params))
        head.on_epoch_start(49, 50)
        ends[row.id] = head.tau
    assert ends["sigmoid_low"] == pytest.approx(ends["linear_low"], abs=1e-12) == pytest.approx(0.05)
    assert all(ends[r.id] == pytest.approx(r.head.params["tau_min"]) for r in rows if r.role == "main")
    # the reading sigmoid-form's twin: the centred curve stops 2.9% of the range short, at 0.078
    # (repro/spec/readings.toml)
    assert ends["sigmoid_low__sigmoid_centred"] == pytest.approx(0.078, abs=5e-4)


def test_k_warmup_held_at_8_for_five_epochs_then_1():
    """The reading k-warmup-form's alternative: k = 8 throughout the warm-up, then the final k."""
    assert [warmup_k(e, 1, 8, 5, "hold") for e in range(7)] == [8, 8, 8, 8, 8, 1, 1]
    assert [warmup_k(e, 1, 8, 5, "linear") for e in range(6)] == [8, 7, 5, 4, 2, 1]
    with pytest.raises(ValueError, match="unknown k warm-up form"):
        warmup_k(0, 1, 8, 5, "cosine")


def test_step_progress_runs_over_every_step_of_the_run():
    from repro.models.schedules import step_progress

    assert [step_progress(e, 2, s, 3) for e in range(2) for s in range(3)] == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert step_progress(0, 1, 0, 1) == 0.0
    with pytest.raises(ValueError):
        step_progress(0, 2, 3, 3)


def test_a_head_stepping_tau_per_step_anneals_within_each_epoch_and_one_per_epoch_does_not():
    per_step = SparseMoEHead(8, 3, SparseMoEConfig(expert_hidden=4, tau_min=0.2, tau_step="step"))
    per_epoch = SparseMoEHead(8, 3, SparseMoEConfig(expert_hidden=4, tau_min=0.2))
    for head in (per_step, per_epoch):
        head.on_epoch_start(1, 3)  # tau(1/2) = 0.6 for the whole epoch, per epoch
    taus = []
    for step in range(4):
        per_step.on_step(step, 4)
        per_epoch.on_step(step, 4)
        taus.append(per_step.tau)
        assert per_epoch.tau == pytest.approx(0.6)
    # t / T = (4 + s) / 11 over 3 epochs of 4 steps: 1 - 0.8 t / T
    assert taus == pytest.approx([1 - 0.8 * (4 + s) / 11 for s in range(4)])


def test_the_head_warms_k_up_in_the_form_its_config_names():
    held = SparseMoEHead(8, 3, SparseMoEConfig(expert_hidden=4, k_warmup_epochs=5, k_warmup_form="hold"))
    ks = []
    for epoch in range(6):
        held.on_epoch_start(epoch, 50)
        ks.append(held.current_k)
    assert ks == [8, 8, 8, 8, 8, 1]

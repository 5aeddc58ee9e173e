"""repro.cost.plan: the claims a budget decides, runs shared once, and a profiles file that runs exactly the plan."""

import re
import shutil

import pytest
from typer.testing import CliRunner

from checkout import MANIFESTS
from repro.cost import calibration as cal
from repro.cost import cpu_reference
from repro.cost import estimate as est
from repro.cost import plan as pl
from repro.bench import speed
from repro.cli import app
from repro.plan.manifest import find_manifest, load_all, with_profiles
from repro.spec.profiles import load_profiles
from repro.plan.run_config import planned_runs

GPU = cal.Throughput("A100", "gpu", 1e12, 0.003, "reference, not measured: test")


def _fix(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(est, "gpu_throughput", lambda *a: GPU)
    mp.setattr(est, "cpu_throughput", lambda speed=None: cal.Throughput("cpu", "cpu", 1e9, 0.004, "test cpu"))
    mp.setattr(est, "estimate_macs", lambda *a: {"backbone_macs": 1e8, "head_macs": 1e6})


@pytest.fixture
def fixed(monkeypatch):
    _fix(monkeypatch)


def _need(key, weight, runs, seeds=2):
    manifest, claim = key.split("/")
    return pl.ClaimNeed(manifest, claim, "s", weight, ("r",), seeds, "test", runs)


def test_greedy_by_weight_per_added_hour_shares_runs_and_says_why_not():
    a = _need("m/a", 3, {"x": 1800, "y": 1800})
    b = _need("m/b", 1, {"x": 1800})  # shares a's run x: free once a is in
    c = _need("m/c", 1, {"z": 2700}, seeds=10)
    plan = pl.make_plan([c, b, a], 1.0, est.CostModel())
    assert [ch.need.key for ch in plan.chosen] == ["m/a", "m/b"]
    assert [(ch.added_s, ch.shared) for ch in plan.chosen] == [(3600, 0), (0, 1)]
    assert plan.gpu_seconds == 3600 and plan.runs == 2 and plan.weight == 4
    assert [(n.key, why) for n, why in plan.left_out] == [("m/c", "cost: adds 0.8 GPU-h, 0.0 left")]
    roomy = pl.make_plan([c, b, a], 6300 / 3600, est.CostModel())
    assert [ch.need.key for ch in roomy.chosen] == ["m/a", "m/b", "m/c"] and roomy.gpu_seconds == 6300


def test_too_few_seeds_for_power_is_told_apart_from_cost():
    a = _need("m/a", 1, {"x": 3000})
    big = _need("m/big", 1, {f"s{i}": 600 for i in range(10)}, seeds=10)  # 10 seeds: 6000 s; 2 seeds: 1200 s
    plan = pl.make_plan([a, big], 4500 / 3600, est.CostModel())
    assert [ch.need.key for ch in plan.chosen] == ["m/a"]
    assert plan.left_out[0][1].startswith("too few seeds for power within the budget: 10 seeds add 1.7 GPU-h")


def test_the_heaviest_single_claim_beats_a_lighter_greedy_pick():
    cheap = _need("m/cheap", 1, {"x": 10})
    heavy = _need("m/heavy", 5, {"y": 3600})  # ratio 5/3600 < 1/10, but alone it weighs more
    plan = pl.make_plan([cheap, heavy], 1.0, est.CostModel())
    assert [ch.need.key for ch in plan.chosen] == ["m/heavy"]


def test_rows_and_seeds_of_real_claims():
    t1 = find_manifest("table1")
    claim = next(c for c in t1.claims if c.id == "t1_gap_monotonic_in_rho")
    comps = [c for c in t1.comparisons if c.id in claim.params["comparisons"]]
    assert pl.rows_read(t1, claim) == tuple(sorted({r for c in comps for r in (c.row, c.baseline)}))
    assert pl.claim_seeds(t1, claim) == (5, "the paper's n: no effect size in the text")
    head = find_manifest("headline_cifar10")
    seeds, why = pl.claim_seeds(head, next(c for c in head.claims if c.id == "headline_w2_gap"))
    assert seeds == 3 and "80% power" in why
    t3 = find_manifest("table3")
    assert pl.claim_seeds(t3, next(c for c in t3.claims if c.id == "tiny_dw2_gap"))[0] == 11  # above the paper's 5


@pytest.fixture(scope="module")
def priced(tmp_path_factory):
    """Every manifest and its claims' needs, priced once for the module under the same fixed costs."""
    with pytest.MonkeyPatch.context() as mp:
        _fix(mp)
        folder = tmp_path_factory.mktemp("plan")
        manifests = load_all()
        return manifests, pl.claim_needs(manifests, est.CostModel(data_dir=folder / "data", cache=folder / "cache"))


@pytest.fixture
def needs(fixed, priced):
    return priced


def test_every_empirical_training_claim_is_priced(needs):
    manifests, ns = needs
    expected = {f"{m.id}/{c.id}" for m in manifests for c in m.claims if c.scope == "empirical" and pl.rows_read(m, c)}
    readings = {
        f"{m.id}/reading:{r.reading}" for m in manifests for r in m.rows if r.reading and "accuracy" in r.measures
    }
    # 57 empirical claims: 54 until table4's per-sample ImageNet claim became table8's, shown in table4; then 53, and
    # the epoch-1 accuracy and w=0.72 routing findings gained four. 17 trained alternatives: Table 1's h = 512 three
    # and Table 5's two, and the twelve of the eight readings that change only training (eleven on Table 1's h = 128,
    # sigmoid-form's on the temperature ablation)
    assert {n.key for n in ns} == expected | readings and len(expected) == 57 and len(readings) == 17
    weights = {n.key: n.weight for n in ns}
    assert weights["table1/t1_sign_follows_rho"] == 3 and weights["table4/in_r18_head_loses"] == 2


@pytest.mark.parametrize("gpu_hours", [0.0, 0.5, 3.0, 24.0, 80.0])
def test_the_plan_never_exceeds_the_budget(needs, gpu_hours):
    _, ns = needs
    plan = pl.make_plan(ns, gpu_hours, est.CostModel())
    assert plan.gpu_seconds <= gpu_hours * 3600 * (1 + 1e-9)  # float sums only
    assert sum(c.added_s for c in plan.chosen) == pytest.approx(plan.gpu_seconds)


def test_the_protocols_budget_covers_every_claim_and_shares_runs(needs):
    _, ns = needs
    whole = pl.protocol_cost(ns)
    plan = pl.make_plan(ns, whole.device_hours, est.CostModel())
    assert {c.need.key for c in plan.chosen} == {n.key for n in ns if not n.problem}
    assert plan.gpu_seconds == pytest.approx(whole.device_seconds)
    assert sum(n.gpu_seconds for n in ns) > 1.5 * plan.gpu_seconds  # claims share rows, and tables share runs
    assert any(c.shared for c in plan.chosen)


def test_the_profiles_file_runs_exactly_the_planned_runs(needs, tmp_path):
    manifests, ns = needs
    plan = pl.make_plan(ns, 24.0, est.CostModel())
    path = tmp_path / "plan.toml"
    written = pl.write_plan(path, plan, manifests)
    profiles = load_profiles(path)
    assert profiles == written and all(name.startswith("plan_s") for name in profiles)
    planned = {
        p.cfg.hash
        for m in manifests
        for name, prof in profiles.items()
        for p in planned_runs(with_profiles(m, profiles), prof)
    }
    assert planned == {h for c in plan.chosen for h in c.need.items if est.is_run(h)}
    assert all(p.data == "real" and p.epochs is None for p in profiles.values())
    fewer = {c.need.seeds for c in plan.chosen if c.need.seeds < c.need.paper_seeds}  # e.g. 3 of the headline's 10
    assert fewer and {n for n, p in profiles.items() if p.evidence == "reduced"} == {f"plan_s{s}" for s in fewer}


def test_list_and_plan_count_and_measure_nothing_even_on_a_cold_cache(tmp_path, monkeypatch):
    """The shipped models' multiply-adds are data (repro.measure.model_macs), and an unmeasured CPU gets the
    reference figure: neither command builds a model or imports torch to measure a device."""
    from repro.measure import flop_check as mflops

    folder = tmp_path / "manifests"
    folder.mkdir()
    shutil.copy(MANIFESTS / "table1.toml", folder)
    monkeypatch.setenv("REPRO_MANIFESTS", str(folder))
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "cache"))  # empty
    monkeypatch.setenv("REPRO_DATA", str(tmp_path / "data"))

    def refuse(*a, **k):
        raise AssertionError("counted FLOPs or measured a device")

    monkeypatch.setattr(mflops, "_flops_for", refuse)
    monkeypatch.setattr(mflops, "_shape_macs", refuse)
    monkeypatch.setattr(speed, "measure_speed", refuse)
    monkeypatch.setattr(speed, "train_cpu_seconds", refuse)
    runner = CliRunner()
    cold = runner.invoke(app, ["list", "-v"])  # -v: where each figure came from
    assert cold.exit_code == 0, cold.output
    runs = len(cpu_reference.load().runs)  # every run the shipped CPU profiles plan (tests/cost/test_reference.py)
    assert f"reference, not measured here: {runs} runs" in " ".join(cold.output.split())
    plan = runner.invoke(app, ["plan", "--gpu-hours", "1", "--out", str(tmp_path / "plan.toml")])
    assert plan.exit_code == 0, plan.output
    assert "repro verify-all --profiles" in plan.output
    warm = runner.invoke(app, ["list", "-v", "--profiles", str(tmp_path / "plan.toml"), "--gpus", "2"])
    assert warm.exit_code == 0, warm.output
    assert "plan_s" in warm.output and "full" in warm.output and "reference, not measured" in warm.output


@pytest.mark.parametrize("gpu_hours", ["24", "200"])
def test_the_plans_reading_counts_agree_in_number(gpu_hours, tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "cache"))
    done = CliRunner().invoke(app, ["plan", "--gpu-hours", gpu_hours], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    counts = re.findall(r"readings trained: (\d+) (alternatives?)\b", done.output)
    counts += [(n, w) for n, w in re.findall(r"(\d+) (readings?) trained\)", done.output)]
    assert len(counts) >= 2, done.output  # the header's count and at least one table line
    assert [(n, w) for n, w in counts if (n == "1") != (not w.endswith("s"))] == [], counts


def test_weights_and_includes_are_validated():
    from repro.plan.manifest import parse_manifest
    from repro.spec.profiles import SHIPPED_PROFILES, parse_profiles
    from repro.core.schema import SchemaError, read_toml

    data = read_toml(MANIFESTS / "table5.toml")
    data["claims"][0]["weight"] = -1
    with pytest.raises(SchemaError) as info:
        parse_manifest(data, "table5.toml")
    assert "claims[0].weight" in str(info.value)
    profiles = read_toml(SHIPPED_PROFILES)
    profiles["profiles"]["full"]["include"] = "table5/dense"  # a string, not an array
    with pytest.raises(SchemaError) as info:
        parse_profiles(profiles, "p.toml")
    assert "profiles.full.include" in str(info.value)


def test_each_alternative_reading_a_table_trains_is_priced_with_the_rows_it_is_compared_with(needs):
    _, ns = needs
    literal = next(n for n in ns if n.key == "table1/reading:capacity-rule/literal_capacity")
    # the two MoE twins, and the dense rows their gaps are taken against, at the paper's five seeds
    assert literal.rows == (
        "table1/dw_h512_dense",
        "table1/dw_h512_moe__literal_capacity",
        "table1/std_h512_dense",
        "table1/std_h512_moe__literal_capacity",
    )
    assert literal.seeds == 5 and literal.runs == 20 and literal.weight == pl.SENSITIVITY_WEIGHT
    init = next(n for n in ns if n.key == "table1/reading:conv-init/torch_init")
    assert set(init.rows) == {
        f"table1/{r}"
        for r in (
            "std_h512_moe__torch_init",
            "std_h512_dense__torch_init",
            "dw_h512_moe__torch_init",
            "dw_h512_dense__torch_init",
        )
    }


def test_a_days_plan_is_one_screen_at_80_columns(tmp_path):
    """`repro plan --gpu-hours 24` printed 467-527 lines at 80 columns (7-8 "Key: value" lines per claim): one line
    per claim now, -v for the detail."""
    out = CliRunner().invoke(
        app, ["plan", "--gpu-hours", "24", "--results-dir", str(tmp_path / "none")], env={"COLUMNS": "80"}
    )
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert len(lines) <= 60 and max(len(line) for line in lines) <= 80, out.output
    verbose = CliRunner().invoke(
        app, ["plan", "--gpu-hours", "24", "-v", "--results-dir", str(tmp_path / "none")], env={"COLUMNS": "80"}
    )
    assert verbose.exit_code == 0 and len(verbose.output.splitlines()) > len(lines)

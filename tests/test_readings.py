"""Readings as data (repro/spec/readings.toml, repro.spec.readings): what each applies to, the chosen values the
manifests must carry, the rows [[sensitivity]] generates, and every analytic claim under every alternative."""

import copy

import pytest

from checkout import MANIFESTS
from repro.claims import Evidence, evaluate
from repro.claims.under_readings import decide_readings
from repro.plan.manifest import find_manifest, load_all, parse_manifest
from repro.models import Component
from repro.spec.readings import SHIPPED_READINGS, parse_readings, readings_by_id, shipped_readings
from repro.core.schema import SchemaError, read_toml

TABLE1 = read_toml(MANIFESTS / "table1.toml")
READINGS = read_toml(SHIPPED_READINGS)


def test_the_readings_the_issue_names_are_declared_each_with_alternatives():
    ids = set(readings_by_id())
    assert ids == {
        "cnn-convs-per-block",
        "cnn-features",
        "dense-head",
        "backbone-moe-layers",
        "capacity-rule",
        "experts-per-sample",
        "conv-init",
        "sigmoid-form",
        "lb-fraction",
        "batch-size",
        "routing-hyperparameters",
        "moe-conv-gate",
        "moe-conv-regularisers",
        "k-warmup-form",
        "dense-dropout",
        "expert-dropout",
        "tau-step",
        "router-in-rho",
        "routing-entropy",
        "dense-latency-scope",
        "uniform-routing-when",
        "negligible-band",
        "moe-conv-k-count",
    }
    assert all(r.alternatives for r in shipped_readings())


def test_every_reading_applies_to_a_shipped_row_or_claim_and_every_main_row_carries_its_chosen_value():
    manifests = load_all()
    rows = [r for m in manifests for r in m.rows]
    claims = {f"{m.id}/{c.id}": c for m in manifests for c in m.claims}
    for reading in shipped_readings():
        if reading.applies.claims:  # a reading of what claims measure: each names a shipped claim that carries it
            assert set(reading.applies.claims) <= set(claims), reading.id
            assert all(
                reading.claim_params(c.split("/")[0], claims[c], reading.chosen) == claims[c].params
                for c in reading.applies.claims
            ), reading.id
            assert not any(reading.applies_to(r) for r in rows), reading.id
            continue
        applied = [r for r in rows if reading.applies_to(r)]
        assert applied, f"{reading.id} applies to no row"
        assert all(reading.holds(r) for r in applied if r.role == "main"), reading.id


def test_what_a_reading_applies_to_and_what_it_changes():
    t1, t5, t6 = find_manifest("table1"), find_manifest("table5"), find_manifest("table6")
    dense_head = readings_by_id()["dense-head"]
    assert dense_head.applies_to(t6.row("cifar10_dw072_dense"))  # F -> 1024 -> 256 -> 10
    assert not dense_head.applies_to(t1.row("std_h128_dense"))  # the sweep's head is stated: 1024 -> h
    assert not dense_head.applies_to(t5.row("dense"))  # ResNet-18's own classifier
    dropout = readings_by_id()["dense-dropout"]
    assert dropout.applies_to(t1.row("std_h128_dense")) and not dropout.applies_to(t5.row("dense"))  # no hidden layer
    warmup = readings_by_id()["k-warmup-form"]
    assert warmup.applies_to(t1.row("std_h128_moe")) and not warmup.applies_to(t6.row("r18_head"))  # no warm-up
    assert not readings_by_id()["router-in-rho"].training_only(readings_by_id()["router-in-rho"].alternatives[0])
    moe = readings_by_id()["backbone-moe-layers"]
    twin = moe.vary(t6.row("r18_backbone_moe"), moe.alternative("stride1"))
    assert twin.id == "r18_backbone_moe__stride1" and twin.role == "sensitivity" and twin.base == "r18_backbone_moe"
    assert twin.backbone == Component("resnet18_moeconv", {"top_k": 2, "routed": "stride1"})
    assert twin.reading == "backbone-moe-layers/stride1" and twin.head == t6.row("r18_backbone_moe").head
    assert not moe.training_only(moe.alternatives[0])
    for name in (
        "capacity-rule",
        "experts-per-sample",
        "conv-init",
        "sigmoid-form",
        "lb-fraction",
        "batch-size",
        "routing-hyperparameters",
        "moe-conv-gate",
        "moe-conv-regularisers",
        "k-warmup-form",
        "dense-dropout",
        "expert-dropout",
        "tau-step",
    ):
        assert all(readings_by_id()[name].training_only(a) for a in readings_by_id()[name].alternatives), name


def test_table5_shows_only_what_applies_to_its_rows():
    # Its dense-head assumption (feature_dim -> 1024 -> 256) contradicted its backbone-classifier one (512 -> 1000):
    # readings apply by what a row is, so neither that nor the CNN layout or capacity rule shows for Table 5.
    t5 = find_manifest("table5")
    assert [r.id for r in t5.readings] == [
        "backbone-moe-layers",
        "moe-conv-gate",
        "moe-conv-regularisers",
        "moe-conv-k-count",
    ]
    assert "backbone-classifier" in [a.id for a in t5.assumptions]
    assert not {"dense-head", "cnn-blocks", "capacity-rule"} & {a.id for a in t5.assumptions}


def test_no_manifest_repeats_a_reading_as_an_assumption_of_its_own():
    readings = set(readings_by_id()) | {"cnn-blocks"}  # cnn-blocks: the two CNN readings' former home
    for m in load_all():
        assert not readings & {a.id for a in m.assumptions}, m.id


def _table1(mutate):
    doc = copy.deepcopy(TABLE1)
    mutate(doc)
    return parse_manifest(doc, "table1.toml")


def test_a_main_row_that_departs_from_a_reading_is_refused_naming_both():
    def literal(doc):
        doc["rows"][1]["head"]["capacity_candidates"] = 0

    with pytest.raises(SchemaError) as exc:
        _table1(literal)
    (problem,) = exc.value.problems
    assert problem.startswith("rows[1]: 'std_h128_moe' departs from reading 'capacity-rule'")
    assert "head.capacity_candidates = 0, not 'all'" in problem

    def as_sensitivity(doc):
        literal(doc)
        doc["rows"][1]["role"] = "sensitivity"

    assert _table1(as_sensitivity).row("std_h128_moe").head.params["capacity_candidates"] == 0


def comps_of(manifest):
    return {c.id: (c.row, c.baseline) for c in manifest.comparisons}


def test_sensitivity_tables_generate_rows_and_comparisons_that_vary_every_side_a_reading_touches():
    t1 = find_manifest("table1")
    twins = {r.id: r for r in t1.rows if r.reading}
    head_only = (
        "k_hold",
        "drop_last_hidden",
        "tau_per_step",
        "fi_samples",
        "capacity_1",
        "capacity_2",
        "aux_weights_0001",
        "aux_weights_01",
    )  # the DW h = 128 pair's: the MoE head's alone
    assert set(twins) == {
        f"{b}__{a}" for b in ("std_h512_moe", "dw_h512_moe") for a in ("literal_capacity", "one_expert", "torch_init")
    } | {"std_h512_dense__torch_init", "dw_h512_dense__torch_init"} | {
        f"dw_h128_moe__{a}" for a in (*head_only, "batch_64", "batch_256")
    } | {f"dw_h128_dense__{a}" for a in ("dense_no_dropout", "batch_64", "batch_256")}
    assert comps_of(t1)["dw_h128__dense_no_dropout"] == ("dw_h128_moe", "dw_h128_dense__dense_no_dropout")
    assert comps_of(t1)["dw_h128__batch_64"] == ("dw_h128_moe__batch_64", "dw_h128_dense__batch_64")
    assert twins["dw_h512_moe__literal_capacity"].head.params["capacity_candidates"] == 0
    assert twins["dw_h512_dense__torch_init"].backbone.params == {"init": "torch"}
    comps = {c.id: (c.row, c.baseline) for c in t1.comparisons}
    assert comps["dw_h512__literal_capacity"] == ("dw_h512_moe__literal_capacity", "dw_h512_dense")
    assert comps["dw_h512__torch_init"] == ("dw_h512_moe__torch_init", "dw_h512_dense__torch_init")
    assert all(twins[r].measures == ("flops", "accuracy") for r in twins)


def test_table5_trains_each_gate_and_the_heads_regularisers_at_k1_and_k2_against_one_dense_twin():
    t5 = find_manifest("table5")
    twins = {r.id: r for r in t5.rows if r.reading}
    assert set(twins) == {f"{k}_moe__{a}" for k in ("k1", "k2") for a in ("switch_gate", "head_regularisers")}
    assert twins["k1_moe__switch_gate"].backbone == Component("resnet18_moeconv", {"top_k": 1, "gate": "switch"})
    assert twins["k2_moe__head_regularisers"].backbone.params == {
        "top_k": 2,
        "capacity_factor": 1.25,
        "load_balance_weight": 0.01,
        "entropy_weight": 0.01,
        "tau_min": 0.3,
    }
    comps = {c.id: (c.row, c.baseline) for c in t5.comparisons}
    assert comps["k1__switch_gate"] == ("k1_moe__switch_gate", "dense")
    assert comps["k2__head_regularisers"] == ("k2_moe__head_regularisers", "dense")


@pytest.mark.parametrize(
    "sensitivity, message",
    [
        ({"rows": ["nope"], "readings": ["conv-init"]}, "sensitivity[0].rows[0]: no row 'nope'"),
        ({"rows": ["std_h512_moe"], "readings": ["conv-inits"]}, "no reading 'conv-inits' (did you mean 'conv-init'?)"),
        (
            {"rows": ["std_h512_dense"], "readings": ["capacity-rule"]},
            "reading 'capacity-rule' applies to none of the rows std_h512_dense",
        ),
    ],
)
def test_a_bad_sensitivity_table_is_refused(sensitivity, message):
    with pytest.raises(SchemaError) as exc:
        _table1(lambda doc: doc.__setitem__("sensitivity", [sensitivity]))
    assert any(message in p for p in exc.value.problems), exc.value.problems


@pytest.mark.parametrize(
    "mutate, where, message",
    [
        (
            lambda r: r[4]["alternatives"][0]["head"].__setitem__("capacity_candidate", 0),
            "readings[4].alternatives[0].head.capacity_candidate",
            "not a parameter of head 'sparse_moe' (did you mean 'capacity_candidates'?)",
        ),
        (
            lambda r: r[4]["alternatives"][0]["head"].__setitem__("capacity_candidates", "most"),
            "readings[4].alternatives[0].head.capacity_candidates",
            "expected",
        ),
        (
            lambda r: r[3]["applies"].__setitem__("backbones", ["resnet18_moe"]),
            "readings[3].applies.backbones[0]",
            "unknown backbone 'resnet18_moe'",
        ),
        (
            lambda r: r[0]["alternatives"][0].__setitem__("id", "flatten"),
            "readings[1]",
            "choice id 'flatten' is used twice",
        ),
        (
            lambda r: r[9].__setitem__("chosen", {"id": "x", "label": "x", "head": {"hidden": [8]}}),
            "readings[9].chosen.head",
            "overrides the head of rows the reading does not name",
        ),
    ],
)
def test_a_bad_readings_file_is_refused_naming_the_key(mutate, where, message):
    doc = copy.deepcopy(READINGS)
    mutate(doc["readings"])
    with pytest.raises(SchemaError) as exc:
        parse_readings(doc, "readings.toml")
    assert any(p.startswith(where) and message in p for p in exc.value.problems), exc.value.problems


def _stub_recount(varied):
    return {"rho": 0.38, "total_macs": 100, "routed_macs": 38} if varied.reading.endswith("stride1") else None


def test_decide_readings_decides_each_alternative_from_the_recount_and_says_what_was_not_counted():
    t6 = find_manifest("table6")
    metrics = {f"rows.{r.id}.rho": 0.452 for r in t6.rows}
    ev = Evidence("table6", "table6", "smoke", metrics=metrics, kind="pipeline")
    entries = {e.claim: e for e in decide_readings(t6, ev, _stub_recount)}
    moe = entries["rho_backbone_moe"]
    assert moe.chosen.status == "not reproduced" and moe.chosen.value == "45.2%"
    stride1, per_bank = moe.alternatives
    assert (stride1.reading, stride1.alternative, stride1.status, stride1.value) == (
        "backbone-moe-layers",
        "stride1",
        "reproduced",
        "38%",
    )
    assert (per_bank.reading, per_bank.status) == ("moe-conv-k-count", "not run")  # the stub counts stride1 only
    assert moe.depends and moe.line() == (
        "rho_backbone_moe: not reproduced under the chosen readings (45.2%); "
        "reproduced under 'the six stride-1 3x3 convolutions' (backbone-moe-layers) (38%); "
        "not run under 'the k banks' convolutions, k a sample' (moe-conv-k-count)"
    )
    near_half = entries["rho_cifar_dw_near_half"]
    assert {o.status for o in near_half.alternatives} == {"not run"}  # the stub counted no CNN layout
    assert "capacity-rule" in near_half.training_only and "conv-init" in near_half.training_only
    assert set(entries) == {c.id for c in t6.claims if c.scope == "analytic"}
    assert (
        entries["rho_r18_head"].chosen.status
        == evaluate(next(c for c in t6.claims if c.id == "rho_r18_head"), ev).status
    )


def test_training_only_alternatives_change_no_count():
    from repro.measure.flop_check import analytic_summary
    from repro.measure.latency import operator_counts

    rows = {
        "capacity-rule": ("table7", "cifar100_sparse_loop"),
        "experts-per-sample": ("table7", "cifar100_sparse_loop"),
        "lb-fraction": ("table7", "cifar100_sparse_loop"),
        "routing-hyperparameters": ("table7", "cifar100_sparse_loop"),
        "conv-init": ("table6", "cifar10_dw072_moe"),
        "sigmoid-form": ("headline_cifar10", "dw2_moe"),
        "moe-conv-gate": ("table6", "r18_backbone_moe"),
        "moe-conv-regularisers": ("table6", "r18_backbone_moe_k1"),
        "k-warmup-form": ("table1", "std_h512_moe"),
        "tau-step": ("table7", "cifar100_sparse_loop"),
        "dense-dropout": ("table7", "cifar100_dense"),
        "expert-dropout": ("table7", "cifar100_soft"),
    }
    for name, (table, row_id) in rows.items():
        reading, row = readings_by_id()[name], find_manifest(table).row(row_id)
        base = analytic_summary(row.dataset, row.backbone, row.head)
        for alt in reading.alternatives:
            twin = reading.vary(row, alt)
            assert analytic_summary(twin.dataset, twin.backbone, twin.head) == base, (name, alt.id)
            if "latency" in row.measures:
                assert operator_counts(twin) == operator_counts(row), (name, alt.id)


@pytest.mark.slow
def test_the_readings_analytic_counts_equal_the_three_way_counts_of_every_row_an_analytic_claim_reads():
    from repro.claims.references import claim_rows
    from repro.measure.flop_check import analytic_summary, row_flops
    from repro.results.measurements import FLOP_SUMMARY

    t6 = find_manifest("table6")
    read = {r for c in t6.claims if c.scope == "analytic" for r in claim_rows(c, t6.comparisons)}
    for row in t6.rows:
        if row.id in read or row.reading:
            full = row_flops(row).summary()
            assert analytic_summary(row.dataset, row.backbone, row.head) == {k: full[k] for k in FLOP_SUMMARY}, row.id


def _paper_evidence(manifest, gaps: dict[str, float], rho: dict[str, float]) -> Evidence:
    """Evidence of kind 'paper' (it decides empirical claims): five seeds per row at 80% against chance 10%, each
    comparison's gap a tight paired one, each MoE row's rho."""
    metrics = {
        f"rows.{r.id}.{k}": v
        for r in manifest.rows
        for k, v in (("accuracy", {s: 0.8 for s in range(5)}), ("chance", 0.1))
    }
    for comp, mean in gaps.items():
        metrics[f"comparisons.{comp}.gap"] = {
            "n": 5,
            "mean": mean,
            "sd": 0.001,
            "p": 1e-4,
            "ci95": [mean - 0.001, mean + 0.001],
            "positive": 5 if mean > 0 else 0,
            "differences": {s: mean for s in range(5)},
        }
    for comp, value in rho.items():
        metrics[f"comparisons.{comp}.rho"] = value
    return Evidence(
        manifest.id,
        manifest.paper_table,
        "full",
        metrics=metrics,
        kind="paper",
        comparison_rows={c.id: (c.row, c.baseline) for c in manifest.comparisons},
    )


def test_a_reading_that_moves_rho_decides_the_rho_ordered_claims_again_on_the_same_gaps():
    """Pooled features put Table 1's DW h=128 (1.4%) below std h=512 (2.1%): gaps monotonic in the chosen rho
    are out of order in that one, without any training (issue 38, item 5)."""
    t1 = find_manifest("table1")
    chosen = {
        "std_h128": 0.043,
        "std_h512": 0.129,
        "dw_h128": 0.244,
        "std_h2048": 0.435,
        "dw_h512": 0.512,
        "dw_h2048": 0.845,
    }
    pooled = {
        "std_h128": 0.002,
        "dw_h128": 0.014,
        "std_h512": 0.021,
        "dw_h512": 0.131,
        "std_h2048": 0.237,
        "dw_h2048": 0.687,
    }
    gaps = {
        "std_h128": -0.03,
        "std_h512": -0.02,
        "dw_h128": -0.01,
        "std_h2048": 0.01,
        "dw_h512": 0.02,
        "dw_h2048": 0.03,
    }
    rows_rho = {c.row: pooled[c.id] for c in t1.comparisons if c.id in pooled}

    def recount(varied):
        if varied.reading != "cnn-features/gap_features":
            return None
        return {"rho": rows_rho.get(varied.base, 0.0)}

    entries = {e.claim: e for e in decide_readings(t1, _paper_evidence(t1, gaps, chosen), recount)}
    mono = entries["t1_gap_monotonic_in_rho"]
    assert mono.kind == "ordered by rho" and mono.chosen.status == "reproduced"
    pooled_outcome = next(o for o in mono.alternatives if o.reading == "cnn-features")
    assert pooled_outcome.status == "not reproduced" and "dw_h128" in " ".join(pooled_outcome.failed)
    assert pooled_outcome.order.startswith("std_h128 0.2% < dw_h128 1.4% < std_h512 2.1%")
    assert mono.depends and "conv-init" in mono.training_only
    assert entries["t1_sign_follows_rho"].chosen.status == "reproduced"  # -, -, -, +, +, + in either order
    assert {o.status for o in entries["t1_sign_follows_rho"].alternatives} == {"reproduced", "not run"}


def test_an_empirical_claim_is_decided_again_on_the_rows_each_trained_alternative_gives_its_comparisons():
    t5 = find_manifest("table5")
    gaps = {
        "k2": 0.012,
        "k1": -0.021,
        "k2__switch_gate": 0.004,
        "k1__switch_gate": 0.009,
        "k2__head_regularisers": 0.011,
        "k1__head_regularisers": -0.015,
    }
    entries = {e.claim: e for e in decide_readings(t5, _paper_evidence(t5, gaps, {}), lambda row: None)}
    reversal = entries["bb_moe_k_reversal"]
    assert reversal.kind == "trained"
    assert [(o.alternative, o.value) for o in reversal.alternatives] == [
        ("switch_gate", "-0.50pp"),
        ("head_regularisers", "+2.60pp"),
    ]
    assert reversal.chosen.value == "+3.30pp"
    line = reversal.sign_line()
    assert line.startswith("bb_moe_k_reversal (") and line.endswith(
        "): +3.30pp as chosen, -0.50pp under switch_gate, +2.60pp under head_regularisers: "
        "the sign flips under switch_gate"
    )
    k1 = entries["bb_moe_k1_negative"]
    assert [o.status for o in k1.alternatives] == ["not reproduced", "reproduced"]
    assert "keeps its sign" not in k1.sign_line()
    assert entries["bb_moe_k2_positive"].sign_line().endswith("it keeps its sign under every trained alternative")
    from repro.report.readings_section import trained_summary

    assert trained_summary(list(entries.values())).endswith(
        "changes sign under an alternative for bb_moe_k1_negative (switch_gate), bb_moe_k1_gap_size (switch_gate), "
        "bb_moe_k_reversal (switch_gate)"
    )
    assert not any(
        e.kind == "trained" for e in decide_readings(t5, _paper_evidence(t5, gaps, {}), lambda r: None, trained=False)
    )


def test_the_checklist_says_on_its_row_which_alternative_alone_reproduces_a_claim():
    t6 = find_manifest("table6")
    metrics = {f"rows.{r.id}.rho": 0.452 for r in t6.rows}
    ev = Evidence("table6", "table6", "smoke", metrics=metrics, kind="pipeline")
    entries = {e.claim: e for e in decide_readings(t6, ev, _stub_recount)}
    assert entries["rho_backbone_moe"].only_under() == (
        "reproduced under the alternative reading 'the six stride-1 3x3 convolutions' "
        "(backbone-moe-layers/stride1), 38%"
    )
    assert entries["rho_r18_head"].only_under() == ""


def test_repro_readings_lists_every_reading_and_the_rho_order_each_gives_table1():
    from typer.testing import CliRunner

    from repro.cli import app

    out = CliRunner().invoke(app, ["readings", "table1", "table5", "-v"], env={"COLUMNS": "250"})
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    gate = next(line for line in lines if line.startswith("moe-conv-gate "))
    assert "softmax over the k selected logits" in gate and "switch_gate" in gate and "table5's [[sensitivity]]" in gate
    assert any(line.startswith("moe-conv-regularisers ") and "head_regularisers" in line for line in lines)
    assert "table1/t1_gap_monotonic_in_rho (empirical, ordered by rho)" in out.output
    pooled = next(line for line in lines if line.lstrip().startswith("cnn-features") and "not run" in line)
    assert "std_h128 0.199% < dw_h128 1.4% < std_h512 2.08%" in pooled


def test_the_checklist_says_under_rho_backbone_moes_row_that_it_reproduces_under_the_stride1_reading():
    from repro.claims.decide import decide_table
    from repro.report.render import render_claims_md
    from repro.results.measurements import READINGS_DETAIL, ManifestResult, Measured

    t6 = find_manifest("table6")
    measured = Measured(metrics={f"rows.{r.id}.rho": 0.452 for r in t6.rows})
    stride1 = {"rho": 0.388, "total_macs": 100, "routed_macs": 38}
    measured.details[READINGS_DETAIL] = {
        "rows": {"r18_backbone_moe__stride1": stride1, "r18_backbone_moe_k1__stride1": stride1}
    }
    result = decide_table(
        t6,
        ManifestResult(
            "table6", t6.title, t6.paper_ref, t6.paper_table, "smoke", measured, [], {}, t6.profiles.get("smoke")
        ),
    )
    lines = render_claims_md(t6, result).splitlines()
    at = next(i for i, line in enumerate(lines) if "(`rho_backbone_moe`)" in line)
    assert "**not reproduced**" in lines[at]
    below = lines[at + 1]  # its own line, right under the claim's
    assert "`rho_backbone_moe` under the alternative reading 'the six stride-1 3x3 convolutions'" in below
    assert "**reproduced only under an alternative reading**" in below and "38.8%" in below


def test_router_in_rho_moves_the_head_only_rho_as_its_text_says():
    """The reading router-in-rho: the experts alone in FLOPs_routed, not the router that picks them."""
    from repro.measure.flop_check import analytic_summary

    reading, t6 = readings_by_id()["router-in-rho"], find_manifest("table6")
    shown = {}
    for row_id in ("r18_head", "mnv2_head", "cifar10_std_moe"):
        row = t6.row(row_id)
        twin = reading.vary(row, reading.alternative("experts_only"))
        shown[row_id] = tuple(
            f"{100 * analytic_summary(r.dataset, r.backbone, r.head)['rho']:.3g}%" for r in (row, twin)
        )
    assert shown == {
        "r18_head": ("0.0592%", "0.0571%"),
        "mnv2_head": ("0.506%", "0.475%"),
        "cifar10_std_moe": ("8.24%", "6.78%"),
    }


def test_a_head_that_counts_its_experts_only_names_them_as_the_routed_modules():
    from repro.models import build_model

    with __import__("torch").device("meta"):
        whole = build_model("cifar10", Component("cifar_standard"), Component("sparse_moe", {"expert_hidden": 8}))
        experts = build_model(
            "cifar10",
            Component("cifar_standard"),
            Component("sparse_moe", {"expert_hidden": 8, "rho_counts_router": False}),
        )
    assert whole.routed_module_names() == ["head"] and experts.routed_module_names() == ["head.experts"]


def test_a_reading_of_what_a_claim_measures_decides_it_again_on_the_same_runs():
    """'Routing entropy' (Section 5.3) as the test-time usage's entropy or as p_bar's: the same seeds, two metrics."""
    t4 = find_manifest("table4")
    assert "routing-entropy" in [r.id for r in t4.readings]
    gaps = {"mnv2_h512": {0: -0.01, 1: -0.02, 2: -0.03}, "mnv2_h256": {0: -0.02, 1: -0.03, 2: -0.04}}
    metrics = {}
    for comp, diffs in gaps.items():
        metrics[f"comparisons.{comp}.gap"] = {"mean": sum(diffs.values()) / 3, "differences": diffs}
    rows = dict((c.id, c.row) for c in t4.comparisons)
    for comp in gaps:  # usage entropy rises as the gap falls (negative: reproduced); p_bar's falls with it
        metrics[f"rows.{rows[comp]}.routing_balance"] = {0: 0.5, 1: 0.6, 2: 0.7}
        metrics[f"rows.{rows[comp]}.routing_p_entropy"] = {0: 0.7, 1: 0.6, 2: 0.5}
    for r in t4.rows:
        metrics[f"rows.{r.id}.accuracy"], metrics[f"rows.{r.id}.chance"] = {s: 0.7 for s in range(3)}, 0.001
    ev = Evidence(
        "table4",
        "table4",
        "full",
        metrics=metrics,
        kind="paper",
        comparison_rows={c.id: (c.row, c.baseline) for c in t4.comparisons},
    )
    entry = next(
        e for e in decide_readings(t4, ev, lambda row: None) if e.claim == "in_mnv2_lower_entropy_less_negative"
    )
    (alt,) = entry.alternatives
    assert entry.kind == "metric" and (alt.reading, alt.alternative) == ("routing-entropy", "entropy_of_p")
    assert entry.chosen.status == "reproduced" and alt.status == "not reproduced" and entry.depends
    assert "routing_p_entropy against the gap" in alt.evidence


def test_a_claim_that_departs_from_a_reading_of_what_it_measures_is_refused():
    doc = read_toml(MANIFESTS / "table4.toml")
    claim = next(c for c in doc["claims"] if c["id"] == "in_mnv2_lower_entropy_less_negative")
    claim["row_metric"] = "routing_top_share"
    with pytest.raises(SchemaError) as exc:
        parse_manifest(doc, "table4.toml")
    assert any(
        "departs from reading 'routing-entropy'" in p and "row_metric = 'routing_top_share'" in p
        for p in exc.value.problems
    ), exc.value.problems


def test_the_routing_p_entropy_metric_is_p_bars_entropy_over_log_e():
    import math

    from repro.measure.accuracy import routing_p_entropy

    assert routing_p_entropy({"routing_entropy": math.log(4) / 2, "expert_usage": [1, 2, 3, 4]}) == pytest.approx(0.5)
    assert routing_p_entropy({"expert_usage": [1, 2]}) is None and routing_p_entropy({}) is None


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda r: r.__setitem__("applies", {"claims": ["table4-in_mnv2"]}), "expected '<manifest>/<claim>'"),
        (
            lambda r: r["alternatives"][0].__setitem__("head", {"dropout": 0.0}),
            "a reading of claims overrides claim parameters only",
        ),
        (lambda r: r["alternatives"][0].pop("claim"), "a reading names claims (applies.claims) and overrides"),
    ],
)
def test_a_bad_reading_of_claims_is_refused(mutate, message):
    doc = copy.deepcopy(READINGS)
    entropy = next(r for r in doc["readings"] if r["id"] == "routing-entropy")
    mutate(entropy)
    with pytest.raises(SchemaError) as exc:
        parse_readings(doc, "readings.toml")
    assert any(message in p for p in exc.value.problems), exc.value.problems


def test_repro_readings_counts_as_the_report_does(tmp_path):
    """`repro readings` and a table's run give one figure: the models counted are the alternatives' alone (the
    rows as chosen are the FLOP check's), and the extension's claims are counted apart, as the report does."""
    from typer.testing import CliRunner

    from repro.cli import app
    from repro.measure.reading_counts import readings_for
    from repro.pipeline import Context, run_manifest
    from repro.plan.table_plan import build_plan
    from repro.results.measurements import READINGS_DETAIL

    table6 = find_manifest("table6")
    run = run_manifest(build_plan(table6, "smoke"), Context("smoke", tmp_path)).result
    entries, detail = readings_for(table6)
    assert detail["models"] == run.measured.details[READINGS_DETAIL]["models"] > 0
    assert [(e.claim, e.kind) for e in entries] == [(e.claim, e.kind) for e in run.readings if e.kind != "trained"]

    out = CliRunner().invoke(app, ["readings", "table1", "ext_routers"], env={"COLUMNS": "400"})
    assert out.exit_code == 0, out.output
    paper = next(line for line in out.output.splitlines() if line.startswith("Readings: "))
    beyond = next(line for line in out.output.splitlines() if line.startswith("Beyond the paper "))
    assert "2 empirical claims ordered by rho" in paper  # table1's two, not the extension's four
    assert "4 empirical claims ordered by rho" in beyond and "0 analytic claims" in beyond


def test_repro_readings_without_v_names_the_readings_decided_by_training_and_the_tables_that_train_them():
    """Table 5's gate and regularisers change only training: no count decides them, so the claims table has no
    row for them, and without this line `repro readings` did not name them at all."""
    from typer.testing import CliRunner

    from repro.cli import app

    out = CliRunner().invoke(app, ["readings"], env={"COLUMNS": "400"})
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())  # the line, wrapped or not
    line = text[text.index("Decided by training") :].split(" -v: ")[0]
    assert "moe-conv-gate (table5)" in line and "moe-conv-regularisers (table5)" in line
    trained, untrained = line.split("trained by no table: ")
    assert untrained.strip() == "none"  # every reading that changes only training is trained somewhere
    for reading in (
        "k-warmup-form",
        "dense-dropout",
        "expert-dropout",
        "tau-step",
        "lb-fraction",
        "batch-size",
        "routing-hyperparameters",
    ):
        assert f"{reading} (table1)" in trained
    assert "sigmoid-form (temperature_ablation)" in trained


def test_an_alternative_not_run_does_not_count_as_changing_the_verdict():
    """The report's headline lists the claims whose verdict an alternative changes: one not counted when its table
    ran (a reading added since; the detail says to run the table again) has no verdict, so it changes none."""
    from repro.claims.under_readings import ClaimReadings, ReadingOutcome

    def outcome(alternative: str, status: str) -> ReadingOutcome:
        return ReadingOutcome("r" if alternative else "", alternative, "l", status, "", "e")

    entry = ClaimReadings("t", "c", "s", "method-and-results", outcome("", "reproduced"), [outcome("new", "not run")])
    assert not entry.depends
    entry.alternatives.append(outcome("counted", "not reproduced"))
    assert entry.depends

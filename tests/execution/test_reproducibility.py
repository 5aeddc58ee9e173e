"""What a run's numbers depend on, stated and held: its threads and deterministic mode are part of its identity,
every executor trains on them, and two deterministic trainings give the same bits."""

import json
from dataclasses import replace

import pytest
import torch
from fake_records import PROFILE, config, record  # tests/fake_records.py

from repro.execution.local import Slot, run_local
from repro.execution.protocol import ExecutionRequest, RunRequest, RunState
from repro.execution.record_checks import record_digest
from repro.execution.runs import execute_runs, pending_runs, record_path, runs_dir
from repro.plan.manifest import Row
from repro.models import Component
from repro.plan.run_config import resolve

SPARSE = Row(
    id="moe",
    label="moe",
    dataset="cifar10",
    backbone=Component("cifar_standard"),
    head=Component("sparse_moe", {"expert_hidden": 32}),
    measures=("accuracy",),
)


def _numbers(rec):
    """What must be bit-identical: metrics, the history without its timings, the routing."""
    return {
        "metrics": rec["metrics"],
        "routing": rec["routing"],
        "history": [{k: v for k, v in h.items() if k != "seconds"} for h in rec["history"]],
    }


@pytest.mark.slow
def test_two_deterministic_trainings_give_identical_metrics_history_and_routing(tmp_path, one_thread):
    cfg = resolve(SPARSE, replace(PROFILE, epochs=3, train_samples=128, threads=2, deterministic=True), seed=0)
    assert (cfg.threads, cfg.deterministic) == (2, True)
    first, second = (
        execute_runs([RunRequest(cfg, "moe")], tmp_path / name, "cpu").records[cfg.hash] for name in ("a", "b")
    )
    assert _numbers(first) == _numbers(second)
    assert first["routing"]["expert_usage"] and len(first["history"]) == 3
    facts = first["provenance"]["reproducibility"]
    assert (facts["threads"], facts["deterministic"], facts["nondeterministic_ops"]) == (2, True, [])
    assert first["provenance"]["device"].endswith(", 2 intra-op thread(s)")
    assert torch.get_num_threads() == 1  # this process's own setting is given back


@pytest.mark.slow
def test_the_run_trains_on_its_threads_in_this_process_and_in_a_worker_alike(tmp_path, one_thread):
    """The local executor's two kinds of slot (the command's process, a pool worker) train a 2-thread run on
    2 threads, whatever the process itself uses, and so write the same numbers."""
    cfg = resolve(SPARSE, replace(PROFILE, threads=2), seed=1)
    here = run_local(
        ExecutionRequest((RunRequest(cfg, "moe"),), tmp_path / "here", "cpu"), slots=[Slot("cpu", in_process=True)]
    )
    worker = run_local(ExecutionRequest((RunRequest(cfg, "moe"),), tmp_path / "worker", "cpu"), slots=[Slot("cpu/0")])
    assert [o.state for o in here + worker] == [RunState.TRAINED] * 2
    assert [o.record["provenance"]["reproducibility"]["threads"] for o in here + worker] == [2, 2]
    assert _numbers(here[0].record) == _numbers(worker[0].record)


def test_a_record_from_before_thread_counts_named_a_run_is_reused_only_at_its_own_count(tmp_path, capsys):
    """Records written before `threads` was a config key keep their hash at one thread
    (repro.plan.run_config.LATER_DEFAULTS); their CPU device label says what they trained on, and one trained on
    another count is redone."""
    cfg = config()
    old = record(cfg)
    old["config"] = {k: v for k, v in old["config"].items() if k not in ("threads", "deterministic")}
    del old["provenance"]["reproducibility"]
    for threads, reused in ((1, True), (2, False)):
        old["provenance"]["device"] = f"cpu: x86_64, {threads} intra-op thread(s)"
        old["digest"] = record_digest(old)
        path = record_path(tmp_path, cfg)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(old))
        batch, todo = pending_runs([RunRequest(cfg, "r")], tmp_path)
        assert (batch.counts.reused == 1) is reused and (not todo) is reused
    said = capsys.readouterr().out
    assert "it was trained on 2 intra-op thread(s) and this run trains on 1" in said
    assert [p.name.split(".invalid-")[0] for p in runs_dir(tmp_path).glob("*.invalid-*")] == [f"{cfg.hash}.json"]


@pytest.mark.slow
def test_a_record_states_the_facts_its_numbers_depend_on(tmp_path):
    cfg = config()
    rec = execute_runs([RunRequest(cfg, "r")], tmp_path, "cpu").records[cfg.hash]
    facts = rec["provenance"]["reproducibility"]
    assert set(facts) >= {"threads", "deterministic", "cpu_capability", "torch", "cuda", "cudnn"}
    assert (facts["threads"], facts["deterministic"]) == (cfg.threads, cfg.deterministic) == (1, False)
    assert rec["provenance"]["device"].startswith("cpu: ") and rec["provenance"]["packages"]["torch"]
    # the load it trained under, at its start and end (repro.cost.fit leaves a busy record out), beside its hash
    assert len(rec["provenance"]["load_average"]) == 2 and rec["provenance"]["cores"] >= 1
    assert rec["config_hash"] == cfg.hash


@pytest.mark.slow
def test_repro_deterministic_twice_gives_the_same_bits_under_runs_of_their_own(tmp_path):
    """`repro <id> --deterministic`, twice, in two results folders: every run's metrics, history and routing
    equal bit for bit; the runs are not the plain ones (deterministic mode is part of their name)."""
    from .minitable import counts, repro, write_manifest

    env = write_manifest(tmp_path, epochs=2, train_samples=128)
    numbers = []
    for name in ("a", "b"):
        proc = repro(tmp_path / name, {**env, "OMP_NUM_THREADS": "2"}, "--deterministic")
        out, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0 and counts(out) == (4, 0, 0), out
        records = {p.stem: json.loads(p.read_text()) for p in runs_dir(tmp_path / name).glob("*.json")}
        assert {(r["config"]["threads"], r["config"]["deterministic"]) for r in records.values()} == {(2, True)}
        assert all(r["provenance"]["reproducibility"]["nondeterministic_ops"] == [] for r in records.values())
        numbers.append({h: _numbers(r) for h, r in records.items()})
    assert len(numbers[0]) == 4 and numbers[0] == numbers[1]
    plain = replace(resolve(SPARSE, PROFILE, 0), threads=2)
    assert replace(plain, deterministic=True).hash != plain.hash

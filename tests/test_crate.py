"""A results profile folder's RO-Crate (repro.results.crate, repro.results.actions): each command that writes into the
folder is an action of it, merged into the crate, never clobbered; every table's numbers are based on the run
records behind them; and the crate conforms to the Provenance Run Crate profile by roc-validator (tests/crate_check.py
says how the validator gets its JSON-LD context offline)."""

import dataclasses
import hashlib
import json

import pytest
from crate_check import CONTEXT_URL, context_document, validate
from fake_records import PROFILE, config, record, write_record, write_result

from repro.results.acting import acting
from repro.results.actions import ACTIONS_FILE, CRATE_FILE, WORKFLOW_FILE, load_actions
from repro.results.measurements import Verdict


def graph(folder):
    doc = json.loads((folder / CRATE_FILE).read_text())
    return {e["@id"]: e for e in doc["@graph"]}, doc


def ids(value):
    return {v["@id"] for v in (value if isinstance(value, list) else [value])}


def make_table(results, table="t", seeds=2):
    """A table `t` of rows dense and moe over `seeds` seeds, and a claim reading both rows."""
    rows = {}
    for row, lr in (("dense", 0.5), ("moe", 0.25)):
        cfgs = [config(seed=s, profile=dataclasses.replace(PROFILE, lr=lr)) for s in range(seeds)]
        rows[row] = [record(c, accuracy=0.5 + 0.01 * s) for s, c in enumerate(cfgs)]
        for s, c in enumerate(cfgs):
            write_record(results, c, accuracy=0.5 + 0.01 * s)
    verdict = Verdict("c1", "MoE beats dense", "4.2", "empirical", "not run", "synthetic data", rows=["dense", "moe"])
    write_result(results, table, rows, verdicts=[verdict])
    return rows


@pytest.fixture
def folder(tmp_path):
    """A profile folder written by two commands: `run t` (the table) and `report` (a report beside it)."""
    results = tmp_path / "results"
    folder = results / "smoke"
    manifest = tmp_path / "t.toml"
    manifest.write_text("id = 't'\n")
    with acting("run t", folder, reads=[manifest]):
        make_table(results)
    with acting("report", folder):
        (folder / "report.md").write_text("# report\n")
    return folder


def test_the_context_given_to_the_validator_is_ro_crate_1_1s():
    assert json.loads(context_document())["@id"] == CONTEXT_URL


def test_a_folder_written_by_two_commands_holds_both_actions(folder):
    entities, doc = graph(folder)
    assert doc["@context"][0] == CONTEXT_URL
    assert [a.command for a in load_actions(folder)] == ["run t", "report"]
    run, report = (entities[f"#action/{a.id}"] for a in load_actions(folder))
    assert ids(run["result"]) == {"t/results.json"} and ids(report["result"]) == {"report.md"}
    assert run["actionStatus"] == report["actionStatus"] == "http://schema.org/CompletedActionStatus"
    # the manifest it read, with its sha256; the records the table's rows read
    manifest = next(entities[i] for i in ids(run["object"]) if i.startswith("#read/"))
    assert manifest["sha256"] == hashlib.sha256(b"id = 't'\n").hexdigest()
    records = {i for i in ids(run["object"]) if i.startswith("#record/")}
    assert len(records) == 4
    assert ids(report["object"]) == {"t/results.json"}  # the report read the table's results
    assert (folder / WORKFLOW_FILE).read_text().splitlines()[-2:] == ["repro run t", "repro report"]
    steps = ids(entities[WORKFLOW_FILE]["step"])
    assert {entities[i]["name"] for i in steps} == {"repro run t", "repro report"}


def test_every_number_is_traced_to_its_records_and_each_record_to_its_claims(folder):
    entities, _ = graph(folder)
    table = entities["t/results.json"]
    records = ids(table["isBasedOn"])
    assert len(records) == 4
    for rid in records:
        run_hash = rid.split("/", 1)[1]
        on_disk = (folder.parent / "runs" / f"{run_hash}.json").read_bytes()
        assert entities[rid]["sha256"] == hashlib.sha256(on_disk).hexdigest()
    claim = entities["#claim/t/c1"]
    assert ids(table["mentions"]) == {"#claim/t/c1"} and ids(claim["isBasedOn"]) == records
    assert claim["text"] == "MoE beats dense" and claim["description"].startswith("not run")
    table_file = (folder / "t" / "results.json").read_bytes()
    assert entities["t/results.json"]["sha256"] == hashlib.sha256(table_file).hexdigest()


def test_a_command_that_replaces_every_file_of_an_earlier_one_replaces_its_action(folder):
    with acting("report", folder):
        (folder / "report.md").write_text("# report, again\n")
    assert [a.command for a in load_actions(folder)] == ["run t", "report"]
    entities, _ = graph(folder)
    assert sum(1 for e in entities.values() if e.get("@type") == "CreateAction") == 3  # two commands and #run


def test_a_failed_command_is_a_failed_action(folder):
    with pytest.raises(RuntimeError), acting("appendix", folder):
        (folder / "artifact-appendix.md").write_text("half\n")
        raise RuntimeError("stopped")
    appendix = load_actions(folder)[-1]
    assert (appendix.command, appendix.status, appendix.wrote) == ("appendix", "failed", ["artifact-appendix.md"])
    entities, _ = graph(folder)
    assert entities[f"#action/{appendix.id}"]["actionStatus"] == "http://schema.org/FailedActionStatus"


def test_an_unreadable_log_is_started_again(folder):
    (folder / ACTIONS_FILE).write_text("{not json")
    with acting("report", folder):
        (folder / "report.md").write_text("# report\n")
    assert [a.command for a in load_actions(folder)] == ["report"]


def test_the_crate_conforms_to_the_provenance_run_crate_profile(folder, tmp_path):
    assert validate(folder, tmp_path) == []


def test_the_validator_finds_a_crate_that_does_not_conform(folder, tmp_path):
    """The validation is real: the same crate without the workflow's language fails it."""
    doc = json.loads((folder / CRATE_FILE).read_text())
    for entity in doc["@graph"]:
        entity.pop("programmingLanguage", None)
    (folder / CRATE_FILE).write_text(json.dumps(doc))
    problems = validate(folder, tmp_path)
    assert any("programmingLanguage" in p or "language" in p for p in problems), problems


@pytest.mark.slow
def test_verify_all_report_and_appendix_leave_a_crate_that_validates(smoke_folder, tmp_path):
    """The smoke folder of `repro verify-all`, then `repro report` and `repro appendix` (tests/conftest.py): three
    actions, one crate, accepted at the Provenance Run Crate profile."""
    folder = smoke_folder / "smoke"
    assert [a.command for a in load_actions(folder)] == ["verify-all", "report", "appendix"]
    verify_all = load_actions(folder)[0]
    assert verify_all.argv[:2] == ["repro", "verify-all"] and verify_all.status == "completed"
    assert {"headline_cifar10/results.json", "table6/results.json"} <= set(verify_all.wrote)
    entities, _ = graph(folder)
    records = {p.stem for p in (smoke_folder / "runs").glob("*.json")}
    assert len(records) == 8 and {f"#record/{h}" for h in records} <= set(entities)
    assert validate(folder, tmp_path) == []


def test_a_dataset_is_described_with_its_checksum_state_unverified_flag_and_published_archives(tmp_path, monkeypatch):
    from repro.data import sources

    archive = sources.Archive(
        "cifar-10-python.tar.gz", "https://example.org/c10.tar.gz", "c58f30108f718f92721af3b95e74349a", 170_498_071
    )
    monkeypatch.setattr(sources, "dataset_source", lambda name: sources.DatasetSource(name, "CIFAR-10", (archive,)))
    results = tmp_path / "results"
    folder = results / "smoke"
    check = {
        "dataset": "cifar10",
        "title": "CIFAR-10",
        "path": "/data/cifar-10-batches-py",
        "checksum": "md5 mismatch accepted",
        "unverified": ["data_batch_1: md5 00 != c9"],
    }
    with acting("run t", folder):
        rows = make_table(results)
        write_result(results, "t", rows, details={"data_checks": {"checks": [check]}})
    entities, _ = graph(folder)
    run = entities[f"#action/{load_actions(folder)[0].id}"]
    (dataset,) = [entities[i] for i in ids(run["object"]) if i.startswith("#dataset/")]
    assert dataset["name"] == "CIFAR-10" and "unverified: data_batch_1: md5 00 != c9" in dataset["description"]
    assert entities[dataset["additionalProperty"]["@id"]]["value"] == "true"
    download = entities[dataset["distribution"]["@id"]]
    assert download["@type"] == "DataDownload" and download["description"] == f"published md5 {archive.md5}"
    assert validate(folder, tmp_path) == []

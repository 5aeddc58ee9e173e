"""A run record read on its own (repro.results.run_records): the same verdict on a damaged record as `repro run`'s
check (repro.execution.record_checks) gives, its name checked against its own hash, and a folder read without a
file moved."""

import json

import pytest
from fake_records import config, record, write_record

from repro.core.fsutil import jsonable
from repro.execution.record_checks import record_problem
from repro.results.run_records import own_problem, parse_record, read_records, record_digest, record_files

CFG = config()


def _edited(change, redigest=True):
    def damage(data: bytes) -> bytes:
        rec = json.loads(data)
        change(rec)
        if redigest:
            rec["digest"] = record_digest(rec)
        return json.dumps(rec).encode()

    return damage


def _set(path, value):
    def change(rec):
        *parents, last = path.split(".")
        target = rec
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        target[last] = value

    return change


DAMAGE = [
    ("truncated", lambda d: d[: len(d) // 2], "not valid JSON"),
    ("a list", lambda d: b"[]", "it is a JSON list, expected an object"),
    ("no metrics", _edited(lambda r: r.pop("metrics")), "missing keys ['metrics']"),
    ("an older schema", _edited(_set("schema", 1)), "schema 1 is not 2"),
    (
        "accuracy above 1",
        _edited(_set("metrics.accuracy", 1.5)),
        "metrics.accuracy is 1.5, expected a number in [0, 1]",
    ),
    ("chance 0", _edited(_set("metrics.chance", 0)), "metrics.chance is 0, expected a number in (0, 1]"),
    ("history short", _edited(_set("history", [])), "history is a list of 0, expected a list of 2 epochs"),
    ("history NaN", _edited(_set("history.1.test_accuracy", float("nan"))), "history[1].test_accuracy is nan"),
    ("peak epoch beyond the run", _edited(_set("metrics.peak_epoch", 7)), "metrics.peak_epoch is 7, expected"),
    ("provenance a string", _edited(_set("provenance", "cpu")), 'provenance is "cpu", expected an object'),
    ("hand-edited accuracy", _edited(_set("metrics.accuracy", 0.51), redigest=False), "its digest does not match"),
]


@pytest.mark.parametrize("damage,reason", [d[1:] for d in DAMAGE], ids=[d[0] for d in DAMAGE])
def test_a_damaged_record_gets_the_reason_repro_run_gives(tmp_path, damage, reason):
    path = write_record(tmp_path, CFG)
    path.write_bytes(damage(path.read_bytes()))
    parsed, unreadable = parse_record(path)
    own = unreadable or own_problem(parsed, CFG.hash)
    planned = unreadable or record_problem(parsed, jsonable(CFG.to_dict()), CFG.hash, CFG.epochs)
    assert own is not None and own.startswith(reason.split(" expected")[0]) and reason in own
    assert own == planned  # the same rule, so a folder's reader and `repro run` agree on what is usable


def test_a_whole_record_is_usable_and_names_itself():
    assert own_problem(jsonable(record(CFG)), CFG.hash) is None
    other = config(seed=1)
    assert "is not its file name's" in own_problem(jsonable(record(CFG)), other.hash)
    wrong_seed = record(CFG, seed=1)
    assert own_problem(jsonable(wrong_seed), CFG.hash) == "seed 1 is not the config's 0"
    threads = record(
        CFG,
        provenance={
            "device": "cpu: x86_64, 2 intra-op thread(s)",
            "device_type": "cpu",
            "reproducibility": {"threads": 2},
        },
    )
    assert own_problem(jsonable(threads), CFG.hash) == "it was trained on 2 intra-op thread(s) and its config names 1"


def test_a_folder_is_read_without_moving_a_file(tmp_path):
    good = write_record(tmp_path, CFG)
    bad = write_record(tmp_path, config(seed=1))
    bad.write_text("{")
    (good.parent / f"{CFG.hash}.failed.json").write_text("{}")  # a failure, not a record
    (good.parent / f"{CFG.hash}.json.invalid-1-abc").write_text("{}")  # set aside earlier
    assert record_files(tmp_path) == sorted([good, bad])
    found = read_records(tmp_path)
    assert list(found.records) == [CFG.hash] and list(found.unusable) == [bad]
    assert found.unusable[bad].startswith("not valid JSON") and bad.read_text() == "{"
    assert read_records(tmp_path / "nowhere").records == {}


def test_a_digest_is_the_same_whether_the_record_is_plain_json_or_needs_jsonable():
    """record_digest dumps a record read from JSON as it is, and one with NaN or tuples through jsonable: one digest."""
    import hashlib

    made = {**record(config()), "extra": (1, 2.5, float("nan")), "digest": "x"}
    plain = jsonable(made)
    canonical = json.dumps(
        {k: v for k, v in plain.items() if k != "digest"},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
        allow_nan=False,
    )
    expected = hashlib.sha256(canonical.encode("ascii")).hexdigest()
    assert record_digest(made) == record_digest(plain) == record_digest(json.loads(json.dumps(plain))) == expected
    assert record_digest({**plain, "digest": "another"}) == expected  # the digest itself is not digested

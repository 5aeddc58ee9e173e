"""repro.core.jsonfile: JSON from a folder someone else filled is read bounded, never blocking; what cannot be read
is a JsonUnreadable naming why, and says whether it is damage (set aside) or a refusal of the system (left alone)."""

import json
import os
import signal

import pytest

from repro.core import jsonfile
from repro.core.jsonfile import JsonUnreadable


@pytest.fixture
def deadline():
    """Fail a read that blocks instead of hanging the suite."""

    def expired(signum, frame):
        raise AssertionError("the read blocked")

    before = signal.signal(signal.SIGALRM, expired)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, before)


def test_a_nesting_bomb_is_damage_not_a_recursion_error(tmp_path):
    bomb = tmp_path / "bomb.json"
    bomb.write_text("[" * 400_000)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200 + "]" * 200)  # within json's recursion limit, beyond the depth bound
    for path in (bomb, deep):
        with pytest.raises(JsonUnreadable) as err:
            jsonfile.load(path)
        assert err.value.damaged and err.value.reason == f"it nests deeper than {jsonfile.MAX_DEPTH} levels"
    assert jsonfile.load(tmp_path / "deep.json", max_depth=200) is not None


def test_a_fifo_is_refused_without_blocking(tmp_path, deadline):
    fifo = tmp_path / "aaaaaaaaaaaaaaaa.json"
    os.mkfifo(fifo)
    with pytest.raises(JsonUnreadable) as err:
        jsonfile.load(fifo)
    assert err.value.damaged and err.value.reason == "it is a FIFO, not a regular file"
    with pytest.raises(JsonUnreadable, match="it is a folder, not a regular file"):
        jsonfile.load(tmp_path)


def test_a_file_over_its_cap_is_refused_before_it_is_read(tmp_path):
    huge = tmp_path / "record.json"
    with open(huge, "wb") as fh:  # 200 MB that take no disk: never read, refused by its size
        fh.truncate(200 << 20)
    with pytest.raises(JsonUnreadable) as err:
        jsonfile.load(huge, jsonfile.RECORD_MAX_BYTES)
    assert err.value.damaged and err.value.reason == "it holds 200 MiB, over the 32 MiB this file may hold"


def test_content_that_is_not_json_is_damage_and_a_refusal_is_not(tmp_path, monkeypatch):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff{")
    with pytest.raises(JsonUnreadable, match="not valid JSON") as err:
        jsonfile.load(bad)
    assert err.value.damaged
    with pytest.raises(FileNotFoundError):
        jsonfile.load(tmp_path / "absent.json")
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"a": [1, {"b": None}]}))
    assert jsonfile.load(good) == {"a": [1, {"b": None}]} and jsonfile.depth(jsonfile.load(good)) == 3

    def refuse(path):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(jsonfile, "open_regular", refuse)
    with pytest.raises(JsonUnreadable) as err:
        jsonfile.load(good)
    assert not err.value.damaged and err.value.reason == "it cannot be read (Permission denied)"

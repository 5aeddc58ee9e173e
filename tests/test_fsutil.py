"""repro.core.fsutil's plain-JSON conversion: what each kind of value becomes (golden cases), on the fast path for
lists of integers and the general one alike."""

import math

from repro.core.fsutil import jsonable


def test_values_become_plain_json():
    assert jsonable({"a": (1, 2), 3: [1.5, math.nan, math.inf], "b": [True, 2], "c": [[1, 2], [3, 4]]}) == {
        "a": [1, 2], "3": [1.5, None, None], "b": [True, 2], "c": [[1, 2], [3, 4]]}


def test_a_list_of_integers_is_copied_not_shared():
    counts = [[0, 3, 1]] * 2
    out = jsonable({"usage": counts})
    assert out == {"usage": [[0, 3, 1], [0, 3, 1]]} and out["usage"][0] is not counts[0]
    assert jsonable([1, True]) == [1, True] and type(jsonable([1, True])[1]) is bool


def test_the_temporary_file_of_a_write_names_its_writer(tmp_path, monkeypatch):
    import os
    import socket

    from repro.core.fsutil import atomic_write_bytes, temporary_writer

    seen = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (seen.append(os.path.basename(src)), real(src, dst)))
    atomic_write_bytes(tmp_path / "abc.ckpt", b"x")
    assert len(seen) == 1 and seen[0].startswith(".abc.ckpt.") and seen[0].endswith(".tmp")
    assert temporary_writer(seen[0]) == (os.getpid(), socket.gethostname())
    assert temporary_writer(".abc.json.17@node-3.cluster.org.k2j_x9.tmp") == (17, "node-3.cluster.org")
    assert temporary_writer(".abc.ckpt.k2j_x9.tmp") is None and temporary_writer("abc.json") is None  # older, not one

"""repro.core.fsutil's plain-JSON conversion: what each kind of value becomes (golden cases), on the fast path for
lists of integers and the general one alike."""

import math

from repro.core.fsutil import jsonable


def test_values_become_plain_json():
    assert jsonable({"a": (1, 2), 3: [1.5, math.nan, math.inf], "b": [True, 2], "c": [[1, 2], [3, 4]]}) == {
        "a": [1, 2],
        "3": [1.5, None, None],
        "b": [True, 2],
        "c": [[1, 2], [3, 4]],
    }


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
    monkeypatch.setattr(
        os, "replace", lambda src, dst, **kw: (seen.append(os.path.basename(src)), real(src, dst, **kw))
    )
    atomic_write_bytes(tmp_path / "abc.ckpt", b"x")
    assert len(seen) == 1 and seen[0].startswith(".abc.ckpt.") and seen[0].endswith(".tmp")
    assert temporary_writer(seen[0]) == (os.getpid(), socket.gethostname())
    assert temporary_writer(".abc.json.17@node-3.cluster.org.k2j_x9.tmp") == (17, "node-3.cluster.org")
    assert temporary_writer(".abc.ckpt.k2j_x9.tmp") is None and temporary_writer("abc.json") is None  # older, not one


# --------------------------------------------------------------------------- FolderWriter: never outside its folder
def _outside(tmp_path):
    import os

    root, elsewhere = tmp_path / "results", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (elsewhere / "victim").write_text("theirs")
    os.symlink(elsewhere, root / "export")  # a folder below the root that is a link
    os.symlink(elsewhere / "victim", root / "repro.log")  # a file below the root that is a link
    return root, elsewhere


def test_a_link_below_the_root_is_refused_and_nothing_is_written_through_it(tmp_path):
    import pytest

    from repro.core.fsutil import FolderWriter, OutsideFolder

    root, elsewhere = _outside(tmp_path)
    writer = FolderWriter(root)
    with pytest.raises(OutsideFolder) as folder:
        writer.write_text(root / "export" / "runs.csv", "x")
    assert str(folder.value) == (
        f"refused to write {root}/export/runs.csv: {root}/export is a symbolic link (to "
        f"{elsewhere}); a results folder's files are written only inside it: replace the "
        "link with a folder or file of its own"
    )
    for write in (
        lambda: writer.write_text(root / "repro.log", "x"),
        lambda: writer.append(root / "repro.log").__enter__(),
        lambda: writer.write_json(root / "export" / "a" / "b.json", {}),
    ):
        with pytest.raises(OutsideFolder, match="is a symbolic link"):
            write()
    assert not writer.create(root / "repro.log", b"x")  # O_EXCL: a name taken, by a link too
    with pytest.raises(OutsideFolder, match="is not inside"):
        writer.write_text(tmp_path / "elsewhere" / "x", "x")
    assert writer.remove(root / "repro.log") and (elsewhere / "victim").exists()  # the link goes, not its target
    with pytest.raises(OutsideFolder):
        writer.remove(root / "export" / "victim")
    assert sorted(p.name for p in elsewhere.iterdir()) == ["victim"] and (elsewhere / "victim").read_text() == "theirs"


def test_the_root_may_be_a_link_and_folders_below_it_are_made(tmp_path):
    import os

    from repro.core.fsutil import FolderWriter

    (tmp_path / "disk").mkdir()
    os.symlink(tmp_path / "disk", tmp_path / "results")  # the user's choice: results on another disk
    writer = FolderWriter(tmp_path / "results")
    writer.write_json(tmp_path / "results" / "smoke" / "t" / "results.json", {"a": 1})
    with writer.append(tmp_path / "results" / "smoke" / "repro.log") as log:
        log.write("one\n")
    with writer.append(tmp_path / "results" / "smoke" / "repro.log") as log:
        log.write("two\n")
    assert (tmp_path / "disk" / "smoke" / "t" / "results.json").read_text() == '{\n  "a": 1\n}\n'
    assert (tmp_path / "disk" / "smoke" / "repro.log").read_text() == "one\ntwo\n"
    assert writer.create(tmp_path / "results" / "runs" / "a.lock", b"{}") and not writer.create(
        tmp_path / "results" / "runs" / "a.lock", b"{}"
    )


def test_a_set_is_replaced_whole_or_not_at_all(tmp_path):
    import os
    import signal

    import pytest

    from repro.core.fsutil import FolderWriter, OutsideFolder

    root = tmp_path / "results"
    writer = FolderWriter(root)
    old = {root / "export" / f"{n}.csv": b"old" for n in ("runs", "history", "verdicts")}
    writer.replace_set(old)
    os.symlink(tmp_path, root / "linked")
    with pytest.raises(OutsideFolder):  # the last file of the set cannot be written: none is replaced
        writer.replace_set({**{p: b"new" for p in old}, root / "linked" / "x.csv": b"new"})
    assert {p.read_bytes() for p in old} == {b"old"} and sorted(os.listdir(root / "export")) == sorted(
        p.name for p in old
    )  # no temporary file left
    real = os.replace

    def interrupted(src, dst, **kw):  # Ctrl-C arrives between the first rename and the others
        real(src, dst, **kw)
        signal.raise_signal(signal.SIGINT)

    os.replace = interrupted
    try:
        with pytest.raises(KeyboardInterrupt):
            writer.replace_set({p: b"new" for p in old})
    finally:
        os.replace = real
    assert {p.read_bytes() for p in old} == {b"new"}  # the interrupt waited for the whole set

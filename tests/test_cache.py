"""repro.core.cache: caches live in the cache folder (REPRO_CACHE), are written atomically, and a damaged entry is
rebuilt."""

from repro.core.cache import cache_dir, read_json, write_json
from repro.core.settings import Settings


def test_the_cache_folder_follows_the_environment(tmp_path):
    root = Settings.read({"REPRO_CACHE": str(tmp_path / "c")}).cache
    assert root == tmp_path / "c" and cache_dir(root, "flops") == tmp_path / "c" / "flops"
    assert Settings.read({"XDG_CACHE_HOME": str(tmp_path / "x")}).cache == tmp_path / "x" / "repro"


def test_a_damaged_entry_is_ignored_with_a_warning_naming_it(tmp_path, capsys):
    path = tmp_path / "throughput.json"
    path.write_text('{"cpu:2": 1.5e9')  # truncated by a crash or a full disk
    assert read_json(path) is None
    assert str(path) in capsys.readouterr().err
    path.write_bytes(b"\xff\xfe\x00")  # not UTF-8
    assert read_json(path) is None
    assert read_json(tmp_path / "absent.json") is None


def test_write_is_atomic_and_survives_an_unwritable_folder(tmp_path, capsys):
    write_json(tmp_path / "a" / "b.json", {"x": float("nan"), "y": (1, 2)})
    assert read_json(tmp_path / "a" / "b.json") == {"x": None, "y": [1, 2]}
    assert not [p for p in (tmp_path / "a").iterdir() if p.name.endswith(".tmp")]
    blocker = tmp_path / "file"
    blocker.write_text("")
    write_json(blocker / "c.json", {})  # a file where the folder should be: warned, not raised
    assert "cannot write the cache entry" in capsys.readouterr().err

"""A manifests folder given by --manifests or $REPRO_MANIFESTS that is missing, a file, or holds no manifest is
refused before any work, naming the folder and what was expected. An evaluator's typo there read as "no tables":
`verify-all --manifests /typo` counted the FLOPs of no model and ended in a traceback ("an appendix needs at least
one manifest"), `list` and `plan` priced nothing and exited 0, and `repro run table1` said "known in /typo:" with
nothing after it."""

import pytest
from typer.testing import CliRunner

from repro.cli import app
from repro.core.schema import SchemaError
from repro.plan.manifest import manifest_paths

runner = CliRunner()


def folders(tmp_path) -> dict[str, tuple[str, str]]:
    """Each bad folder, with the words the error must give."""
    (tmp_path / "a-file").write_text("not a folder\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "only-profiles").mkdir()
    (tmp_path / "only-profiles" / "profiles.toml").write_text("")
    return {
        "missing": (str(tmp_path / "missing"), "no such folder"),
        "file": (str(tmp_path / "a-file"), "a file, not a folder"),
        "empty": (str(tmp_path / "empty"), "no manifest"),
        "profiles only": (str(tmp_path / "only-profiles"), "no manifest"),
    }


@pytest.mark.parametrize("case", ["missing", "file", "empty", "profiles only"])
def test_the_library_names_the_folder_and_what_it_should_hold(tmp_path, case):
    folder, words = folders(tmp_path)[case]
    with pytest.raises(SchemaError) as raised:
        manifest_paths(folder)
    assert raised.value.file == folder and words in str(raised.value)
    assert "--manifests" in str(raised.value) and "$REPRO_MANIFESTS" in str(raised.value)


COMMANDS = [
    ["verify-all"],
    ["run", "table1"],
    ["list"],
    ["plan", "--gpu-hours", "5"],
    ["status"],
    ["report"],
    ["appendix"],
    ["export"],
    ["trace", "table1", "dw_h128"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
def test_every_command_refuses_a_bad_manifests_folder_before_any_work(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "cache"))
    for case, (folder, words) in folders(tmp_path).items():
        for how in (["--manifests", folder], None):  # the option, then the variable
            env = {"COLUMNS": "200"} if how else {"COLUMNS": "200", "REPRO_MANIFESTS": folder}
            done = runner.invoke(app, [*args, *(how or [])], env=env)
            assert done.exit_code == 2, (case, how, done.output)
            assert folder in done.output and words in done.output, (case, how, done.output)
            assert done.exception is None or isinstance(done.exception, SystemExit), (case, how, done.output)
            assert not (tmp_path / "results").exists(), (case, how, "wrote results before refusing")


def test_repro_id_with_a_bad_manifests_variable_names_the_folder(tmp_path):
    """`repro table1` resolves its id in the folder $REPRO_MANIFESTS names, before any command runs."""
    done = runner.invoke(app, ["table1"], env={"COLUMNS": "200", "REPRO_MANIFESTS": str(tmp_path / "missing")})
    assert done.exit_code == 2 and str(tmp_path / "missing") in done.output and "no such folder" in done.output
    assert done.exception is None or isinstance(done.exception, SystemExit), done.output
    done = runner.invoke(app, ["list"], env={"COLUMNS": "200", "REPRO_MANIFESTS": str(tmp_path / "missing")})
    assert done.exit_code == 2 and "no such folder" in done.output, done.output

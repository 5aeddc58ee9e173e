"""`repro package` and `repro trace` on a folder without what they read: the command that makes it, at the profile
and into the folder asked for. `repro package --profile full` said "run `repro verify-all` first", which writes the
smoke profile's results; `repro trace ... -o FILE` blamed a results.json inside the file, and `repro list` and
`repro plan` priced with no word that the folder to fit to was a file."""

from typer.testing import CliRunner

from repro.cli import app

runner = CliRunner()


def test_package_names_the_profile_and_folder_the_results_are_missing_from(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = runner.invoke(app, ["package", "--profile", "full"], env={"COLUMNS": "200"})
    assert done.exit_code == 2 and "run `repro verify-all --profile full` first" in done.output, done.output
    done = runner.invoke(app, ["package", "-p", "functional", "-o", "my results"], env={"COLUMNS": "200"})
    assert "run `repro verify-all --profile functional -o 'my results'` first" in done.output, done.output


def test_a_results_folder_that_is_a_file_is_named_as_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("x")
    for args in (
        ["package"],
        ["trace", "table1", "dw_h128"],
        ["list"],
        ["plan", "table5", "--gpu-hours", "9"],
    ):
        done = runner.invoke(app, [*args, "-o", "a-file"], env={"COLUMNS": "200"})
        assert done.exit_code == 2, (args, done.output)
        assert "--results-dir a-file is a file, not a results folder" in done.output, (args, done.output)


def test_report_and_export_name_the_command_that_writes_the_folder_asked_for(tmp_path, monkeypatch):
    """`repro report -o 'my results'` on a missing folder said "run a table or `repro verify-all` first", and a bare
    `repro verify-all` writes ./results (found in an evaluator's walk-through, as package's and trace's were)."""
    monkeypatch.chdir(tmp_path)
    for args, make in (
        (["report"], "repro verify-all -o 'my results'"),
        (["report", "-p", "functional"], "repro verify-all --profile functional -o 'my results'"),
        (["export"], "repro verify-all -o 'my results'"),
    ):
        done = runner.invoke(app, [*args, "-o", "my results"], env={"COLUMNS": "200"})
        assert done.exit_code == 2 and f"run a table or `{make}` first" in done.output, (args, done.output)
    done = runner.invoke(app, ["report"], env={"COLUMNS": "200"})  # the folder not named: the bare command
    assert "run a table or `repro verify-all` first" in done.output, done.output

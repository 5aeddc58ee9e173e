"""`repro status -v`: a pending run's line ends with its run hash, not with a colon that introduces nothing
("pending  table3/std_dense seed 0 (1ebbbda0a774):" in an evaluator's terminal)."""

from fake_records import write_manifest_t
from typer.testing import CliRunner

from repro.cli import app


def test_a_pending_run_without_detail_ends_at_its_hash(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_MANIFESTS", str(write_manifest_t(tmp_path)))
    done = CliRunner().invoke(app, ["status", "-v", "-o", str(tmp_path / "results")], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    pending = [line for line in done.output.splitlines() if line.startswith("pending")]
    assert pending and all(line.rstrip().endswith(")") for line in pending), done.output


def test_a_table_that_trains_no_run_says_so_instead_of_an_empty_table(tmp_path):
    """`repro status table6` printed its title and an empty table: Table 6's numbers are FLOP counts."""
    done = CliRunner().invoke(app, ["status", "table6", "-o", str(tmp_path)], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    assert "table6 trains no run at profile smoke: its numbers are counted, not trained" in done.output, done.output
    assert "Table" not in done.output  # no empty grid


def test_a_folder_that_does_not_exist_is_said_to_be_missing_beside_its_pending_runs(tmp_path, monkeypatch):
    """A typo in -o listed every run pending with no word that the folder was not there."""
    monkeypatch.setenv("REPRO_MANIFESTS", str(write_manifest_t(tmp_path)))
    done = CliRunner().invoke(app, ["status", "-o", str(tmp_path / "typo")], env={"COLUMNS": "300"})
    assert done.exit_code == 0, done.output
    assert done.output.splitlines()[0] == (
        f"runs in {tmp_path / 'typo'} (profile smoke): the folder does not exist (yet), so every run is pending"
    ), done.output
    assert not (tmp_path / "typo").exists()


def test_a_training_table_the_profile_leaves_out_is_not_said_to_be_counted(tmp_path):
    """A profile of one's own that includes none of table1's rows leaves it no run: that is the profile's doing,
    not a table whose numbers are counted (it said 'table1 trains no run ...: its numbers are counted')."""
    mine = tmp_path / "mine.toml"
    mine.write_text('[profiles.mine]\ndescription = "x"\nevidence = "pipeline"\ninclude = ["table2/dw072_dense"]\n')
    argv = ["status", "table1", "table6", "-p", "mine", "--profiles", str(mine), "-o", str(tmp_path / "r")]
    done = CliRunner().invoke(app, argv, env={"COLUMNS": "300"})
    assert done.exit_code == 0, done.output
    text = " ".join(done.output.split())
    assert "table1 trains no run at profile mine: its training rows are left out by the profile" in text, text
    assert "table6 trains no run at profile mine: its numbers are counted, not trained" in text, text

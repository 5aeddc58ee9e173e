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

"""The interrupt handler belongs to the `repro` command alone: called from a test (or a notebook), a command
lets Ctrl-C through and leaves the signal handlers as it found them; `repro.cli.main` turns it into the
message and exit 130 (the subprocess tests in tests/execution/test_interrupt.py send real signals)."""

import signal
import sys

import pytest
from typer.testing import CliRunner

import repro.cli
from repro.cli import app
from repro.pipeline import TableRun
from repro.runtime.interrupt import RunsInterrupted

runner = CliRunner()


@pytest.fixture
def ctrl_c_in_a_table(monkeypatch):
    """TableRun.run sees Ctrl-C at once; `handlers` holds the SIGINT and SIGTERM handlers it ran under."""
    handlers = {}

    def run(self, manifests, on_start=None, on_done=None):
        handlers.update(INT=signal.getsignal(signal.SIGINT), TERM=signal.getsignal(signal.SIGTERM))
        self.current = manifests[0].id
        raise RunsInterrupted(2, [1], 3)

    monkeypatch.setattr(TableRun, "run", run)
    return handlers


def test_a_command_called_in_process_lets_ctrl_c_reach_its_caller(ctrl_c_in_a_table, results_dir):
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    with pytest.raises(KeyboardInterrupt):  # pytest (or a notebook) stops: no exit 130 inside a test
        runner.invoke(app, ["table6", "--results-dir", str(results_dir)])
    assert (ctrl_c_in_a_table["INT"], ctrl_c_in_a_table["TERM"]) == before  # nothing installed while it ran
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_the_repro_entry_point_says_what_was_kept_and_exits_130(ctrl_c_in_a_table, results_dir, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["repro", "table6", "--results-dir", str(results_dir)])
    with pytest.raises(SystemExit) as stopped:
        repro.cli.main()
    assert stopped.value.code == 130
    assert ctrl_c_in_a_table["TERM"] is not signal.SIG_DFL  # SIGTERM stops `repro` as Ctrl-C does
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # ... and only while it runs
    assert (
        f"table6 interrupted: 2 runs recorded, 1 interrupted (checkpoint kept at epoch 1), 3 not started; "
        f"rerun `repro table6 --results-dir {results_dir}` to resume"
    ) in capsys.readouterr().err

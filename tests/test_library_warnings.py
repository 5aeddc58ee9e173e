"""A warning of the library's (a damaged run record set aside, a lock taken over) reaches the command's log file and
is shown with the other warnings, last (docs/commands.md, "What they print"). It was printed straight to stdout in
the middle of the tables' lines, and repro.log, which 'holds everything the commands printed', never had it."""

import io

import pytest
from rich.console import Console

from repro.cli.progress import Reporter
from repro.execution.files import set_aside


def damaged(tmp_path):
    path = tmp_path / "runs" / "0123456789abcdef.json"
    path.parent.mkdir()
    path.write_text("{")
    return path


def test_a_record_set_aside_under_a_command_is_in_its_log_and_among_its_warnings(tmp_path, capsys):
    path, log = damaged(tmp_path), tmp_path / "repro.log"
    with Reporter(Console(file=io.StringIO()), log_path=log, command="repro table9") as reporter:
        set_aside(path, "run record", "not valid JSON", "the run will be redone")
    said = f"run record {path} is unusable (not valid JSON)"
    assert said in log.read_text()
    assert [w.plain for w in reporter.warnings if said in w.plain] != []  # shown last, by the command
    assert said not in capsys.readouterr().out  # not in the middle of the tables' lines


def test_a_command_stopped_before_its_warnings_shows_them_as_it_stops(tmp_path, capsys):
    path = damaged(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        with Reporter(Console(file=io.StringIO()), log_path=tmp_path / "repro.log", command="repro table9"):
            set_aside(path, "run record", "not valid JSON", "the run will be redone")
            raise KeyboardInterrupt
    assert f"run record {path} is unusable (not valid JSON)" in " ".join(capsys.readouterr().err.split())


def test_without_a_command_the_warning_is_printed_at_once(tmp_path, capsys):
    path = damaged(tmp_path)
    set_aside(path, "run record", "not valid JSON", "the run will be redone")
    assert f"warning: run record {path} is unusable (not valid JSON)" in capsys.readouterr().out

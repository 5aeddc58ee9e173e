"""Log and terminal writes survive any locale: under LC_ALL=C a results path with non-ASCII bytes reaches Python
as lone surrogates (surrogateescape), and the terminal's encoding is ASCII (issue 41, item 11)."""

import os
import subprocess
import sys

import pytest
from rich.console import Console

from repro.cli.progress import Reporter
from repro.core.fsutil import BYTES_OR_MARK, atomic_write_text

C_LOCALE = {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0", "PYTHONIOENCODING": ""}
PATH_BYTES = "résultats — ok".encode()  # what the file system holds
UNDER_C = PATH_BYTES.decode("ascii", "surrogateescape")  # how Python holds it under LC_ALL=C


def test_a_log_line_with_an_undecodable_path_is_written_as_its_bytes(tmp_path):
    """The reproduction's crash: UnicodeEncodeError in the log writer (cli/progress.py:68)."""
    log = tmp_path / "repro.log"
    terminal = Console(file=open(os.devnull, "w", encoding="ascii", errors=BYTES_OR_MARK))  # as repro.cli.main sets it
    with Reporter(terminal, log_path=log, command=f"repro mini -o {UNDER_C}") as reporter:
        reporter.say(f"log: {UNDER_C}/smoke/repro.log")
    written = log.read_bytes()
    assert b"repro mini -o " + PATH_BYTES in written and b"log: " + PATH_BYTES + b"/smoke/repro.log" in written


def test_text_files_and_a_narrow_encoding_take_any_text(tmp_path):
    atomic_write_text(tmp_path / "report.md", f"wrote {UNDER_C}\n")
    assert (tmp_path / "report.md").read_bytes() == b"wrote " + PATH_BYTES + b"\n"
    assert f"{UNDER_C} \u2014 \ud800".encode("ascii", BYTES_OR_MARK) == PATH_BYTES + b" ? ?"


@pytest.mark.slow  # trains the executor tests' tiny table
def test_a_table_and_its_report_run_under_the_c_locale_with_a_non_ascii_results_path(tmp_path):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "execution"))
    from minitable import write_manifest

    env = {**write_manifest(tmp_path, epochs=1, train_samples=32), **C_LOCALE}
    results = os.fsencode(tmp_path) + b"/" + PATH_BYTES
    for args in (["mini", "--jobs", "1"], ["report"], ["status", "mini"]):
        out = subprocess.run(
            [os.fsencode(sys.executable), b"-m", b"repro", *map(os.fsencode, args), b"-o", results],
            capture_output=True,
            env=env,
            timeout=600,
        )
        assert out.returncode == 0 and b"Traceback" not in out.stdout + out.stderr, out.stdout + out.stderr
    log = open(results + b"/smoke/repro.log", "rb").read()
    assert results in log and os.path.isfile(results + b"/smoke/report.html")

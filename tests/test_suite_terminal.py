"""The suite passes in the user's own terminal: tests/conftest.py sets the terminal's size, as it sets its REPRO_*
variables, so that an exported COLUMNS cannot wrap the one-line errors that tests read whole."""

import os
import re
import subprocess
import sys

import pytest

from checkout import REPO_ROOT

TERMINAL, TERMINAL_SIZE = ("COLUMNS", "LINES"), {"COLUMNS": "80", "LINES": "25"}
# Tests that read a long error as one line; each failed under an exported COLUMNS=80 before the suite set the size.
ONE_LINE_ERRORS = (
    "tests/test_compare.py::test_bad_input_is_one_line_and_exit_2",
    "tests/test_manifest_validation.py::test_two_manifests_with_one_id_are_named_once_each",
)


def test_the_suite_sets_the_terminal_size_whatever_the_user_exported():
    assert {k: os.environ.get(k) for k in TERMINAL_SIZE} == TERMINAL_SIZE
    assert not [name for name in TERMINAL if name in os.environ and name not in TERMINAL_SIZE]


@pytest.mark.slow  # two pytest processes
def test_one_line_errors_stay_one_line_under_any_columns_the_user_exports():
    runs = {}
    for columns in ("80", "200"):  # side by side: each is a pytest start-up of a few seconds
        env = {k: v for k, v in os.environ.items() if k not in TERMINAL} | {"COLUMNS": columns, "LINES": "50"}
        runs[columns] = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *ONE_LINE_ERRORS],
            cwd=REPO_ROOT,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
    for columns, run in runs.items():
        out = run.communicate(timeout=300)[0]
        assert run.returncode == 0, f"COLUMNS={columns}:\n{out}"
        # every case of both tests (test_compare's is parametrized: its cases grow with the bad inputs it refuses)
        passed = re.search(r"(\d+) passed", out)
        assert passed and int(passed.group(1)) > len(ONE_LINE_ERRORS) and "skipped" not in out, out

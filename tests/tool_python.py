"""Run a validator's check in the validators' own python, for tests whose validator cannot share the project's
environment: roc-validator pins rich<14 and cffconvert jsonschema<4, which would hold back the rich and
import-linter that the project installs (docs/testing.md, "Validators").

A check is a script in tests/, importing only the standard library at its top, with `summarise(*args) -> dict`
and a main that prints that dict as JSON (`default=str`: a YAML date).
$REPRO_VALIDATORS_PYTHON names the python that has the validators (.ci/run makes its venv): the script runs
there as a subprocess and the test reads its JSON. Unset, `summarise` runs in this process where the packages
import here; else the test is skipped with the reason, or fails where REPRO_REQUIRE_VALIDATORS=1 (.ci/run).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from types import ModuleType

import pytest

PYTHON = "REPRO_VALIDATORS_PYTHON"
REQUIRE = "REPRO_REQUIRE_VALIDATORS"


def summary(check: ModuleType, args: list[str], packages: tuple[str, ...]) -> dict:
    """The JSON summary of `check` run on `args`: in $REPRO_VALIDATORS_PYTHON, else here, else skip (or fail)."""
    python = os.environ.get(PYTHON)
    if python:
        if shutil.which(python) is None:
            pytest.fail(f"{PYTHON}={python!r}: no such python")
        out = subprocess.run([python, check.__file__, *args], capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, f"{check.__name__} in {python} failed:\n{out.stderr[-3000:]}"
        return json.loads(out.stdout)
    missing = [p for p in packages if importlib.util.find_spec(p) is None]
    if not missing:
        return json.loads(json.dumps(check.summarise(*args), default=str))  # as a check's main prints it
    reason = f"{', '.join(missing)} not importable here and ${PYTHON} unset (docs/testing.md)"
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{REQUIRE}=1 but {reason}")
    pytest.skip(reason)

import os
import warnings

import pytest

warnings.filterwarnings("ignore", message=".*torch.jit.script.*", category=FutureWarning)


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    path = tmp_path / "results"
    monkeypatch.setenv("REPRO_RESULTS", str(path))
    return path


def pytest_configure(config):
    os.environ.setdefault("REPRO_PROFILE", "smoke")

import gc
import os
import signal
import warnings
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SUITE_SIZE = pytest.StashKey[int]()  # the whole suite's test count, when this session collected all of it
_deselected: list = []

warnings.filterwarnings("ignore", message=".*torch.jit.script.*", category=FutureWarning)


@pytest.fixture(autouse=True)
def own_results_folder(tmp_path_factory, monkeypatch):
    """Every test has a results folder of its own, empty and not yet made, unless it sets one: a test never reads
    the ./results that the README's `repro verify-all` leaves where the suite runs next
    (tests/test_readme_commands.py)."""
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path_factory.mktemp("own", numbered=True) / "results"))


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    path = tmp_path / "results"
    monkeypatch.setenv("REPRO_RESULTS", str(path))
    return path


def _torch_threads(n: int):
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def one_thread():
    """Tiny convolutions gain nothing from a second thread, and lose much on a shared machine."""
    yield from _torch_threads(1)


@pytest.fixture
def two_threads():
    """Two torch intra-op threads for the test, so that a helper pinning one (or leaving the count alone) shows."""
    yield from _torch_threads(2)


# The variables of the user's environment the suite keeps: the cache (FLOP counts, stand-in weights: a warm one
# saves minutes, and no result depends on it), where the paper's text is, and the switches, folders and tools CI
# sets for the suite itself (tests/tool_python.py). Every other REPRO_* a user exported (a profile, manifests, a
# dispatch mode) is dropped.
KEPT = (
    "REPRO_CACHE",
    "REPRO_PAPER_TEXT",
    "REPRO_ARTIFACTS",
    "REPRO_COMPOSE_GO",
    "REPRO_VALIDATORS_PYTHON",
    "REPRO_REQUIRE_",
)
# What rich, Typer and Click read of the user's terminal: its size, and whether to colour. The suite sets the size
# itself (TERMINAL_SIZE), so that an exported COLUMNS=80 or 200 cannot wrap a message a test reads as one line.
TERMINAL = (
    "COLUMNS",
    "LINES",
    "TERMINAL_WIDTH",
    "JUPYTER_COLUMNS",
    "JUPYTER_LINES",
    "FORCE_COLOR",
    "PY_COLORS",
    "NO_COLOR",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "TYPER_USE_RICH",
    "_TYPER_FORCE_DISABLE_TERMINAL",
)
TERMINAL_SIZE = {"COLUMNS": "80", "LINES": "25"}  # rich's size for output that is not a terminal


def pytest_configure(config):
    for name in [n for n in os.environ if n.startswith("REPRO_") and not n.startswith(KEPT) or n in TERMINAL]:
        del os.environ[name]
    os.environ["REPRO_PROFILE"] = "smoke"
    # One intra-op thread: set before torch is first imported (tests that need two set it: two_threads). The
    # tests' tensors are tiny, and on a busy 2-core host a split op waits for a descheduled peer thread.
    os.environ["OMP_NUM_THREADS"] = "1"
    # A checkpoint after every epoch: the resume tests kill runs whose epochs take a fraction of the default
    # interval (repro.train.checkpoints); tests/test_train.py checks the interval itself.
    os.environ["REPRO_CHECKPOINT_SECONDS"] = "0"
    # The command line's consoles are made before the size is set: a console made while COLUMNS is set keeps that
    # width for good, and tests give a command a wider terminal per call (CliRunner's env={"COLUMNS": ...}).
    import repro.cli.common  # noqa: F401

    os.environ.update(TERMINAL_SIZE)
    # A shell starts a background job (`nohup ... &`, a CI script's `&`) with SIGINT ignored, and Python then
    # installs no KeyboardInterrupt handler: Ctrl-C as an interactive run has it, for the tests that press it.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    gc.disable()  # until collection has imported everything (pytest_collection_finish)


def pytest_deselected(items):
    _deselected.extend(items)  # -m "not slow", -k: still tests of the suite


def pytest_collection_finish(session):
    # docs/testing.md states the suite's size; tests/test_docs_numbers.py checks it whenever every test file was
    # collected.
    if all(Path(arg.split("::")[0]).resolve() in (TESTS, TESTS.parent) for arg in session.config.args):
        if "::" not in " ".join(session.config.args):
            session.config.stash[SUITE_SIZE] = len(session.items) + len(_deselected)
    # What collection imported (torch, sympy, scipy, ...) lives all session: no collection while it is
    # imported, and none walks it again afterwards (together about 5 s of a 30 s fast lane).
    gc.freeze()
    gc.enable()


@pytest.fixture(scope="session")
def smoke_folder(tmp_path_factory):
    """A results folder as a user makes it: `repro verify-all`, `repro report` and `repro appendix` at smoke, each in
    a process of its own, on two tables (the headline table's 8 training runs, Table 6's FLOP claims)."""
    import shutil
    import subprocess
    import sys

    from checkout import MANIFESTS

    root = tmp_path_factory.mktemp("smoke_folder")
    (root / "manifests").mkdir()
    for name in ("headline_cifar10", "table6"):
        shutil.copy(MANIFESTS / f"{name}.toml", root / "manifests")
    env = {**os.environ, "REPRO_MANIFESTS": str(root / "manifests"), "COLUMNS": "80"}
    for args in (["verify-all", "--jobs", "1"], ["report"], ["appendix"]):
        done = subprocess.run(
            [sys.executable, "-m", "repro", *args, "--results-dir", str(root / "results")],
            env=env,
            capture_output=True,
            text=True,
            timeout=1200,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root / "results"

"""Settings at the edge (repro.core.settings): a command reads its environment once, where it starts, into one
frozen value that goes down as typed arguments; below repro/cli/ nothing reads os.environ but the places listed
here, each where a process starts or where the environment is handed to a child or a library that reads it."""

import ast
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from checkout import REPO_ROOT
from repro.cli import app
from repro.core.environment import BadEnvironment
from repro.core.settings import DEFAULT_CACHE, EngineSwitches, Launch, Settings

# Modules below repro/cli/ that touch the process's environment, each with why. Nothing else may.
ENVIRONMENT_READERS = {
    "repro/runtime/memory.py": "glibc reads its allocator thresholds from the environment as a process starts: "
    "written for the processes this one starts, unless the user set them",
    "repro/runtime/numerics.py": "cuBLAS reads its workspace from the environment when CUDA starts: set for "
    "deterministic mode, and the value cuBLAS sees recorded",
    "repro/execution/workers.py": "a worker process takes its slot's environment (its GPU) as it starts",
    "repro/runtime/compile_cache.py": "torch's inductor reads its cache folder from the environment, in the process "
    "that trains and in the compile workers it starts",
    "repro/execution/slurm.py": "a Slurm task reads its launch (job, array task, GPUs) where it starts",
    "repro/bench/kill_resume.py": "the environment of the child process it starts",
    "repro/bench/smoke.py": "the environment of the `repro verify-all` it starts: its own cache and results",
}


def environment_uses(source: str) -> list[int]:
    """Lines that read or write the process's environment: os.environ (os.environb), os.getenv (os.getenvb,
    os.putenv, os.unsetenv), and the same names imported from os."""
    names = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in names and getattr(node.value, "id", None) == "os":
            found.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and {a.name for a in node.names} & names:
            found.append(node.lineno)
    return sorted(found)


def _below_cli() -> dict[str, list[int]]:
    out = {}
    for path in sorted((REPO_ROOT / "repro").rglob("*.py")):
        relative = path.relative_to(REPO_ROOT).as_posix()
        if not relative.startswith("repro/cli/") and (lines := environment_uses(path.read_text())):
            out[relative] = lines
    return out


def test_nothing_below_the_command_line_reads_the_environment_but_where_a_process_starts():
    found = _below_cli()
    extra = {path: lines for path, lines in found.items() if path not in ENVIRONMENT_READERS}
    assert not extra, f"read the setting where the command starts (repro.cli) and pass it down: {extra}"
    stale = set(ENVIRONMENT_READERS) - set(found)
    assert not stale, f"these no longer touch the environment: drop them from ENVIRONMENT_READERS: {stale}"
    assert all(len(why) > 40 for why in ENVIRONMENT_READERS.values())


def test_the_detector_sees_every_form():
    assert environment_uses("import os\nx = os.environ.get('A')\n") == [2]
    assert environment_uses("import os\nos.getenv('A')\nos.environ['B'] = '1'\n") == [2, 3]
    assert environment_uses("from os import environ\n") == [1]
    assert environment_uses("from os import getenv as g\n") == [1]
    assert environment_uses("env = {}\nenv.get('A')\nsettings.environment\n") == []


def test_an_empty_environment_gives_the_defaults():
    read = Settings.read({})
    assert read == Settings()
    assert (read.profile, read.results, read.data, read.manifests, read.profiles) == (
        "smoke",
        Path("results"),
        Path("data"),
        None,
        None,
    )
    assert read.cache == DEFAULT_CACHE and read.weights == () and read.gpu_calibration is None and read.readings is None
    assert (read.threads, read.deterministic, read.checkpoint_seconds) == (None, False, 60.0)
    assert read.engine == EngineSwitches() and read.launch == Launch()


def test_every_variable_reaches_its_field(tmp_path):
    environ = {
        "REPRO_PROFILE": "full",
        "REPRO_PROFILES": "p.toml",
        "REPRO_READINGS": "r.toml",
        "REPRO_RESULTS": "/r",
        "REPRO_DATA": "/d",
        "REPRO_MANIFESTS": "/m",
        "REPRO_CACHE": "/c",
        "REPRO_WEIGHTS": os.pathsep.join(["/w1", "", "/w2"]),
        "REPRO_GPU_CALIBRATION": "cal.json",
        "REPRO_IMAGE": "repro-moe-rho:0.1.0",
        "OMP_NUM_THREADS": "4,2",
        "REPRO_DETERMINISTIC": "yes",
        "REPRO_CHECKPOINT_SECONDS": "2.5",
        "REPRO_CHANNELS_LAST": "0",
        "REPRO_COMPILE": "on",
        "REPRO_SMALL_MAPS": "auto",
        "REPRO_BF16_CPU": "1",
        "REPRO_DISPATCH": "Loop",
        "CUDA_VISIBLE_DEVICES": "",
        "WORLD_SIZE": "2",
        "LOCAL_RANK": "1",
        "LOCAL_WORLD_SIZE": "2",
        "REPRO_DDP_CONTROL_TIMEOUT_S": "30",
        "SLURM_JOB_ID": "17",
        "SLURM_ARRAY_JOB_ID": "12",
        "SLURM_ARRAY_TASK_ID": "3",
    }
    s = Settings.read(environ)
    assert (s.profile, s.profiles, s.results, s.data, s.manifests, s.cache) == (
        "full",
        Path("p.toml"),
        Path("/r"),
        Path("/d"),
        Path("/m"),
        Path("/c"),
    )
    assert s.readings == Path("r.toml")
    assert s.weights == (Path("/w1"), Path("/w2")) and s.gpu_calibration == Path("cal.json")
    assert s.image == "repro-moe-rho:0.1.0"
    assert (s.threads, s.deterministic, s.checkpoint_seconds) == (4, True, 2.5)
    assert s.engine == EngineSwitches(
        channels_last=False, compile=True, small_maps=None, bf16_cpu=True, dispatch="loop"
    )
    assert s.launch == Launch(
        "", 2, 1, 2, 30.0, (("slurm_job_id", "17"), ("slurm_array_job_id", "12"), ("slurm_array_task_id", "3"))
    )
    assert s.launch.slurm_identity() == {"slurm_job_id": "17", "slurm_array_job_id": "12", "slurm_array_task_id": "3"}
    assert s.launch.pinned_to("5").visible_gpus == "5" and s.launch.pinned_to("5").world_size == 2
    assert Settings.read({"XDG_CACHE_HOME": str(tmp_path)}).cache == tmp_path / "repro"
    assert Launch.read({}).visible_gpus is None  # unset: every GPU; "" above: none


def test_every_value_that_does_not_parse_is_named_at_once():
    with pytest.raises(BadEnvironment) as info:
        Settings.read({"REPRO_CHECKPOINT_SECONDS": "soon", "WORLD_SIZE": "x", "REPRO_DISPATCH": "fused"})
    assert [p.split("=")[0] for p in info.value.problems] == [
        "REPRO_CHECKPOINT_SECONDS",
        "REPRO_DISPATCH",
        "WORLD_SIZE",
    ]


def test_a_command_reads_its_environment_once_where_it_starts(monkeypatch, tmp_path):
    """`repro <id>` resolves its id with the manifests folder of its settings and runs with the same value."""
    calls = []
    real = Settings.read.__func__

    def counted(cls, environ):
        calls.append(dict(environ))
        return real(cls, environ)

    monkeypatch.setattr(Settings, "read", classmethod(counted))
    monkeypatch.setenv("REPRO_RESULTS", str(tmp_path / "from-env"))
    out = CliRunner().invoke(app, ["table6", "--profile", "ful"], env={"COLUMNS": "200"})
    assert out.exit_code == 2 and "no profile 'ful' (did you mean 'full'?)" in out.output, out.output
    assert len(calls) == 1
    calls.clear()
    # table1 trains runs: their folder, the environment's, is named (table6 trains none and names no folder)
    out = CliRunner().invoke(app, ["status", "table1"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert len(calls) == 1 and str(tmp_path / "from-env") in " ".join(out.output.split())


def test_the_library_reads_no_environment(monkeypatch, tmp_path):
    """A variable set after a command started, or around a library call, changes nothing below the command line."""
    from repro.plan.manifest import manifest_paths
    from repro.spec.profiles import all_profiles

    monkeypatch.setenv("REPRO_MANIFESTS", str(tmp_path))  # empty
    (tmp_path / "mine.toml").write_text('[profiles.mine]\ndescription = "x"\nevidence = "pipeline"\n')
    monkeypatch.setenv("REPRO_PROFILES", str(tmp_path / "mine.toml"))
    assert {p.stem for p in manifest_paths()} >= {"table1", "table6", "table9"}
    assert "mine" not in all_profiles()[0] and "mine" in all_profiles(tmp_path / "mine.toml")[0]

"""A command's settings: its environment read once, where the command starts, into one frozen value.

repro.core.environment says what each variable is (name, parser, meaning); `Settings.read` parses them all
from the mapping its caller passes (the command line passes os.environ, once, as it starts: repro.cli) and
raises BadEnvironment naming every value that does not parse. The value then goes down as typed
arguments: a folder to the function that reads it, and the whole value on each run's request to whichever
process trains the run (a local worker, a Slurm task, a torchrun rank), so that no process re-reads what
its command read. A process that a launcher starts (a Slurm task) reads its own `Launch` where it starts.

Nothing else below repro.cli reads os.environ; tests/test_settings.py holds the few places that write it
for a child process or a library that reads it there (glibc, cuBLAS).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from repro.core import environment

# The cache's default, where neither $REPRO_CACHE nor $XDG_CACHE_HOME is set (os.path: never raises without a home).
DEFAULT_CACHE = Path(os.path.expanduser("~/.cache")) / "repro"
DEFAULT_DATA = Path(environment.VARIABLES["REPRO_DATA"].default)  # the datasets' root: ./data
DEFAULT_RESULTS = Path(environment.VARIABLES["REPRO_RESULTS"].default)  # ./results


@dataclass(frozen=True)
class EngineSwitches:
    """How runs execute (repro.train.engine.Engine): each None is auto, decided by the device there."""

    channels_last: bool | None = None  # REPRO_CHANNELS_LAST
    compile: bool | None = None  # REPRO_COMPILE
    small_maps: bool | None = None  # REPRO_SMALL_MAPS
    bf16_cpu: bool | None = None  # REPRO_BF16_CPU
    dispatch: str = "auto"  # REPRO_DISPATCH: auto, loop or batched
    moe_conv: str = "auto"  # REPRO_MOE_CONV: auto (measured), measured or fewest-macs


@dataclass(frozen=True)
class Launch:
    """What the launcher of this process set for it: the GPUs it may use, its torchrun rank, its Slurm job."""

    visible_gpus: str | None = None  # CUDA_VISIBLE_DEVICES as set: None unset (every GPU), "" none
    world_size: int = 1  # torchrun's WORLD_SIZE
    local_rank: int = 0
    local_world_size: int = 1  # ranks on this host
    control_timeout_s: float = environment.VARIABLES["REPRO_DDP_CONTROL_TIMEOUT_S"].default
    slurm: tuple[tuple[str, str], ...] = ()  # (key, value) of this process's Slurm job and array task

    @classmethod
    def read(cls, environ: Mapping[str, str]) -> Launch:
        """From a process's environment: raises BadEnvironment naming every value that does not parse."""
        found = [
            p
            for name in ("WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "REPRO_DDP_CONTROL_TIMEOUT_S")
            if (p := environment.problem(name, environ)) is not None
        ]
        if found:
            raise environment.BadEnvironment(found)
        slurm: list[tuple[str, str]] = []
        if "SLURM_JOB_ID" in environ:
            slurm.append(("slurm_job_id", environ["SLURM_JOB_ID"]))
            if "SLURM_ARRAY_JOB_ID" in environ:
                slurm += [
                    ("slurm_array_job_id", environ["SLURM_ARRAY_JOB_ID"]),
                    ("slurm_array_task_id", environ.get("SLURM_ARRAY_TASK_ID", "")),
                ]
        value = lambda name: environment.value(name, environ)  # noqa: E731
        return cls(
            environ.get("CUDA_VISIBLE_DEVICES"),
            value("WORLD_SIZE"),
            value("LOCAL_RANK"),
            value("LOCAL_WORLD_SIZE"),
            value("REPRO_DDP_CONTROL_TIMEOUT_S"),
            tuple(slurm),
        )

    def slurm_identity(self) -> dict[str, str]:
        """This process's Slurm job and array task, as its locks and run records name them ({} outside Slurm)."""
        return dict(self.slurm)

    def pinned_to(self, gpu: str) -> Launch:
        """The launch of a worker this process starts on one of its GPUs (CUDA_VISIBLE_DEVICES=gpu)."""
        return Launch(gpu, self.world_size, self.local_rank, self.local_world_size, self.control_timeout_s, self.slurm)


@dataclass(frozen=True)
class Settings:
    """Every setting the environment gives a command (repro.core.environment names the variables). Defaults are
    what an empty environment gives; an option of the command line replaces its variable where the command starts."""

    profile: str = environment.VARIABLES["REPRO_PROFILE"].default  # REPRO_PROFILE: the default --profile
    profiles: Path | None = None  # REPRO_PROFILES: a file of profiles added to the shipped ones
    readings: Path | None = None  # REPRO_READINGS: a file of readings added to the shipped ones
    results: Path = DEFAULT_RESULTS  # REPRO_RESULTS: the default --results-dir
    data: Path = DEFAULT_DATA  # REPRO_DATA: the datasets' root
    manifests: Path | None = None  # REPRO_MANIFESTS: None, the package's own
    cache: Path = DEFAULT_CACHE  # REPRO_CACHE, else $XDG_CACHE_HOME/repro
    weights: tuple[Path, ...] = ()  # REPRO_WEIGHTS: folders searched for pretrained weights
    gpu_calibration: Path | None = None  # REPRO_GPU_CALIBRATION
    image: str = ""  # REPRO_IMAGE: the container image this process runs in, as docker-compose.yml names it
    threads: int | None = None  # OMP_NUM_THREADS: a run's threads where its profile gives none
    deterministic: bool = False  # REPRO_DETERMINISTIC
    checkpoint_seconds: float = environment.VARIABLES["REPRO_CHECKPOINT_SECONDS"].default
    engine: EngineSwitches = EngineSwitches()
    launch: Launch = field(default_factory=Launch)

    @classmethod
    def read(cls, environ: Mapping[str, str]) -> Settings:
        """Parse the variables of `environ`; BadEnvironment names every one whose value does not parse."""
        environment.check(environ)

        def value(name: str):
            return environment.value(name, environ)

        def folder(name: str) -> Path | None:
            return Path(value(name)) if value(name) else None

        cache = folder("REPRO_CACHE") or Path(value("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")) / "repro"
        weights = tuple(Path(s).expanduser() for s in (value("REPRO_WEIGHTS") or "").split(os.pathsep) if s.strip())
        engine = EngineSwitches(
            value("REPRO_CHANNELS_LAST"),
            value("REPRO_COMPILE"),
            value("REPRO_SMALL_MAPS"),
            value("REPRO_BF16_CPU"),
            value("REPRO_DISPATCH"),
            value("REPRO_MOE_CONV"),
        )
        return cls(
            value("REPRO_PROFILE"),
            folder("REPRO_PROFILES"),
            folder("REPRO_READINGS"),
            Path(value("REPRO_RESULTS")),
            Path(value("REPRO_DATA")),
            folder("REPRO_MANIFESTS"),
            cache,
            weights,
            folder("REPRO_GPU_CALIBRATION"),
            value("REPRO_IMAGE") or "",
            value("OMP_NUM_THREADS"),
            value("REPRO_DETERMINISTIC"),
            value("REPRO_CHECKPOINT_SECONDS"),
            engine,
            Launch.read(environ),
        )

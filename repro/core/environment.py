"""Every environment variable `repro` reads: its name, how its text is parsed, and what it means. Defined once.

The `repro` command reads them all once, where it starts, into one frozen value (repro.core.settings.Settings):
a value that does not parse stops it with exit 2, one line per variable, each naming the variable, its value
and what was expected, in one form: NAME='value': expected .... The functions here take the mapping to read
(the caller passes os.environ), so the check and the use parse alike and nothing here reads the process's
environment itself. Folders and names (REPRO_RESULTS, REPRO_PROFILE, ...) are any text here; where they are
used, the file or name itself is checked and named when wrong.

Variables of other programs that only pass through (MALLOC_* for glibc, TORCH_HOME for torchvision) are not
read here and not listed. Imports nothing from repro.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

FLAGS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}
MAX_THREADS = 1024  # repro.spec.profiles.MAX_THREADS: a typo, not a machine


class BadEnvironment(ValueError):
    """Environment variables whose values do not parse: `problems` holds one line each."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass(frozen=True)
class Variable:
    name: str
    parse: Callable[[str], Any]  # the stripped, non-empty text -> the value; ValueError when it does not parse
    expected: str  # what the text must be, for the message
    meaning: str
    default: Any = None  # when unset or empty


def text(value: str) -> str:
    return value


def seconds(value: str) -> float:
    out = float(value)
    if not out >= 0:  # NaN too
        raise ValueError(value)
    return out


def positive_seconds(value: str) -> float:
    out = seconds(value)
    if out == 0:
        raise ValueError(value)
    return out


def count(low: int) -> Callable[[str], int]:
    def parse(value: str) -> int:
        if not value.isdigit() or int(value) < low:
            raise ValueError(value)
        return int(value)

    return parse


def threads(value: str) -> int:
    """OpenMP's form: a count, or a nested list "4,2" whose first entry is the intra-op pool."""
    first = value.split(",")[0].strip()
    if not first.isdigit() or not 1 <= int(first) <= MAX_THREADS:
        raise ValueError(value)
    return int(first)


def flag(value: str) -> bool:
    return FLAGS[value.lower()]


def switch(value: str) -> bool | None:
    """auto (None: the code decides), or a flag."""
    return None if value.lower() == "auto" else flag(value)


def choice(*allowed: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        if value.lower() not in allowed:
            raise ValueError(value)
        return value.lower()

    return parse


def columns(value: str) -> int | None:
    """A terminal size: a whole number above 0; any other value is ignored (None), as rich ignores a word."""
    return int(value) if value.isdigit() and int(value) > 0 else None


FLAG = "1 or 0 (also true/false, yes/no, on/off)"
SWITCH = f"auto, {FLAG}"
VARIABLES: dict[str, Variable] = {
    v.name: v
    for v in (
        # Where things are: any text; each is checked where it is used.
        Variable("REPRO_PROFILE", text, "a profile name", "the default --profile", "smoke"),
        Variable("REPRO_PROFILES", text, "a file", "a TOML file of profiles added to the shipped ones (--profiles)"),
        Variable("REPRO_READINGS", text, "a file", "a TOML file of readings added to the shipped ones (--readings)"),
        Variable("REPRO_RESULTS", text, "a folder", "the default --results-dir", "results"),
        Variable("REPRO_DATA", text, "a folder", "the default --data-dir: the datasets' root", "data"),
        Variable("REPRO_MANIFESTS", text, "a folder", "the default --manifests: the tables' manifests"),
        Variable("REPRO_CACHE", text, "a folder", "the cache (FLOP counts, decoded datasets, stand-in weights)"),
        Variable("XDG_CACHE_HOME", text, "a folder", "the cache's parent when REPRO_CACHE is unset"),
        Variable(
            "REPRO_WEIGHTS", text, "folders", "extra folders (os.pathsep-separated) searched for pretrained weights"
        ),
        Variable("REPRO_GPU_CALIBRATION", text, "a file", "the GPU calibration the cost model uses"),
        Variable(
            "REPRO_IMAGE",
            text,
            "an image name",
            "the container image this process runs in (docker-compose.yml "
            "sets it), named in each results folder's RO-Crate",
        ),
        # How runs train: parsed, and part of what a run records.
        Variable(
            "OMP_NUM_THREADS",
            threads,
            f"a whole number of threads in 1..{MAX_THREADS}",
            "the intra-op threads each run trains on where its profile gives none",
        ),
        Variable(
            "REPRO_DETERMINISTIC",
            flag,
            FLAG,
            "PyTorch's deterministic mode where the profile gives none (--deterministic turns it on)",
            False,
        ),
        Variable(
            "REPRO_CHECKPOINT_SECONDS",
            seconds,
            "a number of seconds, 0 or more",
            "training seconds between checkpoints (0: after every epoch)",
            60.0,
        ),
        Variable("REPRO_CHANNELS_LAST", switch, SWITCH, "channels-last convolutions (auto: on)"),
        Variable("REPRO_COMPILE", switch, SWITCH, "torch.compile of the backbone (auto: on CUDA)"),
        Variable(
            "REPRO_SMALL_MAPS", switch, SWITCH, "exact fast paths for maps smaller than their kernel (auto: on a CPU)"
        ),
        Variable("REPRO_BF16_CPU", switch, SWITCH, "a bf16 recipe autocasts on the CPU too (auto: off)"),
        Variable(
            "REPRO_DISPATCH",
            choice("auto", "loop", "batched"),
            "auto, loop or batched",
            "the sparse head's dispatch (auto: batched on CUDA)",
            "auto",
        ),
        Variable(
            "REPRO_MOE_CONV",
            choice("auto", "measured", "fewest-macs"),
            "auto, measured or fewest-macs",
            "which exact path MoEConv2d trains on (auto: measured)",
            "auto",
        ),
        # Set by launchers for the processes they start.
        Variable("CUDA_VISIBLE_DEVICES", text, "GPU ids", "the GPUs this process may use"),
        Variable("WORLD_SIZE", count(1), "a whole number, 1 or more", "torchrun: the processes training one run", 1),
        Variable("LOCAL_RANK", count(0), "a whole number, 0 or more", "torchrun: this process's GPU on its node", 0),
        Variable("LOCAL_WORLD_SIZE", count(1), "a whole number, 1 or more", "torchrun: its processes on this node", 1),
        Variable(
            "REPRO_DDP_CONTROL_TIMEOUT_S",
            positive_seconds,
            "a number of seconds above 0",
            "how long torchrun ranks wait for rank 0's next run",
            7 * 24 * 3600.0,
        ),
        Variable("SLURM_JOB_ID", text, "a job id", "Slurm: the job this process runs in (its locks name it)"),
        Variable("SLURM_ARRAY_JOB_ID", text, "a job id", "Slurm: the array job this process runs in"),
        Variable("SLURM_ARRAY_TASK_ID", text, "a task id", "Slurm: the array task this process runs"),
        Variable(
            "CUBLAS_WORKSPACE_CONFIG",
            text,
            "cuBLAS's form, e.g. :4096:8",
            "cuBLAS's workspace (recorded; deterministic mode sets it)",
        ),
        # The terminal: read by rich for every command's output.
        Variable("COLUMNS", columns, "a whole number above 0", "the terminal's width (0 or a word: ignored)"),
        Variable("LINES", columns, "a whole number above 0", "the terminal's height (0 or a word: ignored)"),
    )
}


def problem(name: str, environ: Mapping[str, str]) -> str | None:
    """Why the variable's value does not parse (NAME='value': expected ...), or None."""
    variable = VARIABLES[name]
    raw = environ.get(name)
    if raw is None or not raw.strip():
        return None
    try:
        variable.parse(raw.strip())
    except (ValueError, KeyError):
        return f"{name}={raw!r}: expected {variable.expected} ({variable.meaning})"
    return None


def problems(environ: Mapping[str, str]) -> list[str]:
    return [p for name in VARIABLES if (p := problem(name, environ)) is not None]


def check(environ: Mapping[str, str]) -> None:
    """Raise BadEnvironment naming every variable whose value does not parse."""
    found = problems(environ)
    if found:
        raise BadEnvironment(found)


def value(name: str, environ: Mapping[str, str]) -> Any:
    """The variable's parsed value (its default when unset or empty); BadEnvironment when it does not parse."""
    variable = VARIABLES[name]
    if (found := problem(name, environ)) is not None:
        raise BadEnvironment([found])
    raw = environ.get(name)
    return variable.default if raw is None or not raw.strip() else variable.parse(raw.strip())

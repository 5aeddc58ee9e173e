"""The options several commands take, each declared once: its flags, its default and its help.

A command takes the declaration as its parameter's default (`manifests_dir: Optional[Path] = MANIFESTS`).
Where commands use an option to different ends (a profile to run, or the one profile to show; a results
folder to write, or one to read), the declaration takes the words for that end and nothing else: the flags
and the default stay those declared here. An option left unset is None, and the command's settings fill it
in one place (repro.cli.common: --profile from $REPRO_PROFILE, --results-dir from $REPRO_RESULTS, ...).
The executors' options are declared in repro.cli.execution, in their own help panel.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from repro.spec.profiles import shipped_profiles


def profile_help() -> str:
    """The --profile help, from repro/spec/profiles.toml: each shipped profile with its evidence and device."""
    names = [
        f"{name} ({p.evidence}{', ' + p.device if p.device != 'auto' else ''})"
        for name, p in shipped_profiles().items()
    ]
    return f"{', '.join(names)} or your own (--profiles). Default: $REPRO_PROFILE or smoke."


# An empty value is what `-p "$PROFILE"` or `-o "$RESULTS"` gives with the variable unset: read as unset (a profile)
# or as "." (a folder), it ran the default profile or wrote into the current folder, and exited 0.
EMPTY = "empty (an unset variable?)"


def _profile_name(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise typer.BadParameter(f"{EMPTY}; expected a profile's name, as `repro list` shows them")
    return value


def _folder(text: str) -> Path:
    """A folder option's text as a path; an empty one is refused (pathlib reads it as ".")."""
    if not text.strip():
        raise typer.BadParameter(f"{EMPTY}; expected a folder")
    return Path(text)


def profile_option(help: str | None = None) -> Any:
    """--profile/-p: a profile name; unset, the command's setting ($REPRO_PROFILE) or what `help` says."""
    return typer.Option(None, "--profile", "-p", callback=_profile_name, help=help or profile_help())


WRITES_RESULTS = "Default: $REPRO_RESULTS or ./results."
READS_RESULTS = "The results folder to read. Default: $REPRO_RESULTS or ./results."


def results_option(help: str = WRITES_RESULTS) -> Any:
    """--results-dir/-o: a results folder; unset, the command's setting ($REPRO_RESULTS)."""
    return typer.Option(None, "--results-dir", "-o", parser=_folder, help=help)


def verbose_option(help: str) -> Any:
    """-v/--verbose: the detail the command leaves out by default, which `help` names."""
    return typer.Option(False, "--verbose", "-v", help=help)


PROFILE = profile_option()
RESULTS = results_option()
READ_RESULTS = results_option(READS_RESULTS)
# The help texts are short: `verify-all --help` is one screen at 80 columns (tests/test_screens.py); the docs say more.
MANIFESTS = typer.Option(None, "--manifests", help="Manifests folder. Default: $REPRO_MANIFESTS, else the package's.")
PROFILES = typer.Option(
    None, "--profiles", help="Profiles of your own (TOML), over the shipped ones. Default: $REPRO_PROFILES."
)
READINGS = typer.Option(
    None, "--readings", help="Readings of your own (TOML), added to the shipped ones. Default: $REPRO_READINGS."
)
DATA = typer.Option(None, "--data-dir", parser=_folder, help="Datasets. Default: $REPRO_DATA or ./data.")
DEVICE = typer.Option("auto", "--device", help="auto, cpu or cuda.")
JOBS = typer.Option(
    0, "--jobs", "-j", min=0, help="Runs trained at once; 0: cores / each run's threads on a CPU, 1 on a GPU."
)
UNVERIFIED = typer.Option(
    False, "--allow-unverified-data", help="Train on data that fails its checksums; every record says so."
)
WORKERS = typer.Option(
    None, "--workers", min=0, help="Loader processes per split (ImageNet). Default: the usable CPUs less one."
)
DETERMINISTIC = typer.Option(
    False, "--deterministic", help="PyTorch's deterministic mode. Default: $REPRO_DETERMINISTIC."
)
VERBOSE = verbose_option("The detail (repro.log has it always).")


def resolved_device(device: str) -> str:
    """The --device option resolved (repro.core.devices.resolve_device); a device this machine lacks is a usage
    error."""
    from repro.core.devices import DeviceError, resolve_device

    try:
        return resolve_device(device)
    except DeviceError as exc:
        raise typer.BadParameter(str(exc), param_hint="--device") from None

"""The options several commands take, each declared once: its flags, its default and its help.

A command takes the declaration as its parameter's default (`manifests_dir: Optional[Path] = MANIFESTS`).
Where commands use an option to different ends (a profile to run, or the one profile to show; a results
folder to write, or one to read), the declaration takes the words for that end and nothing else: the flags
and the default stay those declared here. An option left unset is None, and the command's settings fill it
in one place (repro.cli.common: --profile from $REPRO_PROFILE, --results-dir from $REPRO_RESULTS, ...).
The executors' options are declared in repro.cli.execution, in their own help panel.
"""

from __future__ import annotations

from typing import Any

import typer

from repro.spec.profiles import shipped_profiles


def profile_help() -> str:
    """The --profile help, from repro/spec/profiles.toml: each shipped profile with its evidence and device."""
    names = [f"{name} ({p.evidence}{', ' + p.device if p.device != 'auto' else ''})"
             for name, p in shipped_profiles().items()]
    return (f"Profile: {', '.join(names)}, or one of your own (--profiles FILE or $REPRO_PROFILES); `repro list` "
            "shows what each costs. Default: $REPRO_PROFILE or smoke.")


def profile_option(help: str | None = None) -> Any:
    """--profile/-p: a profile name; unset, the command's setting ($REPRO_PROFILE) or what `help` says."""
    return typer.Option(None, "--profile", "-p", help=help or profile_help())


WRITES_RESULTS = "Where results go. Default: $REPRO_RESULTS or ./results."
READS_RESULTS = "The results folder to read. Default: $REPRO_RESULTS or ./results."


def results_option(help: str = WRITES_RESULTS) -> Any:
    """--results-dir/-o: a results folder; unset, the command's setting ($REPRO_RESULTS)."""
    return typer.Option(None, "--results-dir", "-o", help=help)


def verbose_option(help: str) -> Any:
    """-v/--verbose: the detail the command leaves out by default, which `help` names."""
    return typer.Option(False, "--verbose", "-v", help=help)


PROFILE = profile_option()
RESULTS = results_option()
READ_RESULTS = results_option(READS_RESULTS)
MANIFESTS = typer.Option(None, "--manifests", help="Folder of manifests. Default: $REPRO_MANIFESTS or the package's "
                         "manifests/.")
PROFILES = typer.Option(None, "--profiles", help="TOML file of profiles (tables named profiles.<name>) added to the "
                        "shipped ones, replacing one of the same name. Default: $REPRO_PROFILES, else none.")
DATA = typer.Option(None, "--data-dir", help="Dataset root. Default: $REPRO_DATA or ./data.")
DEVICE = typer.Option("auto", "--device", help="auto, cpu or cuda.")
JOBS = typer.Option(0, "--jobs", "-j", min=0, help="Runs trained in parallel processes; 0: one per CPU core on a CPU, "
                    "1 on a GPU.")
UNVERIFIED = typer.Option(False, "--allow-unverified-data",
                          help="Train on dataset files that fail their published checksum (a re-packed copy); "
                               "every run record and the report say so.")
WORKERS = typer.Option(None, "--workers", min=0, help="Loader worker processes per split for image folders "
                       "(ImageNet). Default: the CPUs this process may use, minus one.")
DETERMINISTIC = typer.Option(False, "--deterministic",
                             help="Train in PyTorch's deterministic mode (and cuBLAS's fixed workspace), on the "
                                  "profile's threads: bit-identical runs on the same kind of machine. A profile's "
                                  "`deterministic` key wins. Default: $REPRO_DETERMINISTIC.")
VERBOSE = verbose_option("Show the detail (every FLOP count, run and evidence); it is always in "
                         "<results>/<profile>/repro.log.")

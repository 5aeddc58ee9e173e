"""`python -m repro` is the `repro` command."""

from repro.cli import main

main()

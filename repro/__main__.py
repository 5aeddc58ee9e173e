"""`python -m repro` is the `repro` command."""

from repro.cli import app

app(prog_name="repro")

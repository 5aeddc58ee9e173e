"""Reproducibility artifact for arXiv 2605.15484 (sparse MoE and backbone compute leverage)."""

import time

__version__ = "0.1.0"

# The interpreter's own start, for the start-up phase (repro.results.timings): this first import of the package
# less the CPU seconds the process had used by then (starting the interpreter is CPU-bound). Not the process's
# start: `bash -c "pip install ... && repro ..."` runs repro in the shell's own process, started before the install.
STARTED = time.time() - time.process_time()

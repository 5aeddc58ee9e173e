"""Execution: who trains the runs that have no record yet, and the records they leave. The unit is the run
(its config hash). The scheduler sits above training (repro.train); the primitives it and the layers
below share (per-run locks, Ctrl-C and SIGTERM, the torchrun process group) live low, in repro.runtime.

    runs            the scheduler: pending runs go to an executor; records are reused, never repeated
    records         one run's record: paths, load, train under a lock; record_checks: what makes one unusable
    options         the executors' options, as data and as one Typer option set (torch-free)
    local, slurm    the executors (this machine; a Slurm job array through submitit); waiting: on another process
    status          `repro status`

An executor is `fn(todo, batch, results_dir, device, data_dir, jobs, progress, options)`: it trains
the RunRequests in `todo`, each through records.attempt_run (lock, train, record), and books every
outcome in `batch` (a records.RunBatch). Every executor writes the same records to the same results
directory; tables are rendered from them. This file imports nothing: `repro --help` stays light.
"""

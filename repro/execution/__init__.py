"""Execution: who trains the runs that have no record yet, and the records they leave. The unit is the run
(its config hash). The scheduler sits above training (repro.train.loop); the primitives it and the layers
below share (per-run locks, Ctrl-C and SIGTERM, the torchrun process group, a run's threads) live low,
in repro.runtime.

    runs            the scheduler: pending runs go to an executor; records are reused, never repeated
    protocol        what an executor takes (ExecutionRequest) and returns (an Outcome per run, a RunState)
    files           a run's files (record, checkpoint, lock, failure) and the one probe of what they say
    records         one run's record: train under a lock, write it; record_checks: what makes one unusable
    options         the executors' options, as data (torch-free)
    local, slurm    the executors (this machine; a Slurm job array through submitit)
    torchrun        a command under torchrun
    status          what `repro status` shows

Every executor is a protocol.Executor: it trains the runs of one ExecutionRequest, each through
records.attempt_run (lock, train, record), and returns one Outcome per run, which the scheduler books.
Every executor writes the same records to the same results directory; tables are rendered from them.
This file imports nothing: `repro --help` stays light.
"""

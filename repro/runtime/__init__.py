"""Process primitives several layers share, low enough that data/, train.py and digit_weights.py may import them.

    locks           per-run (and per-file) locks with a heartbeat, taken over when stale
    interrupt       Ctrl-C and SIGTERM: stop within seconds, keep what finished, release own locks
    distributed     one run on N processes (torchrun): the process group, sharding, broadcasts
    numerics        a run's intra-op threads and deterministic mode
    memory          large freed blocks kept in the heap, not unmapped (glibc's malloc thresholds)

Nothing here imports the rest of repro.
"""

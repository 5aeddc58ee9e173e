"""The cost model: what a profile costs before it runs, and what a GPU budget buys. Torch-free.

    estimate      the one function that prices runs (device time, shared fixed costs once, wall per executor)
    wall_time     a command's wall time by phase, from it: `repro list`, the table line, the appendix
    calibration   how fast the device trains: the CPU reference scaled by this CPU's kept speed factor against
                  its machine (`repro bench speed`), a GPU calibration file, or the GPU reference
    cpu_reference, gpu_reference   the shipped references: what runs took on one CPU and on one H200
    measured, fit what a results folder measured (with its load) and the cost model fitted to it
    claim_cost    what deciding one claim costs; plan: the claims a GPU budget decides (`repro plan`)
    taken, disk   time taken beside the estimate (the report), the disk a profile needs
    tables        the tables `repro list` and `repro plan` print

This file imports nothing: `repro list` imports only the modules it uses.
"""

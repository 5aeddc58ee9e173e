"""The cost model: what a profile costs before it runs, and what a GPU budget buys. Torch-free.

    estimate      device-hours per run, summed over distinct runs, and wall time per executor
    calibration   how fast the device trains: the CPU reference scaled by this CPU's speed, a GPU calibration
                  file, or the GPU reference
    speed         this CPU's speed factor against the CPU reference's machine (`repro bench speed`)
    cpu_reference, gpu_reference   the shipped references: what runs took on one CPU and on one H200
    plan          `repro plan`: the claims a budget decides, written as a profiles file
    tables        the tables `repro list` and `repro plan` print

This file imports nothing: `repro list` imports only the modules it uses.
"""

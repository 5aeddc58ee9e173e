"""The cost model: what a profile costs before it runs, and what a GPU budget buys. Torch-free.

    estimate      device-hours per run, summed over distinct runs, and wall time per executor
    calibration   how fast the device trains: measured (CPU), a calibration file, or a reference (GPU)
    plan          `repro plan`: the claims a budget decides, written as a profiles file
    tables        the tables `repro list` and `repro plan` print

This file imports nothing: `repro list` imports only the modules it uses.
"""

"""Write repro/measure/model_macs.json: every shipped model's multiply-adds from its shapes.

    python tools/write_model_macs.py

Run it after changing a model, a FLOP rule or a manifest's rows, when tests/measure/test_model_macs.py says so.
"""

from repro.plan.manifest import load_all
from repro.plan.table_plan import plan_all
from repro.measure.flop_check import _shape_macs
from repro.measure.model_macs import needed_keys, write_table

if __name__ == "__main__":
    keys = sorted(needed_keys(plan_all(load_all())))
    path = write_table({key: _shape_macs(key) for key in keys})
    print(f"wrote {path}: {len(keys)} models")

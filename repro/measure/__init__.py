"""The measures a manifest row can ask for, each with its measurer, in one explicit table.

A measurer is ``fn(plan: repro.plan.table_plan.TablePlan, ctx: repro.measure.measurer.Context) ->
repro.measure.measurer.Measurement``: it reads the table's plan, built before any measurer runs, and plans
nothing itself. Measurers import their heavy dependencies (torch, the models) when they run.
"""

from __future__ import annotations

from repro.plan.table_plan import TablePlan
from repro.core.registry import Registry
from repro.measure.measurer import Context, Measurement
from repro.results.timings import phase

MEASURERS = Registry("measure")


def _flops(plan: TablePlan, ctx: Context) -> Measurement:
    from repro.measure.flop_check import measure_flops

    with phase("FLOP counting", plan.id):
        return Measurement(measure_flops(plan, ctx))


def _accuracy(plan: TablePlan, ctx: Context) -> Measurement:
    from repro.measure.accuracy import measure_accuracy

    with phase("training", plan.id):
        return measure_accuracy(plan, ctx)


def _latency(plan: TablePlan, ctx: Context) -> Measurement:
    from repro.measure.latency import measure_latency

    with phase("latency", plan.id):
        return Measurement(measure_latency(plan, ctx))


MEASURERS.register("flops", doc="per-sample FLOPs three ways and rho (repro.measure.flop_check)")(_flops)
MEASURERS.register("accuracy", doc="training runs, per-seed accuracy, paired gaps (repro.measure.accuracy)")(_accuracy)
MEASURERS.register("latency", doc="wall-clock latency and operator counts (repro.measure.latency)")(_latency)

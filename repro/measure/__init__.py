"""The measures a manifest row can ask for, each with its measurer, in one explicit table.

A measurer is ``fn(manifest, ctx: repro.measure.measurer.Context) -> repro.measure.measurer.Measurement``.
Measurers import their heavy dependencies (torch, the models) when they run.
"""

from __future__ import annotations

from repro.plan.manifest import Manifest
from repro.core.registry import Registry
from repro.measure.measurer import Context, Measurement
from repro.results.timings import phase

MEASURERS = Registry("measure")


def _flops(manifest: Manifest, ctx: Context) -> Measurement:
    from repro.measure.flop_check import measure_flops

    with phase("FLOP counting", manifest.id):
        return Measurement(measure_flops(manifest, ctx))


def _accuracy(manifest: Manifest, ctx: Context) -> Measurement:
    from repro.measure.accuracy import measure_accuracy

    with phase("training", manifest.id):
        return measure_accuracy(manifest, ctx)


def _latency(manifest: Manifest, ctx: Context) -> Measurement:
    from repro.measure.latency import measure_latency

    with phase("latency", manifest.id):
        return Measurement(measure_latency(manifest, ctx))


MEASURERS.register("flops", doc="per-sample FLOPs three ways and rho (repro.measure.flop_check)")(_flops)
MEASURERS.register("accuracy", doc="training runs, per-seed accuracy, paired gaps (repro.measure.accuracy)")(_accuracy)
MEASURERS.register("latency", doc="wall-clock latency and operator counts (repro.measure.latency)")(_latency)

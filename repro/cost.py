"""Cost estimates shown before a run and by `repro list`."""

from __future__ import annotations

from typing import Callable

from repro.manifest import Manifest

# measure -> function(manifest, profile name) -> (seconds or None, description)
ESTIMATORS: dict[str, Callable[[Manifest, str], tuple[float | None, str]]] = {}


def register_estimator(measure: str, fn: Callable[[Manifest, str], tuple[float | None, str]]) -> None:
    ESTIMATORS[measure] = fn


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"~{seconds:.0f} s"
    if seconds < 5400:
        return f"~{seconds / 60:.0f} min"
    return f"~{seconds / 3600:.1f} h"


def estimate(manifest: Manifest, profile: str) -> str:
    parts, total = [], 0.0
    for measure in sorted(manifest.measures()):
        if measure == "flops":
            n = sum("flops" in r.measures for r in manifest.rows)
            seconds = 0.5 * n  # analytic counting: well under a second a model on a CPU
            parts.append(f"{n} FLOP counts")
        elif measure in ESTIMATORS:
            seconds, text = ESTIMATORS[measure](manifest, profile)
            parts.append(text)
        else:
            seconds = None
            parts.append(f"{measure}: no estimate")
        total += seconds or 0.0
    return f"{_duration(total)} ({'; '.join(parts)})"

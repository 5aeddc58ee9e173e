"""What runs produced, as data: metric paths, measurements and results.json (measurements.py), run records read
on their own (run_records.py), a folder as DataFrames (frames.py: runs, history, verdicts, readings,
row_seeds, row_stats), where a command's time went (timings.py), and where a number came from (provenance.py).

The frames are imported on first use, so that importing this package does not import pandas."""

_FRAMES = ("runs", "history", "verdicts", "readings", "row_seeds", "row_stats")


def __getattr__(name: str):
    if name in _FRAMES:
        from repro.results import frames

        return getattr(frames, name)
    raise AttributeError(f"module 'repro.results' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted([*globals(), *_FRAMES])

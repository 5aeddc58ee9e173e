"""The artifact's caches outside the results directory: where they live, read and written safely.

Everything lives under one cache folder, which the caller passes: the command's settings give it
(repro.core.settings: ``$REPRO_CACHE``, else ``$XDG_CACHE_HOME/repro``, else ``~/.cache/repro``), one kind
of entry per subfolder: ``speed.json`` (this CPU against the CPU reference, repro.cost.calibration), ``flops/``
(FLOP counts for estimates), ``sources/``, ``sizes/``, ``digit_weights/``, ``moe-conv/`` (MoEConv2d's paths
chosen by measured time, repro.models.moe_conv_choice)... Entries are written atomically;
an entry that cannot be read back is ignored with a warning and rebuilt, so a damaged cache never stops a command.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from repro.core import jsonfile
from repro.core.fsutil import atomic_write_json


def cache_dir(cache: Path, kind: str) -> Path:
    """The folder of one kind of entry inside the cache folder `cache`."""
    return Path(cache) / kind


def read_json(path: Path) -> Any | None:
    """The cached value, or None when absent or damaged (then with a warning naming the file)."""
    try:
        return jsonfile.load(path)
    except FileNotFoundError:
        return None
    except jsonfile.JsonUnreadable as exc:
        print(
            f"warning: ignoring the damaged cache entry {path} ({type(exc).__name__}: {exc}); it will be rebuilt",
            file=sys.stderr,
        )
        return None


def write_json(path: Path, value: Any) -> None:
    """Write atomically; a cache that cannot be written (read-only home) only costs a recount."""
    try:
        atomic_write_json(path, value)
    except OSError as exc:
        print(f"warning: cannot write the cache entry {path} ({exc}); continuing without it", file=sys.stderr)


def write_torch(path: Path, obj: Any) -> None:
    """torch.save `obj` atomically (a temporary file beside `path`, then a rename), streamed to the file rather
    than held in memory twice as a decoded dataset would be."""
    import torch  # only the tensor caches need it: reading the others stays torch-free

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise

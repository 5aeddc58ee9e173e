"""Write repro/cost/cpu_reference.json: what CPU runs cost on this machine, for `repro list` on a CPU not measured.

    python tools/write_cpu_reference.py RESULTS_DIR [RESULTS_DIR ...]

Each folder holds a cold `repro verify-all` of a shipped CPU profile on a 2-core machine of CI's kind, e.g.

    repro verify-all --profile smoke --results-dir /tmp/ref/smoke
    repro verify-all --profile functional --results-dir /tmp/ref/functional

(an empty $REPRO_CACHE for each, so the stand-in pretraining is measured too). Run it after a change to a
profile or a model changes what the runs cost, and say in the commit which machine it was.
"""

import collections
import json
import sys
from pathlib import Path

from repro.cost.cpu_reference import REFERENCE_FILE, dumps
from repro.cost.fit import build_cpu_reference
from repro.core.fsutil import atomic_write_text
from repro.plan.manifest import load_all
from repro.results.timings import machine, machine_key


def runs_commit(folders: list[Path]) -> str:
    """The commit the folders' run records were trained on (the most common, should they differ)."""
    commits = collections.Counter()
    for folder in folders:
        for path in (folder / "runs").glob("*.json"):
            commits[json.loads(path.read_text()).get("provenance", {}).get("git_commit", "unknown")] += 1
    return commits.most_common(1)[0][0] if commits else "unknown"


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    folders = [Path(p) for p in sys.argv[1:]]
    doc = build_cpu_reference(folders, load_all(), runs_commit(folders), machine_key(machine()))
    atomic_write_text(REFERENCE_FILE, dumps(doc))
    print(f"wrote {REFERENCE_FILE}: {len(doc['runs'])} runs, {doc['fit']}; rates {doc['rates']}")

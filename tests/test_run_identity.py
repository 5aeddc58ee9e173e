"""Run identity: every planned run of every manifest under every shipped profile keeps the hash it had when
tests/golden/run_hashes.json was written. A change not meant to change what a run computes (a move, a
rename, a new option) must leave this file alone; one that is meant to (a new TRAINING_VERSION, a recipe)
writes it again with `python tests/test_run_identity.py --write` and says so in its commit."""

import json
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent / "golden" / "run_hashes.json"


def planned_hashes() -> dict[str, dict[str, str]]:
    """{profile: {"<manifest>/<row> seed <s>": hash}} for every shipped manifest and profile, one thread,
    not deterministic (the defaults with no environment)."""
    from repro.plan.manifest import load_all
    from repro.plan.run_config import planned_runs

    out: dict[str, dict[str, str]] = {}
    for manifest in load_all():
        for name, profile in manifest.profiles.items():
            for run in planned_runs(manifest, profile):
                out.setdefault(name, {})[run.label] = run.cfg.hash
    return {name: dict(sorted(runs.items())) for name, runs in sorted(out.items())}


def _defaults(monkeypatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("REPRO_DETERMINISTIC", raising=False)
    monkeypatch.delenv("REPRO_PROFILES", raising=False)


def test_every_planned_run_keeps_its_hash(monkeypatch):
    _defaults(monkeypatch)
    golden, now = json.loads(GOLDEN.read_text()), planned_hashes()
    assert set(now) == set(golden), f"profiles {sorted(now)} != golden {sorted(golden)}"
    for name in golden:
        changed = sorted(k for k in golden[name].keys() & now[name].keys() if golden[name][k] != now[name][k])
        assert not changed, f"{name}: {len(changed)} runs changed hash, e.g. {changed[:3]}"
        assert now[name].keys() == golden[name].keys(), (
            f"{name}: runs added {sorted(now[name].keys() - golden[name].keys())[:3]}, "
            f"removed {sorted(golden[name].keys() - now[name].keys())[:3]}"
        )


def test_the_golden_file_covers_every_shipped_profile_and_many_runs():
    golden = json.loads(GOLDEN.read_text())
    assert {"smoke", "functional", "full"} <= set(golden)
    assert len(golden["full"]) > 400 and all(len(h) == 16 for runs in golden.values() for h in runs.values())


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    import os

    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ.pop("REPRO_DETERMINISTIC", None)
    os.environ.pop("REPRO_PROFILES", None)
    GOLDEN.write_text(json.dumps(planned_hashes(), indent=1) + "\n")
    print(f"wrote {GOLDEN}")

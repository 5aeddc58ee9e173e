"""Results as data, end to end on smoke folders that `repro verify-all` wrote (Table 6's FLOP claims and the headline
table's training rows; issue 40's "done when"): one frame row per record, the report's per-row numbers equal to the
frame's, `repro export` files whose rows are the records', `repro compare` on folders made with 1 and 2 threads
and on two made by the same command, and the worked example under docs/ run on one of them."""

import json
import os
import re
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from checkout import MANIFESTS, REPO_ROOT
from repro.claims.stats import paired_gap
from repro.results import row_seeds, row_stats, runs

pytestmark = pytest.mark.slow  # three verify-all runs of 8 training runs each


def _verify_all(root, name, threads):
    env = {**os.environ, "REPRO_MANIFESTS": str(root / "manifests"), "OMP_NUM_THREADS": str(threads), "COLUMNS": "80"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "repro",
            "verify-all",
            "--profile",
            "smoke",
            "--jobs",
            "1",
            "--results-dir",
            str(root / name),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root / name


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """one: 1 thread; two: 2 threads; again: 1 thread, the same command as `one`."""
    root = tmp_path_factory.mktemp("results_data")
    (root / "manifests").mkdir()
    for name in ("headline_cifar10", "table6"):
        shutil.copy(MANIFESTS / f"{name}.toml", root / "manifests")
    return {name: _verify_all(root, name, threads) for name, threads in (("one", 1), ("two", 2), ("again", 1))}


def repro(*args):
    done = subprocess.run(
        [sys.executable, "-m", "repro", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "80"},
    )
    return done.returncode, done.stdout + done.stderr


def test_runs_has_one_row_per_record_after_verify_all(folders):
    one = folders["one"]
    code = f"from repro.results import runs; print(runs({str(one)!r}).shape)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    records = list((one / "runs").glob("*.json"))
    assert out.returncode == 0 and len(records) == 8
    assert out.stdout.strip() == f"({len(records)}, {len(runs(one).columns)})"


def _markdown_table(text: str, title: str) -> list[dict]:
    block = text.split(f"## {title}\n", 1)[1].lstrip("\n").split("\n\n", 1)[0]
    lines = [
        [c.strip() for c in line.strip().strip("|").split("|")] for line in block.splitlines() if line.startswith("|")
    ]
    return [dict(zip(lines[0], cells)) for cells in lines[2:]]


def test_the_reports_per_row_numbers_are_the_frames(folders):
    one = folders["one"]
    from repro.plan.manifest import find_manifest

    manifest = find_manifest("headline_cifar10")
    text = (one / "smoke" / "headline_cifar10" / "headline_cifar10.md").read_text()
    stats = row_stats(row_seeds(one, "smoke")).set_index(["table", "row"]).loc["headline_cifar10"]
    shown = {r["Row"]: r for r in _markdown_table(text, "Accuracy of every configuration")}
    assert len(shown) == 4
    for row in manifest.rows:
        mean, sd = 100 * stats.at[row.id, "accuracy_mean"], 100 * stats.at[row.id, "accuracy_sd"]
        assert shown[row.label]["Accuracy (%)"] == f"{mean:.2f} ± {sd:.2f}"
    seeds = row_seeds(one, "smoke")
    by_row = {r: dict(zip(g.seed, g.accuracy)) for r, g in seeds[seeds.table == "headline_cifar10"].groupby("row")}
    stored = json.loads((one / "smoke" / "headline_cifar10" / "results.json").read_text())["metrics"]
    gaps = {r["Configuration"]: r for r in _markdown_table(text, f"{manifest.title}: MoE - dense gaps paired by seed")}
    for c in manifest.comparisons:
        gap = paired_gap(by_row[c.row], by_row[c.baseline])
        assert gaps[c.label]["Gap (pp)"] == f"{100 * gap.mean:+.2f} ± {100 * gap.sd:.2f}"
        assert stored[f"comparisons.{c.id}.gap"]["mean"] == gap.mean  # what the claims read: the same number
    records = runs(one).set_index("run_hash").accuracy
    assert all(records[h] == a for h, a in zip(seeds.run_hash, seeds.accuracy))  # summaries = records


def test_export_csv_writes_three_files_whose_rows_match_the_records(folders, tmp_path):
    one = folders["one"]
    code, out = repro("export", "--results-dir", one, "--format", "csv", "--out", tmp_path)
    assert code == 0, out
    frames = {name: pd.read_csv(tmp_path / f"{name}.csv") for name in ("runs", "history", "verdicts")}
    records = {p.stem: json.loads(p.read_text()) for p in (one / "runs").glob("*.json")}
    assert sorted(frames["runs"].run_hash) == sorted(records)
    assert len(frames["history"]) == sum(len(r["history"]) for r in records.values())
    epoch = frames["history"].set_index(["run_hash", "epoch"]).test_accuracy
    assert all(epoch[(h, e["epoch"])] == e["test_accuracy"] for h, r in records.items() for e in r["history"])
    stored = [json.loads(p.read_text()) for p in (one / "smoke").glob("*/results.json")]
    assert len(frames["verdicts"]) == sum(len(r["verdicts"]) for r in stored) > 0


def test_compare_names_the_rows_that_differ_between_thread_counts(folders):
    """Threads are part of a run's name, so every row's runs are other runs and the comparison names the setting.
    A row whose accuracies differ on them is a difference the exit code reports (1), even within seed noise (on
    the machine these were written on, one of the four rows differed, by one test image on one seed)."""
    code, out = repro("compare", folders["one"], folders["two"], "--json")
    data = json.loads(out)
    assert len(data["rows"]) == 4 and all(r["other_runs_differ"] == (r["difference"] != 0) for r in data["rows"])
    assert code == (1 if any(r["difference"] != 0 for r in data["rows"]) else 0) == (1 if data["differs"] else 0)
    assert {r["settings"] for r in data["rows"]} == {"threads 1 vs 2"}
    differ = {f"{r['table']}/{r['row']}" for r in data["rows"] if r["difference"] != 0}
    code, screen = repro("compare", folders["one"], folders["two"])
    named = {line.split()[0] for line in screen.splitlines() if re.match(r"headline_cifar10/\S+ ", line)}
    assert named == differ and code == (1 if data["differs"] else 0)
    assert "4 of them made under other settings: threads 1 vs 2" in screen


def test_compare_of_two_folders_from_the_same_command_exits_0(folders):
    code, out = repro("compare", folders["one"], folders["again"], "--json")
    data = json.loads(out)
    assert code == 0 and not data["differs"] and data["verdicts"] == []
    assert all(r["difference"] == 0 and r["settings"] == "" for r in data["rows"])


def test_the_worked_example_draws_gap_against_rho(folders, tmp_path):
    one = folders["one"]
    script = REPO_ROOT / "docs" / "examples" / "gap_vs_rho.py"
    done = subprocess.run(
        [sys.executable, str(script), str(one), "--out", str(tmp_path / "g.png")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    stored = json.loads((one / "smoke" / "headline_cifar10" / "results.json").read_text())["metrics"]
    for comparison in ("dw072", "dw2"):
        line = next(line for line in done.stdout.splitlines() if f" {comparison} " in f" {line} ")
        rho, gap = (float(x) for x in line.split()[2:4])
        assert rho == pytest.approx(stored[f"comparisons.{comparison}.rho"], abs=1e-4)
        assert gap == pytest.approx(100 * stored[f"comparisons.{comparison}.gap"]["mean"], abs=1e-4)

"""`repro compare A B` (repro.report.compare): rows beyond seed noise by Welch's t over seeds with Holm over rows,
the settings that differ named beside a row, runs in one folder only, verdicts that changed, damaged records
counted and left where they are, and the exit code a script reads (0 same, 1 differs, 2 bad input)."""

import dataclasses
import json
import warnings

import pytest
from fake_records import PROFILE, config, record, rho_deciding, write_manifest_t, write_record, write_result
from typer.testing import CliRunner

from repro.claims.stats import welch
from repro.cli import app
from repro.report.compare import CompareError, compare_folders
from repro.plan.manifest import load_all
from repro.results.family import holm
from repro.results.measurements import Verdict

runner = CliRunner()
DENSE, MOE = (0.50, 0.52, 0.51), (0.60, 0.58, 0.61)


@pytest.fixture(autouse=True)
def manifests(tmp_path_factory, monkeypatch):
    """Table `t`'s manifest, which decides the folders' verdicts (`repro compare` finds it in $REPRO_MANIFESTS)."""
    folder = write_manifest_t(tmp_path_factory.mktemp("t"))
    monkeypatch.setenv("REPRO_MANIFESTS", str(folder))
    return load_all(folder)


def make(root, dense=DENSE, moe=MOE, threads=1, status="reproduced", seeds=3):
    """A folder of table `t`: rows `dense` and `moe` over `seeds` seeds, and the rho that decides its claim as
    `status`; the status stored beside it is the other one, which no reader may take as the verdict."""
    profile = dataclasses.replace(PROFILE, threads=threads)
    rows = {}
    for row, accs, width in (("dense", dense, 0.5), ("moe", moe, 0.25)):
        cfgs = [config(seed=s, profile=dataclasses.replace(profile, lr=width)) for s in range(seeds)]
        rows[row] = [record(c, accuracy=a) for c, a in zip(cfgs, accs)]
        for c, a in zip(cfgs, accs):
            write_record(root, c, accuracy=a)
    forged = "not reproduced" if status == "reproduced" else "reproduced"
    write_result(
        root, "t", rows, verdicts=[Verdict("c", "s", "4.2", "analytic", forged, "e")], metrics=rho_deciding(status)
    )
    return root


def invoke(*args):
    done = runner.invoke(app, ["compare", *map(str, args)], env={"COLUMNS": "80"})
    return done, [line for line in done.output.splitlines() if line.strip()]


def test_two_folders_alike_exit_0(tmp_path):
    a, b = make(tmp_path / "a"), make(tmp_path / "b")
    done, lines = invoke(a, b)
    assert done.exit_code == 0, done.output
    assert "Profile smoke: 2 rows in both, 0 differ, 0 beyond seed noise" in done.output.replace("\n", " ")
    assert lines[-1] == "Same: no row beyond seed noise or on other runs, no verdict changed: exit 0"
    assert all(len(line) <= 80 or " " not in line.strip() for line in done.output.splitlines())


def test_a_row_beyond_seed_noise_is_named_with_welch_and_holm_and_exits_1(tmp_path, manifests):
    shifted = (0.70, 0.71, 0.69)
    a, b = make(tmp_path / "a"), make(tmp_path / "b", dense=shifted, moe=(0.61, 0.58, 0.60))
    out = compare_folders(a, b, manifests=manifests)
    tests = {"dense": welch(DENSE, shifted), "moe": welch(MOE, (0.61, 0.58, 0.60))}
    adjusted = dict(zip(tests, holm([t.p for t in tests.values()])))
    rows = {r.row: r for r in out.rows}
    for row, t in tests.items():
        assert (rows[row].p, rows[row].p_holm, rows[row].difference) == (t.p, adjusted[row], t.difference)
    assert [r.row for r in out.beyond_noise] == ["dense"] and out.differs
    done, lines = invoke(a, b)
    assert done.exit_code == 1
    dense = next(line for line in lines if line.startswith("t/dense"))
    assert dense.split()[1:4] == ["51.00", "70.00", "+19.00"] and "beyond noise" in dense
    assert lines[-1].startswith("Differs: exit 1 (") and "beyond seed noise" in lines[-1]


def test_the_settings_that_differ_are_named_beside_the_row(tmp_path, manifests):
    a, b = make(tmp_path / "a"), make(tmp_path / "b", moe=(0.60, 0.59, 0.61), threads=2)
    out = compare_folders(a, b, manifests=manifests)
    assert {r.row: r.settings for r in out.rows} == {"dense": "threads 1 vs 2", "moe": "threads 1 vs 2"}
    assert not out.beyond_noise  # within seed noise here, but the moe row's runs are other runs, other numbers
    assert [r.row for r in out.rows if r.other_runs_differ] == ["moe"] and out.differs
    done, lines = invoke(a, b)
    assert done.exit_code == 1 and "2 of them made under other settings: threads 1 vs 2" in lines
    assert lines[-1] == "Differs: exit 1 (1 row(s) on other runs with other accuracies)"
    # other runs, the same numbers: not a difference
    same = compare_folders(a, make(tmp_path / "c", threads=2), manifests=manifests)
    assert not same.differs and not any(r.other_runs_differ for r in same.rows)
    assert any(line.startswith("t/moe") and line.endswith("threads 1 vs 2") for line in lines)


def test_runs_in_one_folder_and_changed_verdicts(tmp_path, manifests):
    a, b = make(tmp_path / "a"), make(tmp_path / "b", seeds=2, status="not reproduced")
    out = compare_folders(a, b, manifests=manifests)
    assert out.only_a == ["smoke/t/dense seed 2", "smoke/t/moe seed 2"] and out.only_b == []
    assert [(v.claim, v.status_a, v.status_b) for v in out.verdicts] == [("c", "reproduced", "not reproduced")]
    done, lines = invoke(a, b, "--json")
    assert done.exit_code == 1
    data = json.loads(done.output)
    assert data["differs"] and data["verdicts"][0]["status_b"] == "not reproduced"
    assert {r["row"]: (r["seeds_a"], r["seeds_b"]) for r in data["rows"]} == {"dense": (3, 2), "moe": (3, 2)}


def test_a_damaged_record_is_left_out_counted_and_left_where_it_is(tmp_path, manifests):
    a, b = make(tmp_path / "a"), make(tmp_path / "b")
    damaged = sorted((b / "runs").glob("*.json"))[0]
    damaged.write_text("{")
    out = compare_folders(a, b, manifests=manifests)
    assert list(out.unusable_b) == [str(damaged)] and damaged.read_text() == "{"
    assert sum(r.seeds_b for r in out.rows) == 5 and len(out.only_a) == 1
    done, lines = invoke(a, b)
    assert "B: " in done.output and "(1 unusable run record(s) left out)" in done.output.replace("\n", " ")


@pytest.mark.parametrize(
    "case,message",
    [
        ("B has no record", "error: B: no usable run record in {b}/runs"),
        ("B is missing", "error: B: {b} does not exist"),  # a typo read as "not a folder of results"
        ("B is a file", "error: B: {b} is a file, not a results folder"),
        (
            "no row in common",
            "error: no row of profile smoke has a usable run record in both {a} (2 rows) and {b} (1 rows)",
        ),
        ("unknown profile", "error: no results of profile 'full' in {a} (profiles with results: smoke)"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, case, message, manifests):
    a, b = make(tmp_path / "a"), tmp_path / "b"
    if case == "B has no record":
        (b / "runs").mkdir(parents=True)
    if case == "B is a file":
        b.write_text("")
    if case == "unknown profile":
        make(b)
    if case == "no row in common":
        runs = [record(config(seed=0), accuracy=0.5)]
        write_record(b, config(seed=0), accuracy=0.5)
        write_result(b, "other", {"dense": runs})
    done = runner.invoke(
        app, ["compare", str(a), str(b), *(["--profile", "full"] if "profile" in case else [])], env={"COLUMNS": "300"}
    )
    assert done.exit_code == 2, done.output
    assert [line for line in done.output.splitlines() if line.strip()] == [message.format(a=a, b=b)]
    with pytest.raises(CompareError), warnings.catch_warnings():
        warnings.simplefilter("error")  # the one line above says it all: no warning of the frames beside it
        compare_folders(a, b, "full" if "profile" in case else None, manifests)

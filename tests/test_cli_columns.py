"""Every command's output at 80 columns, in a terminal and piped: no id, path or number is cut, tables fit,
verify-all is quiet (no source location, no per-model line, a shared note said once) and logs the detail.

The inputs are small: the executor tests' two-row table and a copy with long ids, one epoch of 32 images.
"""

import json
import os
import re
import socket
import sys
import time
from pathlib import Path

import pytest
from rich.cells import cell_len
from typer.testing import CliRunner

from repro.cli import app
from repro.plan.manifest import load_all
from repro.plan.table_plan import build_plan

sys.path.insert(0, str(Path(__file__).parent / "execution"))
from minitable import MANIFEST, PROFILES  # noqa: E402

runner = CliRunner()
LONG = "a_table_whose_identifier_is_rather_long"
LONG_ROW = "a_sparse_moe_row_with_a_long_identifier"
LONG_CLAIM = "the_moe_row_beats_the_dense_row_by_some_margin"
MODES = {"terminal": {"COLUMNS": "80", "TTY_COMPATIBLE": "1"}, "piped": {"COLUMNS": "80", "TTY_COMPATIBLE": "0"}}
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("columns") / "a_folder_with_a_long_name_so_that_paths_are_wider_than_a_line"
    (root / "manifests").mkdir(parents=True)
    (root / "manifests" / "mini.toml").write_text(MANIFEST)
    long = (
        MANIFEST.replace('id = "mini"', f'id = "{LONG}"')
        .replace('id = "moe"', f'id = "{LONG_ROW}"')
        .replace('row = "moe"', f'row = "{LONG_ROW}"')
        .replace('id = "c"', f'id = "{LONG_CLAIM}"')
        .replace('measures = ["accuracy"]', 'measures = ["accuracy", "flops"]')
    )  # a FLOP line per row: detail
    # its claim another finding than mini's: two tables deciding one finding are refused (repro.claims.across)
    long = long.rstrip("\n") + '\nrow_metric = "late_drop"\n'
    (root / "manifests" / f"{LONG}.toml").write_text(long)
    (root / "profiles.toml").write_text(PROFILES.format(epochs=1, train_samples=32))
    env = {
        "REPRO_MANIFESTS": str(root / "manifests"),
        "REPRO_PROFILES": str(root / "profiles.toml"),
        "REPRO_DATA": str(root / "data"),
        "OMP_NUM_THREADS": "1",
    }
    return root, env, load_all(root / "manifests", root / "profiles.toml")


def invoke(args: list[str], env: dict, mode: str):
    result = runner.invoke(app, args, env={**env, **MODES[mode]})
    return result, ANSI.sub("", result.output)


def visible(output: str) -> list[str]:
    """The lines left on the screen: a terminal's progress bars are transient."""
    return [line.rstrip() for line in output.splitlines() if "━" not in line]


def whole(token: str, line: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(token)}(?![\w-])", line) is not None


UNIT = re.compile(r"(s|ms|min|h|%|pp|GB|GiB|MiB|CPU-s|GPU-h|CPU-h)")
NUMBER = re.compile(r"~?[\d.,]*\d")


def invoke_wide(args: list[str], env: dict):
    """The same command on a terminal wide enough that nothing wraps: the words as the command wrote them."""
    result = runner.invoke(app, args, env={**env, "COLUMNS": "2000", "TTY_COMPATIBLE": "0"})
    return ANSI.sub("", result.output)


def splits(output: str, wide: str) -> list[str]:
    """Where a word or a number's unit runs on to the next line of `output`, judged against `wide` (the same
    command unwrapped): the last word of a line and the first of the next make one of `wide`'s words when
    joined ("functiona" / "l"), or a number ends a line whose first word is its unit in `wide` ("1.7" / "s")."""
    words, text = set(wide.split()), " ".join(wide.split())
    lines = [line.strip("│ ") for line in visible(output) if line.strip("│ ")]
    found = []
    for a, b in zip(lines, lines[1:]):
        last, first = a.split()[-1], b.split()[0]
        if last not in words and last + first in words:
            found.append(f"{last!r} / {first!r}")
        if NUMBER.fullmatch(last) and UNIT.fullmatch(first.rstrip(",;.)")) and f"{last} {first}" in text:
            found.append(f"{last!r} / {first!r}")
    return found


def test_the_split_finder_finds_a_folded_word_and_a_number_torn_from_its_unit():
    wide = "no profile 'functiona' (did you mean 'functional'?) took 1.7 s in all"
    assert splits("no profile 'functiona' (did you mean 'functiona\nl'?) took 1.7 s in all", wide)
    assert splits("no profile 'functiona' (did you mean 'functional'?) took 1.7\ns in all", wide)
    assert not splits("no profile 'functiona' (did you mean\n'functional'?) took 1.7 s\nin all", wide)


def assert_fits_and_nothing_cut(output: str, tokens: list[str], wide: str | None = None) -> None:
    lines = visible(output)
    assert "…" not in output, output
    if wide is not None:
        assert not splits(output, wide), f"split across lines: {splits(output, wide)}\n{output}"
    for line in lines:
        if cell_len(line) > 80:  # only something to copy whole: one path, or an indented command
            assert " " not in line.strip() or (line.startswith("  ") and "  " not in line.strip()), line
    for token in tokens:
        assert any(whole(token, line) for line in lines), f"{token!r} is not whole on one line of:\n{output}"


@pytest.mark.parametrize("mode", MODES)
def test_list_fits_80_columns(inputs, mode):
    from repro.cost.estimate import CostModel

    root, env, manifests = inputs
    result, out = invoke(["list"], env, mode)
    assert result.exit_code == 0, out
    model = CostModel()
    full = {m.id: model.cost([build_plan(m, "full")]) for m in manifests}
    tokens = [LONG, "mini", "smoke", "full", *(f"{c.epochs:,}" for c in full.values())]
    assert_fits_and_nothing_cut(out, tokens, invoke_wide(["list"], env))
    assert f"{LONG} — test; 2 rows, 1 claim" in visible(out)  # the section heading above its profiles


@pytest.mark.parametrize("mode", MODES)
def test_plan_fits_80_columns(inputs, mode):
    root, env, _ = inputs
    out_file = root / "plan.toml"
    result, out = invoke(["plan", "--gpu-hours", "1", "--out", str(out_file)], env, mode)
    assert result.exit_code == 0, out
    assert_fits_and_nothing_cut(
        out,
        [LONG, "mini", LONG_CLAIM, "c", str(out_file)],
        invoke_wide(["plan", "--gpu-hours", "1", "--out", str(out_file)], env),
    )


@pytest.mark.parametrize("mode", MODES)
def test_status_fits_80_columns(inputs, mode):
    from repro.plan.run_config import planned_runs

    root, env, manifests = inputs
    results = root / "status-results"
    runs = results / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    planned = planned_runs(manifests[0], manifests[0].profiles["smoke"])
    running, failed = planned[0], planned[1]
    now = time.time()
    (runs / f"{running.cfg.hash}.lock").write_text(
        json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "started": now, "label": running.label})
    )
    (runs / f"{failed.cfg.hash}.failed.json").write_text(
        json.dumps(
            {
                "label": failed.label,
                "error": f"RuntimeError: out of memory in {root}/data",
                "time": now,
                "executor": {"host": socket.gethostname()},
            }
        )
    )
    result, out = invoke(["status", "--results-dir", str(results)], env, mode)
    assert result.exit_code == 0, out
    assert_fits_and_nothing_cut(
        out,
        [
            manifests[0].id,
            manifests[1].id,
            running.label.split()[0],
            running.cfg.hash[:12],
            failed.cfg.hash[:12],
            str(results),
            f"{root}/data",
        ],
    )


@pytest.mark.parametrize("mode", MODES)
def test_appendix_fits_80_columns(inputs, mode, tmp_path):
    root, env, _ = inputs
    out_file = root / f"appendix-{mode}.md"
    result, out = invoke(["appendix", "--out", str(out_file), "--results-dir", str(tmp_path)], env, mode)
    assert result.exit_code == 0, out
    assert_fits_and_nothing_cut(out, [str(out_file), str(tmp_path), "smoke"])
    assert out_file.read_text().count(f"| `{LONG}/{LONG_CLAIM}`") == 1


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_data_fits_80_columns_and_each_fill_command_is_one_line(inputs, mode):
    from repro.data.layout import data_root, fill_steps
    from repro.models.weights import fill_steps as weights_steps, pretrained_backbones, weights_status

    root, env, _ = inputs
    result, out = invoke(["data"], env, mode)
    assert result.exit_code == 0, out
    commands = [
        s.command
        for name in ("cifar10", "cifar100", "tiny_imagenet", "imagenet")
        for s in fill_steps(name, root / "data")
        if s.command
    ]
    weights = [weights_status(b) for b in sorted(pretrained_backbones())]  # as `repro data` lists them
    unfilled = list({w.file_name: w for w in weights if not w.present}.values())  # one set of steps for them all
    commands += [s.command for s in weights_steps(unfilled) if s.command]
    lines = visible(out)
    for command in commands:
        assert f"  {command}" in lines, command  # a line of its own, ready to paste
    assert_fits_and_nothing_cut(
        out,
        [
            str(data_root(root / "data").absolute()),
            "REPRO_WEIGHTS",
            *(w.file_name for w in weights),
            *(w.hash_prefix for w in weights),
        ],
        invoke_wide(["data"], env),
    )


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_flops_fits_80_columns(inputs, mode):
    from repro.measure.flop_check import row_flops

    root, env, manifests = inputs
    result, out = invoke(["flops"], env, mode)
    assert result.exit_code == 0, out
    rows = [r for m in manifests for r in m.rows]
    assert_fits_and_nothing_cut(out, [LONG, LONG_ROW, "dense", *(f"{row_flops(r).total / 1e6:,.3f}" for r in rows)])


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_verify_all_is_quiet_fits_80_columns_and_logs_the_detail(inputs, mode):
    root, env, _ = inputs
    results = root / "results"
    result, out = invoke(["verify-all", "--results-dir", str(results), "--jobs", "1"], env, mode)
    assert result.exit_code == 0, out
    assert not re.search(r"\w+\.py:\d+", out), out  # no source location
    assert "MMAC" not in out, out  # no per-model line
    note = "smoke is a pipeline check: synthetic data decides no empirical claim"
    assert " ".join(out.split()).count(note) == 1, out  # said once, above the checklist, for both claims
    log = results / "smoke" / "repro.log"
    assert_fits_and_nothing_cut(out, [LONG, "mini", str(results / "smoke" / "report.md"), str(log)])
    assert LONG_CLAIM not in out  # not run for the reason the note gives: counted there, listed with -v
    for manifest_id in ("mini", LONG):  # one line per table
        assert sum(line.startswith(f"{manifest_id}: ") for line in visible(out)) == 1, out
    logged = log.read_text()
    assert re.search(rf"^\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d\S* {LONG}/{LONG_ROW}: [\d.,]+ MMAC", logged, re.M), logged

    verbose, vout = invoke(["verify-all", "--results-dir", str(results), "--jobs", "1", "-v"], env, mode)
    assert verbose.exit_code == 0, vout
    assert f"{LONG}/{LONG_ROW}:" in vout and "accuracy: moe" in vout  # the FLOP lines, the claims' evidence
    assert " ".join(vout.split()).count(note) == 1, vout
    # Every run reused now: the same words as on a wide screen, none split ("1.7" / "s" once was, piped).
    wide = invoke_wide(["verify-all", "--results-dir", str(results), "--jobs", "1", "-v"], env)
    assert_fits_and_nothing_cut(vout, [LONG, LONG_CLAIM], wide)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "args",
    [["verify-all", "--profile", "functiona"], ["run", "nosuchtable"], ["run", "mini", "--stale-lock-after", "3"]],
)
def test_error_panels_fit_80_columns_with_nothing_split(inputs, mode, args):
    root, env, _ = inputs
    result, out = invoke(args, env, mode)
    assert result.exit_code == 2, out
    assert_fits_and_nothing_cut(out, [], invoke_wide(args, env))


@pytest.fixture(scope="module")
def results(inputs):
    """mini on one thread, then mini and the long table on two: rows made under other thread counts, and
    rows (the long ones) in one folder only, which compare names."""
    root, env, _ = inputs
    folders = []
    for threads, tables in (("1", ["mini"]), ("2", ["mini", LONG])):
        folder = root / f"results_on_{threads}_threads_for_export_and_compare"
        result, out = invoke(
            ["run", *tables, "--results-dir", str(folder), "--jobs", "1"], {**env, "OMP_NUM_THREADS": threads}, "piped"
        )
        assert result.exit_code == 0, out
        folders.append(folder)
    return folders


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_export_and_compare_fit_80_columns_with_nothing_split(inputs, results, mode, tmp_path):
    _, env, _ = inputs
    out_dir = tmp_path / "an_export_folder_with_a_long_name_so_that_its_path_is_wider_than_a_line_of_the_screen"
    export = ["export", "--results-dir", str(results[0]), "--out", str(out_dir)]
    done, out = invoke(export, env, mode)
    assert done.exit_code == 0, out
    assert_fits_and_nothing_cut(out, [str(out_dir), "runs.csv"], invoke_wide(export, env))
    compare = ["compare", *map(str, results)]
    done, out = invoke(compare, env, mode)
    assert done.exit_code == 1, out  # runs in one folder only
    assert "thread" in out, out  # the rows made on other thread counts are named so
    assert_fits_and_nothing_cut(out, [*map(str, results), LONG_ROW], invoke_wide(compare, env))


@pytest.mark.parametrize("mode", MODES)
def test_a_missing_datasets_fill_command_is_a_line_of_its_own(inputs, mode, tmp_path):
    """The command to fetch the data was folded into the error's prose, across lines: it could not be pasted."""
    from repro.data.layout import fill_steps

    root, env, _ = inputs
    shipped = {k: v for k, v in env.items() if k not in ("REPRO_MANIFESTS", "REPRO_PROFILES")}
    data = tmp_path / "an_empty_data_folder_whose_path_is_long_enough_to_push_the_command_past_a_line"
    args = [
        "run",
        "headline_cifar10",
        "--profile",
        "full",
        "--data-dir",
        str(data),
        "--results-dir",
        str(tmp_path / "r"),
    ]
    result, out = invoke(args, shipped, mode)
    assert result.exit_code == 2, out
    command = next(s.command for s in fill_steps("cifar10", data) if s.command)
    assert f"  {command}" in visible(out), out
    assert_fits_and_nothing_cut(out, [str(data)], invoke_wide(args, shipped))

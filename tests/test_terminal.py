"""repro.core.terminal: tables that fit a width without cutting an id, a path or a number; prose wrapped at words."""

import os
import subprocess
import sys

import pytest
from rich.console import Console
from rich.text import Text

from repro.core.terminal import Column, Grid, Step, as_lines, fit, print_grid, wrap_words


def render(grid: Grid, width: int) -> list[str]:
    console = Console(width=width, record=True, file=open(os.devnull, "w"), color_system=None)
    print_grid(console, grid)
    return [line.rstrip() for line in console.export_text().splitlines()]


def grid() -> Grid:
    g = Grid(
        [
            Column("Id"),
            Column("Description", prose=True, drop=1),
            Column("Runs", right=True),
            Column("Epochs", right=True, drop=2),
            Column("GPU-h alone", right=True),
        ]
    )
    g.add(
        "temperature_ablation",
        "Section 5 (routing stability), the late collapse of linear schedules",
        "130",
        "21,400",
        "110.8",
    )
    g.add("t1", "Table 1", "6", "300", "0.20")
    return g


def test_a_grid_that_fits_keeps_every_column_and_gives_prose_the_rest():
    layout = fit(grid(), 100)
    lines = render(grid(), 100)
    assert layout.dropped == [] and layout.below == []
    assert max(len(line) for line in lines) <= 100
    # the id column is as wide as its widest id; the header "GPU-h alone" wraps at its space, never cut
    assert lines[0].endswith("GPU-h") and lines[1].startswith("Id" + " " * 20) and lines[1].endswith("alone")
    assert any(line.startswith("temperature_ablation  Section 5") for line in lines)


def test_too_narrow_the_prose_column_leaves_first_and_its_cells_go_below_with_the_row_id():
    layout = fit(grid(), 60)
    lines = render(grid(), 60)
    assert layout.dropped == ["Description"]
    assert max(len(line) for line in lines) <= 60
    for value in ("temperature_ablation", "130", "21,400", "110.8", "300"):
        assert any(value in line.split() for line in lines), value
    assert lines[-3:] == [
        "temperature_ablation  Description: Section 5 (routing",
        "stability), the late collapse of linear schedules",
        "t1  Description: Table 1",
    ]


def test_narrower_still_the_next_rank_leaves_too_then_rows_become_blocks():
    assert fit(grid(), 40).dropped == ["Description", "Epochs"]
    layout = fit(grid(), 20)  # the kept columns alone need 22 + 4 + 5 + gaps: no table
    assert layout.parts == []
    assert [t.plain for t in layout.below][:4] == [
        "Id: temperature_ablation",
        "Description: Section 5 (routing stability), the late collapse of linear schedules",
        "Runs: 130",
        "Epochs: 21,400",
    ]


def test_continued_rows_name_the_row_above_them_below_the_table():
    g = Grid([Column("Id"), Column("Profile"), Column("Note", prose=True, drop=1)])
    g.add("table1", "smoke", "")
    g.add("", "full", "needs a GPU and the paper's datasets, which are not here")
    layout = fit(g, 30)
    assert [t.plain for t in layout.below] == ["table1  Note: needs a GPU and the paper's datasets, which are not here"]


def test_words_wrap_at_spaces_and_a_word_wider_than_the_line_stays_whole():
    path = "/a/results/folder/whose/path/is/wider/than/the/line/report.md"
    lines = [t.plain for t in wrap_words(Text(f"report written to {path} just now"), 30)]
    assert lines == ["report written to", path, "just now"]
    assert [t.plain for t in wrap_words(Text("  indented words stay indented"), 16)] == [
        "  indented words",
        "stay indented",
    ]


def test_steps_put_each_command_on_a_line_of_its_own_which_is_never_wrapped():
    command = "python -c \"import torchvision; torchvision.datasets.CIFAR10('/a/rather/long/path', download=True)\""
    steps = [Step("on a machine with internet, run:", command), Step("(or copy it)")]
    assert as_lines(steps) == f"on a machine with internet, run:\n  {command}\n(or copy it)"
    lines = [t.plain for t in wrap_words(Text(f"to fill it, {as_lines(steps)}"), 40)]
    assert lines == ["to fill it, on a machine with internet,", "run:", f"  {command}", "(or copy it)"]
    assert [t.plain for t in wrap_words(Text("  /a/path: prose that wraps"), 16)] == ["  /a/path: prose", "that wraps"]


def test_sections_head_their_rows_and_the_columns_line_up_across_sections():
    g = Grid([Column("Claim"), Column("Verdict")])
    g.section("temperature_ablation")
    g.add("temp_linear_low_collapses_vs_sigmoid", "not run")
    g.section("table1")
    g.add("t1_sign_follows_rho", "reproduced")
    lines = render(g, 80)
    assert lines == [
        "  Claim                                 Verdict",
        "  " + "─" * (36 + 2 + 10),
        "temperature_ablation",
        "  temp_linear_low_collapses_vs_sigmoid  not run",
        "table1",
        "  t1_sign_follows_rho                   reproduced",
    ]


@pytest.mark.parametrize(
    "args, stream",
    [(["list"], "stdout"), (["nosuch"], "stderr"), (["table6", "--profile", "nosuch"], "stderr")],
    ids=["list", "an unknown command", "an unknown profile"],
)
def test_columns_0_still_prints(tmp_path, args, stream):
    """Issue 41, item 9: COLUMNS=0 hid all output, errors included (exit 2 with nothing printed; list exited 0
    with no output)."""
    out = subprocess.run(
        [sys.executable, "-m", "repro", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "0", "LINES": "0"},
    )
    shown = getattr(out, stream)
    assert out.returncode == (0 if args == ["list"] else 2), out.stderr
    assert ("table6" in shown) if args == ["list"] else ("nosuch" in shown), (out.stdout, out.stderr)
    assert max(len(line) for line in shown.splitlines()) <= 80  # piped: rich's 80 columns


def test_a_number_and_its_unit_stay_on_one_line():
    from rich.text import Text

    from repro.core.terminal import wrap_words

    lines = [t.plain for t in wrap_words(Text("a plan of 23.9 GPU-hours, wall ~10 min on 1 GPU"), 30)]
    assert lines == ["a plan of 23.9 GPU-hours, wall", "~10 min on 1 GPU"]
    assert [t.plain for t in wrap_words(Text("took twelve seconds 1.7 s"), 22)] == ["took twelve seconds", "1.7 s"]

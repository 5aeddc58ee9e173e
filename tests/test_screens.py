"""An evaluator's first hour fits the screen: each command they meet first prints at most SCREEN lines at 80
columns, and -v (where the command has it) keeps the detail. Issue 49 measured them at 135 (verify-all --help),
114 (readings), 79 (verify-all: tests/test_readme_commands.py counts it), 73-77 (list), 67 (data) and 67 (table6)."""

import pytest
from typer.testing import CliRunner

from repro.cli import app

SCREEN = 60
runner = CliRunner()


def screen(args: list[str]) -> list[str]:
    done = runner.invoke(app, args, env={"COLUMNS": "80"})
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert max(map(len, lines)) <= 80 or args[0] == "data", done.output  # data's commands are pasted whole
    return lines


def test_verify_all_help_fits_a_screen_and_gives_its_type_column_to_the_help_text():
    lines = screen(["verify-all", "--help"])
    assert len(lines) <= SCREEN, "\n".join(lines)
    assert not [line for line in lines if "<int range>" in line or "<path>" in line]  # the types: from 100 columns
    assert any("Exit 1 also if a decidable claim failed." in line for line in lines)  # a help text on one line
    assert any("[default:0]" in line for line in lines)  # beside its help, not on a line of its own
    wide = runner.invoke(app, ["verify-all", "--help"], env={"COLUMNS": "120"}).output
    assert "<int range> [x>=0]" in wide and "<path>" in wide


def test_readings_is_a_line_per_claim_and_v_gives_a_line_per_reading():
    lines = screen(["readings"])
    assert len(lines) <= SCREEN, "\n".join(lines)
    assert any(line.startswith("table6/rho_backbone_moe ") and "not reproduced" in line for line in lines)
    below = next(line for line in lines if line.startswith("table6/rho_backbone_moe  Another verdict under: "))
    assert "backbone-moe-layers/stride1" in below  # the one reading that changes a verdict, named
    detail = runner.invoke(app, ["readings", "table6", "-v"], env={"COLUMNS": "80"}).output
    assert "backbone-moe-layers/stride1" in detail and "(as chosen)" in detail


@pytest.mark.slow  # prices every table at every profile
def test_list_fits_a_screen(tmp_path):
    lines = screen(["list", "--results-dir", str(tmp_path)])
    assert len(lines) <= SCREEN, "\n".join(lines)
    detail = runner.invoke(app, ["list", "-v", "--results-dir", str(tmp_path)], env={"COLUMNS": "80"}).output
    assert "reference, not measured here" in detail and "reference, not measured here" not in "\n".join(lines)


@pytest.mark.slow  # reads the weights' published addresses
def test_data_fits_a_screen_with_every_fill_command(tmp_path):
    from repro.data.layout import fill_steps
    from repro.models.weights import fill_steps as weights_steps, pretrained_backbones, weights_status

    lines = screen(["data", "--data-dir", str(tmp_path)])
    assert len(lines) <= SCREEN, "\n".join(lines)
    missing = {weights_status(b).file_name: weights_status(b) for b in sorted(pretrained_backbones())}
    commands = [
        s.command
        for name in ("cifar10", "cifar100", "tiny_imagenet", "imagenet")
        for s in fill_steps(name, tmp_path)
        if s.command
    ]
    commands += [s.command for s in weights_steps([w for w in missing.values() if not w.present]) if s.command]
    assert [c for c in commands if f"  {c}" not in lines] == []  # each on a line of its own, to paste


def test_data_names_every_profile_that_needs_no_dataset(tmp_path):
    from repro.spec.profiles import shipped_profiles

    done = runner.invoke(app, ["data", "--data-dir", str(tmp_path)], env={"COLUMNS": "200"})
    offline = [name for name, p in shipped_profiles().items() if p.data != "real"]
    assert offline == ["smoke", "functional"]  # synthetic data; scikit-learn's digit scans
    assert "The smoke and functional profiles need none of these" in done.output, done.output


@pytest.mark.slow  # Table 6: every row's FLOPs counted three ways
def test_a_table_fits_a_screen_and_v_gives_every_claims_whole_evidence(tmp_path):
    lines = screen(["table6", "--results-dir", str(tmp_path)])
    assert len(lines) <= SCREEN, "\n".join(lines)
    assert any("(-v: the rest)" in line for line in lines)  # rho_threshold_separates' evidence, cut
    detail = runner.invoke(app, ["table6", "-v", "--results-dir", str(tmp_path)], env={"COLUMNS": "80"}).output
    assert "(-v: the rest)" not in detail and "table9:imagenet_expert_choice" in " ".join(detail.split())


def _every_command() -> list[list[str]]:
    import typer.main

    root = typer.main.get_command(app)
    commands = [[]] + [[name] for name in sorted(root.commands)]
    bench = root.commands["bench"]
    return commands + [["bench", name] for name in sorted(bench.commands)]


@pytest.mark.parametrize("command", _every_command(), ids=lambda c: " ".join(c) or "repro")
def test_no_help_text_is_cut_at_80_columns(command):
    """A default path cut to '<results>/<profile>/package/repro-<profile>-<commi…' told the reader nothing."""
    lines = screen([*command, "--help"])
    assert [line for line in lines if "…" in line] == [], "\n".join(lines)


@pytest.mark.parametrize("command", [*_every_command(), ["table5"]], ids=lambda c: " ".join(c) or "repro")
def test_every_help_fits_a_screen(command):
    """`repro run --help` (and `repro table5 --help`, the same) was 64 lines at 80 columns: verify-all's options and
    a four-line list of ids that `repro --help` gives already."""
    lines = screen([*command, "--help"])
    assert len(lines) <= SCREEN, "\n".join(lines)

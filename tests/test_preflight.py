"""repro.runtime.preflight: a torch / torchvision pair that does not work together is named in one error with the
install line that fixes it, before a command that needs them starts (the mismatch is simulated: the suite's own
install is never broken)."""

import builtins

import pytest
from typer.testing import CliRunner

from repro.cli import app
from repro.runtime import preflight

runner = CliRunner()


def test_a_working_pair_passes():
    assert preflight.torch_problem() is None


def test_a_mismatched_pair_is_one_error_with_the_fix(monkeypatch):
    import torch
    import torchvision.ops

    def missing(*args, **kwargs):  # what torchvision built against another torch raises
        raise RuntimeError("operator torchvision::nms does not exist\n" + "traceback line\n" * 200)

    monkeypatch.setattr(torchvision.ops, "nms", missing)
    monkeypatch.setattr(preflight, "installed_pair", lambda: None)  # simulated in-process: the files did not change
    fix = preflight.CPU_INSTALL if torch.version.cuda is None else preflight.CUDA_INSTALL
    assert preflight.torch_problem() == (
        f"torch {torch.__version__} and torchvision {torchvision.__version__} do not work together (RuntimeError: "
        f"operator torchvision::nms does not exist); install a matching pair:\n  {fix}"
    )
    done = runner.invoke(app, ["flops", "table1"], env={"COLUMNS": "80"})
    assert done.exit_code == 2 and "Traceback" not in done.output and "traceback line" not in done.output
    lines = done.output.splitlines()
    assert lines[0].startswith("error: torch ") and lines[-1] == f"  {fix}"  # the command on a line of its own


def test_torch_that_cannot_be_imported_is_named(monkeypatch):
    real = builtins.__import__

    def broken(name, *args, **kwargs):
        if name == "torch":
            raise ImportError("libtorch_cpu.so: cannot open shared object file")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", broken)
    assert preflight.torch_problem() == (
        "torch cannot be imported (ImportError: libtorch_cpu.so: cannot open shared "
        f"object file); reinstall it:\n  {preflight.CPU_INSTALL}"
    )


@pytest.mark.parametrize("args", [["status"], ["run", "--help"], ["--help"]])
def test_commands_that_need_no_torch_and_help_skip_the_check(args, monkeypatch, tmp_path):
    def fail(*args):
        raise AssertionError("the preflight ran")

    monkeypatch.setattr(preflight, "torch_problem", fail)
    done = runner.invoke(app, [*args, *(["-o", str(tmp_path)] if args == ["status"] else [])])
    assert done.exit_code == 0, done.output


def test_a_pair_that_passed_is_not_checked_again_until_its_files_change(tmp_path, monkeypatch):
    """The check imports torch and torchvision (seconds): a reused verify-all needs neither. A pass is kept in the
    cache folder by the pair's fingerprint, read from their files without importing them; new files check again."""
    checked = []
    monkeypatch.setattr(preflight, "_check", lambda: checked.append(1))
    pair = preflight.installed_pair()
    assert pair is not None and len(pair) == 64
    assert preflight.torch_problem(tmp_path) is None and preflight.torch_problem(tmp_path) is None and checked == [1]
    monkeypatch.setattr(preflight, "installed_pair", lambda: "another install")
    assert preflight.torch_problem(tmp_path) is None and checked == [1, 1]
    monkeypatch.setattr(preflight, "_check", lambda: "torch cannot be imported (...)")
    monkeypatch.setattr(preflight, "installed_pair", lambda: "a broken install")
    assert preflight.torch_problem(tmp_path) == "torch cannot be imported (...)"
    assert preflight.torch_problem(tmp_path) == "torch cannot be imported (...)"  # a failure is never kept

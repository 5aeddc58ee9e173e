"""repro.core.devices: --device resolution refuses what the machine lacks, naming it; one label for results."""

import platform

import pytest
import torch

from repro.core.devices import DeviceError, device_label, device_type, resolve_device


def test_auto_and_cpu():
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("cpu:0") == "cpu:0"


def test_unknown_device_types_are_refused_by_name():
    with pytest.raises(DeviceError, match="'tpu' is not a device torch knows"):
        resolve_device("tpu")
    with pytest.raises(DeviceError, match="'cuda:x'"):
        resolve_device("cuda:x")


def test_a_device_torch_does_not_know_is_answered_with_the_ones_this_option_takes():
    """`--device gpu` answered with torch's own list of eighteen device types (ipu, opengl, mtia, ...)."""
    for device, hint in (("gpu", " (did you mean 'cuda'?)"), ("tpu", ""), ("cuda:x", "")):
        with pytest.raises(DeviceError) as exc:
            resolve_device(device)
        assert str(exc.value) == (
            f"--device {device!r} is not a device torch knows; expected auto, cpu, cuda or cuda:N "
            f"(mps or xpu where torch has them){hint}"
        )


def test_run_refuses_an_unknown_device_before_it_makes_the_results_folder(tmp_path):
    from typer.testing import CliRunner

    from repro.cli import app

    done = CliRunner().invoke(app, ["run", "table6", "--device", "gpu", "-o", str(tmp_path / "r")])
    assert done.exit_code == 2 and "--device 'gpu'" in done.output, done.output
    assert not (tmp_path / "r").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a host without CUDA")
def test_cuda_on_a_cpu_host_is_refused_by_name():
    for device in ("cuda", "cuda:0", "cuda:1"):
        with pytest.raises(DeviceError, match=f"--device '{device}' was asked for, but torch sees no cuda device"):
            resolve_device(device)


def test_a_missing_gpu_index_names_the_ones_present(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("cuda:1") == "cuda:1" and resolve_device("cuda") == "cuda"
    with pytest.raises(DeviceError, match=r"has 2 cuda device\(s\) \(cuda:0 to cuda:1\)"):
        resolve_device("cuda:2")


def test_device_type_and_cpu_label():
    assert [device_type(d) for d in ("cuda:1", torch.device("cuda", 0), "cpu")] == ["cuda", "cuda", "cpu"]
    cpu = platform.processor() or platform.machine()
    assert device_label("cpu", 1) == f"cpu: {cpu}, 1 intra-op thread(s)"
    assert device_label(torch.device("cpu")) == f"cpu: {cpu}, {torch.get_num_threads()} intra-op thread(s)"
    assert device_label("cpu", 0) == device_label("cpu")  # 0: torch's own setting, as the harness reads it


@pytest.mark.parametrize("command", [["run", "table6"], ["verify-all", "table6"]], ids=" ".join)
@pytest.mark.parametrize("device", ["cuda", "tpu"])
def test_a_table_command_refuses_a_device_before_any_work(tmp_path, monkeypatch, command, device):
    """docs/commands.md: a device torch does not see is refused before anything runs (exit 2). `--device cuda` on a
    CPU host failed every table one by one (exit 1), and verify-all rewrote report.md: 'Tables regenerated: 0'."""
    from typer.testing import CliRunner

    from repro.cli import app

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # a host without CUDA, whatever runs the test
    report = tmp_path / "smoke" / "report.md"
    report.parent.mkdir(parents=True)
    report.write_text("the report of an earlier run\n")
    done = CliRunner().invoke(app, [*command, "--device", device, "-o", str(tmp_path)], env={"COLUMNS": "200"})
    assert done.exit_code == 2, done.output
    assert f"--device '{device}'" in done.output and "nothing was run" in done.output
    assert report.read_text() == "the report of an earlier run\n"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["report.md", "smoke"]  # no log, no crate, no records

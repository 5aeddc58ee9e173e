"""`repro rho` end to end: refusals without tracebacks, 80-column tables, JSON, and --all with its figure."""

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from checkout import REPO_ROOT
from repro.cli import app
from repro.cli import rho as command
from repro.rho.model_list import resolve_model

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")
runner = CliRunner()


def rho(*args: str, columns: int = 80):
    return runner.invoke(app, ["rho", *args], env={"COLUMNS": str(columns)})


@pytest.mark.parametrize(
    "args, says",
    [
        (["convnext_tnyi"], "unknown model 'convnext_tnyi' (did you mean 'convnext_tiny'"),
        (["vit_b_16"], "is a transformer"),
        (["resnet18", "--route", "layer4..conv1"], "segment 2 is empty"),
        (["resnet18", "--target", "7"], "between 0 and 1"),
        (["resnet18", "--size", "10x"], "--size '10x'"),
        (["resnet18", "--experts", "0"], "--experts 0: must be an integer in 1..256"),
        (["resnet18", "--route-k", "9"], "--route-k 9: must be an integer in 1..8"),
        (["resnet18", "--route-k", "0"], "--route-k 0: must be an integer in 1..8"),
        (["resnet18", "--hidden", "-1"], "--hidden -1"),
        (["resnet18", "--classes", "0"], "--classes 0"),
        (["--all", "--route", "layer4.*"], "give MODEL, not --all"),
        (["resnet18", "--figure", "x.png"], "use it with --all"),
        (["--all", "--figure", "no/such/folder/x.png"], "a .png file in an existing folder"),
        ([], "give one MODEL, or --all"),
    ],
)
def test_bad_input_is_refused_before_torch_in_one_line(args, says):
    result = rho(*args, columns=300)  # one line where it fits; at 80 columns it wraps at words (below)
    assert result.exit_code == 2, result.output
    assert says in result.output and "Traceback" not in result.output
    assert result.output.startswith("error:")


@pytest.mark.parametrize(
    "args, says",
    [
        (["squeezenet1_1", "--size", "16"], "squeezenet1_1 cannot take a 16x16 input: the smallest it takes is 17x17"),
        pytest.param(
            ["inception_v3", "--size", "64"],
            "inception_v3 cannot take a 64x64 input: the smallest it takes is 75x75",
            marks=pytest.mark.slow,
        ),
        (["cifar_standard", "--size", "3"], "cifar_standard cannot take a 3x3 input: the smallest it takes is 4x4"),
        (["resnet18", "--size", "64", "--route", "layer4.*"], "2 of them not routable: layer4.0 (BasicBlock"),
    ],
)
def test_input_the_network_cannot_take_is_refused_naming_what_it_can(args, says):
    result = rho(*args)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert says in " ".join(result.output.split())


def test_a_typos_suggestions_wrap_within_80_columns():
    """Issue 49: the suggestion was one line of 120 columns."""
    result = rho("resnt18")
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert len(lines) > 1 and max(map(len, lines)) <= 80, result.output
    assert (
        "error: unknown model 'resnt18' (did you mean 'resnet18', 'resnet152' or 'resnet101'?); `repro rho "
        "--list` names all"
    ) in " ".join(lines)


def test_without_the_table6_manifest_it_says_what_it_reads(tmp_path, monkeypatch):
    import shutil

    from checkout import MANIFESTS
    from repro.rho.paper_settings import settings_manifest

    shutil.copy(MANIFESTS / "table1.toml", tmp_path)  # a folder of manifests, table6's not among them
    monkeypatch.setenv("REPRO_MANIFESTS", str(tmp_path))
    settings_manifest.cache_clear()
    try:
        result = rho("resnet18", columns=300)
    finally:
        settings_manifest.cache_clear()
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "reads the paper's settings from the 'table6' manifest: no manifest 'table6'" in result.output


@pytest.mark.slow
def test_a_misspelt_name_is_refused_without_importing_torch(tmp_path):
    """Once torch has passed the preflight (repro.runtime.preflight, kept in the cache folder), a misspelt model
    is refused from the catalog alone. The cache is the test's own, warm: the user's ~/.cache/repro went cold
    whenever torch's files changed (a reinstall), and the preflight's import then failed this test."""
    import os

    from repro.runtime import preflight

    pair = preflight.installed_pair()
    assert pair is not None
    (tmp_path / "torch_pair.json").write_text(json.dumps({"pair": pair}))
    code = (
        "import sys; from typer.testing import CliRunner; from repro.cli import app; "
        "r = CliRunner().invoke(app, ['rho', 'resnet1B']); print(r.exit_code, 'torch' in sys.modules)"
    )
    env = {**os.environ, "REPRO_CACHE": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120, env=env
    )
    assert out.stdout.split() == ["2", "False"], out.stderr


def test_tables_fit_80_columns_and_name_the_papers_settings():
    result = rho("resnet18", "--size", "112", "--route", "layer4.*.conv*", "--target", "0.07", "--layers")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    out = result.output
    for words in (
        "head-only MoE",
        "--route",
        "--target 0.07",
        "layer4.1.conv2",
        "below 1%",
        "above ~7%",
        "r18_backbone_moe",
        "~38%",
        "0.06%",
        "* from the AI-written explainer",
        "FLOP check: analytic = fvcore = torch/2",
    ):
        assert words in out, words
    assert "layer1.0.conv1" in out  # --layers lists every routable layer


def test_json_for_scripts():
    result = rho("cifar_depthwise", "--target", "0.6", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["model"] == "cifar_depthwise" and data["dataset"] == "cifar10" and data["ok"]
    assert data["backbone_params"] == {"width": 0.72} and data["setting_row"] == "cifar10_dw072_moe"
    head, found = data["results"]
    assert head["kind"] == "head_only" and f"{head['rho']:.4%}" == "45.6235%"  # Table 6's cifar10_dw072_moe
    assert found["kind"] == "target" and found["reached"] and found["rho"] >= 0.6 and found["layers"]
    assert data["reference"]["threshold"]["printed"] == "~7%" and data["reference"]["floor"]["value"] == 0.01


@pytest.mark.slow
def test_all_counts_every_model_and_draws_the_figure(tmp_path, monkeypatch):
    small = [resolve_model(n) for n in ("resnet18", "mobilenet_v3_small", "squeezenet1_1", "alexnet")]
    monkeypatch.setattr(command, "torchvision_cnns", lambda: small)
    figure = tmp_path / "rho.png"
    result = rho("--all", "--size", "48", "--figure", str(figure), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output[result.output.index("{") :])
    rows = {r["model"]: r for r in data["models"]}
    assert "smallest it takes is 63x63" in rows["alexnet"]["skipped"]
    assert all(
        rows[n]["rho"] > 0 and rows[n]["problems"] == [] for n in ("resnet18", "mobilenet_v3_small", "squeezenet1_1")
    )
    assert {p["row"] for p in data["settings"]} >= {"r18_head", "mnv2_head", "r18_backbone_moe"}
    assert data["time"]["cpu_s"] > 0 and len(data["time"]["load_before"]) == 3
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

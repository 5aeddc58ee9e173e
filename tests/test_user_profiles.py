"""Bring your own protocol and manifests: --profiles FILE merged onto every manifest, --manifests DIR."""

import shutil

import pytest
from typer.testing import CliRunner

from checkout import MANIFESTS
from repro.cli import app
from repro.plan.manifest import find_manifest, load_all, manifest_paths
from repro.spec.profiles import Profile, load_profiles
from repro.core.schema import SchemaError

runner = CliRunner()

CIFAR_3X50 = """
[profiles.cifar3x50]
description = "real CIFAR, 3 seeds x 50 epochs"
evidence = "reduced"
seeds = 3
epochs = 50

[profiles.smoke]
description = "a quicker smoke"
evidence = "pipeline"
device = "cpu"
seeds = 1
epochs = 1
data = "synthetic"
train_samples = 64
"""


def _file(tmp_path, text: str):
    path = tmp_path / "profiles.toml"
    path.write_text(text)
    return path


def test_user_profiles_are_merged_onto_every_manifest(tmp_path):
    path = _file(tmp_path, CIFAR_3X50)
    shipped = load_all()
    merged = load_all(profiles_file=path)
    assert [m.id for m in merged] == [m.id for m in shipped] and len(merged) == len(manifest_paths())
    for before, after in zip(shipped, merged):
        assert after.profiles["cifar3x50"] == Profile(
            description="real CIFAR, 3 seeds x 50 epochs",
            evidence="reduced",
            seeds=3,
            epochs=50,
            threads=1,
            deterministic=False,
        )  # as applied: the defaults filled in
        assert after.profiles["smoke"].train_samples == 64 and after.profiles["smoke"].seeds == 1  # replaced
        assert after.profiles["full"] == before.profiles["full"]  # the others kept
        assert set(after.profiles) == set(before.profiles) | {"cifar3x50"}
    assert find_manifest("table1", profiles_file=path).profiles["cifar3x50"].epochs == 50


def test_user_profiles_from_the_environment(tmp_path):
    from repro.core.settings import Settings

    settings = Settings.read({"REPRO_PROFILES": str(_file(tmp_path, CIFAR_3X50))})  # where a command starts
    assert find_manifest("table6", profiles_file=settings.profiles).profiles["cifar3x50"].seeds == 3
    assert "cifar3x50" not in find_manifest("table6").profiles  # the library reads no environment


def test_bad_values_are_refused_with_file_key_and_suggestion(tmp_path):
    text = CIFAR_3X50.replace("seeds = 3", 'seeds = "three"').replace("epochs = 50", "epochs = 0\nepoch = 5")
    text += '\n[profiles.real_scale]\ndescription = "x"\nevidence = "paper"\ndata = "synthetc"\n'
    text += '\n[profiles.claims_on_digits]\ndescription = "x"\nevidence = "reduced"\ndata = "digits"\n'
    path = _file(tmp_path, "extra = 1\n" + text)
    with pytest.raises(SchemaError) as info:
        load_profiles(path)
    assert str(path) in str(info.value)
    problems = info.value.problems
    assert "profiles.cifar3x50.seeds: expected an integer, got 'three'" in problems
    assert "profiles.cifar3x50.epochs: 0 is out of range; allowed: 1 <= value <= 10000" in problems
    assert any(p.startswith("profiles.cifar3x50.epoch: unknown key (did you mean 'epochs'?)") for p in problems)
    assert any(
        p.startswith(
            "profiles.real_scale.data: expected one of 'real', 'synthetic', 'digits', got "
            "'synthetc' (did you mean 'synthetic'?)"
        )
        for p in problems
    )
    assert any(
        p.startswith("profiles.claims_on_digits.data: evidence 'reduced' is the paper's datasets") for p in problems
    )
    assert any(p.startswith("extra: unknown key") for p in problems)
    assert len(problems) == 6  # all at once
    with pytest.raises(SchemaError):
        load_all(profiles_file=path)


def test_cli_refuses_a_bad_profiles_file_naming_it(tmp_path):
    path = _file(tmp_path, CIFAR_3X50.replace("seeds = 3", "seeds = -3"))
    for args in (
        ["list", "--profiles", str(path)],
        ["table6", "--profiles", str(path)],
        ["report", "--profiles", str(path)],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        text = " ".join(result.output.split())
        assert str(path) in text.replace(" ", "") or path.name in text
        assert "profiles.cifar3x50.seeds: -3 is out of range; allowed: 1 <= value <= 1000" in text


@pytest.mark.slow  # runs a copy of Table 6: every row's FLOPs counted three ways, ResNet-18 and MobileNet-V2 at 224 px
def test_manifests_dir_with_one_manifest_and_a_user_profile(tmp_path, results_dir):
    folder = tmp_path / "my-manifests"
    folder.mkdir()
    shutil.copy(MANIFESTS / "table6.toml", folder / "mytable.toml")
    text = (folder / "mytable.toml").read_text().replace('id = "table6"', 'id = "mytable"\npaper_table = "table6"', 1)
    (folder / "mytable.toml").write_text(text)
    profiles = _file(folder, '[profiles.analytic]\ndescription = "FLOPs only"\nevidence = "pipeline"\ndevice = "cpu"\n')
    assert [m.id for m in load_all(folder)] == ["mytable"]
    listed = runner.invoke(app, ["list", "--manifests", str(folder), "--profiles", str(profiles)])
    assert listed.exit_code == 0, listed.output
    assert "mytable" in listed.output and "table1" not in listed.output and "analytic" in listed.output
    ran = runner.invoke(
        app,
        [
            "run",
            "mytable",
            "--manifests",
            str(folder),
            "--profiles",
            str(profiles),
            "--profile",
            "analytic",
            "--results-dir",
            str(results_dir),
        ],
    )
    assert ran.exit_code == 0, ran.output
    assert (results_dir / "analytic" / "mytable" / "results.json").is_file()
    missing = runner.invoke(app, ["run", "table1", "--manifests", str(folder)])
    assert missing.exit_code == 2 and "no manifest 'table1'" in missing.output


@pytest.mark.parametrize(
    "include, exclude, row, left_out",
    [
        ((), (), "std_moe", None),
        ((), ("table3/std_*",), "std_moe", "its exclude list"),
        ((), ("table3/std_*",), "dw12_moe", None),
        (("table3/dw12_*",), (), "std_moe", "its include list, which does not name it"),
        (("table3/*",), ("table3/std_moe",), "std_moe", "its exclude list"),  # the exclude list wins
    ],
)
def test_a_row_left_out_names_the_list_that_leaves_it_out(include, exclude, row, left_out):
    profile = Profile(description="p", evidence="pipeline", include=include, exclude=exclude)
    assert profile.left_out_by("table3", row) == left_out
    assert profile.includes("table3", row) == (left_out is None)


def test_a_table_says_which_list_left_each_untrained_row_out(tmp_path):
    import dataclasses

    from repro.measure.accuracy import measure_accuracy
    from repro.measure.measurer import Context
    from repro.plan.table_plan import build_plan

    manifest = find_manifest("table8")
    # CIFAR-100's rows are named by both lists (the exclude list wins), the others by neither: nothing trains.
    profile = dataclasses.replace(manifest.profiles["smoke"], include=("table8/c100_*",), exclude=("table8/c100_*",))
    missing = measure_accuracy(build_plan(manifest, "mine", profile), Context("mine", tmp_path)).measured.missing
    assert missing["rows.c100_soft.accuracy"] == (
        "c100_soft is not trained under profile 'mine' (left out by its exclude list)"
    )
    assert missing["rows.imagenet_soft.accuracy"] == (
        "imagenet_soft is not trained under profile 'mine' (left out by its include list, which does not name it)"
    )

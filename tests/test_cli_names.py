"""Every name a user types that does not exist (profile, manifest, row, include entry, dataset, head) is
refused with the closest valid names, before torch is imported: a typo answers at once, not after the
seconds torch takes to load. One process runs every case, then says whether torch was imported."""

import json
import os
import subprocess
import sys

import pytest

from checkout import MANIFESTS

TABLE1 = (MANIFESTS / "table1.toml").read_text()
PROFILE = '[profiles.mine]\ndescription = "x"\nevidence = "pipeline"\n'
CHECK = """
import json, sys
from typer.testing import CliRunner
from repro.cli import app
out = [(r.exit_code, r.output) for r in (CliRunner().invoke(app, args) for args in json.loads(sys.argv[1]))]
print(json.dumps({"results": out, "torch": "torch" in sys.modules}))
"""


def cases(tmp_path) -> list[tuple[list[str], str]]:
    def manifests(name: str, text: str) -> str:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "table1.toml").write_text(text)
        return str(folder)

    def profiles(name: str, text: str) -> str:
        (tmp_path / name).write_text(PROFILE + text)
        return str(tmp_path / name)

    dataset = manifests("dataset", TABLE1.replace('dataset = "cifar10"', 'dataset = "cifar1O"', 1))
    head = manifests("head", TABLE1.replace('name = "dense"', 'name = "dens"', 1))
    row = manifests("row", TABLE1.replace('baseline = "std_h128_dense"', 'baseline = "std_h128_dens"', 1))
    include = profiles("include.toml", 'include = ["table1/std_h128_mo"]\n')
    dataset_key = profiles("dataset_key.toml", "[profiles.mine.datasets.cifar1O]\nepochs = 2\n")
    return [
        (["run", "table1", "--profile", "ful"], "no profile 'ful' (did you mean 'full'?)"),
        (["table1", "--profile", "ful"], "no profile 'ful' (did you mean 'full'?)"),
        (["verify-all", "--profile", "smok"], "no profile 'smok' (did you mean 'smoke'?)"),
        (["status", "--profile", "ful"], "no profile 'ful' (did you mean 'full'?)"),
        (["report", "--profile", "ful"], "no profile 'ful' (did you mean 'full'?)"),
        (["run", "tabel1"], "no manifest 'tabel1' (did you mean 'table1'?)"),
        (["tabel5"], "No such command 'tabel5' (did you mean 'table5'?)"),  # `repro <id>`, misspelt
        (["lsit"], "No such command 'lsit' (did you mean 'list'?)"),
        (["flops", "tabel1"], "no manifest 'tabel1' (did you mean 'table1'?)"),
        (["run", "table1", "--manifests", dataset], "unknown dataset 'cifar1O' (did you mean 'cifar10'?)"),
        (["run", "table1", "--manifests", head], "unknown head 'dens' (did you mean 'dense'?)"),
        (["run", "table1", "--manifests", row], "no row 'std_h128_dens' (did you mean 'std_h128_dense'?)"),
        (
            ["run", "table1", "--profiles", include, "--profile", "mine"],
            "'table1/std_h128_mo' matches no training row (did you mean 'table1/std_h128_moe'?)",
        ),
        (
            ["run", "table1", "--profiles", dataset_key, "--profile", "mine"],
            "datasets.cifar1O: unknown dataset (did you mean 'cifar10'?)",
        ),
    ]


@pytest.mark.slow
def test_every_unknown_name_gets_the_closest_before_torch_is_imported(tmp_path):
    """Once torch has passed the preflight (kept in the cache folder, repro.runtime.preflight): the cache is the
    test's own, warm, as the user's ~/.cache/repro goes cold whenever torch's files change (a reinstall)."""
    from repro.runtime import preflight

    pair = preflight.installed_pair()
    assert pair is not None
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "torch_pair.json").write_text(json.dumps({"pair": pair}))
    todo = cases(tmp_path)
    out = subprocess.run(
        [sys.executable, "-c", CHECK, json.dumps([args for args, _ in todo])],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200", "REPRO_CACHE": str(tmp_path / "cache")},
    )
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout.strip().splitlines()[-1])
    for (args, expected), (code, text) in zip(todo, answer["results"]):
        assert code == 2, (args, text)
        assert expected in text, (args, text)
        assert "Traceback" not in text, (args, text)
    assert answer["torch"] is False


def test_a_misspelt_command_or_table_id_gets_the_closest():
    """Issue 49: `repro tabel5` said "No such command" alone, while `repro run tabel9` named table9."""
    from typer.testing import CliRunner

    from repro.cli import app

    runner = CliRunner()
    for typed, meant in (("tabel5", "table5"), ("verfy-all", "verify-all"), ("exprt", "export")):
        done = runner.invoke(app, [typed], env={"COLUMNS": "200"})
        assert done.exit_code == 2, done.output
        assert f"No such command '{typed}' (did you mean '{meant}'?)" in done.output, done.output
    done = runner.invoke(app, ["xyzzy"], env={"COLUMNS": "200"})
    assert done.exit_code == 2 and "No such command 'xyzzy'." in done.output and "did you mean" not in done.output


def test_profile_help_lists_the_profiles_that_exist():
    from repro.cli.options import profile_help
    from repro.spec.profiles import shipped_profiles

    text = profile_help()
    assert all(f"{name} (" in text for name in shipped_profiles())
    assert "smoke (CPU, minutes) or full" not in text

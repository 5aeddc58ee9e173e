"""`repro package` (repro.results.package): one archive of a results folder whose crate validates after unpacking,
holding the folder, the run records its tables read, the citation files and HEAD's source; its sha256 printed and
written into the folder's crate; a tree that differs from HEAD refused unless --allow-dirty."""

import hashlib
import re
import json
import shutil
import subprocess
import tarfile

import pytest
from crate_check import validate
from test_crate import folder, graph, ids  # noqa: F401  (the fixture: a folder written by two commands)
from typer.testing import CliRunner

from checkout import REPO_ROOT
from repro.cli import app
from repro.results.acting import acting
from repro.results.actions import CRATE_FILE, load_actions
from repro.results.package import CITATION_FILE, CODEMETA_FILE, PackageError, build_package


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def source(tmp_path):
    """A repository of three files, committed."""
    repo = tmp_path / "source"
    repo.mkdir()
    for name in (CITATION_FILE, CODEMETA_FILE):
        shutil.copy(REPO_ROOT / name, repo / name)
    (repo / "code.py").write_text("print('hello')\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    return repo


def test_the_archive_unpacks_to_a_crate_that_validates(folder, source, tmp_path):  # noqa: F811
    with acting("package", folder):
        made = build_package(folder, source=source)
    commit = git(source, "rev-parse", "HEAD")
    assert made.path == folder / "package" / f"repro-smoke-{commit[:12]}.tar.gz" and made.commit == commit
    assert made.sha256 == hashlib.sha256(made.path.read_bytes()).hexdigest()
    unpacked = tmp_path / "unpacked"
    with tarfile.open(made.path) as tar:
        tar.extractall(unpacked, filter="data")
    (top,) = unpacked.iterdir()
    assert (top / "source" / "code.py").read_text() == "print('hello')\n"
    assert (top / CITATION_FILE).read_bytes() == (REPO_ROOT / CITATION_FILE).read_bytes()
    assert (top / "t" / "results.json").is_file() and (top / "report.md").is_file()
    records = {p.name for p in (folder.parent / "runs").glob("*.json")}
    assert {p.name for p in (top / "runs").glob("*.json")} == records and made.records == 4
    entities, _ = graph(top)
    assert ids(entities["t/results.json"]["isBasedOn"]) == {f"runs/{r}" for r in records}  # Files inside now
    assert validate(top, tmp_path) == []
    # the folder's own crate holds the archive, with the sha256 printed
    entities, _ = graph(folder)
    archive = f"package/{made.path.name}"
    assert entities[archive]["sha256"] == made.sha256
    package = entities[f"#action/{load_actions(folder)[-1].id}"]
    assert ids(package["result"]) == {archive}
    assert validate(folder, tmp_path / "again") == []


def test_a_second_package_does_not_hold_the_first(folder, source):  # noqa: F811
    first = build_package(folder, source=source)
    second = build_package(folder, folder / "package" / "again.tar.gz", source=source)
    with tarfile.open(second.path) as tar:
        assert not [n for n in tar.getnames() if "/package/" in n]
    assert first.files == second.files


def test_a_tree_that_differs_from_head_is_refused_unless_allowed(folder, source):  # noqa: F811
    (source / "code.py").write_text("print('changed')\n")
    with pytest.raises(PackageError, match=r"1 tracked file\(s\) in .* differ from HEAD \(code.py\).*--allow-dirty"):
        build_package(folder, source=source)
    assert not (folder / "package").exists()
    made = build_package(folder, source=source, allow_dirty=True)
    assert made.dirty == ["code.py"]
    with tarfile.open(made.path) as tar:  # HEAD's source, as it says
        member = next(m for m in tar.getmembers() if m.name.endswith("source/code.py"))
        assert tar.extractfile(member).read() == b"print('hello')\n"


def test_the_command_prints_the_archive_and_its_sha256_within_80_columns(folder, monkeypatch):  # noqa: F811
    runner = CliRunner()
    done = runner.invoke(app, ["package", "--results-dir", str(folder.parent), "--allow-dirty"], env={"COLUMNS": "80"})
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    path = next(line for line in lines if line.endswith(".tar.gz"))
    digest = next(line for line in lines if line.startswith("sha256 ")).split()[1]
    assert hashlib.sha256(open(path, "rb").read()).hexdigest() == digest
    assert all(len(line) <= 80 or " " not in line.strip() for line in lines), done.output  # a path: whole
    crate = json.loads((folder / CRATE_FILE).read_text())
    assert any(e.get("sha256") == digest for e in crate["@graph"])


def test_a_folder_without_results_is_refused(tmp_path):
    done = CliRunner().invoke(app, ["package", "--results-dir", str(tmp_path / "none")], env={"COLUMNS": "80"})
    assert done.exit_code == 2 and "no results of profile 'smoke'" in done.output


def test_a_results_file_that_names_a_path_as_a_record_is_refused(folder, source):  # noqa: F811
    path = folder / "t" / "results.json"
    data = json.loads(path.read_text())
    data["details"]["runs"]["dense"][0]["hash"] = "../../etc/passwd"
    path.write_text(json.dumps(data))
    with pytest.raises(PackageError, match=r"names a run record '\.\./\.\./etc/passwd' that is not a run's hash"):
        build_package(folder, source=source)


def test_an_archive_outside_the_folder_is_said_to_be_outside_its_crate(folder, tmp_path):  # noqa: F811
    out = tmp_path / "elsewhere" / "deposit.tar.gz"
    done = CliRunner().invoke(
        app,
        ["package", "--results-dir", str(folder.parent), "--allow-dirty", "--out", str(out)],
        env={"COLUMNS": "200"},
    )
    assert done.exit_code == 0, done.output
    digest = next(line for line in done.output.splitlines() if line.startswith("sha256 ")).split()[1]
    assert hashlib.sha256(out.read_bytes()).hexdigest() == digest
    assert f"The archive is outside {folder}, so its crate does not list it" in done.output
    crate = (folder / CRATE_FILE).read_text() if (folder / CRATE_FILE).exists() else ""
    assert digest not in crate


def test_a_source_git_refuses_is_named_with_gits_reason(tmp_path, monkeypatch):
    """A checkout another user owns: git refuses it ('dubious ownership'), which the message once hid behind 'is
    not in a git work tree'. The message now carries git's own first line."""
    from repro.results import package as pkg

    def refuse(source, *args, text=True):
        raise subprocess.CalledProcessError(
            128, ["git", *args], stderr="fatal: detected dubious ownership in repository at '/shared/repro'\nhint\n"
        )

    monkeypatch.setattr(pkg, "_git", refuse)
    with pytest.raises(PackageError, match="detected dubious ownership in repository at '/shared/repro'"):
        pkg.source_root(tmp_path)


def test_a_folder_outside_any_work_tree_is_named_with_gits_reason(tmp_path):
    from repro.results.package import source_root

    with pytest.raises(
        PackageError, match=re.escape(f"git finds no work tree at {tmp_path} (") + ".*not a git repository"
    ):
        source_root(tmp_path)


@pytest.mark.parametrize("where", ["a file in the way", "a read-only folder"])
def test_an_archive_folder_that_takes_no_file_is_one_line_naming_out(folder, tmp_path, monkeypatch, where):  # noqa: F811
    """`repro package -o READ_ONLY_RESULTS` ended in a PermissionError traceback from the staging folder, found
    in an evaluator's walk-through (chattr +i on the results folder); a file where --out's folder should be, the
    same with NotADirectoryError."""
    import errno
    import tempfile

    (tmp_path / "afile").write_text("")
    out = tmp_path / ("afile" if where == "a file in the way" else "deposit") / "deposit.tar.gz"
    if where == "a read-only folder":

        def refused(*args, **kwargs):
            raise PermissionError(errno.EPERM, "Operation not permitted", kwargs.get("dir"))

        monkeypatch.setattr(tempfile, "TemporaryDirectory", refused)
    done = CliRunner().invoke(
        app,
        ["package", "--results-dir", str(folder.parent), "--allow-dirty", "--out", str(out)],
        env={"COLUMNS": "300"},
    )
    assert done.exit_code == 2, done.output
    assert done.output.startswith(f"error: cannot write the archive in {out.parent}: "), done.output
    assert "choose another with --out" in done.output
    assert (tmp_path / "afile").read_text() == ""

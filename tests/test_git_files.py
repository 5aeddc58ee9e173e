"""repro.results.git_files: the commit a container image records, read from the .git files its build context
holds (.dockerignore), checked against git itself on a repository made here."""

import shutil
from pathlib import Path

import pytest

from checkout import REPO_ROOT
from test_container_config import dockerignore_patterns, excluded


def _git(repo: Path, *args: str) -> str:
    import subprocess

    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "HOME": str(repo),
        "PATH": "/usr/bin:/bin:/usr/local/bin",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def _context(repo: Path, into: Path) -> Path:
    """What `docker compose build` sends of `repo`: every file .dockerignore does not leave out."""
    pats = dockerignore_patterns()
    for path in repo.rglob("*"):
        rel = path.relative_to(repo).as_posix()
        if path.is_file() and not excluded(rel, pats):
            (into / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, into / rel)
    return into


def test_an_image_records_the_commit_from_its_build_context(tmp_path):
    """A clone's context, copied as Docker would: HEAD's commit, '+dirty' after an edit, packed refs and a
    detached HEAD read alike; a worktree's .git (a file) or no .git gives no commit."""
    from repro.results.git_files import commit_from_files

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "clone"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    shutil.copy(REPO_ROOT / ".dockerignore", repo / ".dockerignore")
    (repo / "repro").mkdir()
    (repo / "repro" / "a.py").write_text("x = 1\n")
    (repo / "empty.txt").write_text("")
    (repo / "data").mkdir()
    (repo / "data" / "big.bin").write_text("not in the context")
    _git(repo, "add", ".dockerignore", "repro", "empty.txt")
    _git(repo, "commit", "-q", "-m", "one")
    (repo / "repro" / "a.py").write_text("x = 2\n")
    _git(repo, "commit", "-q", "-am", "two")
    head = _git(repo, "rev-parse", "HEAD")

    context = _context(repo, tmp_path / "context")
    assert not (context / ".git" / "objects").exists() and not (context / "data").exists()
    assert commit_from_files(context) == head
    (context / "repro" / "a.py").write_text("x = 3\n")
    assert commit_from_files(context) == head + "+dirty"

    _git(repo, "pack-refs", "--all")
    _git(repo, "checkout", "-q", "--detach", "HEAD~1")
    first = _git(repo, "rev-parse", "HEAD")
    assert commit_from_files(_context(repo, tmp_path / "detached")) == first
    _git(repo, "checkout", "-q", "main")
    packed = _context(repo, tmp_path / "packed")
    assert not (packed / ".git" / "refs" / "heads" / "main").exists() and commit_from_files(packed) == head
    (packed / ".git" / "index").unlink()
    assert commit_from_files(packed) == head + "+unchecked"

    _git(repo, "worktree", "add", "-q", str(tmp_path / "wt"), "HEAD")
    assert (tmp_path / "wt" / ".git").is_file()
    assert commit_from_files(_context(tmp_path / "wt", tmp_path / "from-worktree")) is None
    assert commit_from_files(tmp_path / "no-git") is None

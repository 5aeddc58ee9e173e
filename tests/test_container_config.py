"""Static checks of the container files (Dockerfile, compose files, .dockerignore, docs/container.md) that
need no Docker: the image installs the project exactly as the README does, the compose files hand the CLI
the folders and environment it reads under the names it reads them by, and the build context lets the
image record its commit. The real build and run: .ci/container-test.sh."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from checkout import REPO_ROOT
from repro.core.settings import Settings
from repro.data.layout import data_root

DOCKERFILE = REPO_ROOT / "Dockerfile"
COMPOSE_GPU = REPO_ROOT / "docker-compose.yml"
COMPOSE_CPU = REPO_ROOT / "docker-compose.cpu.yml"
README = REPO_ROOT / "README.md"
CONTAINER_DOC = REPO_ROOT / "docs" / "container.md"

# pip options that take a value; the value is not a requirement.
_PIP_VALUE_OPTIONS = {
    "-c",
    "--constraint",
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "--cert",
    "--client-cert",
    "-t",
    "--target",
    "--prefix",
    "--root",
    "--cache-dir",
    "--timeout",
    "--retries",
    "--proxy",
    "--trusted-host",
    "--progress-bar",
    "--python-version",
    "--platform",
    "--implementation",
    "--abi",
    "--log",
    "--src",
    "--upgrade-strategy",
    "-C",
    "--config-settings",
    "--report",
    "--only-binary",
    "--no-binary",
    "--root-user-action",
}


# ---------------------------------------------------------------- parsing helpers


def pip_install_commands(shell: str) -> list[list[str]]:
    """The argument lists of every `pip install` / `python -m pip install` in a shell snippet."""
    tokens = shlex.split(shell.replace("\\\n", " "), comments=True)
    commands, current = [], []
    for tok in tokens + [";"]:
        if tok in {"&&", "||", ";", "|"} or tok.endswith(";"):
            if tok.endswith(";") and tok != ";":
                current.append(tok[:-1])
            commands.append(current)
            current = []
        else:
            current.append(tok)
    found = []
    for cmd in commands:
        words = [w for w in cmd if not re.fullmatch(r"[A-Z_]+=.*", w)]  # drop VAR=value prefixes
        for i in range(len(words) - 1):
            is_pip = Path(words[i]).name in {"pip", "pip3"} or (words[i] == "pip" and i >= 2 and words[i - 1] == "-m")
            if is_pip and words[i + 1] == "install":
                found.append(words[i + 2 :])
                break
    return found


def _normalize_requirement(req: str) -> tuple[str, frozenset[str]]:
    """'./.[dev, x]' -> ('.', {'dev', 'x'}); a name keeps its extras too."""
    m = re.fullmatch(r"(.*?)(?:\[([^\]]*)\])?", req.strip())
    target, extras = m.group(1), m.group(2) or ""
    target = target.rstrip("/") or "/"
    target = re.sub(r"^(\./)+", "", target) or "."
    return target, frozenset(e.strip() for e in extras.split(",") if e.strip())


def install_spec(args: list[str]) -> frozenset[tuple]:
    """What a `pip install` installs, ignoring how (cache, constraints, certificates)."""
    spec, i = set(), 0
    while i < len(args):
        a = args[i]
        if a in {"-e", "--editable"}:
            spec.add(("editable", *_normalize_requirement(args[i + 1])))
            i += 2
        elif a.startswith("--editable="):
            spec.add(("editable", *_normalize_requirement(a.split("=", 1)[1])))
            i += 1
        elif a in {"-r", "--requirement"}:
            spec.add(("requirements", args[i + 1]))
            i += 2
        elif a in _PIP_VALUE_OPTIONS:
            i += 2
        elif a.startswith("-"):
            i += 1
        else:
            spec.add(("requirement", *_normalize_requirement(a)))
            i += 1
    return frozenset(spec)


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    out = []
    for ln in joined.splitlines():
        if ln.strip():
            word, _, rest = ln.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def dockerfile_env(instructions) -> dict[str, str]:
    env = {}
    for word, rest in instructions:
        if word == "ENV":
            for tok in shlex.split(rest):
                key, _, value = tok.partition("=")
                env[key] = value
    return env


def readme_install_command() -> list[str]:
    """The first `pip install` in the README's fenced shell blocks: the newcomer's install."""
    blocks = re.findall(r"```(?:bash|sh|shell|console)?\n(.*?)```", README.read_text(), re.S)
    for block in blocks:
        commands = pip_install_commands(block)
        if commands:
            return commands[0]
    raise AssertionError("README has no `pip install` command in a fenced shell block")


def dockerfile_install_command() -> list[str]:
    runs = [rest for word, rest in dockerfile_instructions(DOCKERFILE.read_text()) if word == "RUN"]
    commands = [c for run in runs for c in pip_install_commands(run)]
    assert len(commands) == 1, f"the Dockerfile should install with exactly one pip install, found {commands}"
    return commands[0]


class _ComposeLoader(yaml.SafeLoader):
    """YAML as Compose reads it: its merge tags (!reset, !override) kept as markers, and a key given twice
    in one mapping an error (PyYAML keeps the last silently; Compose refuses the file)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[object, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"mapping key {key!r} given twice (lines {seen[key]} and {key_node.start_mark.line + 1})",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def _tagged(loader: yaml.SafeLoader, node: yaml.Node) -> tuple[str, object]:
    if isinstance(node, yaml.MappingNode):
        return node.tag, loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return node.tag, loader.construct_sequence(node, deep=True)
    return node.tag, loader.construct_scalar(node)


_ComposeLoader.add_constructor("!reset", _tagged)
_ComposeLoader.add_constructor("!override", _tagged)


def compose(path: Path) -> dict:
    return yaml.load(path.read_text(), Loader=_ComposeLoader)


def env_default(value: str) -> str:
    """'${VAR:-default}' -> 'default' (what Compose substitutes when VAR is unset)."""
    return re.sub(r"\$\{\w+:?-([^}]*)\}", r"\1", str(value))


def parse_volume(short: str) -> tuple[str, str, str]:
    parts = env_default(short).split(":")
    return parts[0], parts[1], parts[2] if len(parts) > 2 else "rw"


# ---------------------------------------------------------------- the parsers themselves


def test_the_compose_reader_refuses_a_key_given_twice_as_compose_does(tmp_path):
    twice = tmp_path / "compose.yml"
    twice.write_text("services:\n  repro:\n    hostname: a\n    init: true\n    hostname: b\n")
    with pytest.raises(yaml.constructor.ConstructorError, match="'hostname' given twice .lines 3 and 5"):
        compose(twice)
    once = tmp_path / "once.yml"
    once.write_text("services:\n  repro:\n    hostname: a\n  other:\n    hostname: b\n")
    assert compose(once)["services"]["other"]["hostname"] == "b"


def test_install_spec_ignores_how_but_not_what():
    readme = pip_install_commands("pip install -e '.[dev]' && repro verify-all  # comment")
    assert readme == [["-e", ".[dev]"]]
    docker = pip_install_commands(
        "X=1 python -m pip install --no-cache-dir --constraint /tmp/c.txt -e './.[dev]' && rm -f /tmp/c.txt"
    )
    assert install_spec(readme[0]) == install_spec(docker[0]) == {("editable", ".", frozenset({"dev"}))}
    # a different extra, a plain (non-editable) install or an extra package all differ
    for other in [
        "pip install -e .",
        "pip install '.[dev]'",
        "pip install -e '.[dev]' torch==2.5",
        "pip install -e '.[dev,gpu]'",
        "pip install -r requirements.txt",
    ]:
        assert install_spec(pip_install_commands(other)[0]) != install_spec(readme[0]), other


def test_dockerfile_instructions_join_continuations():
    text = "FROM x\n# c\nENV A=1 \\\n    B=two\nRUN a \\\n  && b\n"
    assert dockerfile_instructions(text) == [("FROM", "x"), ("ENV", "A=1      B=two"), ("RUN", "a    && b")]
    assert dockerfile_env(dockerfile_instructions(text)) == {"A": "1", "B": "two"}


# ---------------------------------------------------------------- Dockerfile


def test_image_installs_what_the_readme_installs():
    assert install_spec(dockerfile_install_command()) == install_spec(readme_install_command())


def test_image_keeps_the_base_torch():
    """torch and torchvision are pinned to the base's versions and checked after the install."""
    args = dockerfile_install_command()
    names = {s[1] for s in install_spec(args) if s[0] == "requirement"}
    assert not names & {"torch", "torchvision"}
    constraint = args[args.index("--constraint") + 1]
    run = next(
        rest
        for word, rest in dockerfile_instructions(DOCKERFILE.read_text())
        if word == "RUN" and "pip install" in rest
    )
    before, after = run.split("pip install", 1)
    assert f"> {constraint}" in before and 'v(\\"torch\\")' in before and 'v(\\"torchvision\\")' in before
    assert f"diff {constraint} -" in after


def test_dockerfile_base_user_entrypoint():
    instructions = dockerfile_instructions(DOCKERFILE.read_text())
    words = [w for w, _ in instructions]
    arg_base = next(rest for w, rest in instructions if w == "ARG" and rest.startswith("BASE_IMAGE="))
    image = arg_base.split("=", 1)[1]
    assert re.fullmatch(r"[\w./-]+:[\w.-]+", image) and not image.endswith(":latest"), image
    assert "cuda" in image, "the default base is a CUDA PyTorch runtime"
    assert words.index("ARG") < words.index("FROM")
    assert [rest for w, rest in instructions if w == "FROM"] == ["${BASE_IMAGE}"]
    user = [rest for w, rest in instructions if w == "USER"][-1]
    assert re.fullmatch(r"[1-9]\d*:[1-9]\d*", user), f"a numeric non-root USER, got {user}"
    assert [rest for w, rest in instructions if w == "ENTRYPOINT"] == ['["repro"]']
    assert [rest for w, rest in instructions if w == "CMD"] == ['["--help"]']


def test_dockerfile_writable_home_and_caches():
    instructions = dockerfile_instructions(DOCKERFILE.read_text())
    env = dockerfile_env(instructions)
    run_text = " ".join(rest for w, rest in instructions if w == "RUN")
    chmod = re.search(r"chmod 1777 ([^&]+)", run_text).group(1).split()
    for var in ["HOME", "TORCH_HOME", "XDG_CACHE_HOME"]:
        assert env[var] in chmod, f"{var}={env[var]} must be writable by any UID"


def test_dockerignore_keeps_data_results_caches_out_and_sources_in():
    patterns = {
        ln.strip().strip("/")
        for ln in (REPO_ROOT / ".dockerignore").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    }
    assert {"data", "results", ".cache", ".venv", ".git"} <= patterns
    assert not patterns & {"repro", "manifests", "paper_tables", "pyproject.toml", "README.md", "."}


# ---------------------------------------------------------------- compose files


def test_compose_gpu_service():
    doc = compose(COMPOSE_GPU)
    svc = doc["services"]["repro"]
    assert svc["build"]["context"] == "."
    version = re.search(r'^version = "([^"]+)"', (REPO_ROOT / "pyproject.toml").read_text(), re.M).group(1)
    assert env_default(svc["image"]) == f"repro-moe-rho:{version}"
    devices = svc["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"]
    assert svc.get("shm_size") or svc.get("ipc") == "host"
    assert re.fullmatch(r"\$\{UID:-\d+\}:\$\{GID:-\d+\}", svc["user"])
    assert env_default(svc["environment"]["REPRO_PROFILE"]) == "smoke"


def test_compose_gives_every_container_the_same_host_name():
    """Issue 41, item 16: without one, each container is named by its id, so a killed container's run locks
    looked like another host's and the next `docker compose run` waited 600 s before taking them over."""
    hostname = compose(COMPOSE_GPU)["services"]["repro"].get("hostname")
    assert isinstance(hostname, str) and re.fullmatch(r"[a-z][a-z0-9-]*", hostname), hostname


def test_compose_mounts_match_what_the_cli_reads():
    svc = compose(COMPOSE_GPU)["services"]["repro"]
    volumes = {target: (source, mode) for source, target, mode in map(parse_volume, svc["volumes"])}
    env = svc["environment"]
    assert volumes[env["REPRO_DATA"]] == ("./data", "ro")
    assert volumes[env["REPRO_RESULTS"]] == ("./results", "rw")
    cache_source, _ = volumes["/cache"]
    assert cache_source in compose(COMPOSE_GPU)["volumes"], "the cache is a named volume"
    image_env = dockerfile_env(dockerfile_instructions(DOCKERFILE.read_text()))
    for var in ["TORCH_HOME", "XDG_CACHE_HOME"]:
        assert image_env[var].startswith("/cache/")
    for var in ["REPRO_DATA", "REPRO_RESULTS"]:
        assert image_env[var] == env[var]
    # the CLI honours exactly these variables: its settings, read where a command starts
    settings = Settings.read(
        {
            "REPRO_PROFILE": env_default(env["REPRO_PROFILE"]),
            "REPRO_RESULTS": env["REPRO_RESULTS"],
            "REPRO_DATA": env["REPRO_DATA"],
        }
    )
    assert settings.profile == "smoke"
    assert Settings.read({"REPRO_PROFILE": "full"}).profile == "full"  # what `-e REPRO_PROFILE=full` passes in
    assert settings.results == Path("/results")
    assert data_root(settings.data) == Path("/data")


def test_compose_cpu_variant_drops_the_gpu_and_nothing_else():
    svc = compose(COMPOSE_CPU)["services"]["repro"]
    assert svc["deploy"] == ("!reset", {})
    assert set(svc) == {"deploy"}, "the CPU file changes only the GPU: the profile is the service's"


def test_the_compose_default_profile_is_the_one_the_readme_and_the_cli_give():
    """Issue 49, item 5: the compose file set REPRO_PROFILE to full, so the README's `docker compose run --rm repro
    verify-all` on a GPU host started the paper's 346 GPU-hour protocol instead of the README's one-minute smoke."""
    readme = README.read_text()
    stated = re.findall(r"`repro verify-all` runs every table at the `([\w-]+)` profile by default", readme)
    assert len(stated) == 1, "the README states the default profile once, in these words"
    svc = compose(COMPOSE_GPU)["services"]["repro"]
    assert env_default(svc["environment"]["REPRO_PROFILE"]) == stated[0]
    assert Settings.read({}).profile == stated[0]  # the host's default, with no variable set
    docker = re.findall(r"`docker compose run --rm repro verify-all[^`]*`", readme)
    assert docker and all("--profile" not in d for d in docker), docker  # the README's command takes the default


@pytest.mark.parametrize("path", [COMPOSE_GPU, COMPOSE_CPU, REPO_ROOT / ".ci" / "compose.ci.yml"])
def test_compose_files_parse(path):
    assert "repro" in compose(path)["services"]


# ---------------------------------------------------------------- docs/container.md


def _container_doc() -> str:
    return CONTAINER_DOC.read_text()


def test_container_doc_names_only_real_commands():
    import typer.main

    from repro.cli import app, manifest_ids

    registered = set(typer.main.get_command(app).commands) | set(manifest_ids())  # `repro <id>`: `repro run <id>`
    named = set(re.findall(r"docker compose (?:-f \S+ )*run --rm repro ([\w-]+)", _container_doc()))
    assert {"verify-all", "list"} <= named
    assert named <= registered, f"docs/container.md names commands the CLI lacks: {sorted(named - registered)}"


def test_every_compose_run_removes_its_container():
    """`docker compose run` without --rm leaves a stopped container behind per command: every command, comment
    and log line that runs the service says --rm."""
    runs_it = (CONTAINER_DOC, REPO_ROOT / ".ci" / "container-test.sh", COMPOSE_GPU, COMPOSE_CPU)
    for path in {*runs_it, REPO_ROOT / "README.md", *(REPO_ROOT / "docs").glob("*.md")}:
        text = path.read_text()
        assert path not in runs_it or re.search(r"compose(?: -f \S+)* run --rm repro", text), path.name
        runs = re.findall(r"compose(?: -f \S+)* run((?: -{1,2}[\w-]+(?:[ =](?!repro\b)\S+)?)*) repro\b", text)
        without = [options for options in runs if "--rm" not in options.split()]
        assert not without, f"{path.name}: {without}"


def test_container_doc_states_the_compose_defaults():
    doc = _container_doc()
    gpu, cpu = compose(COMPOSE_GPU)["services"]["repro"], compose(COMPOSE_CPU)["services"]["repro"]
    assert f"profile `{env_default(gpu['environment']['REPRO_PROFILE'])}` unless" in doc
    assert "environment" not in cpu and "drops the GPU reservation (the profile stays the service's)" in doc
    assert "-f docker-compose.yml -f docker-compose.cpu.yml run --rm repro" in doc
    base = next(
        rest
        for w, rest in dockerfile_instructions(DOCKERFILE.read_text())
        if w == "ARG" and rest.startswith("BASE_IMAGE=")
    )
    assert f"`{base.split('=', 1)[1]}`" in doc


def test_container_doc_names_the_compose_version_the_cpu_file_needs():
    assert "!reset" in COMPOSE_CPU.read_text()
    assert "Compose 2.24 or later" in _container_doc() and "Compose >= 2.24" in COMPOSE_GPU.read_text()


def test_each_setting_has_one_name_in_compose_the_cli_and_the_doc():
    """A host folder is set by the variable the CLI reads for it (REPRO_DATA, REPRO_RESULTS), and the doc's table
    lists exactly the variables the compose files read."""
    svc = compose(COMPOSE_GPU)["services"]["repro"]
    for short in svc["volumes"]:
        source, target = (
            re.match(r"\$\{(\w+):-[^}]*\}:([^:]+)", short).groups() if short.startswith("$") else (None, None)
        )
        if source is not None:
            assert svc["environment"][source] == target, f"{short}: mount it where ${source} points inside"
    read = set(re.findall(r"\$\{(\w+)", COMPOSE_GPU.read_text() + COMPOSE_CPU.read_text()))
    table = set(re.findall(r"^\| `(\w+)`(?:, `(\w+)`)? \|", _container_doc(), re.M))
    documented = {name for pair in table for name in pair if name}
    assert documented == read | {"BASE_IMAGE", "EXTRA_CA_CERT"}, (documented, read)
    for text in (
        _container_doc(),
        COMPOSE_GPU.read_text(),
        COMPOSE_CPU.read_text(),
        (REPO_ROOT / ".ci" / "container-test.sh").read_text(),
    ):
        assert "REPRO_DATA_DIR" not in text and "REPRO_RESULTS_DIR" not in text


def test_container_doc_lists_every_table_id():
    from repro.plan.manifest import manifest_paths

    line = next(ln for ln in _container_doc().splitlines() if "# one table; the ids:" in ln)
    listed = set()
    for item in line.split("the ids:")[1].split(","):
        m = re.fullmatch(r"\s*table(\d+)-table(\d+)\s*", item)
        listed |= {f"table{i}" for i in range(int(m[1]), int(m[2]) + 1)} if m else {item.strip()}
    assert listed == {p.stem for p in manifest_paths()}


def test_compose_gives_the_container_a_stable_hostname():
    """A lock a killed container left must be known as this host's (issue 41): one fixed name, no variable."""
    svc = compose(COMPOSE_GPU)["services"]["repro"]
    assert re.fullmatch(r"[a-z][a-z0-9-]*", svc["hostname"]), svc.get("hostname")
    assert "hostname" not in compose(COMPOSE_CPU)["services"]["repro"]


# ---------------------------------------------------------------- the commit an image records


def dockerignore_patterns() -> list[str]:
    return [
        ln.strip()
        for ln in (REPO_ROOT / ".dockerignore").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]


def _glob(pattern: str, path: str) -> bool:
    """Docker's pattern match (moby/patternmatcher): * and ? stay within a folder, ** crosses folders."""
    regex = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            regex, i = regex + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            regex, i = regex + ".*", i + 2
        elif pattern[i] == "*":
            regex, i = regex + "[^/]*", i + 1
        elif pattern[i] == "?":
            regex, i = regex + "[^/]", i + 1
        else:
            regex, i = regex + re.escape(pattern[i]), i + 1
    return re.fullmatch(regex, path) is not None


def excluded(path: str, patterns: list[str]) -> bool:
    """Whether Docker leaves `path` (relative, /-separated) out of the build context: the last pattern that
    matches the path or one of its parent folders decides; a `!` pattern lets it back in."""
    out = False
    parts = path.split("/")
    for pattern in patterns:
        keep = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        if any(_glob(pattern, "/".join(parts[:i])) for i in range(1, len(parts) + 1)):
            out = not keep
    return out


def test_the_pattern_matcher_follows_docker():
    pats = ["*.md", "!README*.md", "README-secret.md", "**/__pycache__", ".git", "!.git/HEAD"]
    assert excluded("a.md", pats) and not excluded("README.md", pats) and excluded("README-secret.md", pats)
    assert excluded("x/y/__pycache__/m.pyc", pats) and not excluded("x/y.py", pats)
    assert excluded(".git/config", pats) and not excluded(".git/HEAD", pats) and excluded(".git/objects/ab/cd", pats)


def test_the_build_context_holds_heads_refs_and_index_of_git_and_none_of_its_objects():
    pats = dockerignore_patterns()
    for kept in (
        ".git/HEAD",
        ".git/refs/heads/main",
        ".git/refs/heads/feature/x",
        ".git/packed-refs",
        ".git/index",
        "repro/__init__.py",
        "Dockerfile",
        "pyproject.toml",
    ):
        assert not excluded(kept, pats), kept
    for left in (
        ".git/config",
        ".git/objects/ab/cdef",
        ".git/objects/pack/p.pack",
        ".git/logs/HEAD",
        ".git/refs/remotes/origin/main",
        ".git/hooks/pre-commit",
        "data/cifar-10-batches-py/data_batch_1",
        "results/smoke/report.md",
        ".venv/bin/python",
    ):
        assert excluded(left, pats), left


def test_no_variable_carries_the_commit_into_the_build():
    for path in (DOCKERFILE, COMPOSE_GPU, REPO_ROOT / ".ci" / "container-test.sh"):
        assert "REPRO_GIT_COMMIT" not in path.read_text(), path
    assert "REPRO_GIT_COMMIT" not in (REPO_ROOT / "repro" / "results" / "provenance.py").read_text()

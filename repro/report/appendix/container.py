"""The container files and the package metadata, read as data: what the appendix says about software and installation.

    Dockerfile            the base image (ARG BASE_IMAGE), the licence label, the pip install it runs
    docker-compose*.yml   the service, its image, the GPUs it reserves, its mounts and environment; a file whose
                          service resets `deploy` drops the GPU reservation (the CPU variant)
    pyproject.toml        the package's name, version, description, Python and dependencies

A `${VAR:-default}` in a compose file is read as VAR with its default. A file that is missing or does not
parse is an error naming it and what was expected. They are the source tree's: an installed wheel has none, so
outside a checkout the package is described from its installed metadata and the container as not here.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from repro.core.schema import SchemaError, read_toml

_DEFAULTED = re.compile(r"\$\{(\w+):-([^}]*)\}")


@dataclass(frozen=True)
class Variable:
    """A setting the compose file takes from the environment, with its default."""

    name: str
    default: str


@dataclass(frozen=True)
class ComposeFile:
    file: str  # relative to the repository
    service: str
    image: Variable | None = None
    gpus: Variable | None = None  # the GPUs reserved; None: no GPU reservation
    drops_gpus: bool = False  # the service resets `deploy` (an override for a host without a GPU)
    shm_size: str = ""
    volumes: tuple[str, ...] = ()
    environment: tuple[tuple[str, str], ...] = ()  # (key, value as written)
    build_args: tuple[str, ...] = ()

    def default(self, key: str) -> str:
        """The default of an environment setting of the service ('' when it sets none)."""
        value = dict(self.environment).get(key)
        return variable(value).default if value is not None else ""


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    description: str
    python: str
    dependencies: tuple[str, ...]
    licence: str


@dataclass(frozen=True)
class Container:
    dockerfile: str
    base_image: str
    licence_label: str
    install: tuple[str, ...]  # the arguments of the Dockerfile's pip install, less how (cache, constraints)
    compose: tuple[ComposeFile, ...] = field(default_factory=tuple)

    @property
    def gpu_compose(self) -> ComposeFile | None:
        return next((c for c in self.compose if c.gpus is not None), None)

    @property
    def cpu_overrides(self) -> tuple[ComposeFile, ...]:
        return tuple(c for c in self.compose if c.drops_gpus)


def variable(text: Any) -> Variable:
    """'${REPRO_GPUS:-1}' -> Variable('REPRO_GPUS', '1'); a literal value -> Variable('', value)."""
    match = _DEFAULTED.fullmatch(str(text).strip())
    return Variable(match.group(1), match.group(2)) if match else Variable("", str(text))


def _setting(text: Any) -> Variable | None:
    """A compose file's value as a Variable; None where the file gives none."""
    return None if text is None else variable(text)


class _ComposeLoader(yaml.SafeLoader):
    """Compose's own tags (`!reset`, `!override`) read as the value they tag, or None for an empty one."""


def _tagged(loader, suffix, node):
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node) or None
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node) or None
    return loader.construct_scalar(node) or None


_ComposeLoader.add_multi_constructor("!", _tagged)


def read_compose(path: Path, root: Path) -> ComposeFile:
    try:
        doc = yaml.load(path.read_text(), Loader=_ComposeLoader)
    except (OSError, yaml.YAMLError) as exc:
        raise SchemaError(path, [f"cannot read it as YAML: {exc}"]) from None
    services = doc.get("services") if isinstance(doc, dict) else None
    if not isinstance(services, dict) or len(services) != 1:
        raise SchemaError(path, ["services: expected exactly one service (the artifact's)"])
    ((name, service),) = services.items()
    service = service or {}
    deploy = service.get("deploy", ...)
    devices = (
        (((deploy or {}).get("resources") or {}).get("reservations") or {}).get("devices") or []
        if isinstance(deploy, dict)
        else []
    )
    gpus = next((_setting(d.get("count")) for d in devices if "gpu" in (d.get("capabilities") or [])), None)
    env = service.get("environment") or {}
    env = env.items() if isinstance(env, dict) else (item.partition("=")[::2] for item in env)
    build = service.get("build") or {}
    args = build.get("args") or [] if isinstance(build, dict) else []
    return ComposeFile(
        path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path),
        name,
        _setting(service.get("image")),
        gpus,
        "deploy" in service and deploy is None,
        str(service.get("shm_size") or ""),
        tuple(str(v) for v in service.get("volumes") or ()),
        tuple((str(k), str(v)) for k, v in env),
        tuple(str(a).split("=")[0] for a in (args if isinstance(args, list) else args.keys())),
    )


def read_dockerfile(path: Path, root: Path) -> tuple[str, str, tuple[str, ...]]:
    """(the base image's default, the licence label, the pip install arguments) of a Dockerfile."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise SchemaError(path, [f"cannot read it: {exc.strerror or exc}"]) from None
    joined = text.replace("\\\n", " ")
    base = re.search(r"^ARG BASE_IMAGE=(\S+)", joined, re.M)
    licence = re.search(r"org\.opencontainers\.image\.licenses=\"([^\"]*)\"", joined)
    install = _pip_install(joined)
    if base is None or not install:
        expected = (
            (base, "ARG BASE_IMAGE=<image>: expected the base image's default"),
            (install, "RUN ... pip install ...: expected the project's install"),
        )
        raise SchemaError(path, [msg for ok, msg in expected if not ok])
    return base.group(1), licence.group(1) if licence else "", install


_PIP_OPTIONS_WITH_VALUE = {"-c", "--constraint", "--cache-dir", "-i", "--index-url", "--cert"}


def _pip_install(text: str) -> tuple[str, ...]:
    """What the Dockerfile's `pip install` installs: `-e '.[dev]'` as ('-e', '.[dev]'), options of how dropped."""
    for line in text.splitlines():
        if not line.startswith("RUN") or "pip install" not in line:
            continue
        words = shlex.split(line.split("pip install", 1)[1].split("&&")[0])
        out, skip = [], False
        for w in words:
            if skip:
                skip = False
            elif w in _PIP_OPTIONS_WITH_VALUE:
                skip = True
            elif not w.startswith("--"):
                out.append(w)
        return tuple(out)
    return ()


NOT_HERE = "not here: not a git checkout"


def read_container(root: Path | None) -> Container:
    """The container files of the source tree `root`; None (an installed wheel): a container said to be elsewhere."""
    if root is None:
        return Container("the source tree's Dockerfile", f"the base image it names ({NOT_HERE})", "", ("-e", ".[dev]"))
    dockerfile = root / "Dockerfile"
    base, licence, install = read_dockerfile(dockerfile, root)
    compose = tuple(read_compose(p, root) for p in sorted(root.glob("docker-compose*.yml")))
    return Container(dockerfile.relative_to(root).as_posix(), base, licence, install, compose)


def read_package(root: Path | None) -> Package:
    """The package as the source tree's pyproject.toml declares it; None (an installed wheel): as installed."""
    if root is None:
        return installed_package()
    path = root / "pyproject.toml"
    project = read_toml(path).get("project")
    if not isinstance(project, dict) or not {"name", "version", "description"} <= set(project):
        raise SchemaError(path, ["[project]: expected name, version and description"])
    licence = project.get("license") or {}
    return Package(
        project["name"],
        project["version"],
        project["description"],
        project.get("requires-python", ""),
        tuple(project.get("dependencies") or ()),
        licence.get("text", "") if isinstance(licence, dict) else str(licence),
    )


def installed_package(name: str = "repro-moe-rho") -> Package:
    """The package from its installed metadata (the wheel's METADATA: what pyproject.toml declared), less extras."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        meta = metadata(name)
    except PackageNotFoundError:
        return Package(name, NOT_HERE, NOT_HERE, "", (), "")
    dependencies = tuple(d for d in meta.get_all("Requires-Dist") or () if "extra ==" not in d)
    return Package(
        meta["Name"],
        meta["Version"],
        meta["Summary"] or "",
        meta["Requires-Python"] or "",
        dependencies,
        meta["License"] or "",
    )

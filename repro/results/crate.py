"""A results profile folder as an RO-Crate (ro-crate-metadata.json), in the Provenance Run Crate profile. Torch-free.

Built with ro-crate-py from the folder's files and its action log (repro.results.actions), after every command
that writes into the folder, so it always describes the files present:

    ./                        the folder (a Dataset): conformsTo the Process, Workflow and Provenance Run Crate
                              profiles 0.5 and Workflow RO-Crate 1.0; mainEntity reproduce.sh
    reproduce.sh              the workflow: the `repro` commands that made the files present, in order (Shell)
    #repro/<commit>           the workflow engine: the `repro` package at that commit (SoftwareApplication)
    #repro/<commit>/<cmd>     a tool: one `repro` command at that commit, part of the engine
    #step/<n>                 one line of reproduce.sh (HowToStep), whose tool is its workExample
    #action/<id>              one command that ran (CreateAction): its tool, container image, start and end, what
                              it read (object) and the files it wrote that are still its own (result)
    #control/<id>             the step's execution (ControlAction) -> the action
    #run, #organize           the whole folder's run of reproduce.sh, and the engine's orchestration of it
    <table>/results.json      isBasedOn the run records behind its numbers, mentions the claims it decides
    #claim/<table>/<claim>    a claim (Claim): its statement, verdict, and isBasedOn the records of its rows
    #record/<hash>            a run record (results/runs/<hash>.json: outside the folder, so a contextual entity
                              with the file's sha256; in a `repro package` archive, the File runs/<hash>.json)
    #dataset/<name>           what a run trained on: synthetic, stand-in, or a dataset with its checksum state
    #read/<sha256>            a file outside the folder that a command read: a manifest, a profiles file

The crate is RO-Crate 1.1 (the version the Provenance Run Crate 0.5 profile is defined on); `sha256` and the
Workflow Run terms `containerImage` and `ContainerImage` are declared in the crate's own context, so a reader
needs no context beyond RO-Crate 1.1's. Validated at that profile by tests/test_crate.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from repro.core import jsonfile
from repro.core.fsutil import FolderWriter
from repro.results.actions import CRATE_FILE, WORKFLOW_FILE, Action, listing, now, sha256_file
from repro.results.measurements import RUNS_FOLDER

RO_CRATE_VERSION = "1.1"
PROFILES = (  # (permalink, name): the profiles the crate conforms to
    ("https://w3id.org/ro/wfrun/process/0.5", "Process Run Crate"),
    ("https://w3id.org/ro/wfrun/workflow/0.5", "Workflow Run Crate"),
    ("https://w3id.org/ro/wfrun/provenance/0.5", "Provenance Run Crate"),
    ("https://w3id.org/workflowhub/workflow-ro-crate/1.0", "Workflow RO-Crate"),
)
WFRUN = "https://w3id.org/ro/terms/workflow-run#"
EXTRA_TERMS = {
    "sha256": "http://schema.org/sha256",
    "containerImage": WFRUN + "containerImage",
    "ContainerImage": WFRUN + "ContainerImage",
}
WORKFLOW_TYPE = {"@type": ["File", "SoftwareSourceCode", "ComputationalWorkflow", "HowTo"]}
LICENSE = ("https://spdx.org/licenses/MIT", "MIT License")
FORMATS = {
    ".md": "text/markdown",
    ".json": "application/json",
    ".tex": "application/x-tex",
    ".png": "image/png",
    ".pdf": "application/pdf",
    ".html": "text/html",
    ".log": "text/plain",
    ".sh": "application/x-sh",
    ".gz": "application/gzip",
    ".csv": "text/csv",
    ".toml": "application/toml",
    ".cff": "application/x-yaml",
    ".parquet": "application/vnd.apache.parquet",
}
STATUS = {
    "completed": "http://schema.org/CompletedActionStatus",
    "failed": "http://schema.org/FailedActionStatus",
    "interrupted": "http://schema.org/FailedActionStatus",
}
# A run's hash (repro.plan.run_config): what a results.json may name as a record; anything else (a path) is not one.
RUN_HASH = re.compile(r"[0-9a-f]{16}")
BIOSCHEMAS_WORKFLOW = "https://bioschemas.org/profiles/ComputationalWorkflow/1.0-RELEASE"


@dataclass
class Layout:
    """Where the crate's files are: each crate path -> the file on disk, and the folder of the run records.

    The folder's own crate lists the folder's files, its records outside it (<results>/runs/); a `repro package`
    archive holds the records too (records_inside: runs/<hash>.json) and folders of its own (the source)."""

    profile: str
    root: Path  # the crate's root: the profile folder, or where a package is laid out
    files: dict[str, Path] = field(default_factory=dict)  # crate path -> file on disk
    records: Path = Path(RUNS_FOLDER)
    records_inside: bool = False
    folders: dict[str, dict[str, Any]] = field(default_factory=dict)  # "source/" -> its properties

    @classmethod
    def of_folder(cls, folder: Path, present: Iterable[str]) -> Layout:
        folder = Path(folder)
        return cls(folder.name, folder, {p: folder / p for p in present}, folder.parent / RUNS_FOLDER)


def workflow_script(actions: list[Action]) -> str:
    lines = [
        "#!/bin/sh",
        "# The repro commands that made the files of this results folder, in the order they ran",
        "# (ro-crate-metadata.json describes each run: its tool, inputs, outputs and times).",
        "set -e",
    ]
    return "\n".join(lines + _command_lines(actions)) + "\n"


def _command_lines(actions: list[Action]) -> list[str]:
    return list(dict.fromkeys(a.command_line for a in actions))


def write_crate(folder: Path, actions: list[Action], present: dict[str, Any] | None = None) -> Path:
    """Write reproduce.sh, then ro-crate-metadata.json (which describes it), into the profile folder, never
    outside it (repro.core.fsutil.FolderWriter)."""
    folder = Path(folder)
    writer = FolderWriter(folder)
    writer.write_text(folder / WORKFLOW_FILE, workflow_script(actions))
    names = set(listing(folder) if present is None else present) | {WORKFLOW_FILE}
    path = folder / CRATE_FILE
    writer.write_json(path, crate_metadata(Layout.of_folder(folder, names), actions))
    return path


def crate_metadata(layout: Layout, actions: list[Action]) -> dict[str, Any]:
    """The crate's JSON-LD (ro-crate-metadata.json), built with ro-crate-py."""
    return _Builder(layout, actions).build().metadata.generate()


def _format(path: str) -> str | None:
    return FORMATS.get(Path(path).suffix)


def _results(layout: Layout) -> dict[str, dict[str, Any]]:
    """The folder's tables' results.json, parsed, by crate path (one that cannot be read is left out)."""
    out = {}
    for path, disk in sorted(layout.files.items()):
        if path.endswith("/results.json") and path.count("/") == 1:
            try:
                data = jsonfile.load(disk, jsonfile.RESULT_MAX_BYTES)
            except (OSError, ValueError):  # JsonUnreadable is a ValueError
                continue
            if isinstance(data, dict):
                out[path] = data
    return out


class _Builder:
    def __init__(self, layout: Layout, actions: list[Action]) -> None:
        from rocrate.rocrate import ROCrate

        self.layout, self.actions = layout, actions
        self.crate = ROCrate(version=RO_CRATE_VERSION)
        self.crate.metadata.extra_terms.update(EXTRA_TERMS)
        self.files: dict[str, Any] = {}
        self.records: dict[str, Any] = {}

    def add(self, identifier: str, properties: dict[str, Any]):
        from rocrate.model.contextentity import ContextEntity

        return self.crate.add(ContextEntity(self.crate, identifier, properties=properties))

    def build(self):
        root = self.crate.root_dataset
        name = self.layout.profile
        root["name"] = f"repro results, profile {name}"
        root["description"] = (
            f"The tables, claims, figures and report of profile {name}, regenerated by the repro "
            "artifact for arXiv 2605.15484, with the commands that made them and the run records "
            "behind every number."
        )
        root["datePublished"] = max((a.ended for a in self.actions), default=now())
        root["license"] = self.add(LICENSE[0], {"@type": "CreativeWork", "name": LICENSE[1]})
        root["conformsTo"] = [
            self.add(uri, {"@type": "CreativeWork", "name": title, "version": uri.rsplit("/", 1)[1]})
            for uri, title in PROFILES
        ]
        descriptor = self.crate.metadata  # RO-Crate 1.1 and, as Workflow RO-Crate asks, its own permalink
        descriptor["conformsTo"] = [{"@id": f"https://w3id.org/ro/crate/{RO_CRATE_VERSION}"}, {"@id": PROFILES[-1][0]}]
        self._files()
        results = _results(self.layout)
        self._tables(results)
        self._workflow(results)
        return self.crate

    # ------------------------------------------------------------------ files
    def _file(self, path: str, disk: Path, **properties: Any):
        from rocrate.model.file import File

        stat = disk.stat()
        props = {
            "name": path.rsplit("/", 1)[-1],
            "contentSize": str(stat.st_size),
            "sha256": sha256_file(disk),
            **({"encodingFormat": fmt} if (fmt := _format(path)) else {}),
            **properties,
        }
        entity = self.crate.add(File(self.crate, None, path, properties=props))
        self.files[path] = entity
        return entity

    def _files(self) -> None:
        from rocrate.model.dataset import Dataset

        for path, disk in sorted(self.layout.files.items()):
            self._file(path, disk, **(WORKFLOW_TYPE if path == WORKFLOW_FILE else {}))
        for path, props in self.layout.folders.items():
            self.files[path] = self.crate.add(Dataset(self.crate, None, path, properties=props))

    # ------------------------------------------------------------------ tables, claims, records
    def record(self, run_hash: str, where: str):
        if run_hash in self.records:
            return self.records[run_hash]
        disk = self.layout.records / f"{run_hash}.json"
        props: dict[str, Any] = {
            "name": f"run record {run_hash}",
            "identifier": run_hash,
            "description": where,
            "encodingFormat": "application/json",
        }
        if disk.is_file():
            props.update(sha256=sha256_file(disk), contentSize=str(disk.stat().st_size))
        if self.layout.records_inside and disk.is_file():
            from rocrate.model.file import File

            entity = self.crate.add(File(self.crate, None, f"{RUNS_FOLDER}/{run_hash}.json", properties=props))
        else:
            entity = self.add(f"#record/{run_hash}", {"@type": "CreativeWork", **props})
        self.records[run_hash] = entity
        return entity

    def _tables(self, results: dict[str, dict[str, Any]]) -> None:
        self.claims: list[Any] = []
        self.datasets: dict[str, Any] = {}
        self.table_inputs: dict[str, list[Any]] = {}
        for path, data in results.items():
            table = path.split("/", 1)[0]
            rows: dict[str, list[Any]] = {}
            for row, summaries in sorted(((data.get("details") or {}).get("runs") or {}).items()):
                for s in summaries if isinstance(summaries, list) else []:
                    if isinstance(s, dict) and isinstance(s.get("hash"), str) and RUN_HASH.fullmatch(s["hash"]):
                        rows.setdefault(row, []).append(
                            self.record(
                                s["hash"], f"{RUNS_FOLDER}/{s['hash']}.json: {table}/{row}, seed {s.get('seed')}"
                            )
                        )
            claims = [
                self._claim(table, v, rows)
                for v in data.get("verdicts") or []
                if isinstance(v, dict) and not v.get("decided_in")
            ]
            entity = self.files[path]
            used = list({id(e): e for es in rows.values() for e in es}.values())
            if used:
                entity["isBasedOn"] = _one(used)
            if claims:
                entity["mentions"] = _one(claims)
            self.claims += claims
            self.table_inputs[path] = used + self._datasets(data)

    def _claim(self, table: str, v: dict[str, Any], rows: dict[str, list[Any]]):
        based = [e for row in v.get("rows") or [] for e in rows.get(row, [])]
        props = {
            "@type": "Claim",
            "name": f"{table}/{v.get('claim')}",
            "text": v.get("statement", ""),
            "description": f"{v.get('status')}: {v.get('evidence', '')}",
            "appearance": self.files[f"{table}/results.json"],
        }
        if based:
            props["isBasedOn"] = _one(based)
        return self.add(f"#claim/{table}/{v.get('claim')}", props)

    def _datasets(self, data: dict[str, Any]) -> list[Any]:
        """What the table's runs trained on: a data check stored with it (the paper's data: its checksum state),
        else the description the run summaries give (synthetic, stand-in)."""
        out = []
        checks = ((data.get("details") or {}).get("data_checks") or {}).get("checks") or []
        for c in checks if isinstance(checks, list) else []:
            if isinstance(c, dict) and isinstance(c.get("dataset"), str):
                unverified = [str(u) for u in c.get("unverified") or []]
                props = {
                    "name": str(c.get("title", c["dataset"])),
                    "description": f"{c.get('path')}: {c.get('checksum', '')}"
                    + ("; unverified: " + "; ".join(unverified) if unverified else ""),
                    "additionalProperty": self.add(
                        f"#dataset/{c['dataset']}/unverified",
                        {
                            "@type": "PropertyValue",
                            "propertyID": "unverified",
                            "name": "unverified",
                            "value": "true" if unverified else "false",
                        },
                    ),
                }
                if downloads := self._downloads(c["dataset"]):
                    props["distribution"] = _one(downloads)
                out.append(self._dataset(c["dataset"], props))
        for summaries in ((data.get("details") or {}).get("runs") or {}).values():
            for s in summaries if isinstance(summaries, list) else []:
                if isinstance(s, dict) and isinstance(s.get("data"), str) and not checks:
                    out.append(self._dataset(s["data"], {"name": s["data"]}))
        return list({id(e): e for e in out}.values())

    def _downloads(self, name: str) -> list[Any]:
        """The dataset's published archives, with their md5 (repro.data.sources), as DataDownloads."""
        from repro.data.sources import dataset_source

        try:
            source = dataset_source(name)
        except (KeyError, OSError, ValueError):  # a dataset of another version of this code
            return []
        return [
            self.add(
                f"#download/{a.file}",
                {
                    "@type": "DataDownload",
                    "name": a.file,
                    "contentUrl": a.url,
                    "description": f"published md5 {a.md5}" if a.md5 else "no checksum published",
                    **({"contentSize": str(a.size_bytes)} if a.size_bytes else {}),
                },
            )
            for a in source.archives
        ]

    def _dataset(self, key: str, props: dict[str, Any]):
        if key not in self.datasets:
            self.datasets[key] = self.add(f"#dataset/{len(self.datasets)}", {"@type": "CreativeWork", **props})
        return self.datasets[key]

    # ------------------------------------------------------------------ the workflow and its run
    def _workflow(self, results: dict[str, dict[str, Any]]) -> None:
        crate = self.crate
        language = self.add(
            "#shell",
            {"@type": "ComputerLanguage", "name": "Shell", "url": "https://pubs.opengroup.org/onlinepubs/9799919799/"},
        )
        engines, tools = {}, {}
        for a in self.actions:
            if a.commit not in engines:
                engines[a.commit] = self.add(
                    f"#repro/{a.commit}",
                    {
                        "@type": "SoftwareApplication",
                        "name": f"repro {a.version}",
                        "softwareVersion": a.commit,
                        "description": f"the repro-moe-rho package {a.version} at commit {a.commit}",
                    },
                )
            key = _tool_key(a)
            if key not in tools:
                tools[key] = self.add(
                    f"#repro/{a.commit}/{key[1]}",
                    {
                        "@type": "SoftwareApplication",
                        "name": f"repro {key[1]}",
                        "softwareVersion": a.commit,
                        "isPartOf": engines[a.commit],
                    },
                )
        workflow = self.files[WORKFLOW_FILE]
        workflow["name"] = "the repro commands that made this folder"
        workflow["programmingLanguage"] = language
        workflow["version"] = str(len(self.actions))  # the workflow grows by a line per new command line
        workflow["conformsTo"] = {"@id": BIOSCHEMAS_WORKFLOW}
        workflow["hasPart"] = _one(list(tools.values()))
        crate.root_dataset["mainEntity"] = workflow
        lines = _command_lines(self.actions)
        steps = []
        for n, line in enumerate(lines):
            used = {id(t): t for a in self.actions if a.command_line == line for t in [tools[_tool_key(a)]]}
            steps.append(
                self.add(
                    f"#step/{n}",
                    {"@type": "HowToStep", "position": str(n), "name": line, "workExample": _one(list(used.values()))},
                )
            )
        workflow["step"] = _one(steps)
        owned = _owned(self.actions, self.files)
        reads = {}
        runs, controls = [], []
        for a in self.actions:
            inputs = []
            for path, digest in a.reads.items():
                if digest not in reads:
                    reads[digest] = self.add(
                        f"#read/{digest}",
                        {
                            "@type": "CreativeWork",
                            "name": Path(path).name,
                            "description": f"read from {path}",
                            "sha256": digest,
                            **({"encodingFormat": fmt} if (fmt := _format(path)) else {}),
                        },
                    )
                inputs.append(reads[digest])
            written = owned.get(a.id, [])
            tables = [p for p in written if p in results]
            if tables:
                inputs += [e for p in tables for e in self.table_inputs.get(p, [])]
            else:  # report, appendix, package: they read the tables' results
                inputs += [self.files[p] for p in results]
            props: dict[str, Any] = {
                "@type": "CreateAction",
                "name": a.command_line,
                "description": f"`{a.command_line}` ({a.status}): wrote {len(written)} of the files present",
                "startTime": a.started,
                "endTime": a.ended,
                "instrument": tools[_tool_key(a)],
                "actionStatus": STATUS.get(a.status, STATUS["failed"]),
                "object": _one(list({id(e): e for e in inputs}.values())),
                "result": _one([self.files[p] for p in written]),
            }
            if a.container:
                image = a.container.get("image") or ""
                props["containerImage"] = self.add(
                    f"#container/{image or 'unnamed'}",
                    {
                        "@type": "ContainerImage",
                        "name": image or "a container that does not name its image ($REPRO_IMAGE unset)",
                        "additionalType": {"@id": WFRUN + "DockerImage"},
                    },
                )
            run = self.add(f"#action/{a.id}", props)
            step = steps[lines.index(a.command_line)]
            controls.append(
                self.add(
                    f"#control/{a.id}",
                    {"@type": "ControlAction", "name": f"step {step['position']}", "instrument": step, "object": run},
                )
            )
            runs.append(run)
        started = min((a.started for a in self.actions), default=now())
        ended = max((a.ended for a in self.actions), default=now())
        inputs = _one(list({id(e): e for r in runs for e in _as_list(r.get("object"))}.values()))
        folder_run = self.add(
            "#run",
            {
                "@type": "CreateAction",
                "name": f"the run of {WORKFLOW_FILE} that made this folder",
                "description": "every command of the workflow, from the first start to the last end",
                "startTime": started,
                "endTime": ended,
                "instrument": workflow,
                "object": inputs,
                "result": _one([e for p, e in sorted(self.files.items()) if p != WORKFLOW_FILE]),
            },
        )
        organize = self.add(
            "#organize",
            {
                "@type": "OrganizeAction",
                "name": "repro orchestrating the commands",
                "startTime": started,
                "endTime": ended,
                "instrument": _one(list(engines.values())) or self._engine_now(),
                "object": _one(controls),
                "result": folder_run,
            },
        )
        crate.root_dataset["mentions"] = [organize, folder_run, *runs, *controls, *self.claims]

    def _engine_now(self):
        from repro import __version__
        from repro.results.provenance import git_commit

        return self.add(
            f"#repro/{git_commit()}",
            {"@type": "SoftwareApplication", "name": f"repro {__version__}", "softwareVersion": git_commit()},
        )


def _tool_key(action: Action) -> tuple[str, str]:
    """(commit, command name): one tool per `repro` command at each commit."""
    return action.commit, action.command.split()[0]


def _one(values: list[Any]) -> Any:
    """A list of one as its value, as RO-Crate 1.1 recommends; [] and longer lists as they are."""
    return values[0] if len(values) == 1 else values


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [] if value is None else [value]


def _owned(actions: list[Action], files: dict[str, Any]) -> dict[str, list[str]]:
    """Action id -> the present files it was the last to write."""
    out: dict[str, list[str]] = {}
    last: dict[str, str] = {}
    for a in actions:
        for path in a.wrote:
            if path in files:
                last[path] = a.id
    for path, action_id in sorted(last.items()):
        out.setdefault(action_id, []).append(path)
    return out


__all__ = ["write_crate", "crate_metadata", "Layout", "workflow_script", "WORKFLOW_FILE", "RO_CRATE_VERSION"]

"""Bad manifest, profile and paper-table values: each refused up front, naming the file and the key path.

Add a case here whenever a new bad input is found (issue: hardening). Component parameter ranges
are checked by the component configs themselves; the cases here cover the manifest layer.
"""

import copy
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

from checkout import MANIFESTS, PAPER_TABLES
from repro.plan.manifest import load_manifest, parse_manifest
from repro.spec.profiles import REQUIRED_PROFILES, SHIPPED_PROFILES, parse_profiles
from repro.core.schema import SchemaError, read_toml

BASE = read_toml(MANIFESTS / "table1.toml")
PROFILES = read_toml(SHIPPED_PROFILES)


def _set(path: str, value):
    """A mutation that sets the dotted/indexed `path` (e.g. 'profiles.smoke.epochs', 'rows.0.id')."""

    def mutate(doc):
        *parents, last = path.split(".")
        node = doc
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        if value is _DELETE:
            del node[int(last) if last.isdigit() else last]
        else:
            node[int(last) if last.isdigit() else last] = value

    return mutate


_DELETE = object()
ROW0, COMP0 = BASE["rows"][0]["id"], BASE["comparisons"][0]["id"]

CASES = [
    # ids name files and metric paths
    ("manifest id traversal", _set("id", "../../x"), "id", "not a safe id"),
    ("row id with a dot", _set("rows.0.id", "a.b"), "rows[0].id", "not a safe id"),
    ("row id with a slash", _set("rows.0.id", "a/b"), "rows[0].id", "not a safe id"),
    ("row id empty", _set("rows.0.id", ""), "rows[0].id", "not a safe id"),
    ("row id duplicate", _set("rows.1.id", ROW0), "rows[1].id", "duplicate id"),
    ("comparison id with a space", _set("comparisons.0.id", "a b"), "comparisons[0].id", "not a safe id"),
    ("claim id unsafe", _set("claims.0.id", "x/../y"), "claims[0].id", "not a safe id"),
    ("assumption id unsafe", _set("assumptions.0.id", "a:b"), "assumptions[0].id", "not a safe id"),
    (
        "figure id traversal",
        _set("figures", [{"id": "../../../x", "kind": "accuracy_by_epoch", "title": "t", "rows": [ROW0]}]),
        "figures[0].id",
        "not a safe id",
    ),
    # cross-references
    (
        "row compared with itself",
        _set("comparisons.0.baseline", BASE["comparisons"][0]["row"]),
        "comparisons[0].baseline",
        "compared with itself",
    ),
    ("comparison of an unknown row", _set("comparisons.0.row", "nope"), "comparisons[0].row", "no row 'nope'"),
    (
        "figure of an unknown row",
        _set("figures", [{"id": "f", "kind": "accuracy_by_epoch", "title": "t", "rows": ["nope"]}]),
        "figures[0].rows",
        "no row 'nope'",
    ),
    (
        "figure kind",
        _set("figures", [{"id": "f", "kind": "pie", "title": "t", "rows": [ROW0]}]),
        "figures[0].kind",
        "expected one of",
    ),
    # rows and components
    ("dataset unknown", _set("rows.0.dataset", "mnist"), "rows[0].dataset", "unknown dataset"),
    ("measure typo", _set("rows.0.measures", ["accurracy"]), "rows[0].measures[0]", "did you mean 'accuracy'"),
    ("role unknown", _set("rows.0.role", "main2"), "rows[0].role", "expected one of"),
    ("row key missing", _set("rows.0.label", _DELETE), "rows[0].label", "missing required key"),
    ("backbone unknown", _set("rows.0.backbone", {"name": "vit"}), "rows[0].backbone.name", "unknown backbone"),
    ("head unknown", _set("rows.0.head", {"name": "sparse"}), "rows[0].head.name", "unknown head"),
    ("head without name", _set("rows.0.head", {"hidden": [8]}), "rows[0].head", "expected a table with 'name'"),
    ("head param unknown", _set("rows.0.head", {"name": "dense", "hiden": [8]}), "rows[0].head.hiden", "did you mean"),
    (
        "backbone param type",
        _set("rows.0.backbone", {"name": "cifar_depthwise", "width": "wide"}),
        "rows[0].backbone.width",
        "expected a number",
    ),
    (
        "head param nan",
        _set("rows.0.head", {"name": "dense", "dropout": float("nan")}),
        "rows[0].head.dropout",
        "expected a finite number",
    ),
    (
        "head param inf",
        _set("rows.0.head", {"name": "dense", "dropout": float("inf")}),
        "rows[0].head.dropout",
        "expected a finite number",
    ),
    # claims
    ("rule unknown", _set("claims.0.rule", "matches"), "claims[0].rule", "unknown rule"),
    ("scope unknown", _set("claims.0.scope", "empirik"), "claims[0].scope", "expected one of"),
    ("claim param unknown", _set("claims.0.tolerance_pp", 1.0), "claims[0].tolerance_pp", "unknown key"),
    ("claim section missing", _set("claims.0.section", _DELETE), "claims[0].section", "missing required key"),
    # the document
    ("top key unknown", _set("tables", 1), "tables", "unknown key"),
    ("rows not an array", _set("rows", {"id": "x"}), "rows", "expected an array of tables"),
    ("title not a string", _set("title", 3), "title", "expected a string"),
    # text the LaTeX and Markdown writers meet: refused at load, not after training (issue 45, item 6)
    (
        "label the LaTeX writer cannot print",
        _set("rows.0.label", "Café dense"),
        "rows[0].label",
        "'é' (U+00E9) cannot be written to the tables' LaTeX",
    ),
    ("line break in a title", _set("title", "T\n\\end{document}"), "title", "a line break in one-line text"),
    (
        "escape sequence in a statement",
        _set("claims.0.statement", "x\x1b[2J"),
        "claims[0].statement",
        "'\\x1b' (U+001B) cannot be written",
    ),
    ("comparison label", _set("comparisons.0.label", "温度"), "comparisons[0].label", "'温' (U+6E29), '度' (U+5EA6)"),
]


PROFILE_CASES = [
    # profiles: counts and sizes must be positive, and fit
    ("epochs zero", _set("profiles.smoke.epochs", 0), "profiles.smoke.epochs", "out of range"),
    ("epochs negative", _set("profiles.smoke.epochs", -1), "profiles.smoke.epochs", "out of range"),
    ("epochs huge", _set("profiles.smoke.epochs", 10**6), "profiles.smoke.epochs", "out of range"),
    ("epochs bool", _set("profiles.smoke.epochs", True), "profiles.smoke.epochs", "expected an integer"),
    ("batch zero", _set("profiles.smoke.batch_size", 0), "profiles.smoke.batch_size", "out of range"),
    ("train samples zero", _set("profiles.smoke.train_samples", 0), "profiles.smoke.train_samples", "out of range"),
    (
        "train samples 1e11",
        _set("profiles.smoke.train_samples", 10**11),
        "profiles.smoke.train_samples",
        "out of range",
    ),
    (
        "train samples float",
        _set("profiles.smoke.train_samples", 1e3),
        "profiles.smoke.train_samples",
        "expected an integer",
    ),
    ("test samples zero", _set("profiles.smoke.test_samples", 0), "profiles.smoke.test_samples", "out of range"),
    ("seeds zero", _set("profiles.smoke.seeds", 0), "profiles.smoke.seeds", "out of range"),
    ("seeds negative", _set("profiles.smoke.seeds", -1), "profiles.smoke.seeds", "out of range"),
    ("seeds string", _set("profiles.smoke.seeds", "two"), "profiles.smoke.seeds", "expected an integer"),
    ("image tiny", _set("profiles.smoke.max_image_size", 4), "profiles.smoke.max_image_size", "out of range"),
    ("image huge", _set("profiles.smoke.max_image_size", 100_000), "profiles.smoke.max_image_size", "out of range"),
    (
        "fewer samples than a batch",
        _set("profiles.smoke.train_samples", 16),
        "profiles.smoke",
        "smaller than batch_size",
    ),
    ("device tpu", _set("profiles.smoke.device", "tpu"), "profiles.smoke.device", "expected one of"),
    ("data kind", _set("profiles.smoke.data", "imagenet"), "profiles.smoke.data", "expected one of"),
    ("evidence kind", _set("profiles.smoke.evidence", "paper-ish"), "profiles.smoke.evidence", "expected one of"),
    ("evidence missing", _set("profiles.smoke.evidence", _DELETE), "profiles.smoke.evidence", "missing required key"),
    (
        "description missing",
        _set("profiles.full.description", _DELETE),
        "profiles.full.description",
        "missing required",
    ),
    ("profile key typo", _set("profiles.smoke.epoch", 3), "profiles.smoke.epoch", "did you mean 'epochs'"),
    (
        "profile name unsafe",
        lambda d: d["profiles"].update({"../x": {"description": "d", "evidence": "paper"}}),
        "profiles.../x",
        "not a safe id",
    ),
    ("profiles not a table", _set("profiles", ["smoke"]), "profiles", "expected at least one table"),
    ("full profile missing", _set("profiles.full", _DELETE), "profiles.full", "missing required profile"),
    (
        "dataset settings typo",
        _set("profiles.functional.datasets.cifar10.epoch", 3),
        "profiles.functional.datasets.cifar10.epoch",
        "did you mean 'epochs'",
    ),
    (
        "dataset unknown",
        _set("profiles.functional.datasets.cifar1000", {"epochs": 2}),
        "profiles.functional",
        "did you mean 'cifar100'",
    ),
    (
        "table settings out of range",
        _set("profiles.smoke.tables.table5.epochs", 0),
        "profiles.smoke.tables.table5.epochs",
        "out of range",
    ),
    (
        "table settings smaller than a batch",
        _set("profiles.smoke.tables.table5.train_samples", 8),
        "profiles.smoke",
        "tables.table5.train_samples = 8 is smaller than batch_size = 16",
    ),
    (
        "latency key typo",
        _set("profiles.smoke.latency.batch", 16),
        "profiles.smoke.latency.batch",
        "did you mean 'batch_size'",
    ),
    (
        "recipe override at the paper's protocol",
        _set("profiles.full.lr", 0.1),
        "profiles.full",
        "lr overrides the paper's recipe",
    ),
    (
        "recipe override of one table at the paper's protocol",
        _set("profiles.full.tables", {"table5": {"backbone_lr_scale": 0.5}}),
        "profiles.full",
        "tables.table5.backbone_lr_scale overrides the paper's recipe",
    ),
    ("exclude not a list", _set("profiles.smoke.exclude", "table1"), "profiles.smoke.exclude", "expected a list"),
    (
        "description the LaTeX writer cannot print",
        _set("profiles.smoke.description", "Café"),
        "profiles.smoke.description",
        "'é' (U+00E9) cannot be written",
    ),
]


@pytest.mark.parametrize("name, mutate, key, message", PROFILE_CASES, ids=[c[0] for c in PROFILE_CASES])
def test_bad_profile_value_is_refused_naming_the_key(name, mutate, key, message):
    doc = copy.deepcopy(PROFILES)
    mutate(doc)
    with pytest.raises(SchemaError) as info:
        parse_profiles(doc, "my-profiles.toml", REQUIRED_PROFILES)
    problems = info.value.problems
    assert any(p.startswith(f"{key}:") and message in p for p in problems), problems
    assert str(info.value).startswith("my-profiles.toml:")


def test_a_manifest_holds_no_profiles_and_a_training_table_states_the_papers_seeds():
    doc = copy.deepcopy(BASE)
    doc["profiles"] = {"smoke": {"description": "d", "evidence": "pipeline"}}
    del doc["seeds"]
    with pytest.raises(SchemaError) as info:
        parse_manifest(doc, "manifests/table1.toml")
    assert any(
        p.startswith("profiles: a manifest holds no profiles") and "--profiles FILE" in p for p in info.value.problems
    ), info.value.problems
    assert any(p.startswith("seeds: missing required key") for p in info.value.problems), info.value.problems


@pytest.mark.parametrize("name, mutate, key, message", CASES, ids=[c[0] for c in CASES])
def test_bad_manifest_value_is_refused_naming_the_key(name, mutate, key, message):
    doc = copy.deepcopy(BASE)
    mutate(doc)
    with pytest.raises(SchemaError) as info:
        parse_manifest(doc, "manifests/table1.toml")
    problems = info.value.problems
    assert any(p.startswith(f"{key}:") and message in p for p in problems), problems
    assert str(info.value).startswith("manifests/table1.toml:")


def test_all_problems_are_reported_at_once():
    doc = copy.deepcopy(BASE)
    for mutate in (_set("seeds", 0), _set("rows.1.id", "x/y"), _set("rows.0.id", "a.b")):
        mutate(doc)
    with pytest.raises(SchemaError) as info:
        parse_manifest(doc, "t.toml")
    assert len(info.value.problems) >= 3
    profiles = copy.deepcopy(PROFILES)
    for mutate in (
        _set("profiles.smoke.epochs", 0),
        _set("profiles.smoke.seeds", 0),
        _set("profiles.functional.datasets.cifar10.epochs", -1),
    ):
        mutate(profiles)
    with pytest.raises(SchemaError) as info:
        parse_profiles(profiles, "p.toml")
    assert len(info.value.problems) == 3


@pytest.mark.parametrize(
    "content, message",
    [
        (b'id = "t"\ntitle = "\xff\xfe"\n', "not UTF-8 text"),
        (b"id = [unclosed\n", "not valid TOML"),
    ],
)
def test_unreadable_files_give_one_message(tmp_path, content, message):
    path = tmp_path / "t.toml"
    path.write_bytes(content)
    with pytest.raises(SchemaError, match=message) as info:
        load_manifest(path)
    assert str(path) in str(info.value)


def test_a_folder_named_like_a_manifest(tmp_path):
    (tmp_path / "t.toml").mkdir()
    with pytest.raises(SchemaError, match="cannot be read"):
        load_manifest(tmp_path / "t.toml")


def _paper_dir(tmp_path: Path, broken: str, content: bytes) -> Path:
    out = tmp_path / "paper"
    out.mkdir()
    for p in PAPER_TABLES.glob("*.toml"):
        (out / p.name).write_bytes(content if p.stem == broken else p.read_bytes())
    return out


@pytest.mark.parametrize(
    "content, message",
    [
        (b'table = "table7"\ntitle = "\xff"\n', "not UTF-8 text"),
        (
            b'table = "table7"\ntitle = "t"\nsection = "5"\n[[values]]\nkey = "a.gap"\nsection = "5"\nvalue = "abc"\n',
            "values[0].value: expected a number",
        ),
    ],
)
def test_a_damaged_paper_table_fails_only_its_own_manifests(tmp_path, monkeypatch, content, message):
    from repro.spec import paper

    # The paper's values are package data: a damaged copy stands in for them (a broken install)
    monkeypatch.setattr(paper, "PAPER_TABLES", _paper_dir(tmp_path, "table7", content))
    paper._load.cache_clear()
    try:
        load_manifest(MANIFESTS / "table1.toml")  # table1 does not use table7's values
        with pytest.raises(SchemaError, match="table7.toml") as info:
            load_manifest(MANIFESTS / "table7.toml")
        assert message in str(info.value)
        assert "table7" not in paper.paper_tables()  # skipped, with a warning, by the audit
    finally:
        paper._load.cache_clear()


@pytest.mark.slow
def test_cli_refuses_a_bad_manifest_or_profiles_file_before_any_work(tmp_path):
    folder = tmp_path / "manifests"
    folder.mkdir()
    text = (MANIFESTS / "table1.toml").read_text().replace("seeds = 5", "seeds = 0", 1)
    (folder / "table1.toml").write_text(text)
    env = {**os.environ, "REPRO_MANIFESTS": str(folder), "REPRO_RESULTS": str(tmp_path / "results")}
    out = subprocess.run(
        [sys.executable, "-m", "repro", "run", "table1"], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 2, out.stderr
    assert "seeds: 0 is out of range" in out.stderr and "table1.toml" in out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "results").exists()
    profiles = tmp_path / "mine.toml"
    profiles.write_text('[profiles.quick]\ndescription = "q"\nevidence = "pipeline"\nepochs = 0\n')
    out = subprocess.run(
        [sys.executable, "-m", "repro", "run", "table1", "--profiles", str(profiles)],
        capture_output=True,
        text=True,
        env={**env, "REPRO_MANIFESTS": ""},
        timeout=120,
    )
    assert out.returncode == 2, out.stderr
    assert "profiles.quick.epochs: 0 is out of range" in out.stderr and "mine.toml" in out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "results").exists()


def _runner():
    from typer.testing import CliRunner

    from repro.cli import app

    return CliRunner(), app


def test_a_folder_named_like_a_manifest_is_listed_as_invalid_not_skipped(tmp_path):
    """Issue 22, item 7: `repro list` skipped a manifest folder entry x.toml that is a directory, silently."""
    runner, app = _runner()
    (tmp_path / "x.toml").mkdir()
    (tmp_path / "table6.toml").write_bytes((MANIFESTS / "table6.toml").read_bytes())
    result = runner.invoke(app, ["list", "--manifests", str(tmp_path)], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if line.startswith("x — "))
    assert "invalid manifest: cannot be read" in line


def test_two_manifests_with_one_id_are_named_once_each(tmp_path):
    """Issue 22, item 7: `run a` printed the same problem twice, and `run twin` said "no manifest 'twin'"."""
    runner, app = _runner()
    text = (MANIFESTS / "table6.toml").read_text().replace('id = "table6"', 'id = "twin"', 1)
    for name in ("a.toml", "b.toml"):
        (tmp_path / name).write_text(text)
    ran = runner.invoke(app, ["run", "a", "--manifests", str(tmp_path), "--results-dir", str(tmp_path / "r")])
    assert ran.exit_code == 2 and ran.output.count("must equal the file name 'a'") == 1, ran.output
    ran = runner.invoke(
        app, ["run", "twin", "--manifests", str(tmp_path), "--results-dir", str(tmp_path / "r")], env={"COLUMNS": "300"}
    )
    assert ran.exit_code == 2, ran.output
    assert "no manifest file twin.toml" in ran.output and "a.toml, b.toml say id = 'twin'" in ran.output, ran.output
    assert not (tmp_path / "r").exists()


def test_status_takes_a_profiles_file_and_refuses_an_unknown_profile(tmp_path):
    """Issue 22, item 7: `repro status` had no --profiles, and `--profile nosuch` printed an empty table, exit 0."""
    runner, app = _runner()
    (tmp_path / "table5.toml").write_bytes((MANIFESTS / "table5.toml").read_bytes())
    mine = tmp_path.parent / f"{tmp_path.name}-mine.toml"  # outside the manifests folder
    mine.write_text(
        '[profiles.quick]\ndescription = "q"\nevidence = "pipeline"\nseeds = 1\nepochs = 1\ndata = "synthetic"\n'
    )
    args = ["status", "--manifests", str(tmp_path), "--results-dir", str(tmp_path / "r")]
    unknown = runner.invoke(app, [*args, "--profile", "nosuch"])
    assert unknown.exit_code == 2 and "no profile 'nosuch'" in unknown.output, unknown.output
    known = runner.invoke(app, [*args, "--profiles", str(mine), "--profile", "quick"], env={"COLUMNS": "200"})
    assert known.exit_code == 0, known.output
    # 3 rows and 4 [[sensitivity]] rows x 1 seed, pending
    assert re.search(r"^table5 +0 +0 +0 +7 *$", known.output, re.M), known.output


def test_report_on_a_folder_that_does_not_exist_is_refused(tmp_path):
    """Issue 22, item 7: `repro report` created the folder and wrote an empty report, exit 0."""
    runner, app = _runner()
    for args in ([], ["--profile", "smoke"]):
        result = runner.invoke(app, ["report", "--results-dir", str(tmp_path / "none"), *args])
        assert result.exit_code == 2 and "the folder does not exist" in " ".join(result.output.split()), result.output
        assert not (tmp_path / "none").exists()
    (tmp_path / "empty").mkdir()
    result = runner.invoke(app, ["report", "--results-dir", str(tmp_path / "empty"), "--profile", "smoke"])
    assert result.exit_code == 2 and "no results of profile 'smoke'" in result.output, result.output
    assert list((tmp_path / "empty").iterdir()) == []


def test_prose_may_break_lines_and_the_writers_print_it_on_one():
    from repro.core.latex import latex_escape

    doc = copy.deepcopy(BASE)
    doc["description"] = "first line\nsecond line"
    doc["assumptions"][0]["text"] = "one\ntwo"
    parse_manifest(doc, "manifests/table1.toml")
    assert latex_escape("% a\n\\end{document}") == r"\% a \textbackslash{}end\{document\}"  # never a new line
    assert latex_escape("p < 0.05 > q | r") == "p $<$ 0.05 $>$ q $|$ r"  # not ¡ ¿ and a dash

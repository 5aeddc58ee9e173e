"""`repro trace TABLE ROW [COLUMN]` (repro.report.trace): one number back to its claims, run records (hash, seed,
epochs, accuracy, sha256), commit, container, data and the command that makes it; at 80 columns and as JSON; and
report.html's rows linked to the same trace in trace.html."""

import hashlib
import json
import re

import pytest
from typer.testing import CliRunner

from repro.cli import app
from repro.plan.manifest import find_manifest
from repro.report.trace import TraceError, row_ids, trace
from repro.results.measurements import load_result

runner = CliRunner()


def invoke(*args, manifests=None):
    env = {"COLUMNS": "80", **({"REPRO_MANIFESTS": str(manifests)} if manifests else {})}
    done = runner.invoke(app, ["trace", *map(str, args)], env=env)
    return done, done.output.splitlines()


def test_an_unknown_table_is_refused_naming_the_closest():
    done, _ = invoke("tabel6", "x")
    assert done.exit_code == 2 and "did you mean 'table6'" in done.output


def test_a_table_without_results_is_refused(tmp_path):
    done, _ = invoke("table6", "x", "--results-dir", tmp_path / "none")
    assert done.exit_code == 2
    assert "no results of table6 at profile 'smoke'" in " ".join(done.output.split())


def test_a_table_without_results_names_the_command_that_writes_them_into_the_folder_asked_for(tmp_path):
    """It said "run `repro run table6 --profile smoke` first" for `-o elsewhere`: that command writes ./results
    (found in an evaluator's walk-through, as package's hint was)."""
    done, _ = invoke("table6", "x", "--results-dir", tmp_path / "my results")
    assert f"run `repro run table6 --profile smoke -o '{tmp_path / 'my results'}'` first" in " ".join(
        done.output.split()
    ), done.output


def test_a_misspelt_profile_is_refused_naming_the_closest(tmp_path):
    """It said 'no results of table6 at profile 'smok' ...; run `repro run table6 --profile smok` first'."""
    done, _ = invoke("table6", "x", "--profile", "smok", "--results-dir", tmp_path / "none")
    assert done.exit_code == 2 and "no profile 'smok' (did you mean 'smoke'?)" in done.output
    assert "--profile smok" not in done.output


@pytest.fixture(scope="module")
def folder(smoke_folder):
    return smoke_folder


def _manifests(folder):
    return folder.parent / "manifests"


def _entries(folder):
    for table in ("headline_cifar10", "table6"):
        manifest = find_manifest(table, _manifests(folder))
        yield manifest, load_result(folder, "smoke", table)


@pytest.mark.slow
def test_every_row_of_every_table_is_traced_at_80_columns_and_as_json(folder):
    traced = 0
    for manifest, result in _entries(folder):
        rows = row_ids(manifest, result)
        assert rows
        for row in rows:
            done, lines = invoke(manifest.id, row, "--results-dir", folder, manifests=_manifests(folder))
            assert done.exit_code == 0, done.output
            data = json.loads(
                invoke(manifest.id, row, "--results-dir", folder, "--json", manifests=_manifests(folder))[0].output
            )
            # Every line fits 80 columns but an unbreakable one and the command, whole so that it pastes whole.
            wide = [line for line in lines if len(line) > 80 and " " in line.strip() and line != "  " + data["command"]]
            assert not wide, done.output
            assert lines[0] == "Number" and "Reproduce" in lines
            assert data["row"] == row and data["table"] == manifest.id
            traced += 1
    assert traced >= 20


@pytest.mark.slow
def test_a_gap_is_traced_to_both_rows_records_as_the_files_hold_them(folder):
    manifest, result = next(_entries(folder))
    comparison = manifest.comparisons[0]
    found = trace(folder, manifest, result, comparison.id, "gap")
    assert list(found.values) == [f"comparisons.{comparison.id}.gap"] and found.kind == "comparison"
    assert found.rows == [comparison.row, comparison.baseline]
    assert {r.row for r in found.runs} == {comparison.row, comparison.baseline} and len(found.runs) == 4
    for run in found.runs:
        data = open(run.record, "rb").read()
        record = json.loads(data)
        assert run.sha256 == hashlib.sha256(data).hexdigest() and not run.problem
        assert (run.seed, run.epochs, run.accuracy) == (
            record["seed"],
            len(record["history"]),
            record["metrics"]["accuracy"],
        )
        assert run.commit == record["provenance"]["git_commit"]
    assert {c["claim"] for c in found.claims} == {
        v.claim for v in result.verdicts if {comparison.row, comparison.baseline} & set(v.rows)
    }
    assert found.container.endswith(")") and "`repro verify-all" in found.container  # the action that wrote it
    # The fixture's manifests are a folder of its own, so the command names it; the package's need no option.
    assert found.command == (
        f"repro run {manifest.id} --manifests {_manifests(folder)} --profile smoke --results-dir {folder}"
    )
    shipped = trace(folder, find_manifest(manifest.id), result, comparison.id, "gap")
    assert shipped.command == f"repro run {manifest.id} --profile smoke --results-dir {folder}"
    assert found.data and "synthetic" in found.data[0]


@pytest.mark.slow
def test_a_flop_row_has_no_run_and_says_so(folder):
    manifest = find_manifest("table6", _manifests(folder))
    result = load_result(folder, "smoke", "table6")
    row = row_ids(manifest, result)[0]
    found = trace(folder, manifest, result, row, "rho")
    assert found.runs == [] and dict(found.items())["Run records"][0].startswith("none")


@pytest.mark.slow
def test_an_unknown_row_or_column_lists_what_the_table_has(folder):
    manifest, result = next(_entries(folder))
    with pytest.raises(TraceError, match="has no row or comparison 'nope'.*it has: "):
        trace(folder, manifest, result, "nope")
    with pytest.raises(TraceError, match="'gap' is not a metric of a row; this one has: "):
        trace(folder, manifest, result, manifest.rows[0].id, "gap")
    done, _ = invoke(manifest.id, "nope", "--results-dir", folder, manifests=_manifests(folder))
    assert done.exit_code == 2


@pytest.mark.slow
def test_report_html_links_each_table_row_to_its_trace(folder):
    report = (folder / "smoke" / "report.html").read_text()
    page = (folder / "smoke" / "trace.html").read_text()
    links = set(re.findall(r'href="trace\.html#(trace-[^"]+)"', report))
    sections = set(re.findall(r'<section id="(trace-[^"]+)"', page))
    expected = {f"trace-{m.id}-{row}" for m, r in _entries(folder) for row in row_ids(m, r)}
    assert links and links <= sections == expected
    manifest, result = next(_entries(folder))
    row = manifest.comparisons[0].id
    block = page.split(f'<section id="trace-{manifest.id}-{row}">', 1)[1].split("</section>", 1)[0]
    for heading, lines in trace(folder, manifest, result, row).items():  # the same trace as the command's
        assert f"<dt>{heading}</dt>" in block
        for line in lines:
            assert line.replace("&", "&amp;").replace("'", "&#39;").replace('"', "&#34;") in block


def test_a_readings_twin_row_names_the_reading_the_row_it_varies_and_that_rows_claims(tmp_path):
    """A [[sensitivity]] twin ('moe__experts_only') was traced as 'no claim of this table reads it', with no word of
    the reading it trains or of the claims its numbers are read for under that reading."""
    from fake_records import MANIFEST_T, config, record, write_result

    from repro.results.measurements import Verdict

    (tmp_path / "manifests").mkdir()
    sensitivity = '\n[[sensitivity]]\nrows = ["moe"]\nreadings = ["router-in-rho"]\n'
    (tmp_path / "manifests" / "t.toml").write_text(MANIFEST_T + sensitivity)
    manifest = find_manifest("t", tmp_path / "manifests")
    results = tmp_path / "results"
    verdict = Verdict("c", "s", "4.2", "analytic", "reproduced", "e", rule="compare", rows=["moe"])
    write_result(
        results, "t", {"moe": [record(config())], "moe__experts_only": [record(config(seed=1))]}, verdicts=[verdict]
    )
    found = trace(results, manifest, load_result(results, "smoke", "t"), "moe__experts_only")
    assert found.claims == [] and found.twin_of == [
        {"row": "moe__experts_only", "reading": "router-in-rho/experts_only", "base": "moe", "claims": ["c"]}
    ]
    assert dict(found.items())["Claims"] == [
        "moe__experts_only is moe under the reading router-in-rho/experts_only: the claims on moe (c) under it are "
        "in the report's readings section"
    ]
    assert trace(results, manifest, load_result(results, "smoke", "t"), "moe").twin_of == []


def test_the_claims_are_decided_on_the_measurements_as_the_report_decides_them(tmp_path):
    """`repro trace` showed a verdict as results.json stores it, one typed in included, while the report and its
    trace.html decide it again from the stored measurements by the current manifests."""
    from fake_records import config, record, rho_deciding, write_manifest_t, write_result

    from repro.results.measurements import Verdict

    manifests = write_manifest_t(tmp_path)
    results = tmp_path / "results"
    typed = Verdict("c", "the moe row routes under half of the compute", "4.2", "analytic", "not reproduced", "e")
    write_result(results, "t", {"moe": [record(config())]}, verdicts=[typed], metrics=rho_deciding("reproduced"))
    done, lines = invoke("t", "moe", "--results-dir", results, manifests=manifests)
    assert done.exit_code == 0, done.output
    claims = lines[lines.index("Claims") + 1 : lines.index("Run records")]
    assert " ".join(line.strip() for line in claims) == "c: reproduced: the moe row routes under half of the compute"


def test_another_tables_unusable_results_leave_this_tables_claims_decided(tmp_path):
    """Deciding every table's claims, as the report does, reads every table's results.json: another table's that
    cannot be read costs only the claims that read it, while the table traced still refuses one of its own."""
    from fake_records import MANIFEST_T, config, record, rho_deciding, write_manifest_t, write_result

    manifests = write_manifest_t(tmp_path)
    other = MANIFEST_T.replace('id = "t"', 'id = "u"', 1).replace("bound = 0.5", "bound = 0.6")  # a finding of its own
    (manifests / "u.toml").write_text(other)
    results = tmp_path / "results"
    write_result(results, "t", {"moe": [record(config())]}, metrics=rho_deciding("reproduced"))
    (results / "smoke" / "u").mkdir(parents=True)
    (results / "smoke" / "u" / "results.json").write_text("{ not json")
    done, lines = invoke("t", "moe", "--results-dir", results, manifests=manifests)
    assert done.exit_code == 0, done.output
    claims = lines[lines.index("Claims") + 1 : lines.index("Run records")]
    assert " ".join(line.strip() for line in claims) == "c: reproduced: the moe row routes under half of the compute"
    refused, _ = invoke("u", "moe", "--results-dir", results, manifests=manifests)
    assert refused.exit_code == 2, refused.output
    assert "results.json" in refused.output and "`repro report` rebuilds it from the run records" in refused.output


def test_the_reproduce_line_names_the_manifests_and_profiles_of_ones_own_that_the_table_was_read_with(tmp_path):
    """A table of one's own at a profile of one's own: the line said `repro run t --profile mine ...`, which cannot
    find the table or the profile; it names the manifests folder and the profiles file, and a shipped table at a
    shipped profile needs neither (test_a_gap_is_traced_to_both_rows_records_as_the_files_hold_them)."""
    from fake_records import config, record, write_manifest_t, write_result

    manifests = write_manifest_t(tmp_path)
    profiles = tmp_path / "my-profiles.toml"
    profiles.write_text('[profiles.mine]\ndescription = "mine"\nevidence = "pipeline"\ndevice = "cpu"\n')
    results = tmp_path / "results"
    write_result(results, "t", {"moe": [record(config())]}, profile="mine")
    manifest = find_manifest("t", manifests, profiles_file=profiles)
    found = trace(results, manifest, load_result(results, "mine", "t"), "moe")
    assert found.command == (
        f"repro run t --manifests {manifests} --profiles {profiles} --profile mine --results-dir {results}"
    )
    assert manifest.profile_files == {"mine": str(profiles)}  # only the file's own: smoke, full... are the package's
    done, lines = invoke(
        "t", "moe", "--profile", "mine", "--results-dir", results, "--profiles", profiles, manifests=manifests
    )
    assert done.exit_code == 0, done.output
    # On one line however wide, at 80 columns too: a command split over lines does not paste into a shell.
    assert lines[lines.index("Reproduce") + 1] == "  " + found.command


def test_another_invalid_manifest_in_the_folder_does_not_stop_the_trace(tmp_path):
    """Deciding the claims over the folder's tables (e624c61) stopped on the first invalid one, where tracing needs
    only the table traced: the others are read as the report reads them, the invalid left out."""
    from fake_records import config, record, rho_deciding, write_manifest_t, write_result

    manifests = write_manifest_t(tmp_path)
    (manifests / "u.toml").write_text('id = "u"\n')  # no title, rows...: invalid
    results = tmp_path / "results"
    write_result(results, "t", {"moe": [record(config())]}, metrics=rho_deciding("reproduced"))
    done, lines = invoke("t", "moe", "--results-dir", results, manifests=manifests)
    assert done.exit_code == 0, done.output
    claims = lines[lines.index("Claims") + 1 : lines.index("Run records")]
    assert " ".join(line.strip() for line in claims) == "c: reproduced: the moe row routes under half of the compute"


def test_the_reproduce_line_gives_absolute_paths(tmp_path, monkeypatch):
    """trace.html keeps the line: a folder or file given relative to where the report ran is found from anywhere."""
    from fake_records import config, record, write_manifest_t, write_result

    write_manifest_t(tmp_path)
    (tmp_path / "mine.toml").write_text(
        '[profiles.mine]\ndescription = "mine"\nevidence = "pipeline"\ndevice = "cpu"\n'
    )
    results = tmp_path / "results"
    write_result(results, "t", {"moe": [record(config())]}, profile="mine")
    monkeypatch.chdir(tmp_path)
    manifest = find_manifest("t", "manifests", profiles_file="mine.toml")
    found = trace(results, manifest, load_result(results, "mine", "t"), "moe")
    assert f"--manifests {tmp_path / 'manifests'} --profiles {tmp_path / 'mine.toml'} --profile mine" in found.command

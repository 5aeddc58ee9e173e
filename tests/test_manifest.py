"""Manifests validate; broken ones fail with the file, the key path and what is allowed."""

from pathlib import Path

import pytest

from checkout import MANIFESTS
from repro.plan.manifest import find_manifest, load_all, load_manifest, manifest_paths
from repro.spec.profiles import shipped_profiles
from repro.plan.run_config import planned_runs, resolve
from repro.core.schema import SchemaError

TABLE6 = MANIFESTS / "table6.toml"


def test_every_manifest_validates():
    manifests = load_all()
    assert {m.id for m in manifests} >= {"table6"}
    for m in manifests:
        assert m.id == Path(m.path).stem
        assert {"smoke", "full"} <= set(m.profiles)
        assert m.claims, f"{m.id} provides evidence for no claim"


def test_every_manifest_path_is_a_toml_file():
    assert manifest_paths() and all(p.suffix == ".toml" for p in manifest_paths())


def _broken(tmp_path, old: str, new: str) -> Path:
    text = TABLE6.read_text()
    assert old in text
    path = tmp_path / "table6.toml"
    path.write_text(text.replace(old, new, 1))
    return path


def _problems(path: Path) -> list[str]:
    with pytest.raises(SchemaError) as info:
        load_manifest(path)
    assert str(path) in str(info.value)
    return info.value.problems


def test_unknown_key_is_named_with_a_suggestion(tmp_path):
    path = _broken(tmp_path, 'label = "CIFAR-10, standard backbone', 'lable = "CIFAR-10, standard backbone')
    problems = _problems(path)
    assert any(p.startswith("rows[0].lable: unknown key (did you mean 'label'?)") for p in problems)


def test_unknown_head_parameter_is_named(tmp_path):
    path = _broken(tmp_path, "expert_hidden = 304, top_k = 1 }", "expert_hiden = 304, top_k = 1 }")
    problems = _problems(path)
    assert any("rows[0].head.expert_hiden: unknown key (did you mean 'expert_hidden'?)" in p for p in problems)


def test_wrong_type_names_what_was_expected(tmp_path):
    path = _broken(tmp_path, "width = 0.72 }", 'width = "wide" }')
    problems = _problems(path)
    assert any(p.startswith("rows[1].backbone.width: expected a number, got 'wide'") for p in problems)


def test_unknown_model_name_lists_the_allowed_ones(tmp_path):
    path = _broken(tmp_path, 'backbone = { name = "cifar_standard" }', 'backbone = { name = "cifar_standrd" }')
    problems = _problems(path)
    (p,) = [p for p in problems if p.startswith("rows[0].backbone.name")]
    assert "unknown backbone 'cifar_standrd' (did you mean 'cifar_standard'?)" in p
    assert "resnet18" in p and "tiny_depthwise" in p


def test_claim_pointing_at_a_missing_row_is_rejected(tmp_path):
    path = _broken(tmp_path, 'metric = "rows.r18_head.rho"', 'metric = "rows.r18_heads.rho"')
    problems = _problems(path)
    assert any("no row 'r18_heads' (did you mean 'r18_head'?)" in p for p in problems)


def test_claim_citing_a_value_the_paper_table_lacks_is_rejected_naming_the_closest(tmp_path):
    path = _broken(tmp_path, 'paper = "r18_head.rho"', 'paper = "r18_heads.rho"')
    wanted = "repro/paper_tables/table6.toml has no value 'r18_heads.rho' (did you mean 'r18_head.rho'?)"
    assert any(wanted in p for p in _problems(path))


def test_a_table_with_no_paper_table_says_where_its_values_go(tmp_path):
    # A new manifest's claim cited a value, and the load said the file "has no value" without saying it did not exist
    path = tmp_path / "table6_new.toml"
    path.write_text(TABLE6.read_text().replace('id = "table6"', 'id = "table6_new"', 1))
    problem = next(p for p in _problems(path) if "paper_tables" in p)
    assert "repro/paper_tables/table6_new.toml does not exist" in problem
    assert "keyed '<row or comparison>.<metric>' (repro/paper_tables/README.md)" in problem


def test_bad_toml(tmp_path):
    bad = tmp_path / "table6.toml"
    bad.write_text("id = ")
    assert "not valid TOML" in _problems(bad)[0]


def test_all_problems_are_reported_together(tmp_path):
    path = _broken(tmp_path, "width = 0.72 }", "width = -1.0, depth = 3 }")
    problems = _problems(path)
    assert any(p.startswith("rows[1].backbone.width: must be positive") and "got -1.0" in p for p in problems)
    assert any("rows[1].backbone.depth: unknown key" in p for p in problems)


def test_the_shipped_profiles_are_defined_once_and_attached_to_every_manifest():
    shipped = shipped_profiles()
    assert {"smoke", "full", "functional"} <= set(shipped)
    for m in load_all():
        assert set(m.profiles) == set(shipped), m.id
        for name, p in m.profiles.items():
            assert p.tables == {}  # folded in for this table (Profile.for_manifest)
            assert p.seeds == (shipped[name].seeds or m.seeds or 1), (m.id, name)
    functional = shipped["functional"]
    assert functional.evidence == "functional" and functional.data == "digits" and functional.seeds == 2
    assert "decides no" in functional.description and "claim" in functional.description
    assert set(functional.datasets) == {"cifar10", "cifar100", "tiny_imagenet", "imagenet"}


def _model(row) -> tuple:
    """What a row trains: its model, and the batch it trains on (the reading batch-size's twins share the model)."""
    return row.dataset, repr(row.backbone.key()), repr(row.head.key()), row.batch_size


def test_two_tables_that_list_the_same_model_share_its_runs_at_every_profile():
    manifests = load_all()
    by_model: dict[tuple, list] = {}
    for m in manifests:
        for r in m.rows:
            if "accuracy" in r.measures:
                by_model.setdefault(_model(r), []).append((m, r))
    shared = [pairs for pairs in by_model.values() if len({m.id for m, _ in pairs}) > 1]
    assert len(shared) >= 10  # e.g. Table 9 reuses the rows of Tables 2-4
    for pairs in shared:
        for name in shipped_profiles():
            hashes = {resolve(r, m.profiles[name], 0).hash for m, r in pairs}
            assert len(hashes) == 1, (name, [f"{m.id}/{r.id}" for m, r in pairs])


def test_a_tables_own_settings_may_not_split_a_shared_models_runs(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(
        '[profiles.quick]\ndescription = "q"\nevidence = "pipeline"\n[profiles.quick.tables.table9]\nepochs = 2\n'
    )
    with pytest.raises(SchemaError) as info:
        load_all(profiles_file=path)
    assert str(path) in str(info.value)
    assert any(
        p.startswith("profiles.quick.tables.table9: would train table9/") and "runs would split" in p
        for p in info.value.problems
    ), info.value.problems


@pytest.mark.parametrize(
    "entry, message",
    [
        ("table1/std_h512_dens", "matches no training row (did you mean 'table1/std_h512_dense'?)"),
        ("tabel1", "matches no training row (did you mean 'table1'?)"),
        ("table1/*_h4096_*", "matches no training row"),
    ],
)
def test_an_include_or_exclude_entry_must_match_a_row(tmp_path, entry, message):
    path = tmp_path / "p.toml"
    path.write_text(f'[profiles.quick]\ndescription = "q"\nevidence = "pipeline"\nexclude = ["{entry}"]\n')
    with pytest.raises(SchemaError) as info:
        load_all(profiles_file=path)
    assert any(p.startswith("profiles.quick.exclude[0]:") and message in p for p in info.value.problems), (
        info.value.problems
    )


def test_finding_one_manifest_reads_its_file_alone(monkeypatch, tmp_path):
    import repro.plan.manifest as manifest

    read, real = [], manifest.read_toml
    monkeypatch.setattr(manifest, "read_toml", lambda path: read.append(Path(path).name) or real(path))
    assert find_manifest("table3").id == "table3" and read == ["table3.toml"]
    with pytest.raises(KeyError, match="no manifest 'tabel3' \\(did you mean 'table3'\\?\\)"):
        find_manifest("tabel3")
    # What it names elsewhere is checked by name: a table that does not exist, a profile entry naming none
    path = tmp_path / "p.toml"
    for entry, message in (
        ("tabel1", "'tabel1' matches no training row (did you mean 'table1'?)"),
        ("table3/std_h128_mo", "matches no training row"),
        ("table1/no_such_row", None),
    ):
        path.write_text(f'[profiles.quick]\ndescription = "q"\nevidence = "pipeline"\nexclude = ["{entry}"]\n')
        if message is None:  # another table's rows: the folder's check (load_all) reads them
            assert "quick" in find_manifest("table3", profiles_file=path).profiles
            continue
        with pytest.raises(SchemaError) as info:
            find_manifest("table3", profiles_file=path)
        assert any(message in p for p in info.value.problems), info.value.problems
    with pytest.raises(SchemaError) as info:
        load_all(profiles_file=path)
    assert any("'table1/no_such_row' matches no training row" in p for p in info.value.problems)


def test_a_reference_to_a_table_that_does_not_exist_is_refused_from_its_file_alone(tmp_path):
    import shutil

    folder = tmp_path / "manifests"
    folder.mkdir()
    text = (TABLE6.parent / "table3.toml").read_text()
    assert '"table2:' in text
    (folder / "table3.toml").write_text(text.replace('"table2:', '"tabel2:', 1))
    shutil.copy(TABLE6.parent / "table2.toml", folder)
    with pytest.raises(SchemaError, match="names no manifest 'tabel2'"):
        find_manifest("table3", folder)


def test_exclude_patterns_leave_out_exactly_the_rows_they_match():
    (m,) = [m for m in load_all() if m.id == "table1"]
    trained = sorted(p.row for p in planned_runs(m, m.profiles["functional"]) if p.seed == 0)
    main = [r for r in trained if "__" not in r]
    assert main == ["dw_h512_dense", "dw_h512_moe", "std_h512_dense", "std_h512_moe"]
    # and the readings' alternatives of those rows (table1's first [[sensitivity]]: 8), and the DW h = 128 twins of the
    # readings that change only training (its second: 13), whose own main rows stay out
    assert len([r for r in trained if "_h512_" in r]) == 12 and len([r for r in trained if "_h128_" in r]) == 13
    assert len(trained) == 25
    assert len({p.row for p in planned_runs(m, m.profiles["smoke"])}) == 8  # smoke: the main rows but h = 2048

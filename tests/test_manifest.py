"""Manifests validate; broken ones fail with the file, the key path and what is allowed."""

from pathlib import Path

import pytest

from repro.manifest import load_all, load_manifest, manifest_paths
from repro.schema import SchemaError

TABLE6 = Path(__file__).resolve().parents[1] / "manifests" / "table6.toml"


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


def test_claim_citing_a_value_the_paper_table_lacks_is_rejected(tmp_path):
    path = _broken(tmp_path, 'paper = "r18_head.rho"', 'paper = "r18_head.accuracy"')
    assert any("paper_tables/table6.toml has no value 'r18_head.accuracy'" in p for p in _problems(path))


def test_missing_profile_and_bad_toml(tmp_path):
    path = _broken(tmp_path, "[profiles.full]", "[profiles.fulll]")
    assert any(p.startswith("profiles.full: missing required profile") for p in _problems(path))
    bad = tmp_path / "table6.toml"
    bad.write_text("id = ")
    assert "not valid TOML" in _problems(bad)[0]


def test_all_problems_are_reported_together(tmp_path):
    path = _broken(tmp_path, "width = 0.72 }", "width = -1.0, depth = 3 }")
    problems = _problems(path)
    assert any(p.startswith("rows[1].backbone.width: must be positive") and "got -1.0" in p for p in problems)
    assert any("rows[1].backbone.depth: unknown key" in p for p in problems)


def test_every_manifest_has_a_functional_profile_on_real_digits():
    manifests = load_all()
    training = [m for m in manifests if "accuracy" in m.measures()]
    assert len(training) >= 9
    per_dataset = {}
    for m in manifests:
        p = m.profiles.get("functional")
        assert p is not None, f"{m.path}: no [profiles.functional]"
        assert p.evidence == "functional" and p.device == "cpu", m.id
        assert "decides no" in p.description and "claim" in p.description, m.id
        if m in training:
            assert p.data == "digits" and p.seeds == 2 and p.pretrained_on == "digits", m.id
            # One setting per dataset in every table, so that tables sharing a row share its runs
            # (table5 fine-tunes its backbone, whose MoE layers are the method, instead of freezing it).
            for dataset in {r.dataset for r in m.rows if "accuracy" in r.measures}:
                q = p.for_dataset(dataset)
                assert q.epochs and q.train_samples and q.test_samples and q.max_image_size, (m.id, dataset)
                if m.id != "table5":  # its fine-tuned runs share nothing with the frozen ones, and cost 3x
                    per_dataset.setdefault(dataset, set()).add((q.epochs, q.train_samples, q.test_samples,
                                                                q.batch_size, q.max_image_size, q.optimizer, q.lr))
            assert (p.backbone_lr_scale == 0.0) == (m.id != "table5"), m.id
    assert set(per_dataset) == {"cifar10", "cifar100", "tiny_imagenet", "imagenet"}
    assert all(len(v) == 1 for v in per_dataset.values()), per_dataset

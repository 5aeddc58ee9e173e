"""Every figure says on the image which profile it shows, what that is evidence of, and the commit."""

import dataclasses
import struct
import zlib

from matplotlib.figure import Figure

from repro.plan.manifest import find_manifest
from repro.report.figures import draw_stamp, render_figures, stamp_for
from repro.plan.table_plan import plan_all
from test_figures import fake_result


def _plans(entries):
    """The plans of the entries' tables, as the report's command builds them."""
    return plan_all(m for m, _ in entries)


def _png_text(data: bytes) -> dict[str, str]:
    """The PNG's tEXt / zTXt chunks."""
    out, pos = {}, 8
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos : pos + 4]), data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            out[key.decode()] = value.decode("latin-1")
        elif kind == b"zTXt":
            key, _, rest = body.partition(b"\0")
            out[key.decode()] = zlib.decompress(rest[1:]).decode("latin-1")
        pos += 12 + length
    return out


def _pdf_subject(data: bytes) -> str:
    """The PDF's /Subject string (matplotlib writes non-ASCII text as UTF-16 with a byte-order mark)."""
    start = data.index(b"/Subject (") + len(b"/Subject (")
    return data[start : data.index(b")\n", start)].decode("utf-16-be")


def _with_commit(result, commit):
    return dataclasses.replace(result, provenance={"git_commit": commit})


def test_a_smoke_figure_carries_its_label_and_commit_in_the_file(tmp_path):
    manifest = find_manifest("headline_cifar10")
    result = _with_commit(fake_result(manifest), "0123456789abcdef0123")
    files = [f for f in render_figures([(manifest, result)], tmp_path, _plans([(manifest, result)])) if f.drawn]
    assert files
    for f in files:
        text = _png_text(f.png.read_bytes())["Description"]
        assert text == "smoke: synthetic data, a pipeline check, not evidence · commit 0123456789ab", f.id
        assert "\ufeff" + text in _pdf_subject(f.pdf.read_bytes()), f.id


def test_the_stamp_is_drawn_and_a_pipeline_profile_is_marked_across_the_plot():
    manifest = find_manifest("headline_cifar10")
    stamp = stamp_for([(manifest, _with_commit(fake_result(manifest), "abc"))])
    fig = Figure()
    fig.add_subplot()
    draw_stamp(fig, stamp)
    drawn = [t.get_text() for t in fig.texts] + [fig._supxlabel.get_text()]
    assert any("a pipeline check, not evidence" in t and "commit abc" in t for t in drawn)
    assert "smoke: not evidence" in drawn


def test_a_profile_that_decides_claims_is_labelled_without_the_mark():
    manifest = find_manifest("headline_cifar10")
    reduced = dataclasses.replace(manifest.profiles["full"], seeds=3, epochs=20)
    result = dataclasses.replace(
        fake_result(manifest, "cifar3x20"),
        provenance={"git_commit": "feedbeefcafe0000+dirty"},
        profile_settings=dataclasses.replace(reduced, evidence="reduced"),
    )
    stamp = stamp_for([(manifest, result)])
    assert stamp.text == (
        "cifar3x20: the paper's datasets, a reduced protocol (3 seeds x 20 epochs) · commit feedbeefcafe+dirty"
    )
    assert not stamp.not_evidence
    fig = Figure()
    draw_stamp(fig, stamp)
    assert [t.get_text() for t in fig.texts] == [stamp.text]  # the footer only: no mark across the plot


def test_results_on_unverified_data_say_so_in_every_figure_and_across_the_plot(tmp_path):
    manifest = find_manifest("headline_cifar10")
    reduced = dataclasses.replace(manifest.profiles["full"], seeds=3, epochs=20, evidence="reduced")
    result = dataclasses.replace(
        fake_result(manifest, "mine"), provenance={"git_commit": "feedbeefcafe0000"}, profile_settings=reduced
    )
    check = {
        "dataset": "cifar10",
        "title": "CIFAR-10",
        "path": "data/cifar-10-batches-py",
        "train_size": 200,
        "test_size": 40,
        "checksum": "md5 mismatch accepted",
        "unverified": ["data_batch_1: md5 0 != 1"],
    }
    result.measured.details["data_checks"] = {"summaries": [], "checks": [check]}
    stamp = stamp_for([(manifest, result)])
    assert stamp.text.startswith(
        "mine: UNVERIFIED data (copies of the paper's datasets that fail their published checksums), a reduced protocol"
    )
    assert stamp.unverified and not stamp.not_evidence and stamp.mark == "mine: unverified data"
    fig = Figure()
    fig.add_subplot()
    draw_stamp(fig, stamp)
    assert "mine: unverified data" in [t.get_text() for t in fig.texts]
    assert fig._supxlabel.get_color() == "#b00020"
    files = [f for f in render_figures([(manifest, result)], tmp_path, _plans([(manifest, result)])) if f.drawn]
    assert files
    for f in files:
        assert "UNVERIFIED data" in _png_text(f.png.read_bytes())["Description"], f.id
        assert "UNVERIFIED data" in _pdf_subject(f.pdf.read_bytes()), f.id

"""The paper's reported values: they load, carry their precision, and each one is used."""

import os
import re
from pathlib import Path

import pytest

from checkout import REPO_ROOT
from repro.plan.manifest import load_all
from repro.spec.paper import PaperValue, paper_tables


def test_precision_and_tolerance_from_the_printed_number():
    assert PaperValue("a.rho", "4.5", printed="0.06%", value=0.06).tolerance == pytest.approx(0.005)
    assert PaperValue("a.rho", "4.6", printed="~38%", value=38, approx=True).tolerance == pytest.approx(1.0)
    assert PaperValue("a.gap", "4.2", printed="+1.28 ± 1.26%", value=1.28).decimals == 2
    assert PaperValue("a.x", "4.2", printed="22.7%", value=22.7).tolerance == pytest.approx(0.05)
    assert PaperValue("a.x", "5", printed="roughly 60x", value=60, approx=True).tolerance == pytest.approx(1.0)


def test_precision_is_the_printed_values_not_a_p_value_printed_after_it():
    # Table 5's k = 2 gap as the explainer prints it: the tolerance is half of 0.01, not of 0.001.
    pv = PaperValue("k2.gap_size", "4.6", printed="+1.17% (p=1.2x10^-4)", value=1.17)
    assert pv.decimals == 2 and pv.tolerance == pytest.approx(0.005)
    assert PaperValue("a.gap", "4.2", printed="+0.54 ± 0.16% (p<10^-5, d=3.31)", value=0.54).decimals == 2
    assert PaperValue("a.gap", "4.2", printed="-36%", value=-36).decimals == 0


def test_a_value_needs_a_number_or_a_sign():
    with pytest.raises(ValueError):
        PaperValue("a.gap", "4.2")


def test_every_reported_value_is_shown_or_cited_by_a_claim():
    manifests = load_all()
    used: dict[str, set[str]] = {}
    for m in manifests:
        keys = used.setdefault(m.paper_table, set())
        for r in m.rows:
            # "<row>.gap": the sign the text states for a setting, which the separation rules must read
            keys |= {f"{r.id}.{metric}" for metric in ("rho", "accuracy", "latency_ms", "slowdown", "gap")}
        for c in m.comparisons:
            keys |= {f"{c.id}.{metric}" for metric in ("gap", "flops_reduction", "flops_ratio", "slowdown")}
        for c in m.claims:
            for value in c.params.values():
                keys |= set(value) if isinstance(value, (list, tuple, dict)) else {value}
    for name, table in paper_tables().items():
        assert name in used, f"paper_tables/{name}.toml has no manifest reproducing it"
        unused = [v.key for v in table.values if v.key not in used[name]]
        assert not unused, f"paper_tables/{name}.toml values neither shown nor cited: {unused}"


def test_the_36_ms_loop_latency_is_the_explainers():
    from repro.spec.paper import paper_value

    assert paper_value("table7", "cifar100_sparse_loop.model_latency_ms").source == "explainer-and-summary"
    assert paper_value("table7", "cifar100_dense.model_latency_ms").source == "method-and-results"


# The paper's text is not part of the artifact; where a copy is at hand ($REPRO_PAPER_TEXT, or beside the checkout)
PAPER_TEXT = Path(os.environ.get("REPRO_PAPER_TEXT", REPO_ROOT.parent / "shared" / "paper" / "method-and-results.txt"))


def _numbers(text: str) -> set[str]:
    """Number tokens ("1.28", ".011", "10", "4"), the paper's LaTeX and ours alike."""
    return {n.lstrip("0") or "0" for n in re.findall(r"\d*\.\d+|\d+", text)}


@pytest.mark.skipif(not PAPER_TEXT.is_file(), reason="the paper's text is not beside this checkout")
def test_every_value_marked_as_the_method_texts_prints_numbers_found_there():
    text = _numbers(PAPER_TEXT.read_text(encoding="utf-8"))
    wrong = [
        f"{name}/{v.key}: {v.printed}"
        for name, table in paper_tables().items()
        for v in table.values
        if v.source == "method-and-results" and v.printed and not _numbers(v.printed) <= text
    ]
    assert not wrong, wrong

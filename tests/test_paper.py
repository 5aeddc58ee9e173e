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


# Runs of this many words from the paper's text, outside quotation marks, count as a copied sentence.
COPY_WORDS = 8
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
# A quotation mark: typographic, or a single quote that is not an apostrophe (paper's, 5's)
_QUOTE = re.compile(r"[‘’“”]|(?<![A-Za-z0-9])'|'(?![A-Za-z])")


def _unquoted_copies(text: str, paper_runs: set[tuple[str, ...]], double_quotes_cite: bool) -> list[str]:
    """Maximal runs of COPY_WORDS or more words of `text` that the paper's text has in the same order, counting
    only words outside quotation marks (a quotation mark opened before a word on its line and not yet closed):
    a quoted phrase cites the paper, it does not copy it."""
    quote = re.compile(_QUOTE.pattern + ('|"' if double_quotes_cite else ""))
    words = list(_WORD.finditer(text))
    low = [w.group().lower() for w in words]
    quoted = [len(quote.findall(text, text.rfind("\n", 0, w.start()) + 1, w.start())) % 2 == 1 for w in words]

    def copied(i: int) -> bool:
        return not any(quoted[i : i + COPY_WORDS]) and tuple(low[i : i + COPY_WORDS]) in paper_runs

    found, i = [], 0
    while i <= len(low) - COPY_WORDS:
        if not copied(i):
            i += 1
            continue
        j = i + 1
        while j <= len(low) - COPY_WORDS and copied(j):
            j += 1
        found.append(text[words[i].start() : words[j + COPY_WORDS - 2].end()])
        i = j + COPY_WORDS - 1
    return found


@pytest.mark.skipif(not PAPER_TEXT.is_file(), reason="the paper's text is not beside this checkout")
def test_no_sentence_of_the_paper_is_copied_into_the_artifact():
    import subprocess

    if not (REPO_ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    title_lines = 2  # the title is cited by name (README, CITATION.cff, codemeta.json)
    body = "\n".join(PAPER_TEXT.read_text(encoding="utf-8").splitlines()[title_lines:])
    paper_words = [w.group().lower() for w in _WORD.finditer(body)]
    runs = {tuple(paper_words[i : i + COPY_WORDS]) for i in range(len(paper_words) - COPY_WORDS + 1)}
    tracked = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "ls-files"], capture_output=True, text=True, check=True
    ).stdout.split()
    suffixes = {".md", ".toml", ".py", ".j2", ".tex", ".txt", ".cff", ".json", ".yml", ".yaml", ".sh"}
    copies = [
        f"{name}: {copy!r}"
        for name in tracked
        if Path(name).suffix in suffixes and not name.startswith("tests/") and (REPO_ROOT / name).is_file()
        for copy in _unquoted_copies(
            (REPO_ROOT / name).read_text(encoding="utf-8", errors="replace"),
            runs,
            Path(name).suffix not in {".toml", ".json", ".cff", ".yml", ".yaml"},  # there they delimit values
        )
    ]
    assert not copies, "say it in our words, or quote it: " + "; ".join(copies)

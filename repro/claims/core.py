"""What every claim rule works with: the evidence, the outcome it returns, and the helpers it shares.

A rule is `fn(params, evidence) -> Outcome`: it reads metric paths (repro.results.measurements) and the paper's
reported values (repro.spec.paper), and raises `NotRun` when a metric it needs was not measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Protocol

from repro.data.check_result import DataCheck
from repro.spec.paper import PaperValue, paper_value, why_no_value
from repro.spec.profiles import Profile
from repro.results.measurements import Status


EvidenceKind = Literal["pipeline", "functional", "reduced", "paper"]


@dataclass
class Evidence:
    """What claims are decided on: the measured metrics of one manifest at one profile."""

    manifest_id: str
    paper_table: str
    profile: str
    metrics: dict[str, Any] = field(default_factory=dict)  # metric path -> value (or per-seed dict, or stats)
    missing: dict[str, str] = field(default_factory=dict)  # metric path -> why it was not measured
    device: str = "cpu"
    paper_scale: bool = True  # False when produced by a reduced profile such as smoke
    # What the profile is evidence for (repro.plan.manifest.Profile.evidence): only "reduced" and "paper"
    # decide empirical and GPU-scoped claims (repro.claims.verdicts).
    kind: EvidenceKind = "paper"
    seeds: int | None = None  # seeds per row at this profile
    paper_seeds: int | None = None  # the paper's seeds for this table (the manifest's `seeds`)
    # The profile as run (repro.spec.profiles.Profile): a verdict's note names how it departs from the paper's protocol.
    settings: Profile | None = None
    datasets: tuple[str, ...] = ()  # those the table trains on: the departures name their recipes' numbers
    # The content checks of the datasets the runs trained on (repro.data.check): the split sizes found and
    # the files accepted with --allow-unverified-data, which the verdict's note names.
    data: tuple[DataCheck, ...] = ()
    comparison_rows: dict[str, tuple[str, str]] = field(default_factory=dict)  # comparison id -> (row, baseline)
    # Another table a claim reads ("<table>:<id>", repro.claims.across) -> why its measurements are not here.
    missing_tables: dict[str, str] = field(default_factory=dict)

    def get(self, path: str) -> Any:
        return self.metrics.get(path)

    @property
    def unverified_data(self) -> list[str]:
        """The datasets (titles) whose files fail their published checksum, accepted with --allow-unverified-data."""
        return [c.title for c in self.data if c.accepted_unverified]

    def why_missing(self, path: str) -> str:
        ident = path.split(".")[1] if path.count(".") == 2 else ""
        table = ident.partition(":")[0] if ":" in ident else ""
        if table in self.missing_tables:
            return self.missing_tables[table]
        return self.missing.get(path, f"{path} was not measured")

    def rows_of(self, comparison: str) -> tuple[str, str]:
        """(treatment row, baseline row) of a comparison; NotRun when the evidence does not say."""
        table = comparison.partition(":")[0] if ":" in comparison else ""
        if table in self.missing_tables:
            raise NotRun(self.missing_tables[table])
        if comparison not in self.comparison_rows:
            raise NotRun(
                f"the rows of comparison '{comparison}' are not in the evidence, "
                "so whether both learned cannot be checked"
            )
        return self.comparison_rows[comparison]


class NotRun(Exception):
    """A metric the rule needs was not measured; carries the reason."""


@dataclass(frozen=True)
class Outcome:
    """What a rule decides: its status, one line of evidence, the parts that failed, and the numbers."""

    status: Status
    evidence: str
    failed: list[str] = field(default_factory=list)
    measured: dict[str, Any] = field(default_factory=dict)
    reported: dict[str, Any] = field(default_factory=dict)
    must_have_learned: tuple[str, ...] = ()  # rows that must be above chance for the outcome to count
    p_value: float | None = None  # the significance test the outcome rests on, if any
    # The allowance the measurement was judged with, where the rule has one: ± in the reported value's unit
    # (percentage points for accuracy and gaps), a relative spread (equal, scales_with_experts) or a factor
    # (within_factor).
    tolerance: float | None = None


def passed(ok: bool) -> Status:
    return "reproduced" if ok else "not reproduced"


@dataclass(frozen=True)
class Rule:
    """One decision rule: its name in manifests, the dataclass of its parameters, the function."""

    name: str
    config: type
    fn: Callable[[Any, Evidence], Outcome]
    doc: str


class ClaimLike(Protocol):
    """The fields of repro.plan.manifest.Claim the claims layer reads (claims never import manifests); read-only,
    as a frozen dataclass's are."""

    @property
    def id(self) -> str: ...
    @property
    def statement(self) -> str: ...
    @property
    def section(self) -> str: ...
    @property
    def rule(self) -> str: ...
    @property
    def scope(self) -> str: ...
    @property
    def params(self) -> dict[str, Any]: ...
    @property
    def kind(self) -> str: ...  # an analytic claim's: "printed", "property" or "self-test" (repro.claims.headline)


def need(ev: Evidence, path: str) -> Any:
    """The measured value at a metric path; NotRun with the reason when it was not measured."""
    value = ev.get(path)
    if value is None:
        raise NotRun(ev.why_missing(path))
    return value


def paper(ev: Evidence, key: str) -> PaperValue:
    """A reported value of the evidence's paper table."""
    value = paper_value(ev.paper_table, key)
    if value is None:  # check_references makes this unreachable for validated manifests
        raise KeyError(why_no_value(ev.paper_table, key))
    return value


def in_paper_units(value: float, pv: PaperValue) -> float:
    """A measured fraction in the unit the paper prints (x 100 for %)."""
    return value * 100 if pv.unit == "%" else value


def from_paper_units(pv: PaperValue) -> float:
    """A reported value in the measured metric's own units (fractions for %)."""
    return pv.number / 100 if pv.unit == "%" else pv.number


def fmt(value: float, pv: PaperValue) -> str:
    """A measured value printed two digits finer than the paper printed it."""
    shown = in_paper_units(value, pv)
    digits = max(pv.decimals + 2, 2)
    return f"{shown:.{digits}f}{pv.unit}"


def pct(x: float) -> str:
    """A difference of fractions in signed percentage points."""
    return f"{100 * x:+.2f}pp"


SIGN_WORDS = {"+": "positive", "-": "negative", "<=0": "not positive"}


def sign_word(sign: str | None) -> str:
    """A stated or measured direction in words: 'positive', 'negative', 'not positive'."""
    return SIGN_WORDS.get(sign or "", "no stated sign")


def reported_gap(pv: PaperValue) -> str:
    """A reported gap as evidence prints it: its size in pp (the paper prints gaps in %), else its sign in words,
    then the statistics the text gives ('+1.28 ± 1.26pp (p=0.011, d=1.01)', 'negative (p=0.004)')."""
    if pv.value is not None:
        digits = pv.decimals
        text = f"{pv.value:+.{digits}f}" + (f" ± {pv.sd:.{digits}f}" if pv.sd is not None else "") + "pp"
    else:
        text = sign_word(pv.implied_sign)
    stats = [f"p{'<' if pv.p_relation == '<' else '='}{pv.p:.2g}"] if pv.p is not None else []
    stats += [f"d={pv.d:g}"] if pv.d is not None else []
    if pv.positive_seeds is not None and pv.n:
        stats.append(f"{pv.positive_seeds}/{pv.n} seeds positive")
    return text + (f" ({', '.join(stats)})" if stats else "")

"""Claims: each finding of the paper as a decision rule evaluated on measured results.

A claim names a rule and its parameters in the manifest that provides its evidence. A rule reads
metrics ("rows.<id>.<metric>", "comparisons.<id>.<metric>", repro.results.measurements) and the paper's reported
values, and returns an Outcome; `evaluate` turns it into a Verdict. No verdict is ever written by
hand: with no measurement the verdict is `not run`.

    core.py        Evidence, Outcome, NotRun, Rule and the helpers every rule shares
    values.py      rules on single values (FLOPs, rho): matches_paper, compare, separates, ...
    gaps.py        rules on accuracy gaps paired by seed: gap_matches_paper (with a band), row_above, ...
    orders.py      orderings of gaps with one seed-noise allowance: gap_order, sign_follows_rho, gap_largest, ...
    bands.py       findings stated in words, each decided against the band its manifest chose: near_chance, ...
    routing.py     rules on test-time routing (Section 5.3): routing_concentrated, gap_tracks_routing, ...
    latency.py     rules on latency and operator counts: within_factor, ordered, largest, scales_with_experts
    extension.py   rules for questions beyond the paper (scope "extension"): router_order_stable
    rules.py       RULES, the registry filled from the families above
    learned.py     the guard: a comparison counts only between models that beat chance
    across.py      claims that read other tables ("<manifest>:<id>"), claims a table shows but another decides,
                   and the checks across manifests: one claim per finding, every stated sign read
    verdicts.py    evaluate(claim, evidence) -> Verdict, and what each kind of profile may decide
    references.py  check_references(manifest, problems): what the claims name must exist
    decide.py      decide_table, decide_family, decided_results, decided_folder: where the pipeline, `repro report`,
                   `repro export` and `repro compare` decide a table's claims and apply Holm over a report
                   (repro.results.family.holm_adjust), each returning new, frozen results (the report only renders)
    headline.py    count_verdicts(verdicts): {group: {status: count}}, analytic kinds and the explainer's claims apart
    under_readings.py  decide_readings: every analytic claim under every alternative reading (repro/spec/readings.toml)
"""

from repro.claims.core import Evidence, NotRun, Outcome, Rule
from repro.claims.decide import decide_family, decide_table, decided_folder, decided_results, evidence_for
from repro.claims.headline import count_verdicts
from repro.claims.references import check_references
from repro.claims.rules import RULES
from repro.claims.verdicts import evaluate
from repro.results.family import holm_adjust
from repro.results.measurements import Status, Verdict

__all__ = [
    "Evidence",
    "NotRun",
    "Outcome",
    "RULES",
    "Rule",
    "Status",
    "Verdict",
    "check_references",
    "count_verdicts",
    "decide_family",
    "decide_table",
    "decided_folder",
    "decided_results",
    "evaluate",
    "evidence_for",
    "holm_adjust",
]

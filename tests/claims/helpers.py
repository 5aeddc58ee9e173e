"""Hand-made claims and evidence for the rule tests."""

from repro.claims import Evidence
from repro.plan.manifest import Claim
from repro.claims.stats import paired_gap


def claim(rule, scope="analytic", **params):
    return Claim(id="c", statement="s", section="0", rule=rule, scope=scope, params=params)


def ev(**metrics):
    """Evidence on table6's paper values; a keyword rows__a__rho stands for the path rows.a.rho."""
    return Evidence(
        manifest_id="table6",
        paper_table="table6",
        profile="smoke",
        metrics={k.replace("__", "."): v for k, v in metrics.items()},
    )


def gap(diffs_pp):
    """A GapStats dict from per-seed differences in percentage points."""
    base = {s: 0.80 for s in range(len(diffs_pp))}
    return paired_gap({s: 0.80 + d / 100 for s, d in enumerate(diffs_pp)}, base).to_dict()


def learned(*rows, accuracy=(0.80, 0.82, 0.78), chance=0.10):
    """Metrics of rows that learned: per-seed accuracy well above chance (repro.claims.learned)."""
    out = {}
    for r in rows:
        out[f"rows.{r}.accuracy"] = dict(enumerate(accuracy))
        out[f"rows.{r}.chance"] = chance
    return out

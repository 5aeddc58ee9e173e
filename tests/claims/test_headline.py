"""count_verdicts (repro.claims.headline): the run's claims by scope and status."""

import pytest

from repro.claims import count_verdicts
from repro.results import Verdict


def _v(scope, status):
    return Verdict("c", "s", "0", scope, status, "e")


def test_counts_by_scope_and_status_with_zeros():
    vs = [_v("analytic", "reproduced"), _v("analytic", "reproduced"), _v("analytic", "not reproduced"),
          _v("empirical", "not run"), _v("empirical", "inconclusive"), _v("gpu", "not run")]
    assert count_verdicts(vs) == {
        "analytic": {"reproduced": 2, "not reproduced": 1, "inconclusive": 0, "not run": 0},
        "empirical": {"reproduced": 0, "not reproduced": 0, "inconclusive": 1, "not run": 1},
        "gpu": {"reproduced": 0, "not reproduced": 0, "inconclusive": 0, "not run": 1},
        "extension": {"reproduced": 0, "not reproduced": 0, "inconclusive": 0, "not run": 0},
    }
    assert list(count_verdicts([])["gpu"]) == ["reproduced", "not reproduced", "inconclusive", "not run"]


def test_an_unknown_scope_is_refused():
    with pytest.raises(ValueError, match="scope 'cpu'"):
        count_verdicts([_v("cpu", "reproduced")])

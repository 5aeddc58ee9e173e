"""Seeded k-means and the feature reservoir (repro.models.kmeans): golden arrays, determinism."""

import pytest
import torch

from repro.models.kmeans import Reservoir, kmeans, nearest


def test_nearest_golden():
    x = torch.tensor([[1.0, 0.0], [4.0, 4.0], [2.4, 2.4], [2.6, 2.6]])
    centres = torch.tensor([[0.0, 0.0], [5.0, 5.0]])
    assert nearest(x, centres).tolist() == [0, 1, 0, 1]


def test_two_clusters_golden_and_deterministic():
    x = torch.tensor([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0], [0.0, 2.0]])
    c = kmeans(x, 2, iters=10, seed=0)
    got = sorted(c.tolist())
    assert got == [[0.0, 1.0], [10.0, 10.5]]
    torch.testing.assert_close(kmeans(x, 2, iters=10, seed=0), c, rtol=0, atol=0)
    torch.manual_seed(123)  # the global RNG plays no part
    torch.testing.assert_close(kmeans(x, 2, iters=10, seed=0), c, rtol=0, atol=0)


def test_empty_cluster_keeps_its_centre_and_too_few_rows_refused():
    x = torch.tensor([[0.0], [0.0], [0.0], [1.0]])
    c = kmeans(x, 3, iters=5, seed=1)  # two seeds start on equal rows: one cluster stays empty
    assert sorted(set(c.view(-1).tolist())) == [0.0, 1.0]
    with pytest.raises(ValueError, match="at least 3 rows"):
        kmeans(x[:2], 3)


def test_reservoir_keeps_the_last_rows():
    r = Reservoir(5)
    assert r.take() is None
    for start in (0, 3, 6):
        r.add(torch.arange(start, start + 3, dtype=torch.float).view(3, 1))
    assert r.take().view(-1).tolist() == [4.0, 5.0, 6.0, 7.0, 8.0]
    assert r.take() is None  # taking empties it
